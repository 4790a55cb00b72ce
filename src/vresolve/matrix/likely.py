"""Reading ``likely_causes.yaml``: how often each kind of pasted line went with each cause in labelled public threads.

The table is generated (``bench/likely_causes.py write``) from the labels of the project's excerpts of public threads
(``tests/data/corpus``, ``tests/data/heldout``); it is an observed base rate, not a rule. ``doctor`` uses it only
where the facts of a paste settle no cause: it then says which cause such lines most often had, as a warning that
says it is not settled. A matrix directory without the file (the tests' tiny matrix) has no base rates.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ..errors import MatrixProblem
from .files import Unreadable, read_regular_file
from .model import CAUSE_CODES

__all__ = ["FILE", "Likely", "LikelyTable", "likely_table", "likely_problems"]

FILE = "likely_causes.yaml"
_FEATURE_RE = re.compile(r"[a-z]+:[\w.+-]{1,60}(?::[a-z]+)?(?:&ctx:[a-z]+)?")


class Likely(msgspec.Struct, frozen=True, kw_only=True):
    """One kind of line (a feature: ``pip:no-matching-distribution``) and the cause most of its labelled pastes had."""

    feature: str
    cause: str
    were: int  # labelled pastes with the feature whose cause this was
    of: int  # labelled pastes with the feature
    lower: float  # the lower bound of the share's one-sided 95 % Wilson interval: what the table ranks by
    runner_up: str | None = None  # the next most frequent label, "cause N"


class LikelyTable(msgspec.Struct, frozen=True, kw_only=True):
    pastes: int = 0
    rows: tuple[Likely, ...] = ()

    def by_feature(self) -> dict[str, Likely]:
        return {r.feature: r for r in self.rows}


def _rows(doc: Any) -> tuple[list[Likely], list[MatrixProblem]]:
    problems: list[MatrixProblem] = []
    rows: list[Likely] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("likely"), list):
        return [], [MatrixProblem(FILE, "", "likely", "expected a mapping with a 'likely' list")]
    for i, raw in enumerate(doc["likely"]):
        where = f"likely[{i}]"
        try:
            row = msgspec.convert({k: v for k, v in raw.items() if k not in ("source", "verified")}, Likely) \
                if isinstance(raw, dict) else None
        except msgspec.ValidationError as e:
            problems.append(MatrixProblem(FILE, where, "", str(e)))
            continue
        if row is None:
            problems.append(MatrixProblem(FILE, where, "", "expected a mapping"))
            continue
        if not raw.get("source") or raw.get("verified") != "observed":
            problems.append(MatrixProblem(FILE, where, "source", "every row lists the labelled excerpts it counts "
                                                                 "(source:) and is verified: observed"))
        if not _FEATURE_RE.fullmatch(row.feature):
            problems.append(MatrixProblem(FILE, where, "feature", f"not a feature name: {row.feature!r}"))
        if row.cause not in CAUSE_CODES:
            problems.append(MatrixProblem(FILE, where, "cause", f"{row.cause!r} is not a cause code"))
        if not 0 < row.were <= row.of or not 0 <= row.lower <= row.were / row.of:
            problems.append(MatrixProblem(FILE, where, "were", f"inconsistent counts ({row.were} of {row.of}, "
                                                                f"lower bound {row.lower})"))
        rows.append(row)
    return rows, problems


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[LikelyTable, tuple[MatrixProblem, ...]]:
    file = Path(path) / FILE
    if not file.is_file():
        return LikelyTable(), ()
    try:
        doc = yaml.load(read_regular_file(file), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, ValueError, yaml.YAMLError, Unreadable) as e:
        return LikelyTable(), (MatrixProblem(FILE, "", "", f"cannot be read: {e}"),)
    rows, problems = _rows(doc)
    pastes = doc.get("pastes") if isinstance(doc, dict) else None
    return LikelyTable(pastes=pastes if isinstance(pastes, int) else 0, rows=tuple(rows)), tuple(problems)


def likely_table(matrix_path: str) -> LikelyTable:
    """The base rates beside a matrix directory (none where it has no table, or where the table is not valid:
    ``matrix validate`` says why)."""
    table, problems = _load(matrix_path)
    return LikelyTable() if problems else table


def likely_problems(matrix_path: str) -> list[MatrixProblem]:
    """What is wrong with the table beside a matrix directory (``matrix validate``)."""
    return list(_load(matrix_path)[1])
