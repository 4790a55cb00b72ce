"""Reading an input whole, bounded in bytes, and in time when it is a stream (a pipe, a terminal, a device).

A file named on the command line can be ``/dev/zero``, a FIFO nobody writes to, or a pipe that never ends: each
read here stops at ``limit`` bytes, and a stream that is not a regular file must end within ``timeout`` seconds.
"""

from __future__ import annotations

import os
import select
import stat
import time
from typing import Any, BinaryIO

__all__ = ["InputLimit", "read_bounded", "read_path_bounded", "mib"]

_CHUNK = 1 << 20


class InputLimit(ValueError):
    """An input past its limit in bytes or in time: ``more than 256 MiB`` or ``no end after 300 s``."""


def mib(n: int) -> str:
    """A byte count in words: ``256 MiB``."""
    return f"{n / (1 << 20):g} MiB"


def _is_regular(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def read_bounded(fh: BinaryIO, limit: int, timeout: float) -> bytes:
    """All of ``fh``, at most ``limit`` bytes (InputLimit past that); a stream that is not a regular file must end
    within ``timeout`` seconds (InputLimit when it does not)."""
    try:
        fd = fh.fileno()
    except (OSError, ValueError, AttributeError):  # an in-memory stream (a test's standard input)
        fd = -1
    deadline = None if fd < 0 or _is_regular(fd) else time.monotonic() + timeout
    data = bytearray()
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise InputLimit(f"no end after {timeout:g} s (the longest vresolve waits for a stream to end)")
            chunk = os.read(fd, _CHUNK)
        else:
            chunk = fh.read(_CHUNK)
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogateescape")
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > limit:
            raise InputLimit(f"more than {mib(limit)} (the most vresolve reads of this input)")


def read_path_bounded(path: str, limit: int, timeout: float) -> bytes:
    """:func:`read_bounded` of the file at ``path`` (``-``: standard input). A FIFO is opened without waiting for a
    writer (no writer: it reads as empty); OSError when it cannot be opened."""
    import sys

    if path == "-":
        stdin: Any = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin  # (a test's may be text)
        return read_bounded(stdin, limit, timeout)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        return read_bounded(fh, limit, timeout)
