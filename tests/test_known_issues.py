"""The known-issues table against real log excerpts collected from public issue threads.

Each file in data/logs/ starts with ``# source: <thread URL>``, ``# expect: <cause>`` and
optionally ``# also: <cause>`` lines; the rest is the excerpt, verbatim.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from vresolve.doctor import match_log
from vresolve.matrix import CAUSE_CODES, load_matrix

from .conftest import DATA, SHIPPED

LOGS = sorted((DATA / "logs").glob("*.txt"))


def _header(path: Path) -> tuple[dict[str, list[str]], str]:
    head: dict[str, list[str]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    body_start = 0
    for i, line in enumerate(lines):
        if not line.startswith("# "):
            body_start = i
            break
        key, _, value = line[2:].partition(":")
        head.setdefault(key.strip(), []).append(value.strip())
    return head, "\n".join(lines[body_start:])


@pytest.fixture(scope="module")
def issues():  # type: ignore[no-untyped-def]
    return load_matrix(SHIPPED).known_issues


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_excerpt_is_classified_right(path: Path, issues) -> None:  # type: ignore[no-untyped-def]
    head, body = _header(path)
    (expected,) = head["expect"]
    allowed = {expected, *head.get("also", [])}
    assert head["source"][0].startswith("https://"), "every excerpt cites its thread"
    matched = {k.cause for k, _ in match_log(body, issues)}
    assert expected in matched, f"{path.name}: expected {expected}, matched {sorted(matched)}"
    assert matched <= allowed, f"{path.name}: also matched {sorted(matched - allowed)}"


def test_every_cause_code_has_two_real_excerpts() -> None:
    counts = Counter(_header(p)[0]["expect"][0] for p in LOGS)
    assert {c: counts[c] for c in CAUSE_CODES if counts[c] < 2} == {}
    sources = {c: {_header(p)[0]["source"][0] for p in LOGS if _header(p)[0]["expect"][0] == c} for c in CAUSE_CODES}
    assert {c: len(s) for c, s in sources.items() if len(s) < 2} == {}, "two different threads per cause"


def test_every_cause_code_has_an_issue_row(issues) -> None:  # type: ignore[no-untyped-def]
    assert sorted({k.cause for k in issues}) == sorted(CAUSE_CODES)
