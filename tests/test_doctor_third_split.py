"""Rules from the second split's held-out misses, now development material (issue 25, tests/data/heldout 300-330;
see tests/data/heldout/README.md, "The third split"): nvidia-smi's "GPU is lost" (NVML's GPU-is-lost error) is a GPU
fallen off the bus; torch's shared-memory files (``</torch_...>``) that cannot be written are a full /dev/shm; a
program saying it failed to initialize CUDA is a failure, and a GPU the user names in prose beside it is no cause.
From older development pastes (tests/data/corpus): a source package that imports torch undeclared (flash-attn,
xFormers) failing at "Getting requirements to build wheel" is build isolation; an updater that uninstalled a
``+cuNNN`` torch replaced it.

Each paste is real text from the public thread its sidecar names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_paste

HELDOUT = Path(__file__).parent / "data" / "heldout"
Capsys = pytest.CaptureFixture[str]



@pytest.mark.parametrize(("stem", "cause"), [
    ("318-gpu-fallen-off-bus-gpu-is-lost-owod-training", "gpu-fallen-off-bus"),
    ("329-shm-unable-to-write-torch-file-flownet2-docker", "shared-memory-too-small"),
    ("330-shm-unable-to-write-no-space-left-eslam-docker", "shared-memory-too-small"),
])
def test_the_cause_is_named_from_the_line(stem: str, cause: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(HELDOUT / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == cause]
    assert code == 1 and f["severity"] == "error" and doc["unclear"] == []
    assert f["evidence"] == ["pasted line 1: " + (HELDOUT / f"{stem}.txt").read_text().splitlines()[0].strip()]


def test_a_failed_cuda_initialization_is_not_named_from_a_gpu_in_prose(capsys: Capsys) -> None:
    """llama.cpp's "failed to initialize CUDA: initialization error" on a T4 the user names: no cause is named (the
    T4's missing bfloat16 stays an info), and the failure is listed as cause not named (exit 1)."""
    code, doc = doctor_paste(HELDOUT / "309-unclear-ggml-cuda-init-initialization-error-t4.txt", capsys)
    assert code == 1 and not [f for f in doc["findings"] if f["severity"] != "info"]
    (u,) = doc["unclear"]
    assert "failed to initialize CUDA: initialization error" in u["error"]


@pytest.mark.parametrize(("line", "code"), [
    ("Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU",
     "gpu-off-bus"),
    ("RuntimeError: unable to write to file </torch_18693_1954506624> at /pytorch/torch/lib/TH/THAllocator.c:271",
     "shm-exhausted"),
])
def test_the_line_is_typed(line: str, code: str) -> None:
    assert [s.value.code for s in read_evidence(line + "\n").signals] == [code]


@pytest.mark.parametrize("line", [
    "OSError: unable to write to file </tmp/output.bin>: No space left on device",  # not torch's shared memory
    "nvidia-smi shows the GPU again; no GPU is lost after the reboot",  # words, not NVML's error
    "ggml_cuda_init: found 1 CUDA devices:",  # CUDA initialized
])
def test_lookalikes_are_not_typed(line: str) -> None:
    e = read_evidence(line + "\n")
    assert [s.value.code for s in e.signals if s.value.code in ("gpu-off-bus", "shm-exhausted")] == []
    assert [f.value for f in e.failures if f.value == "cuda"] == []


CORPUS = Path(__file__).parent / "data" / "corpus"


@pytest.mark.parametrize("stem", ["086-build-isolation-flash-attn-torch-installed-first",
                                  "088-build-isolation-flash-attn-py313-venv"])
def test_a_source_package_importing_torch_fails_in_the_isolated_build(stem: str, capsys: Capsys) -> None:
    """flash-attn's sdist failing at "Getting requirements to build wheel" (the pastes end before its own error):
    pip's isolated build has no torch (flash-attn's README: install with --no-build-isolation)."""
    code, doc = doctor_paste(CORPUS / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "build-isolation"]
    assert code == 1 and f["title"].startswith("The package's source build needs torch")
    assert any("Getting requirements to build wheel" in ev for ev in f["evidence"])
    assert "--no-build-isolation" in f["fix"]


def test_a_build_that_fails_for_another_named_reason_is_not_isolation() -> None:
    """The same failed step with the build's own error naming CUDA_HOME (torch imported fine): not re-typed."""
    head = (CORPUS / "088-build-isolation-flash-attn-py313-venv.txt").read_text()
    e = read_evidence(head + "\n      OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA "
                             "install root.\n")
    codes = [s.value.code for s in e.signals]
    assert "sdist-imports-torch" not in codes and "build-requirements-failed" in codes


def test_an_updater_uninstalling_a_cuda_torch_replaced_it(capsys: Capsys) -> None:
    """ "It even uninstalled the 2.9.1+cu128 ..." (a version with torch's +cuNNN tag) is the installer replacing torch."""
    code, doc = doctor_paste(CORPUS / "186-installer-replaced-torch-textgen-updater-211-over-291-cu128.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "installer-replaced-torch"]
    assert code == 0 and f["severity"] == "warning" and "2.9.1+cu128" in f["evidence"][0]
