"""Runtime refusals, clusters and resolution failures doctor names from facts (issue 25, runtime2): a resolver's
conflict between a companion's torch pin and the torch asked for (pip's ResolutionImpossible, uv's "depends on ...
and you require"), uv's "no wheels with a matching Python ABI tag" set against the Python shown and the matrix, pip
offering only releases older than the one asked for, a Slurm job that shows no GPU request, NCCL's InfiniBand
completion errors in NCCL's older words, and failures quoted inside a sentence (an exception in backticks, a C++
logger's ``[X][ERROR]`` tag). Each with look-alikes that must not get the cause.

Pastes are real text from public threads: the corpus excerpts 938-941 (their sidecars cite them) and the lines below,
each with its thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import doctor_paste

CORPUS = Path(__file__).parent / "data" / "corpus"
Capsys = pytest.CaptureFixture[str]


def _doctor(tmp_path: Path, text: str, capsys: Capsys) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "paste.txt"
    log.write_text(text)
    return doctor_paste(log, capsys)


def _causes(doc: dict[str, Any]) -> set[str]:
    return {f["cause"] for f in doc["findings"] if f["severity"] != "info"}


@pytest.mark.parametrize(("stem", "cause", "title"), [
    ("938-companion-mismatch-pip-resolution-impossible-torch-110-compatible-torchvision-082-wants-171",
     "companion-mismatch", "torchvision 0.8.2 requires torch==1.7.1, but torch~=1.10.0 was asked for"),
    ("939-companion-mismatch-pip-conflict-torch-221-cu118-torchvision-0161-wants-211",
     "companion-mismatch", "torchvision 0.16.1+cu118 requires torch==2.1.1, but torch==2.2.1 was asked for"),
    ("940-companion-mismatch-pip-conflict-torch-1130-torchvision-0152-wants-201",
     "companion-mismatch", "torchvision 0.15.2 requires torch==2.0.1"),
    ("941-python-unsupported-uv-torch-1120-cu113-no-wheels-python-abi-tag-cp311",
     "python-unsupported", "torch has no wheel for this Python"),
])
def test_resolution_failures_are_named_from_the_resolvers_facts(stem: str, cause: str, title: str,
                                                                  capsys: Capsys) -> None:
    code, doc = doctor_paste(CORPUS / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == cause]
    assert code == 1 and f["severity"] == "error" and title in f["title"]
    assert all(e.startswith("pasted line ") for e in f["evidence"]) and doc["unclear"] == []


def test_uv_abi_refusal_is_set_against_the_matrix_s_pythons(capsys: Capsys) -> None:
    """941: uv resolves for CPython 3.11 (its hint); torch 1.12.0 has wheels for 3.7-3.10 (pythons.yaml)."""
    _, doc = doctor_paste(CORPUS / "941-python-unsupported-uv-torch-1120-cu113-no-wheels-python-abi-tag-cp311.txt",
                          capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "python-unsupported"]
    assert "This Python is 3.11" in f["explanation"] and "Python 3.7-3.10 (the matrix)" in f["explanation"]
    assert f["fix"].startswith("Use Python 3.7-3.10 for torch 1.12.0+cu113")


# look-alikes of a companion's conflict: a resolver's account where the companion's own pin holds the torch asked
# for (the conflict is elsewhere), a package that is not a companion, a companion whose pin is another package's
PIP_CONFLICT = ("ERROR: Cannot install -r requirements.txt (line 3) and torch==2.0.1 because these package versions "
                "have conflicting dependencies.\n\nThe conflict is caused by:\n{lines}\n\nTo fix this you could try "
                "to:\n1. loosen the range of package versions you've specified\n2. remove package versions to allow "
                "pip attempt to solve the dependency conflict\n")


@pytest.mark.parametrize("lines", [
    "    The user requested torch==2.0.1\n    torchvision 0.15.2 depends on torch==2.0.1\n"
    "    The user requested numpy==1.20.0\n    pandas 2.0.0 depends on numpy>=1.21.0",
    "    The user requested torch==2.0.1\n    deepspeed 0.14.0 depends on torch>=2.1",
    "    The user requested torch==2.0.1\n    torchmetrics 1.0.0 depends on torch>=2.1.0",
    "    The user requested torch>=2.0\n    torchvision 0.15.2 depends on torch==2.0.1\n"
    "    The user requested torchvision==0.16.0\n    xformers 0.0.22 depends on torchvision==0.15.2",
])
def test_a_conflict_the_companion_s_pin_does_not_make_is_not_named_companion_mismatch(
        lines: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _doctor(tmp_path, PIP_CONFLICT.format(lines=lines), capsys)
    assert "companion-mismatch" not in _causes(doc)
    assert code == 1 and doc["unclear"]  # pip's failure stays a failure, its cause not named


def test_uv_s_account_of_a_companion_conflict_is_named(tmp_path: Path, capsys: Capsys) -> None:
    text = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because torchvision==0.15.2 depends on "
            "torch==2.0.1 and you require torch==2.1.0, we can conclude that your requirements and "
            "torchvision==0.15.2 are unsatisfiable.\n")
    code, doc = _doctor(tmp_path, text, capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "companion-mismatch"]
    assert code == 1 and f["title"].startswith("torchvision 0.15.2 requires torch==2.0.1, but torch==2.1.0")


def test_uv_s_platform_refusal_is_not_the_python(tmp_path: Path, capsys: Capsys) -> None:
    """uv's platform-tag refusal on an Intel Mac (astral-sh/uv#8746): the platform, not the interpreter."""
    text = ("$-> uv pip install -r requirements.txt \n  × No solution found when resolving dependencies:\n  ╰─▶ Because "
            "torch==2.6.0 has no wheels with a matching platform tag (e.g., `macosx_15_0_x86_64`) and you require "
            "torch==2.6.0, we can conclude that your requirements are unsatisfiable.\n\n      hint: Wheels are available"
            " for `torch` (v2.6.0) on the following platforms: `manylinux_2_28_aarch64`, `manylinux1_x86_64`, "
            "`macosx_11_0_arm64`, `win_amd64`\n")
    code, doc = _doctor(tmp_path, text, capsys)
    assert "python-unsupported" not in _causes(doc) and code == 1 and doc["unclear"]


def test_uv_s_abi_refusal_for_a_python_the_release_supports_is_not_named(tmp_path: Path, capsys: Capsys) -> None:
    """The matrix's list holds the Python shown (torch 2.3.0 has cp312 wheels): uv's refusal has another reason (an
    index of local builds, a free-threaded interpreter), not the Python's version."""
    text = ("Using Python 3.12.3 interpreter at: usr/local/bin/python3\n  × No solution found when resolving "
            "dependencies:\n  ╰─▶ Because torch==2.3.0 has no wheels with a matching Python ABI tag and you require "
            "torch==2.3.0, we can conclude that your requirements are unsatisfiable.\n")
    code, doc = _doctor(tmp_path, text, capsys)
    assert "python-unsupported" not in _causes(doc) and code == 1


def test_pip_offering_only_older_releases_names_the_python_they_dropped(tmp_path: Path, capsys: Capsys) -> None:
    """pip on a CUDA index offers torch 2.4.x only for torch==2.5.1 (deepbeepmeep/YuEGP#10): 2.4 has wheels for 3.8,
    2.5 does not; a CUDA index carries no macOS wheels, so the platform is not the limit."""
    text = ("pip install torch==2.5.1 torchvision torchaudio --index-url https://<index>/whl/test/cu124\n"
            "Looking in indexes: https://<index>/whl/test/cu124\n"
            "ERROR: Could not find a version that satisfies the requirement torch==2.5.1 (from versions: 2.4.0+cu124, "
            "2.4.1+cu124)\nERROR: No matching distribution found for torch==2.5.1\n")
    code, doc = _doctor(tmp_path, text, capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "python-unsupported"]
    assert code == 1 and "likely Python 3.8" in f["explanation"]
    # the same with a Python that torch 2.5.1 has wheels for: the index, not the interpreter, is the limit
    code, doc = _doctor(tmp_path, text + "Python 3.10.11\n", capsys)
    assert "python-unsupported" not in _causes(doc) and code == 1 and doc["unclear"]


# ----------------------------------------------------------------------------------------------------------------
# a Slurm job without GPUs (3dem/model-angelo#60's words)
# ----------------------------------------------------------------------------------------------------------------
SMI_FAILED = ("It doesnt show me the gpus.\n```\nnvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with "
              "the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n```\n")


def test_a_slurm_job_without_a_gpu_request_is_gpu_not_visible(tmp_path: Path, capsys: Capsys) -> None:
    text = SMI_FAILED + ("\nI found the issue in my slurm-submission script. While asking for resources allocated on "
                         "the gpu nodes, I didn't actually get a gpu allocated.\n")
    code, doc = _doctor(tmp_path, text, capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "gpu-not-visible"]
    assert code == 1 and "Slurm job" in f["title"] and "--gres=gpu:1" in f["fix"]


@pytest.mark.parametrize("extra", [
    "",  # no Slurm at all: the driver itself is in question
    "#SBATCH --partition=gpu\n#SBATCH --gres=gpu:1\n",  # the job asked for a GPU: the node's driver is in question
    "srun --gpus-per-node=4 python train.py\n",
    "$ sbatch job.sh\nCUDA_VISIBLE_DEVICES=0\n",  # Slurm gave it GPU 0
])
def test_driver_failures_slurm_does_not_explain_are_not_named_gpu_not_visible(
        extra: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _doctor(tmp_path, extra + SMI_FAILED, capsys)
    assert "gpu-not-visible" not in _causes(doc) and code == 1


def test_a_healthy_slurm_paste_stays_silent(tmp_path: Path, capsys: Capsys) -> None:
    text = "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:1\nsrun python train.py\n"
    code, doc = _doctor(tmp_path, text, capsys)
    assert not [f for f in doc["findings"] if f["severity"] == "error"] and not doc["unclear"] and code == 0


# ----------------------------------------------------------------------------------------------------------------
# NCCL over InfiniBand/RoCE in NCCL's older words (NVIDIA/nccl#426: no peer named)
# ----------------------------------------------------------------------------------------------------------------
def test_nccl_ib_completion_error_without_a_peer_is_nccl_misconfigured(tmp_path: Path, capsys: Capsys) -> None:
    text = ("-worker-1:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
            "len 0, vendor err 129\n")
    code, doc = _doctor(tmp_path, text, capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "nccl-misconfigured"]
    assert code == 1 and "InfiniBand" in f["title"] and "NCCL_IB_GID_INDEX" in f["fix"]


def test_nccl_choosing_roce_is_not_a_failure(tmp_path: Path, capsys: Capsys) -> None:
    text = ("hostname-test:983:1261 [3] NCCL INFO NET/IB : Using [0]mlx5_bond_1:1/RoCE [1]mlx5_bond_2:1/RoCE [RO]; OOB "
            "bond0:172.36.134.184<0>\n")
    code, doc = _doctor(tmp_path, text, capsys)
    assert code == 0 and not doc["unclear"] and "nccl-misconfigured" not in _causes(doc)


# ----------------------------------------------------------------------------------------------------------------
# failures quoted inside a sentence
# ----------------------------------------------------------------------------------------------------------------
TRT = ("Hi, I'm getting error `[TensorRT-LLM][{level}] 6: The engine plan file is generated on an incompatible device, "
       "expecting compute 8.6 got compute 8.0, please rebuild.` supposedly due to that I built the engine from A100 and "
       "try to use on A10.\n")


def test_a_logger_s_error_tag_quoted_in_a_sentence_is_a_failure(tmp_path: Path, capsys: Capsys) -> None:
    """NVIDIA/TensorRT-LLM#222: an engine built for another GPU (no cause of the vocabulary): not "no problems"."""
    code, doc = _doctor(tmp_path, TRT.format(level="ERROR"), capsys)
    assert code == 1 and doc["unclear"] and not [f for f in doc["findings"] if f["severity"] == "error"]
    # an info-level tag is no failure (where the user's own words say none: "I'm getting error" is one, stop 37)
    code, doc = _doctor(tmp_path, TRT.format(level="INFO").replace("I'm getting error", "I see"), capsys)
    assert code == 0 and not doc["unclear"]


BF16 = "Error message: \n\n`ValueError: Your setup doesn't support bf16/gpu. You need Ampere+ GPU with cuda>=11.0`\n"


def test_a_bf16_refusal_in_backticks_asks_for_the_gpu(tmp_path: Path, capsys: Capsys) -> None:
    """unslothai/unsloth#2783's words: the floor in words only, no GPU shown: not settled, with what settles it."""
    code, doc = _doctor(tmp_path, BF16, capsys)
    assert code == 1 and "gpu-too-old-for-feature" not in _causes(doc)
    (u,) = doc["unclear"]
    assert "which GPU the failing process ran on" in u["missing"] and "nvidia-smi" in u["paste"]


@pytest.mark.parametrize(("gpu", "named"), [("Tesla T4", True), ("NVIDIA A100-SXM4-40GB", False)])
def test_a_bf16_refusal_is_judged_against_the_gpu_a_report_shows(gpu: str, named: bool, tmp_path: Path,
                                                                  capsys: Capsys) -> None:
    report = f"GPU models and configuration: GPU 0: {gpu}\nNvidia driver version: 535.104.05\n"
    code, doc = _doctor(tmp_path, report + BF16, capsys)
    assert code == 1 and ("gpu-too-old-for-feature" in _causes(doc)) is named


# ----------------------------------------------------------------------------------------------------------------
# a PyTorch checkout shadowing the installed torch (the traceback's torch/__init__.py outside site-packages)
# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("stem", "tree"), [
    ("942-source-tree-shadowing-torch-repository-root-python2-no-module-named-c", "the directory Python was started in"),
    ("943-source-tree-shadowing-torch-ipython-opt-pytorch-checkout-no-module-torch-c", "/opt/pytorch"),
    ("944-source-tree-shadowing-torch-checkout-cannot-import-from-torch-c-unknown-location", "download/pytorch"),
])
def test_a_torch_checkout_is_named_source_tree_shadowing(stem: str, tree: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(CORPUS / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "source-tree-shadowing"]
    assert code == 1 and f["severity"] == "error" and tree in f["title"] and "cd ~" in f["fix"]


TORCH_C = ('>>> import torch\nTraceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n{frame}'
           "    from torch._C import *\nModuleNotFoundError: No module named 'torch._C'\n")


@pytest.mark.parametrize("frame", [
    # an installed torch without its compiled core (a broken install, a wheel for another Python): not a checkout
    '  File "/opt/conda/lib/python3.10/site-packages/torch/__init__.py", line 229, in <module>\n',
    '  File "C:\\Users\\me\\AppData\\Roaming\\Python\\Python38\\site-packages\\torch\\__init__.py", line 81, in <module>\n',
    '  File "/usr/lib/python3/dist-packages/torch/__init__.py", line 81, in <module>\n',
    "",  # no frame: where torch was imported from is not shown
])
def test_torch_c_missing_in_an_installed_torch_is_not_source_tree_shadowing(frame: str, tmp_path: Path,
                                                                           capsys: Capsys) -> None:
    code, doc = _doctor(tmp_path, TORCH_C.format(frame=frame), capsys)
    assert "source-tree-shadowing" not in _causes(doc) and code == 1 and doc["unclear"]


# ----------------------------------------------------------------------------------------------------------------
# a Kubernetes pod given a GPU whose process finds no driver library (scverse/scvi-tools#3799's words)
# ----------------------------------------------------------------------------------------------------------------
POD = ("To reproduce: \nRun scvi-tools on GKE with nvidia.com/gpu: {n} — model.to_device(0)\n"
       "raises RuntimeError: Found no NVIDIA driver on your system.\n")


def test_a_pod_given_a_gpu_without_the_driver_library_is_library_not_found(tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _doctor(tmp_path, POD.format(n=1), capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "library-not-found"]
    assert code == 1 and "pod was given a GPU" in f["title"] and "/usr/local/nvidia/lib64" in f["fix"]


@pytest.mark.parametrize("text", [
    POD.format(n=0),  # no GPU asked for: another cause (the pod has none)
    "raises RuntimeError: Found no NVIDIA driver on your system.\n",  # no pod shown: the driver itself is in question
    # a pod whose GPU answers nvidia-smi inside it, failing on another line
    POD.format(n=1) + "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n"
    "|   0  Tesla T4            On   | 00000000:00:04.0 Off |                    0 |\n",
])
def test_no_driver_outside_a_pod_given_a_gpu_is_not_this_row(text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _doctor(tmp_path, text, capsys)
    assert not any("pod was given a GPU" in f["title"] for f in doc["findings"]) and code == 1


@pytest.mark.parametrize(("torch", "named"), [("", True), ("torch 2.1.0+cpu\n", False)])
def test_a_slurm_job_s_cuda_not_available_is_judged_beside_the_torch_shown(
        torch: str, named: bool, tmp_path: Path, capsys: Capsys) -> None:
    """A program's "CUDA is not available" in a job run by srun without a GPU request; a CPU-only torch sees no GPU
    whatever the job was given (its own cause)."""
    text = torch + "$ srun -p compute python train.py\nAssertionError: CUDA is not available\n"
    code, doc = _doctor(tmp_path, text, capsys)
    assert code == 1 and any("Slurm job" in f["title"] for f in doc["findings"]) is named
