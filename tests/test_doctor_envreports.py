"""Environment reports of other tools and eras read as facts, and judged from them through doctor's one path (issue 25,
"collectenv"): Hugging Face's ``transformers-cli env`` / ``diffusers-cli env``, SGLang's ``check_env``, Ollama's GPU
discovery, Windows' own form of the driver version, and torchvision's nms error against the pair the matrix knows.

The lines are real report lines (tests/data/corpus 950-975 cite their threads); the combinations built from them are
look-alikes: the same words, another fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence, summary
from vresolve.doctor.evidence.tokens import nvidia_of_windows_driver

from .conftest import DATA, doctor_answer, error_causes

CORPUS = DATA / "corpus"


_doctor = doctor_answer
_errors = error_causes


# ---------------------------------------------------------------------------------------------------------------
# facts read

HF_CPU = "- PyTorch version (GPU?): 2.1.1+cpu (False)\n"
HF_CUDA = "  - PyTorch version (GPU?): 2.2.1+cu121 (True)\n"
SMI = ("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
       "|   0  NVIDIA GeForce RTX 3090        Off | 00000000:01:00.0 Off |                  N/A |\n")


@pytest.mark.parametrize(("line", "torch", "available"), [
    (HF_CPU, "2.1.1+cpu", False), (HF_CUDA, "2.2.1+cu121", True),
    ("PyTorch version (GPU?): 1.12.1+cu116 (False)\n", "1.12.1+cu116", False)])
def test_hugging_face_env_torch_line(line: str, torch: str, available: bool) -> None:
    e = read_evidence(line)
    s = summary(e)
    assert s["dists"]["torch"] == torch and s["cuda_available"] is available
    assert e.dist("torch").rank == 0  # a tool's report, as collect_env's own line


def test_hugging_face_env_other_lines_are_not_torch() -> None:
    e = read_evidence("- Tensorflow version (GPU?): 2.15.0 (True)\n- Flax version (CPU?/GPU?/TPU?): 0.8.2 (CPU)\n")
    assert e.dist("torch") is None and e.best("cuda_available") is None


SGLANG = ("Python: 3.12.12 (main, Oct 10 2025, 08:52:57) [GCC 11.4.0]\nCUDA available: True\n"
          "GPU 0,1,2,3: NVIDIA GB300\nGPU 0,1,2,3 Compute Capability: 10.3\nCUDA_HOME: /usr/local/cuda\n"
          "NVCC: Cuda compilation tools, release 13.0, V13.0.88\nCUDA Driver Version: 580.82.07\n"
          "PyTorch: 2.9.1+cu130\nsglang: 0.5.5.post3\n")


def test_sglang_check_env() -> None:
    e = read_evidence(SGLANG)
    s = summary(e)
    assert s["gpus"] == ["NVIDIA GB300"] and s["compute_capabilities"] == ["10.3"]
    assert {g.value.index for g in e.gpus if g.rank == 0} == {0, 1, 2, 3}
    assert s["driver"] == "580.82.07" and s["cuda_available"] is True
    torch = e.dist("torch")
    assert torch is not None and torch.value.version == "2.9.1+cu130" and torch.rank == 0


def test_a_pytorch_line_outside_check_env_stays_prose() -> None:
    """'PyTorch: 2.3' in a user's list is the user's word (prose rank), not a report's."""
    torch = read_evidence("My setup\nPyTorch: 2.3.1+cu121\nGPU: RTX 4090\n").dist("torch")
    assert torch is not None and torch.rank > 0


def test_ollama_discovery_lines() -> None:
    text = (CORPUS / "953-unknown-ollama-journal-inference-compute-rtx4080-cuda-driver-123.txt").read_text()
    e = read_evidence(text)
    s = summary(e)
    assert s["compute_capabilities"] == ["8.9"] and "NVIDIA GeForce RTX 4080" in s["gpus"]
    assert s["driver"] == "545.23.08"  # libcuda.so.545.23.08: the driver's own library
    assert e.value("cuda_driver") != "545.23"  # "CUDA driver version: 12.3" is CUDA's, not the driver's


@pytest.mark.parametrize(("windows", "nvidia"), [("31.0.15.5222", "552.22"), ("32.0.16.1074", "610.74"),
                                                  ("31.0.15.3713", "537.13")])
def test_windows_driver_form(windows: str, nvidia: str) -> None:
    assert nvidia_of_windows_driver(windows) == nvidia
    assert summary(read_evidence(f"Nvidia driver version: {windows}\n"))["driver"] == nvidia


@pytest.mark.parametrize(("text", "driver"), [
    ("Card name: NVIDIA GeForce RTX 4070\nDriver Version: 32.0.15.6094\n", "560.94"),  # dxdiag's NVIDIA card
    ("Card name: Intel(R) UHD Graphics 770\nDriver Version: 31.0.101.4502\n", None),  # Intel's: no NVIDIA driver
    ("Card name: AMD Radeon RX 7900 XTX\nDriver Version: 31.0.21912.14\n", None),  # AMD's
])
def test_windows_display_driver_lines(text: str, driver: str | None) -> None:
    assert summary(read_evidence(text)).get("driver") == driver


@pytest.mark.parametrize("version", ["566.36", "535.104.05", "31.0.101.5333", "10.18.13"])
def test_other_driver_forms_are_kept(version: str) -> None:
    assert nvidia_of_windows_driver(version) is None


# ---------------------------------------------------------------------------------------------------------------
# judged from the facts, whatever the format


def test_cpu_torch_in_hf_env_beside_a_gpu(tmp_path: Path) -> None:
    assert "cpu-only-build" in _errors(_doctor(tmp_path, HF_CPU + "\n" + SMI))


def test_cuda_torch_in_hf_env_beside_a_gpu_is_silent(tmp_path: Path) -> None:
    assert _errors(_doctor(tmp_path, HF_CUDA + "\n" + SMI)) == []


def test_sglang_report_with_a_driver_below_torch_cuda(tmp_path: Path) -> None:
    text = SGLANG.replace("580.82.07", "470.57.02").replace("2.9.1+cu130", "2.4.0+cu121")
    assert _errors(_doctor(tmp_path, text)) == ["driver-too-old"]


def test_sglang_report_healthy_is_silent(tmp_path: Path) -> None:
    assert _errors(_doctor(tmp_path, SGLANG)) == []


def test_windows_form_driver_is_not_judged_too_old(tmp_path: Path) -> None:
    """Windows' 31.0.15.5222 read as a version would be older than any CUDA's floor; it is NVIDIA's 552.22."""
    text = ("PyTorch version: 2.3.1+cu121\nCUDA used to build PyTorch: 12.1\nIs CUDA available: True\n"
            "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3060\nNvidia driver version: 31.0.15.5222\n")
    assert _errors(_doctor(tmp_path, text)) == []


NMS = "RuntimeError: operator torchvision::nms does not exist\n"


def test_nms_with_the_matrix_pair_is_not_named(tmp_path: Path) -> None:
    """torch 2.7.1 with torchvision 0.22.1 (the release pinned to it): the error is shown, its cause is not named."""
    answer = _doctor(tmp_path, NMS + "torch                     2.7.1\ntorchvision               0.22.1\n")
    assert _errors(answer) == [] and answer["unclear"]
    assert "0.22.1" in answer["unclear"][0]["missing"]


@pytest.mark.parametrize("listed", [
    "torch                     2.7.1\ntorchvision               0.21.0\n",  # another release's torchvision
    "torch                     2.5.1+cu121\ntorchvision               0.20.1+cpu\n",  # the pair, another flavour
    "",  # neither shown
])
def test_nms_mismatch_still_named(tmp_path: Path, listed: str) -> None:
    assert "companion-mismatch" in _errors(_doctor(tmp_path, NMS + listed))


# ---------------------------------------------------------------------------------------------------------------
# the corpus reports of this sweep: healthy ones silent


@pytest.mark.parametrize("path", sorted(CORPUS.glob("9[5-7]?-healthy-*.txt")), ids=lambda p: p.stem[:40])
def test_healthy_reports_are_silent(tmp_path: Path, path: Path) -> None:
    assert _errors(_doctor(tmp_path, path.read_text())) == []


# ---------------------------------------------------------------------------------------------------------------
# torch's build configuration (torch.__config__.show()), as OpenMMLab's and detectron2's collect_env print it
# ---------------------------------------------------------------------------------------------------------------

MMDET_986 = DATA / "heldout" / "986-toolkit-mismatch-mmdet-collect-env-rtx3090-nvcc-100-torch-171-cuda-runtime-110.txt"


def test_torch_build_configuration_gives_torch_cuda_and_arch_list() -> None:
    """MMDetection's collect_env (heldout 986, measured blind, development material since): "PyTorch compiling details:
    PyTorch built with:" then torch's own "- CUDA Runtime 11.0" and "- NVCC architecture flags: -gencode;..." lines."""
    e = read_evidence(MMDET_986.read_text())
    assert e.value("torch_arch_list") == ("sm_37", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "compute_37")
    seen = e.torch_cuda_seen()
    assert seen is not None and seen.value == "11.0" and "CUDA Runtime 11.0" in seen.text


def test_nvcc_of_another_major_than_torchs_build_configuration(tmp_path: Path) -> None:
    """The report's nvcc 10.0 beside torch's CUDA runtime 11.0: toolkit-mismatch (the thread's finding)."""
    answer = _doctor(tmp_path, MMDET_986.read_text())
    assert "toolkit-mismatch" in {f["cause"] for f in answer["findings"] if f["severity"] != "info"}


def test_cuda_runtime_line_outside_torchs_configuration_is_not_read() -> None:
    """Look-alike: "- CUDA Runtime 11.0" in a list that is not torch's build configuration (no "PyTorch built with:")
    is not torch's CUDA, and gencode flags of a user's own build are not torch's arch list."""
    e = read_evidence("Requirements:\n  - CUDA Runtime 11.0\n  - NVCC architecture flags: -gencode;arch=compute_80,"
                      "code=sm_80\nPyTorch: 1.7.1\n")
    assert e.torch_cuda_seen() is None or e.torch_cuda_seen().value != "11.0"  # type: ignore[union-attr]
    assert e.value("torch_arch_list") is None
