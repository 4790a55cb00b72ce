"""Error logs matched against the known-issues table (``compat_matrix/known_issues.yaml``), whose
signatures tell look-alikes apart.

A log is anyone's text, so the work is bounded: each signature is checked for super-linear
backtracking when the matrix is read (:mod:`vresolve.matrix.patterns`), and signatures are matched
against lines of at most :data:`MAX_LINE` characters: a longer line is cut into pieces of that size
that overlap by :data:`OVERLAP`, so that a match up to that long is still found across a cut.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from ..matrix import KnownIssue, Matrix
from .evidence.lines import bodies
from .facts import Finding

MAX_LINE = 4096  # characters of a line that a signature reads at once
OVERLAP = 512  # characters two pieces of a longer line share


def bounded_lines(text: str) -> str:
    """``text`` (itself when no line is longer than MAX_LINE) with each longer line cut into pieces of
    MAX_LINE characters, each on a line of its own, each starting OVERLAP characters before the last ended."""
    lines = text.split("\n")
    if all(len(line) <= MAX_LINE for line in lines):
        return text
    step = MAX_LINE - OVERLAP
    return "\n".join(
        line if len(line) <= MAX_LINE else "\n".join(line[i:i + MAX_LINE] for i in range(0, len(line) - OVERLAP, step))
        for line in lines)


def _evidence(text: str, match: re.Match[str], context: int = 1) -> tuple[str, ...]:
    lines = text.splitlines()
    line_no = text.count("\n", 0, match.start())
    lo, hi = max(0, line_no - context), min(len(lines), line_no + context + 1)
    return tuple(line.rstrip()[:300] for line in lines[lo:hi] if line.strip())


def match_log(text: str, issues: Sequence[KnownIssue]) -> list[tuple[KnownIssue, tuple[str, ...]]]:
    """Every known issue whose signature matches the log, with the lines that show it, in log order."""
    text = bounded_lines(text)
    hits = []
    for issue in issues:
        for pattern in issue.patterns():
            m = pattern.search(text)
            if m:
                hits.append((m.start(), issue, _evidence(text, m)))
                break
    hits.sort(key=lambda h: h[0])
    return [(issue, ev) for _, issue, ev in hits]


def from_issue(issue: KnownIssue, evidence: Sequence[str], source: str, fix_extra: str = "") -> Finding:
    return Finding(cause=issue.cause, severity=issue.severity, title=issue.title, explanation=issue.explanation,
                   fix=issue.fix + fix_extra, evidence=tuple(evidence), source=source)


def issue_for(matrix: Matrix, cause: str) -> KnownIssue:
    """The known issue that explains ``cause`` (the matrix has one for every cause code: it checks so)."""
    found = next((k for k in matrix.known_issues if k.cause == cause), None)
    if found is None:
        raise LookupError(f"the matrix has no known issue for cause {cause!r}")
    return found


#: what of a log the signatures read: its first and last bytes (a collect_env or a command line comes
#: first, the error last); the evidence reader reads the whole log, line by line, in bounded memory
LOG_HEAD = 4 << 20
LOG_TAIL = 12 << 20
#: the most of a log doctor reads (five times the 200 MB logs it is measured on); past it, the read stops
LOG_LIMIT = 1 << 30
#: the first bytes looked at for binary input (``/dev/zero``, a core dump): mostly NUL bytes is not a log
BINARY_PROBE = 64 << 10


class KeptLog:
    """A log read once, as a binary stream (``read(n)``, for the evidence reader), that keeps its first
    :data:`LOG_HEAD` and last :data:`LOG_TAIL` bytes for the signatures: memory stays bounded for a
    log of any size, standard input included."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._head = bytearray()
        self._tail = bytearray()
        self.size = 0
        self._skipped_newlines = 0  # in the bytes between the head and the kept tail
        self._text: str | None = None
        self._head_chars = 0

    def read(self, n: int) -> bytes:
        data = self._stream.read(n)
        if isinstance(data, str):  # a text stream (a test's standard input): read on as UTF-8 bytes
            data = data.encode("utf-8", "surrogateescape")
        self.size += len(data)
        if self.size > LOG_LIMIT:
            from .._bounded import InputLimit, mib

            raise InputLimit(f"more than {mib(LOG_LIMIT)} (the most doctor reads of a log; "
                             "give the part around the error, e.g. with tail -c 100M)")
        if len(self._head) < BINARY_PROBE <= len(self._head) + len(data) or (not data and self._head and
                                                                              len(self._head) < BINARY_PROBE):
            self._probe_binary(bytes(self._head) + data)
        room = max(0, LOG_HEAD - len(self._head))
        self._head += data[:room]
        self._tail += data[room:]
        if len(self._tail) > 2 * LOG_TAIL:  # trimmed now and then, not on every read
            self._trim()
        return data

    @staticmethod
    def _probe_binary(start: bytes) -> None:
        """InputLimit when the log's first bytes are mostly NUL bytes (``/dev/zero``, a core dump, an image)."""
        probe = start[:BINARY_PROBE]
        if probe.count(0) * 10 > len(probe) * 9:
            from .._bounded import InputLimit

            raise InputLimit(f"binary input, not a log (its first {len(probe)} bytes are NUL bytes)")

    def _trim(self) -> None:
        cut = len(self._tail) - LOG_TAIL
        if cut > 0:
            self._skipped_newlines += self._tail.count(b"\n", 0, cut)
            del self._tail[:cut]

    def close(self) -> None:
        """Close the stream (not standard input's, which is not ours)."""
        if self._stream not in (sys.stdin, getattr(sys.stdin, "buffer", None)):
            self._stream.close()

    def drain(self) -> None:
        """Read what is left (when no evidence reader reads it)."""
        while self.read(1 << 20):
            pass

    def text(self) -> str:
        """The kept text: all of a small log; the head and the tail of a big one, with a line between; each line as
        the evidence reader reads it (clean, without a relay's log prefix: :func:`.evidence.lines.bodies`)."""
        if self._text is None:
            self._trim()
            skipped = self.size - len(self._head) - len(self._tail)
            gap = f"\n[vresolve: {skipped} bytes in the middle not read by the signatures]\n" if skipped > 0 else ""
            head = self._head.decode("utf-8", "replace")
            self._head_chars = len(head) if gap else -1
            self._text = bodies(head) + gap + bodies(self._tail.decode("utf-8", "replace"))
        return self._text

    def line_of(self, pos: int) -> int:
        """The line number in the whole log (from 1) of position ``pos`` of :meth:`text`."""
        text = self.text()
        before = text.count("\n", 0, pos)
        if self._head_chars < 0 or pos < self._head_chars:
            return before + 1
        return before - 2 + self._skipped_newlines + 1  # the gap's own two newlines are not the log's

    def cite(self, lines: Sequence[str]) -> tuple[str, ...]:
        """Evidence lines taken from :meth:`text` as ``pasted line N: ...`` (a line not found stays as it is)."""
        text = self.text()
        out = []
        for line in lines:
            pos = text.find(line) if line.strip() else -1
            out.append(f"pasted line {self.line_of(pos)}: {line.strip()}" if pos >= 0 else line)
        return tuple(out)
