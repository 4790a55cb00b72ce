"""DeepSpeed's ds_report read as a report (issue 25: "every fact the checks use can come from ... any paste format"),
and nvcc against torch's CUDA said as torch's extension builder says it: another major refused, another minor only
warned of."""

from __future__ import annotations

import json

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

from .conftest import DATA

# tests/data/heldout/316 (deepspeedai/DeepSpeed#6849's ds_report, cut to its environment section)
_ENV = (DATA / "heldout/316-healthy-ds-report-torch230-cu121.txt").read_text()
# tests/data/heldout/814 (deepspeedai/DeepSpeed#7697: the op table alone, a healthy environment)
_OPS = (DATA / "heldout/814-healthy-ds-report-zero-stage-question-optional-op-warnings.txt").read_text()


def test_the_environment_section_is_read() -> None:
    e = read_evidence(_ENV)
    assert "ds_report" in e.kinds
    assert e.torch == "2.3.0+cu121"
    seen = e.torch_cuda_seen()
    assert seen is not None and seen.value == "12.1" and "torch cuda version" in seen.text
    nvcc = e.best("nvcc")
    assert nvcc is not None and nvcc.value.release == "12.0"
    d = e.dist("deepspeed")
    assert d is not None and d.value.version == "0.15.5+46d7d0d1"


def test_the_prebuilt_ops_torch_is_not_the_installed_torch() -> None:
    # "deepspeed wheel compiled w. ...... torch 0.0, cuda 0.0": no op prebuilt (JIT), not a torch 0.0
    e = read_evidence("DeepSpeed general environment info:\ndeepspeed wheel compiled w. ...... torch 0.0, cuda 0.0\n")
    assert e.dist("torch") is None and e.torch_cuda_seen() is None


def test_rows_without_a_header_are_not_a_report() -> None:
    assert "ds_report" not in read_evidence("torch version .................... 2.3.0+cu121\n").kinds


def test_an_op_table_alone_is_a_healthy_report(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    log = tmp_path / "ops.txt"
    log.write_text(_OPS)
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 0  # not "holds nothing doctor can read"
    assert json.loads(capsys.readouterr().out)["findings"] == []


@pytest.mark.parametrize(("nvcc", "severity", "words"), [
    ("12.0", "info", "only warns of a minor version mismatch"),  # 316 itself: a healthy environment
    ("11.8", "warning", "refuses it"),
])
def test_nvcc_against_torch_cuda(nvcc: str, severity: str, words: str, tmp_path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ds.txt"
    log.write_text(_ENV.replace("nvcc version ..................... 12.0",
                                f"nvcc version ..................... {nvcc}"))
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    (f,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["cause"] == "toolkit-mismatch"]
    assert f["severity"] == severity and words in f["explanation"]
