"""The judgements of a paste's typed lines on known-issues rows with ``when:`` (Facts.log): a vLLM wheel of another
CUDA major than torch's, a container started without GPUs, NGC's banner against the host's driver (and the error
not settled when the paste does not show the host's driver)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vresolve.doctor.evidence import read_evidence
from vresolve.doctor.judge import Facts, holds, judged
from vresolve.doctor.pasted import PASTED_PREDICATES
from vresolve.doctor.predicates import PREDICATES
from vresolve.host import Host
from vresolve.matrix import Matrix, load_matrix

from .conftest import DATA, ROOT, doctor_paste


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()



@pytest.mark.parametrize("where", ["compat_matrix/known_issues.yaml", "tests/data/matrix/tiny/known_issues.yaml"])
def test_every_pasted_predicate_judges_a_row(where: str) -> None:
    rows = yaml.safe_load((ROOT / where).read_text())["issues"]
    named = {r.get("when") for r in rows}
    assert set(PASTED_PREDICATES) <= named
    assert set(PASTED_PREDICATES) <= set(PREDICATES)


def test_pasted_predicates_read_only_the_log(matrix: Matrix) -> None:
    """Without a paste (a live run's facts) they hold nowhere."""
    assert list(holds(Facts(host=Host(), matrix=matrix), PASTED_PREDICATES)) == []


@pytest.mark.parametrize(("paste", "cause", "lines"), [
    # vllm 0.11.0 from PyPI (CUDA 12) beside torch cu118: two lines, the vLLM and torch's CUDA
    ("corpus/095-vllm-flash-attn-not-built-for-cu118.txt", "cuda-variant-mismatch", 2),
    ("corpus/106-cuda-variant-vllm-cu13-wheel-with-cu129-torch.txt", "cuda-variant-mismatch", 2),
    # a report from inside docker: CUDA torch, is_available False, no GPU and no driver shown
    ("corpus/151-collect-env-in-docker-no-cuda-8xv100.txt", "gpu-not-visible", 2),
    # NGC's banner: release 545.23 needed, 535.104.05 detected (one line shows both: cited once)
    ("corpus/201-driver-too-old-ngc-banner-545-host-535.txt", "driver-too-old", 1),
])
def test_pasted_rows_name_their_cause(paste: str, cause: str, lines: int, matrix: Matrix,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = doctor_paste(DATA / paste, capsys)
    found = [f for f in out["findings"] if f["cause"] == cause]
    assert rc == 1 and found and found[0]["severity"] == "error"
    e = read_evidence((DATA / paste).read_text())
    hits = [hit for row, hit in holds(Facts(host=Host(), matrix=matrix, log=e), PASTED_PREDICATES)
            if row.cause == cause]
    assert hits and len(dict.fromkeys(hits[0].evidence)) == lines
    assert set(hits[0].evidence) <= set(found[0]["evidence"])


def test_banner_without_host_driver_is_not_settled(tmp_path: Path, matrix: Matrix,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The banner's first line alone (https://github.com/NVIDIA/nvidia-docker/issues/1479, cut there): the release it
    needs, no host driver: no driver-too-old, an error whose cause is not named, asking for the host's nvidia-smi."""
    banner = (DATA / "heldout/002-driver-too-old-ngc-tensorrt-450-host-440.txt").read_text().splitlines()[0]
    log = tmp_path / "banner.txt"
    log.write_text(banner + "\n")
    rc, out = doctor_paste(log, capsys)
    assert rc == 1
    assert "driver-too-old" not in [f["cause"] for f in out["findings"]]
    assert [u["missing"] for u in out["unclear"]] == ["the host's NVIDIA driver version"]
    assert "nvidia-smi" in out["unclear"][0]["paste"]
    # the live path says nothing of a row whose fact is missing
    said: list[str] = []
    judged(Facts(host=Host(), matrix=matrix, log=read_evidence(banner + "\n")),
           lambda cause, *a, **k: said.append(cause), PASTED_PREDICATES)
    assert said == []


def test_parallel_build_failed_is_a_weak_row(capsys: pytest.CaptureFixture[str]) -> None:
    """A cmake build of 64 jobs that failed with no compiler error (corpus 139): the row's title with the job count,
    a warning; the predicate is judged only where no error is named, so it is not among PASTED_PREDICATES."""
    rc, out = doctor_paste(DATA / "corpus/139-build-oom-vllm-cmake-j64-flash-attn.txt", capsys)
    found = [f for f in out["findings"] if f["cause"] == "build-oom"]
    assert rc == 0 and found and found[0]["severity"] == "warning"
    assert found[0]["title"].startswith("A build of 64 parallel jobs failed")
    assert "parallel-build-failed" not in PASTED_PREDICATES
