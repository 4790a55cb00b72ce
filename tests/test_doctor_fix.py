"""A lone missing CUDA runtime library (library-not-found unless another CUDA major shows), and pip finding no torch
for a Python no torch release in the request's range ships wheels for (python-unsupported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor import diagnose
from vresolve.host import DriverInfo, EnvReport, Host, HostGpu, TorchRuntime
from vresolve.matrix import Matrix, load_matrix
from vresolve.values import Capability, DriverVersion

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def _causes(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    main(["doctor", "--no-env", "--log", str(path), "--json"])
    return [f["cause"] for f in json.loads(capsys.readouterr().out)["findings"]]


@pytest.mark.parametrize(("paste", "cause", "not_cause"), [
    # https://github.com/AlwaysFHao/Mamba-Install/issues/3: libcudart.so.12 alone, nothing else shown
    ("heldout/308-library-not-found-libcudart12-selective-scan-mamba.txt", "library-not-found", "cuda-variant-mismatch"),
    # https://github.com/sgl-project/sglang/issues/10951: libnvrtc.so.12 beside a cu128 torch (the same major)
    ("heldout/424-library-not-found-libnvrtc12-sglang-check-env-a10.txt", "library-not-found", "cuda-variant-mismatch"),
    # TensorFlow on Windows: cudart64_110.dll not found (the Windows name of CUDA 11's runtime)
    ("heldout/509-library-not-found-tf-cudart64-110-dll-windows.txt", "library-not-found", "cuda-variant-mismatch"),
    # look-alikes: vLLM asks for it (an import of vllm; vllm 0.16.0 installed, a CUDA 12 release), or torch cu118
    ("corpus/134-libcudart12-vllm-022-needs-cu121.txt", "cuda-variant-mismatch", "library-not-found"),
    ("corpus/073-libcudart12-missing-vllm016-mixed-cu12-cu13.txt", "cuda-variant-mismatch", "library-not-found"),
    ("corpus/106-cuda-variant-vllm-cu13-wheel-with-cu129-torch.txt", "cuda-variant-mismatch", "library-not-found"),
])
def test_a_lone_runtime_library_is_not_found(paste: str, cause: str, not_cause: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    causes = _causes(DATA / paste, capsys)
    assert cause in causes and not_cause not in causes


def _host() -> Host:
    return Host(driver=DriverInfo(version=DriverVersion.parse("580.95.05")),
                gpus=(HostGpu(index=0, name="NVIDIA H100", compute_capability=Capability(9, 0)),))


def test_a_runtime_library_of_torchs_own_major_is_not_found_live(matrix: Matrix) -> None:
    log = "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
    env = EnvReport(python="python", torch=TorchRuntime(version="2.8.0", cuda="12.8", available=True))
    (f,) = [f for f in diagnose(_host(), matrix, env, log=log) if f.source == "log"]
    assert (f.cause, f.title) == ("library-not-found", "A CUDA runtime library is not on the loader's path")
    assert "torch.version.cuda = 12.8" in f.evidence
    # no environment and nothing in the log: not found; vLLM importing it: another major's runtime
    (g,) = [f for f in diagnose(_host(), matrix, None, log=log) if f.source == "log"]
    assert g.cause == "library-not-found"
    asks = "  File \"/x/site-packages/vllm/_C.py\", line 1\n" + log
    (h,) = [f for f in diagnose(_host(), matrix, None, log=asks) if f.source == "log"]
    assert h.cause == "cuda-variant-mismatch"


def _pip(python: str, request: str) -> str:
    return (f"Python {python}\n$ pip install {request}\n"
            f"ERROR: Could not find a version that satisfies the requirement {request} (from versions: none)\n"
            f"ERROR: No matching distribution found for {request}\n")


def test_pip_finds_no_torch_for_the_python(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # https://github.com/rohitg00/ai-engineering-from-scratch/issues/192: torch==2.5.1 (3.9-3.13) on Python 3.14.4
    main(["doctor", "--no-env", "--log", str(DATA / "heldout/405-python-unsupported-py314-torch-cu118-from-versions-"
                                                 "none.txt"), "--json"])
    (f,) = json.loads(capsys.readouterr().out)["findings"]
    assert f["cause"] == "python-unsupported"
    assert f["evidence"] == ["pasted line 8: ERROR: Could not find a version that satisfies the requirement "
                             "torch==2.5.1 (from versions: none)", "pasted line 2: Python 3.14.4"]


@pytest.mark.parametrize(("python", "request_", "named"), [
    ("3.14.4", "torch==2.5.1", True),
    # pip offered no torch wheel at all to this interpreter ("none"): that is what pip says, whatever the reason; where
    # today's releases do ship this Python's wheels, the finding says so and names the other readings (the index, the
    # paste's date, a 32-bit Python, the platform): test_pip_versions.py holds those words
    ("3.12.3", "torch==2.5.1", True),
    ("3.14.4", "torch", True),
    ("3.14.4", "torch==1.4.0", True),  # pythons.yaml's 1.4.0 (unverified, and the finding says so)
    ("3.14.4", "torchvision==0.20.1", False),  # not torch
    ("3.14.4", "vllm==0.10.1", True),  # vLLM's Requires-Python, as before
])
def test_pip_finds_no_wheel_look_alikes(python: str, request_: str, named: bool, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "pip.txt"
    log.write_text(_pip(python, request_))
    assert ("python-unsupported" in _causes(log, capsys)) is named
