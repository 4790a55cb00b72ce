"""Atomic file writes: a reader sees the old file or the new one, never half of one.

:func:`write_files_atomic` does it for several files at once: each is written to a temporary file
beside it and synced, and only when every one is written are they renamed into place. On any error
(a full disk, a file size limit, an interrupt) the temporary files are removed and the old files are
as they were.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["write_atomic", "write_bytes_atomic", "write_files_atomic"]


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half-written."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _mode(path: Path) -> int:
    """The existing file's mode, else what a plain open() would give (0o666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _stage(path: Path, data: bytes, mode: int | None = None) -> str:
    """``data`` in a synced temporary file beside ``path`` (its name returned); nothing left on error."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode(path) if mode is None else mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def write_bytes_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: never half-written. ``mode``: the
    file's mode (default: the existing file's, else what a plain open() would give)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _stage(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_files_atomic(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write every (path, data): all staged and synced first, then each renamed into place.

    A failure while staging (ENOSPC, EFBIG, EIO, an interrupt) removes the temporary files and leaves
    every old file as it was; renames within a directory do not run out of space.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            staged.append((_stage(path, data), path))
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for d in {path.parent for _, path in staged}:  # the renames themselves, on disk
        try:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
