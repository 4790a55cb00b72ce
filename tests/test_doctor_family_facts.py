"""Families several tools say alike, judged from facts (issue 25, stop 34; src/vresolve/doctor/family_predicates.py and
the signals beside them): the kernel module's own NVML mismatch, the driver's NVML library missing where a GPU is meant
to be used, torch.compile without a C++ compiler, a DataLoader worker's bus error or death beside a small /dev/shm, a
torch replaced across an install, and the user's sentence naming their GPU. Each with look-alikes that must not get the
cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import doctor_text

Capsys = pytest.CaptureFixture[str]


def _named(text: str, tmp_path: Path, capsys: Capsys) -> list[str]:
    _, doc = doctor_text(text, tmp_path, capsys)
    return [f["cause"] for f in doc.get("findings", []) if f["severity"] != "info"]


NAMED = [
    # the kernel module's dmesg line, older wording (NVIDIA/nvidia-docker#182) and newer (Frogging-Family/nvidia-all#394)
    ("nvrm-api-mismatch", "nvml-driver-mismatch",
     "Aug 26 14:08:07 nyasara-linux kernel: NVRM: API mismatch: the client has the version 367.44, but\n"
     "                                      NVRM: this kernel module has the version 367.35.  Please\n"),
    ("nvrm-api-mismatch-named-client", "nvml-driver-mismatch",
     "[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
     "               NVRM: has the version 595.84, but this kernel module has\n"),
    # the container runtime's hook, asked for GPUs, without the driver's NVML library on the host
    ("container-hook-no-libnvidia-ml", "library-not-found",
     "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: "
     "unable to start container process: error during container init: error running hook #1: error running hook: "
     "exit status 1, stdout: , stderr:\nnvidia-container-cli: initialization error: load library failed: "
     "libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.\n"),
    # vLLM's platform detection on a GPU node whose pod has no driver libraries
    ("vllm-nvml-not-found-no-platform", "library-not-found",
     "DEBUG 08-29 04:29:54 [__init__.py:82] Exception happens when checking CUDA platform: NVML Shared Library Not Found\n"
     "INFO 08-29 04:29:54 [__init__.py:245] No platform detected, vLLM is running on UnspecifiedPlatform\n"),
    # torch._inductor's own exception (torch/_inductor/exc.py)
    ("inductor-no-cxx", "c-compiler-missing",
     "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: "
     "(None, 'g++')\n"),
    # an older torch's DataLoader reporting its worker's SIGBUS
    ("dataloader-bus-error", "shared-memory-too-small",
     "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.\n"),
    ("worker-died-shm-64m", "shared-memory-too-small",
     "RuntimeError: DataLoader worker (pid(s) 76) exited unexpectedly\n"
     "This is because /dev/shm is at only 64M by default.\n"),
    # the user's finding that NCCL runs once P2P is off (NVIDIA/nccl: two RTX 5880 Ada behind a PCIe host bridge)
    ("nccl-p2p-off-resolves", "nccl-misconfigured",
     "`ncclAllReduce` enters an infinite spin-wait deadlock on two NVIDIA RTX 5880 Ada Generation GPUs\n"
     "Setting `NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1` (forcing socket transport) resolves the deadlock completely.\n"),
    ("nccl-succeeds-p2p-disabled", "nccl-misconfigured",
     "execution hangs on the first collective operation.\n"
     "The same smoke test succeeds immediately when direct GPU P2P is disabled with:\nNCCL_P2P_DISABLE=1\n"),
    # NCCL bound to the loopback interface in a two-node job (torch.distributed.launch, NCCL_DEBUG=INFO)
    ("nccl-loopback-two-nodes", "nccl-misconfigured",
     "python3 -m torch.distributed.launch --nnode=2 --node_rank=1 --nproc_per_node=1 train.py\n"
     "GPU9:10330:10330 [0] NCCL INFO NCCL_SOCKET_IFNAME set to lo\n"
     "GPU9:10330:10330 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n"),
    # looser forms of known families (the fifteenth set's misses): NVML's mismatch with spaces, TensorRT's library,
    # TensorRT's CUDA error number, Apex's toolkit check, text-embeddings-inference's compute-capability check
    ("nvml-mismatch-spaced", "nvml-driver-mismatch", "Failed to initialize NVML: Driver / library version mismatch.\n"),
    ("tensorrt-library", "library-not-found",
     "ImportError: libnvinfer.so.8: cannot open shared object file: No such file or directory\n"),
    ("tensorrt-error-804", "driver-too-old",
     "[TensorRT] INTERNAL ERROR: [runtime.cpp::isCudaInstalledCorrectly::41] Error Code 6: Internal Error (CUDA "
     "initialization failure with error 804. Please check your CUDA installation)\n"),
    ("apex-cuda-check", "toolkit-mismatch",
     "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version used to "
     "compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 10.2.\n"),
    ("tei-compute-cap", "arch-not-in-build",
     "Error: Could not create backend\nCaused by:\n    Could not start backend: Runtime compute cap 75 is not "
     "compatible with compile time compute cap 80\n"),
    # a cluster job's report: torch built without CUDA, nvidia-smi answering on the node (mila-iqia/mila-docs)
    ("built-with-cuda-false-beside-driver", "cpu-only-build",
     "PyTorch built with CUDA:         False\nPyTorch detects CUDA available:  False\n"
     "Driver Version                            : 535.86.10\nCUDA Version                              : 12.2\n"),
    # a requirements file replacing a CUDA torch with the index's default build
    ("requirements-replace-torch", "installer-replaced-torch",
     "python.exe -m pip install -r requirements.txt\n>>> import torch\n>>> print(torch.__version__)\n2.2.0+cu121\n"
     "after install requirements.txt\n>>> print(torch.__version__)\n2.3.0+cpu\n"),
]


@pytest.mark.parametrize(("name", "cause", "text"), NAMED, ids=[n[0] for n in NAMED])
def test_family_member_is_named(name: str, cause: str, text: str, tmp_path: Path, capsys: Capsys) -> None:
    assert cause in _named(text, tmp_path, capsys)


NOT = [
    # a monitor's note on a machine without a GPU: nothing says a GPU is meant to be used
    ("nvml-not-found-cpu-host", "library-not-found",
     "2026-04-22 01:39:43,615 - clearml.resource_monitor - WARNING - Could not fetch GPU stats: NVML Shared Library "
     "Not Found\n"),
    # a segmentation fault in a worker is not the bus error of a full /dev/shm
    ("worker-segfault", "shared-memory-too-small",
     "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.\n"),
    # a worker that died beside a large /dev/shm
    ("worker-died-shm-ample", "shared-memory-too-small",
     "RuntimeError: DataLoader worker (pid(s) 76) exited unexpectedly\nshm  64G  1.0G  63G  2% /dev/shm\n"),
    # the user asked for the torch that replaced the old one
    ("torch-asked-for", "installer-replaced-torch",
     ">>> torch.__version__\n'2.1.0+cu118'\npip install torch==2.3.0 --index-url <index>\n>>> torch.__version__\n"
     "'2.3.0+cu121'\n"),
    # P2P turned off without effect, or asked about: not the P2P path
    ("nccl-p2p-off-still-hangs", "nccl-misconfigured",
     "NCCL hangs on 2 GPUs\nI tried NCCL_P2P_DISABLE=1 but it still hangs\n"),
    ("nccl-p2p-off-asked", "nccl-misconfigured", "does it work when P2P is disabled?\n"),
    # the loopback interface on one node (a single-node job may use it)
    ("nccl-loopback-one-node", "nccl-misconfigured",
     "torchrun --nproc_per_node=2 train.py\nhost:1:1 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n"),
    # a CUDA build beside the driver, and a CPU build asked for
    ("built-with-cuda-true-beside-driver", "cpu-only-build",
     "PyTorch built with CUDA:         True\nDriver Version                            : 535.86.10\n"),
    ("error-804-in-a-version", "driver-too-old", "CUDA error 804.1 is not a code\n"),
    # one torch shown, an install beside it
    ("one-torch", "installer-replaced-torch",
     "pip install -r requirements.txt\n>>> torch.__version__\n'2.3.0+cu121'\n"),
]


@pytest.mark.parametrize(("name", "cause", "text"), NOT, ids=[n[0] for n in NOT])
def test_look_alike_is_not_named(name: str, cause: str, text: str, tmp_path: Path, capsys: Capsys) -> None:
    assert cause not in _named(text, tmp_path, capsys)


def test_the_users_sentence_names_the_gpu(tmp_path: Path, capsys: Capsys) -> None:
    """"GPU is NVIDIA T1000." beside FlashAttention's refusal: a Turing GPU, below its floor (8.0)."""
    text = ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n\n"
            "while architecture is Turing. Is there any tip to resolve it?\nGPU is NVIDIA T1000.\n")
    assert "gpu-too-old-for-feature" in _named(text, tmp_path, capsys)
    _, doc = doctor_text("The GPU is required for this model.\nGPU is what I need.\n", tmp_path, capsys)
    assert not doc.get("host", {}).get("gpus")
