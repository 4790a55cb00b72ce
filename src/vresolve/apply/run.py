"""One command of a plan, run for real: the argv as the plan prints it, no shell, in its own process group.

Its output (stdout and stderr together) goes line by line to a callback, into an optional log file, and
its last lines are kept for the failure report. Interrupted (Ctrl-C, SIGTERM under vresolve's entry point),
the command and everything it started are stopped before the interrupt goes on; it dies with vresolve even
when vresolve is killed (:mod:`vresolve._proc`).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from .._proc import dies_with_us, stop_group

__all__ = ["Downloads", "Ran", "run_command", "TAIL_LINES"]

TAIL_LINES = 30  # the last lines of a command's output kept for the failure report
_MAX_LINE = 4000  # longer lines (a progress bar redrawn without newlines) are cut


class Ran(msgspec.Struct, frozen=True, kw_only=True):
    """How a command ended: its exit code (None: it could not start), its last lines, the seconds it took."""

    argv: tuple[str, ...]
    returncode: int | None
    tail: tuple[str, ...]
    seconds: float
    output: str = ""  # the whole output, only when asked for (checks: a few lines)
    error: str | None = None  # why it could not start

    @property
    def ok(self) -> bool:
        return self.returncode == 0


_SIZE = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "KiB": 2**10,
         "MiB": 2**20, "GiB": 2**30}
# uv: "Downloading torch (846.8MiB)" / " Downloaded torch"; pip: "Downloading torch-2.14.0-...whl (846.8 MB)"
_DOWNLOADING = re.compile(r"^\s*Downloading (\S+?)(?:-\d[^\s]*\.whl)? \((\d+(?:\.\d+)?) ?([KMG]i?B|B)\)", re.I)
_DOWNLOADED = re.compile(r"^\s*Downloaded (\S+)\s*$")
_PIP_DONE = re.compile(r"^\s*(?:Installing collected packages|Successfully installed)")


class Downloads(msgspec.Struct, kw_only=True):
    """What an installer said it downloads, and what it has finished: its own lines, counted per file
    (uv prints ``Downloading NAME (SIZE)`` then `` Downloaded NAME``; pip the first only, finishing in order)."""

    sizes: dict[str, float] = msgspec.field(default_factory=dict)
    done: set[str] = msgspec.field(default_factory=set)

    def feed(self, line: str) -> bool:
        """Read one output line; True when it changed the tally."""
        m = _DOWNLOADING.match(line)
        if m:
            if ".whl" in line:  # pip: one download at a time, so a new one ends the last
                self.done.update(self.sizes)
            unit = m[3]
            self.sizes[m[1].rsplit("/", 1)[-1]] = float(m[2]) * _SIZE.get(unit, _SIZE.get(unit.upper(), 1))
            return True
        m = _DOWNLOADED.match(line)
        if m and m[1] in self.sizes:
            self.done.add(m[1])
            return True
        if _PIP_DONE.match(line) and self.sizes:
            self.done.update(self.sizes)
            return True
        return False

    @property
    def total_bytes(self) -> float:
        return sum(self.sizes.values())

    @property
    def done_bytes(self) -> float:
        return sum(v for k, v in self.sizes.items() if k in self.done)

    @property
    def active(self) -> list[str]:
        return [k for k in self.sizes if k not in self.done]


def run_command(argv: Sequence[str], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
                on_line: Callable[[str], None] | None = None, log: Path | None = None, keep_output: bool = False,
                timeout: float | None = None) -> Ran:
    """Run ``argv`` (no shell) to its end; see the module's docstring.

    ``log``: a file the whole output is appended to. ``keep_output``: keep the whole output (small outputs
    only: a check's). ``timeout``: seconds, after which it is stopped (exit code None, with why in ``error``).
    """
    argv = tuple(str(a) for a in argv)
    t0 = time.monotonic()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=dies_with_us())
    except OSError as e:
        why = f"cannot run {argv[0]!r}: {e.strerror or e}"
        return Ran(argv=argv, returncode=None, tail=(why,), seconds=0.0, error=why)
    kept: list[str] = []
    try:
        with open(log, "a", encoding="utf-8", errors="replace") if log else _nowhere() as sink:
            stopped = _pump(proc, t0, timeout, tail, kept if keep_output else None, sink, on_line)
    except BaseException:
        stop_group(proc)
        raise
    if stopped:
        stop_group(proc)
        why = f"stopped after {timeout:g} s"
        return Ran(argv=argv, returncode=None, tail=(*tail, why), seconds=time.monotonic() - t0,
                   output="".join(kept), error=why)
    proc.wait()
    stop_group(proc)  # whatever it left running in its group (a daemon it started) goes too
    return Ran(argv=argv, returncode=proc.returncode, tail=tuple(tail), seconds=time.monotonic() - t0,
               output="".join(kept))


class _nowhere:  # noqa: N801 - a context manager that writes nowhere (no log file)
    def __enter__(self) -> _nowhere:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _pump(proc: subprocess.Popen[bytes], t0: float, timeout: float | None, tail: deque[str], kept: list[str] | None,
          sink: object, on_line: Callable[[str], None] | None) -> bool:
    """Read the output to its end, line by line (a carriage return ends a line too: progress bars); True when
    ``timeout`` ran out first."""
    import selectors

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pending = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = None if timeout is None else timeout - (time.monotonic() - t0)
            if left is not None and left <= 0:
                return True
            if not sel.select(timeout=left):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            *lines, pending = re.split(rb"\r\n|\r|\n", pending + chunk)
            if len(pending) > _MAX_LINE:
                lines, pending = [*lines, pending], b""
            for raw in lines:
                _line(raw.decode("utf-8", errors="replace")[:_MAX_LINE], tail, kept, sink, on_line)
    if pending:
        _line(pending.decode("utf-8", errors="replace")[:_MAX_LINE], tail, kept, sink, on_line)
    proc.stdout.close()
    return False


def _line(text: str, tail: deque[str], kept: list[str] | None, sink: object,
          on_line: Callable[[str], None] | None) -> None:
    tail.append(text)
    if kept is not None:
        kept.append(text + "\n")
    sink.write(text + "\n")  # type: ignore[attr-defined]
    if on_line is not None:
        on_line(text)
