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


# --- a pasted report's CPU-only torch where the paste shows no GPU (heldout 871, 872: the eighth split, measured
# blind first) ---

@pytest.mark.parametrize("text", [
    # heldout 872 (oobabooga/one-click-installers): collect_env cut after its first lines
    "PyTorch version: 2.0.1+cpu\nIs debug build: False\nCUDA used to build PyTorch: Could not collect\n",
    # heldout 871's form: conda list's cpu build of pytorch
    "# Name                    Version                   Build  Channel\npytorch                   1.11.0"
    "          py3.8_cpu_0    pytorch\n",
])
def test_a_cpu_torch_without_a_gpu_shown_is_a_warning(text: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "report.txt"
    log.write_text(text)
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 0  # a warning: the GPUs are not shown
    (f,) = json.loads(capsys.readouterr().out)["findings"]
    assert (f["cause"], f["severity"]) == ("cpu-only-build", "warning")


@pytest.mark.parametrize("text", [
    "PyTorch version: 2.0.1+cu118\nCUDA used to build PyTorch: 11.8\n",  # a CUDA build
    "PyTorch version: 2.5.1+rocm6.2\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.2.41133\n",
    "PyTorch version: 2.5.1\nCUDA used to build PyTorch: None\nOS: macOS 14.5 (arm64)\n",  # macOS: no CUDA build exists
    "torch 2.5.1\n",  # which CUDA it is built for is not shown
])
def test_no_cpu_warning_where_no_cuda_build_is_shown_or_fits(text: str, tmp_path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "report.txt"
    log.write_text(text)
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    answer = json.loads(capsys.readouterr().out)  # findings, or an input error said as JSON
    assert "cpu-only-build" not in [f["cause"] for f in answer.get("findings", [])]


# --- a program relaying another's stderr line by line (heldout 878: "ComfyUI error: Traceback ...", the eighth split,
# measured blind first: it got "no problems found" over a traceback) ---

def test_a_relayed_traceback_is_a_failure(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "relay.txt"
    log.write_text((DATA / "heldout/878-unclear-cuda-unknown-error-visible-devices-wording-laptop-sleep.txt").read_text())
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    (u,) = json.loads(capsys.readouterr().out)["unclear"]
    assert u["error"].startswith("RuntimeError: CUDA unknown error")


@pytest.mark.parametrize(("line", "body"), [
    ("ComfyUI error: RuntimeError: CUDA unknown error", "RuntimeError: CUDA unknown error"),
    ('Backend stderr:   File "main.py", line 72, in <module>', '  File "main.py", line 72, in <module>'),
    ("CUDA error: out of memory", "CUDA error: out of memory"),  # CUDA's own words, not a relay
    ("NCCL error: ncclSystemError: System call failed", "NCCL error: ncclSystemError: System call failed"),
    ("Build error: see the log above", "Build error: see the log above"),  # no traceback or exception follows
])
def test_the_relay_prefix_is_cut_only_before_a_traceback_or_exception(line: str, body: str) -> None:
    from vresolve.doctor.evidence.lines import strip_prefix

    assert strip_prefix(line)[1] == body


# --- CUDA_VISIBLE_DEVICES naming no GPU of the machine (heldout 894, pytorch/examples#115: the eighth split, measured
# blind first) ---

_SMI_ONE_GPU = "|   0  TITAN X (Pascal)    Off  | 0000:01:00.0      On |                  N/A |\n"


@pytest.mark.parametrize(("variable", "named"), [
    ("CUDA_VISIBLE_DEVICES=2", True),  # past the one GPU the table lists
    ("CUDA_VISIBLE_DEVICES=-1", True),
    ("CUDA_VISIBLE_DEVICES=0", False),  # names the GPU: another cause
])
def test_visible_devices_naming_no_gpu(variable: str, named: bool, tmp_path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.txt"
    log.write_text(f"$ {variable} python main.py\nTHCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=109 error=38 : "
                   f"no CUDA-capable device is detected\n$ nvidia-smi\n{_SMI_ONE_GPU}")
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    causes = [f["cause"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert ("gpu-not-visible" in causes) is named


def test_visible_devices_past_a_partial_list_is_not_judged(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    # the GPUs a user names in prose are not the machine's list: index 1 may exist (another row may still say the GPUs
    # are hidden from the process; this one does not say that index 1 names no GPU)
    log = tmp_path / "run.txt"
    log.write_text("I have an RTX 3090.\n$ CUDA_VISIBLE_DEVICES=1 python train.py\nRuntimeError: No CUDA GPUs are available\n")
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if "names no GPU" in f["title"]]
