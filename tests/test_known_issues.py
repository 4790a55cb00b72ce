"""The known-issues table (and the facts doctor judges a log by) against real log excerpts collected from
public issue threads: each excerpt goes through ``doctor --no-env --log`` as a user would paste it.

Each file in data/logs/ starts with ``# source: <thread URL>``, ``# expect: <cause>`` and
optionally ``# also: <cause>`` lines; the rest is the excerpt, verbatim.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from vresolve.cli import main
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


def _judged(body: str, tmp_path: Path) -> dict[str, set[str]]:
    log = tmp_path / "log.txt"
    log.write_text(body, encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["doctor", "--no-env", "--log", str(log), "--json"])
    findings = json.loads(out.getvalue())["findings"]
    return {sev: {f["cause"] for f in findings if f["severity"] in sev} for sev in ("error warning info", "error")}


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_excerpt_is_classified_right(path: Path, tmp_path: Path) -> None:
    head, body = _header(path)
    (expected,) = head["expect"]
    allowed = {expected, *head.get("also", [])}
    assert head["source"][0].startswith("https://"), "every excerpt cites its thread"
    judged = _judged(body, tmp_path)
    assert expected in judged["error warning info"], f"{path.name}: expected {expected}, got {sorted(judged)}"
    assert judged["error"] <= allowed, f"{path.name}: also errors {sorted(judged['error'] - allowed)}"


#: causes judged only from an environment's facts, never from a log line: a vLLM without its compiled extension
#: beside the very torch it pins (the live probe sees the package directory; tests/test_doctor.py checks it); no
#: public thread we read shows it with the facts that tell it from a CPU torch or another torch
FACTS_ONLY = {"incomplete-install"}


def test_every_cause_code_has_two_real_excerpts() -> None:
    counts = Counter(_header(p)[0]["expect"][0] for p in LOGS)
    codes = [c for c in CAUSE_CODES if c not in FACTS_ONLY]
    assert {c: counts[c] for c in codes if counts[c] < 2} == {}
    sources = {c: {_header(p)[0]["source"][0] for p in LOGS if _header(p)[0]["expect"][0] == c} for c in codes}
    assert {c: len(s) for c, s in sources.items() if len(s) < 2} == {}, "two different threads per cause"


def test_every_cause_code_has_an_issue_row(issues) -> None:  # type: ignore[no-untyped-def]
    assert sorted({k.cause for k in issues}) == sorted(CAUSE_CODES)


def test_signal_codes_of_the_rows_are_the_readers(issues) -> None:  # type: ignore[no-untyped-def]
    """The rows' signals are codes the evidence reader types, and each code shows one cause only."""
    from vresolve.doctor.evidence.families import CODES
    from vresolve.doctor.evidence.signals import SIGNALS

    codes = {code for code, _, _ in SIGNALS} | CODES
    named = [(code, k.cause) for k in issues for code in k.signals]
    assert {code for code, _ in named} - codes == set()
    causes: dict[str, set[str]] = {}
    for code, cause in named:
        causes.setdefault(code, set()).add(cause)
    assert {code: c for code, c in causes.items() if len(c) > 1} == {}


def test_shipped_signatures_have_no_nested_lookaround(issues) -> None:  # type: ignore[no-untyped-def]
    from vresolve.matrix.patterns import backtracking_problem

    assert [s for k in issues for s in k.signatures if backtracking_problem(s)] == []


def test_h20_cublas_sigfpe_is_named_with_the_cublas_that_fixes_it(tmp_path: Path) -> None:
    """vllm#2798's crash on an H20 (SIGFPE, first frame in cublasLt): the row names cuBLAS 12.1 (torch cu121) and
    the newer cuBLAS that runs; a SIGFPE elsewhere, or a cublasLt frame under another signal, is not it."""
    _, body = _header(DATA / "logs" / "cuda-variant-mismatch__h20-cublas-12.1-sigfpe-backtrace.txt")
    log = tmp_path / "log.txt"
    log.write_text(body, encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["doctor", "--no-env", "--log", str(log), "--json"])
    (f,) = [f for f in json.loads(out.getvalue())["findings"] if "H20" in f["title"]]
    assert f["cause"] == "cuda-variant-mismatch" and "12.4.5.8" in f["fix"] and "cu121" in f["title"]
    assert any("Caught signal 8" in e for e in f["evidence"])
    (row,) = [k for k in load_matrix(SHIPPED).known_issues if k.id == "h20-cublas-12-1-sigfpe"]
    other = body.replace("cublasLt_for_cublas_ZZZ", "at::native::add_kernel")
    assert not any(p.search(other) for p in row.patterns())
    assert not any(p.search(body.replace("Caught signal 8 (Floating point exception: integer divide by zero)",
                                         "Caught signal 11 (Segmentation fault: address not mapped)"))
                   for p in row.patterns())


def test_fixes_name_the_configured_torch_index(tmp_path: Path) -> None:
    """known_issues.yaml's fixes name PyTorch's index as ``{torch_index}``, filled from torch.yaml's ``index``: a matrix
    pointed at a mirror gives fixes that name the mirror, and no fix keeps the placeholder or names another index."""
    import re
    import shutil

    shipped = load_matrix(SHIPPED)
    naming = [i.id for i in shipped.known_issues if f"{shipped.torch_index}/cu" in i.fix]
    assert len(naming) >= 10 and "{torch_index}" in (SHIPPED / "known_issues.yaml").read_text()
    matrix = tmp_path / "matrix"
    shutil.copytree(SHIPPED, matrix)
    torch_yaml = matrix / "torch.yaml"
    text, n = re.subn(r'(?m)^(index:\n  url: )"[^"]*"', r'\1"https://mirror.example.test/pytorch/whl"',
                      torch_yaml.read_text(), count=1)
    assert n == 1
    torch_yaml.write_text(text)
    mirrored = load_matrix(matrix)
    assert [i.id for i in mirrored.known_issues if "https://mirror.example.test/pytorch/whl/cu" in i.fix] == naming
    assert not [i.id for i in mirrored.known_issues if "{torch_index}" in i.fix + i.explanation]
    assert not [i.id for i in mirrored.known_issues if shipped.torch_index in i.fix + i.explanation]
