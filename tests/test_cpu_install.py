"""A CPU-only build as installers and package lists show it (``cpu-only-build``, :mod:`vresolve.doctor.cpu_install`):
conda's plan and list, pip's download of PyPI's Windows and aarch64 torch wheels, ONNX Runtime's providers; and the
look-alikes that share their words but are not a CPU build where CUDA was wanted. The positives are the held-out
development pastes and the corpus's (cited in their sidecars); the look-alikes are cut from real outputs of the same
tools (cited at each) or keep their form with the fact that differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

HELDOUT = Path(__file__).parent / "data" / "heldout"
CORPUS = Path(__file__).parent / "data" / "corpus"


def _doctor(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict]]:
    log = tmp_path / "paste.txt"
    log.write_text(text)
    code = main(["doctor", "--no-env", "--log", str(log), "--json"])
    out = json.loads(capsys.readouterr().out)
    return code, out.get("findings", [])


def _cpu(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["cause"] == "cpu-only-build"]


@pytest.mark.parametrize(("name", "severity", "words"), [
    ("901-*.txt", "error", "conda gives pytorch 1.2.0.dev20190805+cpu (py3.7_cpu_0)"),
    ("902-*.txt", "error", "conda gives pytorch 2.0.0.dev20221216 (py3.8_cpu_0)"),
    ("954-*.txt", "error", "conda gives pytorch 1.4.0 (py3.7_cpu_0)"),
    ("933-*.txt", "error", "pip installed torch 1.7.1 from PyPI on Windows"),
    ("942-*.txt", "warning", "ONNX Runtime lists no CUDA execution provider"),
    ("979-*.txt", "error", "from the default index on aarch64"),
])
def test_development_pastes_get_cpu_only_build(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                               severity: str, words: str) -> None:
    text = next(HELDOUT.glob(name)).read_text()
    _, findings = _doctor(tmp_path, text, capsys)
    cpu = _cpu(findings)
    assert cpu and cpu[0]["severity"] == severity and words in cpu[0]["title"], findings


def test_conda_plan_is_read_as_a_package_list() -> None:
    e = read_evidence(next(HELDOUT.glob("902-*.txt")).read_text())
    torch = e.dist("torch")
    assert torch is not None and torch.value.version == "2.0.0.dev20221216" and torch.value.build == "py3.8_cpu_0"
    assert e.torch_cuda_seen() is not None and e.torch_cuda_seen().value is None
    assert e.dist("pytorch-cuda") is not None
    asked = {ev.value.detail for ev in e.installer if ev.value.action == "asked"}
    assert "pytorch-cuda=11.6" in asked


def test_old_conda_builds_say_their_cuda() -> None:
    # pytorch/pytorch#32369's env1 row (Anaconda's compact build string), and conda-forge's form
    e = read_evidence("pytorch                   1.3.1           cuda100py37h53c1284_0\n")
    assert e.value("torch_cuda") == "10.0"
    e = read_evidence("pytorch                   2.1.2           cuda118_py311h1234567_300    conda-forge\n")
    assert e.value("torch_cuda") == "11.8"


# look-alikes: the same tools' output where the build is what was asked for, or a CUDA build
# conda's plan of a CUDA build (the form of pytorch/pytorch#23778's plan; the build string of meta-pytorch/data#315's
# second listing)
CONDA_CUDA_PLAN = """\
conda install pytorch torchvision torchaudio pytorch-cuda=11.8 -c pytorch -c nvidia
The following NEW packages will be INSTALLED:

  pytorch            pytorch/linux-64::pytorch-2.1.0-py3.10_cuda11.8_cudnn8.7.0_0
  pytorch-cuda       pytorch/linux-64::pytorch-cuda-11.8-h7e8668a_5
  pytorch-mutex      pytorch/noarch::pytorch-mutex-1.0-cuda
"""
# the CPU build asked for (pytorch's selector's CPU command), on a machine without a GPU
CONDA_CPUONLY_PLAN = """\
conda install pytorch torchvision torchaudio cpuonly -c pytorch
The following NEW packages will be INSTALLED:

  cpuonly            pytorch/noarch::cpuonly-2.0-0
  pytorch            pytorch/linux-64::pytorch-2.1.0-py3.10_cpu_0
  pytorch-mutex      pytorch/noarch::pytorch-mutex-1.0-cpu
"""
# macOS: conda's pytorch there has no CUDA build at all (osx-arm64's build string names none)
CONDA_MACOS_PLAN = """\
conda install pytorch torchvision -c pytorch
The following NEW packages will be INSTALLED:

  pytorch            pytorch/osx-arm64::pytorch-2.1.0-py3.10_0
"""
# pip on Windows taking the CUDA build from PyTorch's index (pip names its file by URL)
WINDOWS_CUDA_INDEX = """\
> pip install torch --index-url https://<index>/whl/cu121
Looking in indexes: https://<index>/whl/cu121
Collecting torch
  Downloading https://<index>/whl/cu121/torch-2.1.2%2Bcu121-cp311-cp311-win_amd64.whl (2473.9 MB)
Successfully installed torch-2.1.2+cu121
"""
# pip on Windows taking PyPI's wheel where nothing asks for CUDA (a CPU-only machine on purpose)
WINDOWS_PYPI_NO_CUDA = """\
C:\\Users\\me> pip install torch
Collecting torch
  Downloading torch-2.5.1-cp311-cp311-win_amd64.whl (203.1 MB)
Successfully installed torch-2.5.1
"""
# aarch64 with PyTorch's CUDA wheel, and with PyPI's wheel of a release whose aarch64 build is CUDA's (torch.yaml)
AARCH64_CUDA_INDEX = """\
$ uname -m
aarch64
$ pip install torch --index-url https://<index>/whl/cu128
  Downloading https://<index>/whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_aarch64.whl (1066.2 MB)
Successfully installed torch-2.8.0+cu128
GPU 0: NVIDIA GH200 480GB
"""
AARCH64_PYPI_CUDA_RELEASE = """\
$ uname -m
aarch64
$ pip install torch
  Downloading torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl (905.1 MB)
Successfully installed torch-2.11.0
GPU 0: NVIDIA GH200 480GB
"""
# the same PyPI wheel's name where the report shows torch using CUDA (a later install, another environment)
AARCH64_PYPI_CUDA_SHOWN = AARCH64_PYPI_CUDA_RELEASE.replace("2.11.0", "2.4.0") + "Is CUDA available: True\n"
WINDOWS_PYPI_CUDA_SHOWN = WINDOWS_PYPI_NO_CUDA + "GPU 0: NVIDIA GeForce RTX 3060\nIs CUDA available: True\n"
# onnxruntime-gpu: its available providers hold CUDA's; only the session fell back (microsoft/onnxruntime#5337,
# ultralytics/ultralytics#19159)
ONNX_GPU_SESSION_FALLBACK = """\
Available Providers: ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']
Session Providers: ['CPUExecutionProvider']
NVIDIA GeForce RTX 4090
"""
# the CPU package's providers on a machine that shows no GPU (nothing wanted CUDA)
ONNX_CPU_NO_GPU = "print(ort.get_available_providers())\n['AzureExecutionProvider', 'CPUExecutionProvider']\n"


@pytest.mark.parametrize("text", [CONDA_CUDA_PLAN, CONDA_CPUONLY_PLAN, CONDA_MACOS_PLAN, WINDOWS_CUDA_INDEX,
                                  WINDOWS_PYPI_NO_CUDA, AARCH64_CUDA_INDEX, AARCH64_PYPI_CUDA_RELEASE,
                                  ONNX_GPU_SESSION_FALLBACK, ONNX_CPU_NO_GPU, AARCH64_PYPI_CUDA_SHOWN,
                                  WINDOWS_PYPI_CUDA_SHOWN])
def test_lookalikes_get_no_cpu_only_build(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, findings = _doctor(tmp_path, text, capsys)
    assert not _cpu(findings), findings


def test_aarch64_pypi_cpu_release_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the same, of a release whose PyPI aarch64 wheel is its CPU build (torch.yaml: 2.4.0), beside a GH200
    text = AARCH64_PYPI_CUDA_RELEASE.replace("2.11.0", "2.4.0")
    _, findings = _doctor(tmp_path, text, capsys)
    cpu = _cpu(findings)
    assert cpu and cpu[0]["severity"] == "error" and "torch 2.4.0" in cpu[0]["title"], findings


def test_windows_pypi_wheel_beside_a_gpu_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # PyPI's Windows wheel (pip names it alone) on a machine whose GPU the paste shows
    _, findings = _doctor(tmp_path, WINDOWS_PYPI_NO_CUDA + "GPU 0: NVIDIA GeForce RTX 3060\n", capsys)
    cpu = _cpu(findings)
    assert cpu and "torch 2.5.1 from PyPI on Windows" in cpu[0]["title"], findings


def test_conda_cuda_plan_reads_its_cuda() -> None:
    e = read_evidence(CONDA_CUDA_PLAN)
    assert e.value("torch_cuda") == "11.8"
