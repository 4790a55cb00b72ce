"""doctor's judgements from the facts of a pasted environment report alone (collect_env of any era and OS), and
the misreads it must not make: a GPU named in an error message is not the user's, and a report's "Is CUDA
available: True" is not contradicted. Pastes are real (the corpus's, cited in their sidecars) or cut from real
reports (cited at each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence, summary

CORPUS = Path(__file__).parent / "data" / "corpus"

# vllm-project/vllm#8626's report (P100, torch 2.3.1+cu121, driver 550.90.07), with the vLLM lines that vLLM's
# collect_env of that time prints (vllm-project/vllm#13497's form)
P100 = """\
Collecting environment information...
PyTorch version: 2.3.1+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
OS: Debian GNU/Linux 12 (bookworm) (x86_64)
Libc version: glibc-2.36
Python version: 3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0] (64-bit runtime)
Python platform: Linux-6.1.0-21-amd64-x86_64-with-glibc2.36
Is CUDA available: True
GPU models and configuration:
GPU 0: Tesla P100-PCIE-16GB
Nvidia driver version: 550.90.07
vLLM Version: 0.5.4
vLLM Build Flags:
CUDA Archs: {archs}; ROCm: Disabled; Neuron: Disabled
"""


def _doctor(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict]]:
    log = tmp_path / "paste.txt"
    log.write_text(text)
    code = main(["doctor", "--no-env", "--log", str(log), "--json"])
    return code, json.loads(capsys.readouterr().out)["findings"]


def _errors(findings: list[dict]) -> list[str]:
    return [f["cause"] for f in findings if f["severity"] == "error"]


def test_could_not_collect_under_a_torch_version_is_a_cpu_build(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/pytorch#122924: Windows, torch 2.2.2 with "CUDA used to build PyTorch: Could not collect" (older
    collect_env prints a None so) beside an RTX 4080 Laptop GPU and its driver."""
    report = CORPUS / "273-collect-env-windows-torch-could-not-collect-rtx4080.txt"
    assert main(["doctor", "--no-env", "--log", str(report), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert _errors(findings) == ["cpu-only-build"]
    assert any("RTX 4080 Laptop GPU" in e for e in findings[0]["evidence"])
    # without a torch version (torch did not import), "Could not collect" stays a gap
    seen = read_evidence("PyTorch version: N/A\nIs debug build: N/A\nCUDA used to build PyTorch: Could not collect\n")
    assert seen.torch_cuda_seen() is None


def test_a_driver_that_serves_an_older_cuda_10(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/pytorch#43058: torch 1.6.0 (CUDA 10.2) on driver 418.67, whose nvidia-smi says CUDA 10.1; CUDA 10
    has no minor-version compatibility."""
    report = CORPUS / "274-collect-env-torch16-cu102-driver418-v100.txt"
    assert main(["doctor", "--no-env", "--log", str(report), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert _errors(findings) == ["driver-too-old"]
    # the floor of NVIDIA's table (CUDA 10.2 needs 440.33) says it, and the fix names that driver
    assert "10.2 toolkit needs driver 440.33" in findings[0]["explanation"] and ">= 440.33" in findings[0]["fix"]


def test_cuda_10_floors_judge_a_report_without_the_drivers_cuda(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The same report cut to its collect_env lines (no nvidia-smi header, so not the CUDA the driver serves): the
    CUDA 10.2 toolkit's own floor (440.33, NVIDIA's Table 3) above driver 418.67 still names the cause; a driver at
    the floor is silent."""
    report = (CORPUS / "274-collect-env-torch16-cu102-driver418-v100.txt").read_text()
    cut = "\n".join(line for line in report.splitlines() if "NVIDIA-SMI" not in line and "CUDA Version" not in line)
    code, findings = _doctor(tmp_path, cut, capsys)
    assert code == 1 and _errors(findings) == ["driver-too-old"]
    assert "440.33" in findings[0]["explanation"]
    code, findings = _doctor(tmp_path, cut.replace("418.67", "440.33"), capsys)
    assert "driver-too-old" not in {f["cause"] for f in findings}


@pytest.mark.parametrize(("available", "severity"), [("", "error"), ("Is CUDA available: False\n", "error"),
                                                     ("Is CUDA available: True\n", "warning")])
def test_a_driver_below_the_minor_version_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str], available: str,
                                                severity: str) -> None:
    """pytorch/pytorch#112553's facts: torch 2.1.0+cu121 on a 470.182.03 driver (below CUDA 12's 525.60.13). Where
    the report says torch sees the GPU all the same, the finding is a warning that does not say otherwise."""
    code, findings = _doctor(tmp_path, "PyTorch version: 2.1.0+cu121\nCUDA used to build PyTorch: 12.1\n" + available
                             + "GPU models and configuration: GPU 0: Tesla T4\nNvidia driver version: 470.182.03\n",
                             capsys)
    (found,) = [f for f in findings if f["cause"] == "driver-too-old"]
    assert found["severity"] == severity and "525.60.13" in found["fix"]
    assert "is_available() is False" not in found["explanation"]
    assert code == 1 if severity == "error" else code == 0


def test_windows_and_wsl_drivers_are_judged_by_windows_floors(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """vllm-project/vllm#9293's WSL report: torch cu121 on the Windows driver 551.88 is fine; the same torch on a
    Windows 472.12 driver (below 12.x's Windows floor 528.33) is not."""
    _, findings = _doctor(tmp_path, (CORPUS / "002-collect-env-vllm-healthy-wsl-rtx4070.txt").read_text(), capsys)
    assert not [f for f in findings if f["cause"] == "driver-too-old"]
    _, findings = _doctor(tmp_path, "PyTorch version: 2.4.0+cu121\nCUDA used to build PyTorch: 12.1\n"
                          "OS: Microsoft Windows 11 Pro\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 3060\n"
                          "Nvidia driver version: 472.12\n", capsys)
    (found,) = [f for f in findings if f["cause"] == "driver-too-old"]
    assert "528.33" in found["fix"]


def test_vllm_below_its_minimum_capability(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vllm-project/vllm#8626: a P100 (6.0) under vLLM 0.5.4, whose kernels start at 7.0; a source build with an
    arch list of its own ("CUDA Archs: 6.0") is not judged by the release's kernels."""
    code, findings = _doctor(tmp_path, P100.format(archs="Not Set"), capsys)
    assert code == 1 and "gpu-too-old-for-feature" in _errors(findings)
    assert any("7.0" in f["explanation"] for f in findings if f["severity"] == "error")
    code, findings = _doctor(tmp_path, P100.format(archs="6.0"), capsys)
    assert code == 0 and not _errors(findings)


def test_vllm_without_kernels_for_a_newer_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.4.0's wheel carries SASS for 8.0-9.0 and no PTX (the matrix's fatbin reading): an RTX 5090 (12.0)
    has no kernels in it."""
    code, findings = _doctor(tmp_path, "PyTorch version: 2.1.2+cu121\nCUDA used to build PyTorch: 12.1\n"
                             "Is CUDA available: True\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090\n"
                             "Nvidia driver version: 570.124.06\nvLLM Version: 0.4.0\n", capsys)
    assert code == 1 and "arch-not-in-build" in _errors(findings)


@pytest.mark.parametrize("line", [
    # 1038lab/ComfyUI-QwenVL#28 (the user's GPU is an 8.6 one, not the example)
    "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). Your GPU's capability "
    "is 8.6. Please select a non-FP8 model.",
    "ValueError: The quantization method fp8 is only supported on H100 GPUs",
    "this model needs e.g. H100 to run in fp8",
])
def test_a_gpu_named_in_a_message_is_not_the_users(line: str) -> None:
    assert "gpus" not in summary(read_evidence(line + "\n"))
    assert summary(read_evidence("I run vllm on an RTX 3090 with cuda 12.1\n"))["gpus"] == ["RTX 3090"]


def test_cuda_available_true_is_not_contradicted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A report saying "Is CUDA available: True" beside a log's "No CUDA GPUs are available": the finding is said of
    the process that failed, not of the reported environment."""
    _, findings = _doctor(tmp_path, (CORPUS / "276-healthy-collect-env-h100-cu124-driver535.txt").read_text()
                          + "RuntimeError: No CUDA GPUs are available\n", capsys)
    (found,) = [f for f in findings if f["cause"] == "gpu-not-visible"]
    assert "is_available()` is False" not in found["explanation"]
    assert "Is CUDA available: True" in found["explanation"]


@pytest.mark.parametrize("name", ["276-healthy-collect-env-h100-cu124-driver535.txt",
                                  "177-healthy-collect-env-2xv100-torch240-cu118-request.txt",
                                  "074-collect-env-healthy-rtx4090-cu121-tool-calling.txt"])
def test_healthy_reports_stay_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, findings = _doctor(tmp_path, (CORPUS / name).read_text(), capsys)
    assert code == 0 and not _errors(findings)
