"""Progress of long work, on stderr (stdout carries the table or the JSON): rich's bar on a terminal; elsewhere (a
log, a pipe, CI) a start line, a percentage at most every few seconds and a last line; nothing when quiet.
Every command keeps stderr quiet with ``-q`` or ``--json`` (the JSON is the whole answer).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

__all__ = ["Ticker", "note"]


def note(text: str, *, quiet: bool = False) -> None:
    """One line on stderr saying what starts now (work whose length we cannot count, such as a resolver run)."""
    if not quiet:
        print(text, file=sys.stderr, flush=True)


class Ticker:
    """``with Ticker("computing 1104 plans on 2 workers", 1104, quiet=q) as tick: ... tick(done)``.

    ``every``: the least number of seconds between two plain lines (the first and last are always written)."""

    def __init__(self, label: str, total: int, *, quiet: bool = False, every: float = 5.0,
                 stream: TextIO | None = None) -> None:
        self.label, self.total, self.quiet, self.every = label, total, quiet, every
        self.stream = stream or sys.stderr  # bound now: work inside may redirect sys.stderr for a while
        self._bar: Any = None
        self._task: Any = None
        self._done = 0
        self._t0 = self._last = 0.0

    def __enter__(self) -> Ticker:
        self._t0 = self._last = time.monotonic()
        if self.quiet:
            return self
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True,
                                 redirect_stdout=False, redirect_stderr=False)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        else:
            self._line(f"{self.label} ...")
        return self

    def __call__(self, done: int) -> None:
        self._done = done
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=done)
            return
        now = time.monotonic()
        if now - self._last >= self.every and done < self.total:
            self._last = now
            self._line(f"{self.label} ... {100 * done // max(self.total, 1)}%")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.stop()
        if kind is None:
            self._line(f"{self.label}: done in {time.monotonic() - self._t0:.1f} s")

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
