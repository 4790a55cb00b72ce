"""Rules from the second split's held-out misses, now development material (issue 25, tests/data/heldout 300-330;
see tests/data/heldout/README.md, "The third split"): nvidia-smi's "GPU is lost" (NVML's GPU-is-lost error) is a GPU
fallen off the bus; torch's shared-memory files (``</torch_...>``) that cannot be written are a full /dev/shm; a
program saying it failed to initialize CUDA is a failure, and a GPU the user names in prose beside it is no cause.

Each paste is real text from the public thread its sidecar names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

HELDOUT = Path(__file__).parent / "data" / "heldout"
Capsys = pytest.CaptureFixture[str]


def _doctor(path: Path, capsys: Capsys) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["doctor", "--no-env", "--log", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("stem", "cause"), [
    ("318-gpu-fallen-off-bus-gpu-is-lost-owod-training", "gpu-fallen-off-bus"),
    ("329-shm-unable-to-write-torch-file-flownet2-docker", "shared-memory-too-small"),
    ("330-shm-unable-to-write-no-space-left-eslam-docker", "shared-memory-too-small"),
])
def test_the_cause_is_named_from_the_line(stem: str, cause: str, capsys: Capsys) -> None:
    code, doc = _doctor(HELDOUT / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == cause]
    assert code == 1 and f["severity"] == "error" and doc["unclear"] == []
    assert f["evidence"] == ["pasted line 1: " + (HELDOUT / f"{stem}.txt").read_text().splitlines()[0].strip()]


def test_a_failed_cuda_initialization_is_not_named_from_a_gpu_in_prose(capsys: Capsys) -> None:
    """llama.cpp's "failed to initialize CUDA: initialization error" on a T4 the user names: no cause is named (the
    T4's missing bfloat16 stays an info), and the failure is listed as cause not named (exit 1)."""
    code, doc = _doctor(HELDOUT / "309-unclear-ggml-cuda-init-initialization-error-t4.txt", capsys)
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
