"""The one judgement path: the known-issues rows that name a predicate (``when:``) evaluated over the facts.

Each row that holds gives a finding that says what its row says (cause, severity, title, explanation, fix), with
the evidence and placeholder values its predicate found; :func:`row_problems` is ``matrix validate``'s check that
rows and predicates name each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from ..errors import MatrixProblem
from ..matrix import KnownIssue, Matrix
from .facts import SEVERITIES
from .predicates import PREDICATES, Facts, Hit

__all__ = ["Facts", "judged", "row_problems", "fill"]

_PLACEHOLDER_RE = re.compile(r"\{([a-z_]+)\}")

Emit = Callable[..., None]


def fill(text: str, values: Mapping[str, str]) -> str:
    """A row's text with its ``{name}`` placeholders filled (a name without a value is left as written)."""
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m[1], m[0]), text)


def _softer(severity: str) -> str:
    return SEVERITIES[min(SEVERITIES.index(severity) + 1, len(SEVERITIES) - 1)]


def holds(facts: Facts, names: tuple[str, ...] | None = None) -> Iterator[tuple[KnownIssue, Hit]]:
    """Every (row, hit) of the rows whose predicate holds, in the table's order (``names``: only these
    predicates')."""
    for row in facts.matrix.known_issues:
        if row.when is None or (names is not None and row.when not in names):
            continue
        pred = PREDICATES.get(row.when)
        if pred is None:
            continue  # matrix validate refuses it; a matrix read without validating judges what it can
        for hit in pred.test(facts):
            yield row, hit


def judged(facts: Facts, emit: Emit, names: tuple[str, ...] | None = None) -> None:
    """The findings of the rows that hold, each said with its row's words (see :func:`holds`), through ``emit``
    (cause, severity, title, explanation, fix, evidence; ``facts``: the facts its predicate reads)."""
    for row, hit in holds(facts, names):
        if hit.missing is not None:
            continue  # a fact the row needs is not shown: no finding (a paste says so as an error not settled)
        emit(row.cause, _softer(row.severity) if hit.softer else row.severity, fill(row.title, hit.fill),
             fill(row.explanation, hit.fill), fill(row.fix, hit.fill), hit.evidence,
             facts=PREDICATES[row.when or ""].facts)


def row_problems(matrix: Matrix) -> list[MatrixProblem]:
    """Rows that name an unknown predicate or a placeholder their predicate does not fill, and predicates no row
    names."""
    out = []
    named = set()
    for i, row in enumerate(matrix.known_issues):
        if row.when is None:
            continue
        where = f"issues[{i}] '{row.id}'"
        pred = PREDICATES.get(row.when)
        if pred is None:
            out.append(MatrixProblem("known_issues.yaml", where, "when",
                                     f"unknown predicate {row.when!r} (doctor's predicates: "
                                     f"{', '.join(sorted(PREDICATES))})"))
            continue
        named.add(row.when)
        for fld, text in (("title", row.title), ("explanation", row.explanation), ("fix", row.fix)):
            unknown = sorted({m for m in _PLACEHOLDER_RE.findall(text) if m not in pred.fills})
            if unknown:
                out.append(MatrixProblem("known_issues.yaml", where, fld,
                                         f"placeholder(s) {', '.join(unknown)} not filled by predicate "
                                         f"{row.when!r} (it fills: {', '.join(pred.fills) or 'none'})"))
    for name in sorted(set(PREDICATES) - named):
        out.append(MatrixProblem("known_issues.yaml", "issues", "when",
                                 f"no row names predicate {name!r} (every predicate judges a row)"))
    return out
