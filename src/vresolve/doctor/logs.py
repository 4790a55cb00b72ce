"""Error logs matched against the known-issues table (``compat_matrix/known_issues.yaml``), whose
signatures tell look-alikes apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..matrix import KnownIssue, Matrix
from .facts import Finding


def _evidence(text: str, match: re.Match[str], context: int = 1) -> tuple[str, ...]:
    lines = text.splitlines()
    line_no = text.count("\n", 0, match.start())
    lo, hi = max(0, line_no - context), min(len(lines), line_no + context + 1)
    return tuple(line.rstrip()[:300] for line in lines[lo:hi] if line.strip())


def match_log(text: str, issues: Sequence[KnownIssue]) -> list[tuple[KnownIssue, tuple[str, ...]]]:
    """Every known issue whose signature matches the log, with the lines that show it, in log order."""
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


def classify(matrix: Matrix, text: str) -> KnownIssue | None:
    hits = match_log(text, matrix.known_issues)
    return hits[0][0] if hits else None
