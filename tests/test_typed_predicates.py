"""The judgements of a paste's typed lines made among its signals, on known-issues rows with ``when:``
(``TYPED_PREDICATES``, over Facts.log): a build with pip's isolated torch, a build out of memory, pip's check that a
package needs another torch or companion, an installer collecting another torch, a companion built for another torch
or Python. Each hit names the pasted lines doctor says its cause by, where it said them when these were judged in
pasted.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vresolve.doctor.evidence import read_evidence
from vresolve.doctor.judge import Facts, holds
from vresolve.doctor.pasted import PASTED_PREDICATES, TYPED_PREDICATES, classify
from vresolve.doctor.predicates import PREDICATES
from vresolve.host import Host
from vresolve.matrix import Matrix, load_matrix

from .conftest import DATA, ROOT, doctor_paste


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()



@pytest.mark.parametrize("where", ["compat_matrix/known_issues.yaml", "tests/data/matrix/tiny/known_issues.yaml"])
@pytest.mark.parametrize("name", TYPED_PREDICATES)
def test_every_typed_predicate_judges_a_row(where: str, name: str) -> None:
    rows = [r for r in yaml.safe_load((ROOT / where).read_text())["issues"] if r.get("when") == name]
    assert len(rows) == 1 and name in PREDICATES and name not in PASTED_PREDICATES


def test_typed_predicates_read_only_the_log(matrix: Matrix) -> None:
    """Without a paste (a live run's facts) they hold nowhere."""
    assert list(holds(Facts(host=Host(), matrix=matrix), TYPED_PREDICATES)) == []


@pytest.mark.parametrize(("name", "paste", "cause"), [
    # torch's CUDA in pip's build environment (cu117) unlike the installed torch's (cu121)
    ("build-isolated-torch", "corpus/102-build-isolation-build-env-torch-cu117-user-cu121.txt", "build-isolation"),
    # cc1plus killed in a build
    ("build-out-of-memory", "corpus/017-build-oom-cc1plus-lc0.txt", "build-oom"),
    # pip's check: torchaudio 2.0.2 requires torch==2.0.1, the paste has a 2.1.0 nightly
    ("pip-check-needs-other-companion", "corpus/128-torchaudio-requires-201-have-210-dev-undefined-symbol.txt",
     "companion-mismatch"),
    # xformers 0.0.19 pins torch 2.0.0: pip collects it over the torch installed
    ("installer-collects-other-torch", "corpus/125-installer-replaced-torch-xformers-0019-pins-200.txt",
     "installer-replaced-torch"),
    # xFormers' own table: built for torch 2.0.1, run with 2.1.0
    ("built-for-other-torch-or-python", "corpus/069-xformers-built-for-torch-201-have-210.txt",
     "companion-mismatch"),
])
def test_typed_rows_name_their_cause(name: str, paste: str, cause: str, matrix: Matrix,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = doctor_paste(DATA / paste, capsys)
    found = [f for f in out["findings"] if f["cause"] == cause]
    assert found and rc == (1 if any(f["severity"] == "error" for f in out["findings"]) else 0)
    e = read_evidence((DATA / paste).read_text())
    hits = [(row, hit) for row, hit in holds(Facts(host=Host(), matrix=matrix, log=e), (name,))]
    assert hits and all(row.cause == cause for row, _ in hits)
    row, hit = hits[0]
    assert hit.seen and hit.evidence == tuple(f"pasted line {s.line}: {s.text}" for s in hit.seen)
    assert any(hit.evidence[0] in f["evidence"] for f in found)


def test_pip_check_vllm_needs_other_torch(tmp_path: Path, matrix: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    """pip's check that vLLM pins another torch (https://github.com/hiyouga/EasyR1/issues/27, its title): the torch
    ABI, not a companion; and ``classify`` names it as it did when pasted.py judged it."""
    text = "vllm 0.7.3 requires torch==2.5.1, but you have torch 2.4.0+cu124 which is incompatible.\n"
    log = tmp_path / "pip-check.txt"
    log.write_text(text)
    rc, out = doctor_paste(log, capsys)
    assert rc == 1 and "torch-abi-mismatch" in [f["cause"] for f in out["findings"]]
    assert "companion-mismatch" not in [f["cause"] for f in out["findings"]]
    hits = list(holds(Facts(host=Host(), matrix=matrix, log=read_evidence(text)), TYPED_PREDICATES))
    assert [row.when for row, _ in hits] == ["pip-check-vllm-needs-other-torch"]
    issue = classify(matrix, text)
    assert issue is not None and issue.cause == "torch-abi-mismatch"
