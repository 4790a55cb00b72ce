"""The lookalikes audit (issue 25): texts that share a trigger's words but are not its cause must not get that cause,
and every finding's title names what the paste shows.

Each trigger now needs the fact that makes it its cause: a version check about a package of the GPU stack (torch,
its companions, vLLM) for companion-mismatch; a GPU below the capability a refusal asks for (not one a tool's report
shows meeting it) for gpu-too-old-for-feature; out-of-memory words said of what happened, not as advice, for
build-oom. Where the facts do not settle it, the answer is "cause not named" (exit 1) with what to paste. Texts cut
from real threads cite them; the others are built from real message forms (the forms' threads in comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import doctor_paste

CORPUS = Path(__file__).parent / "data" / "corpus"
HELDOUT = Path(__file__).parent / "data" / "heldout"
Capsys = pytest.CaptureFixture[str]


def _causes(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["cause"] for f in doc["findings"]]


def _judge(tmp_path: Path, capsys: Capsys, text: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    paste = tmp_path / "paste.txt"
    paste.write_text(text)
    return doctor_paste(paste, capsys)


LOOKALIKES = [
    # transformers' dependency check of tokenizers (oobabooga/textgen#2805: "tokenizers>=0.13.3 is required for a
    # normal functioning of this module, but found tokenizers==0.13.2."): not a torch companion
    ("tokenizers-version-check", "companion-mismatch",
     "Traceback (most recent call last):\n  File \"server.py\", line 3, in <module>\n    import transformers\n"
     "ImportError: tokenizers>=0.13.3 is required for a normal functioning of this module, but found "
     "tokenizers==0.13.2.\n"),
    # a checkpoint's format version, in the words of flashinfer's check ("X version (A) does not match")
    ("checkpoint-version-mismatch", "companion-mismatch",
     "Traceback (most recent call last):\n  File \"run.py\", line 10, in <module>\n"
     "ValueError: Checkpoint version (3) does not match the expected format version\n"),
    # a program's help text about bf16 on a machine whose nvidia-smi shows an A100 (8.0), then another error
    ("bf16-help-text-on-a100", "gpu-too-old-for-feature",
     "$ nvidia-smi -L\nGPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1234)\n$ python train.py --help\n"
     "  --bf16    Use bf16 mixed precision. bf16 requires Ampere or newer GPUs (A100, compute capability 8.0).\n"
     "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\nKeyError: 'labels'\n"),
    # FlashAttention's refusal quoted by a user whose report shows an RTX 3090 (Ampere, 8.6)
    ("flash-attn-refusal-quoted-beside-rtx3090", "gpu-too-old-for-feature",
     "FlashAttention only supports Ampere GPUs or newer.\nI have an RTX 3090 (Ampere) so this should work?\n"
     "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-x)\n"),
    # an FP8 refusal naming a GPU in an example ("e.g. H100"), the user's report an H100 (9.0): not the user's GPU
    ("fp8-refusal-example-gpu-beside-h100", "gpu-too-old-for-feature",
     "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abc)\nTraceback (most recent call last):\n"
     "  File \"/app/serve.py\", line 12, in <module>\nRuntimeError: FP8 quantization requires a GPU with compute "
     "capability 8.9 or higher (e.g. H100); got model with unknown quant_method 'fp8x'\n"),
    # vLLM's build advice ("MAX_JOBS ... to avoid OOM") in a build that failed for another reason (CMake not finding
    # torch)
    ("oom-advice-in-a-failed-build", "build-oom",
     "Building wheel for vllm (pyproject.toml) ... error\n  note: set MAX_JOBS=4 to avoid OOM when building\n"
     "  error: subprocess-exited-with-error\n  CMake Error at CMakeLists.txt:42 (find_package): Could not find a "
     "package configuration file provided by \"Torch\"\n"),
    # torch's "driver too old" quoted of another machine, beside a report whose driver (550, CUDA 12.4) serves the
    # torch shown (cu121)
    ("driver-too-old-quoted-beside-a-driver-that-serves-torch", "driver-too-old",
     "Is there a plan to support CUDA 12.8? The NVIDIA driver on your system is too old message appears on my "
     "friend's machine, not mine.\nPyTorch version: 2.4.0+cu121\nIs CUDA available: True\nGPU models and "
     "configuration: GPU 0: NVIDIA GeForce RTX 4090\nNvidia driver version: 550.54.15\n"),
]


@pytest.mark.parametrize(("name", "wrong", "text"), LOOKALIKES, ids=[c[0] for c in LOOKALIKES])
def test_a_lookalike_does_not_get_the_cause_its_words_suggest(name: str, wrong: str, text: str, tmp_path: Path,
                                                              capsys: Capsys) -> None:
    code, doc = _judge(tmp_path, capsys, text)
    assert wrong not in _causes(doc)
    assert code == 1 and doc["unclear"], "a paste that shows a failure gets 'cause not named', not 'no problems'"


def test_a_gpu_the_report_shows_meeting_the_refusal_says_which_gpu_to_show(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, LOOKALIKES[3][2])
    (unclear,) = doc["unclear"]
    assert "NVIDIA GeForce RTX 3090" in unclear["missing"] and "8.0" in unclear["missing"]
    assert "nvidia-smi" in unclear["paste"]


POSITIVES = [
    # the same words where they are the cause: the stack's own version checks, a GPU below the refusal
    ("132-flashinfer-cubin-version-mismatch.txt", "companion-mismatch"),
    ("150-vllm-pin-mismatch-llamafactory-081.txt", "companion-mismatch"),
    ("045-bf16-v100-glm4-libcudart-warning.txt", "gpu-too-old-for-feature"),
]


@pytest.mark.parametrize(("name", "cause"), POSITIVES, ids=[p[0][:3] for p in POSITIVES])
def test_the_positives_are_still_named(name: str, cause: str, capsys: Capsys) -> None:
    _, doc = doctor_paste(CORPUS / name, capsys)
    assert cause in _causes(doc)


def test_a_refusal_beside_a_gpu_below_it_is_still_named(tmp_path: Path, capsys: Capsys) -> None:
    """The bf16 refusal beside a report that shows a T4 (7.5): the GPU is below it."""
    code, doc = _judge(tmp_path, capsys, "GPU 0: Tesla T4 (UUID: GPU-t4)\nValueError: Bfloat16 is only supported on "
                       "GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.\n")
    assert code == 1 and "gpu-too-old-for-feature" in _causes(doc)


def test_build_oom_words_said_of_what_happened_are_still_read(tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(tmp_path, capsys, "Building wheel for flash-attn (setup.py) ... error\n"
                       "  cc1plus: out of memory allocating 65536 bytes\n  error: subprocess-exited-with-error\n")
    assert "build-oom" in _causes(doc)


# --- titles name the thing the paste shows ---

def _title(doc: dict, cause: str) -> str:  # type: ignore[type-arg]
    return next(f["title"] for f in doc["findings"] if f["cause"] == cause)


def test_libcuda_itself_keeps_its_title(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, "OSError: libcuda.so.1: cannot open shared object file: No such file or "
                    "directory\n")
    assert "libcuda.so" in _title(doc, "library-not-found")


def test_torch_not_compiled_with_cuda_is_titled_as_torch_not_vllm(capsys: Capsys) -> None:
    """427 (a real ComfyUI thread): torch's own AssertionError; the paste shows no vLLM."""
    _, doc = doctor_paste(HELDOUT / "427-installer-replaced-torch-comfyui-manager-cu121-uninstalled.txt", capsys)
    title = _title(doc, "cpu-only-build")
    assert "vLLM" not in title and "torch" in title


def test_a_companions_missing_torch_symbol_names_that_companion(capsys: Capsys) -> None:
    """029 (a real thread): flash_attn_2_cuda's undefined c10 symbol is flash-attn's, not torchvision's."""
    _, doc = doctor_paste(CORPUS / "029-flash-attn-setdevice-rhel8-torch231.txt", capsys)
    title = _title(doc, "companion-mismatch")
    assert "torchvision" not in title and "flash_attn" in title


def test_a_user_uninstalling_torch_themselves_is_not_an_installer_replacing_it(tmp_path: Path, capsys: Capsys) -> None:
    """The user's own words ("I uninstalled torch and reinstalled it") beside a working report: nothing is wrong."""
    code, doc = _judge(tmp_path, capsys, "Fixed: I uninstalled torch and reinstalled it from the cu121 index, now "
                       "everything works.\nPyTorch version: 2.1.0+cu121\nIs CUDA available: True\nGPU models and "
                       "configuration: GPU 0: NVIDIA GeForce RTX 3090\nNvidia driver version: 535.104.05\n")
    assert (code, _causes(doc)) == (0, [])


def test_an_installer_uninstalling_torch_is_still_said(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, "ComfyUI-Manager: this uninstalls the existing torch and replaces it with "
                    "torch 2.3.0+cpu\nAssertionError: Torch not compiled with CUDA enabled\n")
    assert "installer-replaced-torch" in _causes(doc)


def test_torch_too_old_driver_beside_an_older_driver_is_still_named(tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(tmp_path, capsys, "PyTorch version: 2.4.0+cu121\nNvidia driver version: 470.82.01\n"
                       "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")
    assert code == 1 and "driver-too-old" in _causes(doc)


def test_other_extensions_and_companions_are_named_in_their_titles(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, "ImportError: /usr/local/lib/python3.10/dist-packages/sgl_kernel/sm90/"
                    "common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    assert _title(doc, "torch-abi-mismatch").startswith("sgl-kernel's extension")
    _, doc = _judge(tmp_path, capsys, "torchaudio 2.1.0 requires torch==2.1.0, but you have torch 2.1.2 which is "
                    "incompatible.\n")
    assert _title(doc, "companion-mismatch").startswith("torchaudio needs another torch")


# --- real look-alikes (tests/data/corpus 900-929, from threads whose resolution is another cause) ---

def test_flash_attentions_ampere_refusal_on_a_blackwell_gpu_is_not_a_gpu_too_old(capsys: Capsys) -> None:
    """900 (nvidia-cosmos/cosmos-predict2.5#29): the user's RTX 5090 is newer than Ampere; a flash-attn build older
    than the GPU refuses it in these words. Cause not named, with which GPU the process ran on."""
    code, doc = doctor_paste(CORPUS / "900-unclear-flash-attn-ampere-refusal-on-rtx5090-blackwell.txt", capsys)
    assert "gpu-too-old-for-feature" not in _causes(doc)
    (unclear,) = doc["unclear"]
    assert code == 1 and "RTX 5090" in unclear["missing"]


def test_transformers_own_tokenizers_check_is_not_a_companion_mismatch(capsys: Capsys) -> None:
    """901 (oobabooga/textgen#2805): tokenizers is no torch companion; the failure is listed, its cause not named."""
    code, doc = doctor_paste(CORPUS / "901-unclear-transformers-tokenizers-version-check-textgen.txt", capsys)
    assert (code, _causes(doc)) == (1, []) and doc["unclear"]


# --- a consequence is not a cause: the ranks' connection failing after a rank died; xFormers built for this torch ---

RANK_DIED = [
    # a rank out of GPU memory, then Gloo's connection to it closed (torch.distributed's rank-prefixed lines)
    ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
     "79.15 GiB of which 1.02 GiB is free.\n[rank0]: RuntimeError: Gloo connectFullMesh failed with "
     "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"),
    # a rank's illegal memory access, then NCCL's socket to it refused
    ("[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
     "node0:2345:6789 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45678> failed : "
     "Connection refused\n"),
]


@pytest.mark.parametrize("text", RANK_DIED, ids=["gloo-after-oom", "nccl-socket-after-cuda-error"])
def test_a_connection_failing_after_a_rank_died_is_not_the_network(text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(tmp_path, capsys, text)
    assert "nccl-misconfigured" not in _causes(doc)
    (unclear,) = doc["unclear"]
    assert code == 1 and "CUDA" in unclear["error"]


def test_a_connection_refused_alone_is_still_the_network(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, "node0:2345:6789 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect "
                    "to 10.0.0.2<45678> failed : Connection refused\nRuntimeError: NCCL error: unhandled system error\n")
    assert "nccl-misconfigured" in _causes(doc)


XFORMERS = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch {built} with CUDA 1201 (you have 2.1.0+cu121)\n    Python  3.10.13 (you have 3.10.13)\n"
            "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n")


def test_xformers_built_for_the_very_torch_it_runs_with_is_not_a_mismatch(tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(tmp_path, capsys, XFORMERS.format(built="2.1.0+cu121"))
    assert "companion-mismatch" not in _causes(doc)
    (unclear,) = doc["unclear"]
    assert code == 1 and "xformers.info" in unclear["paste"]


def test_xformers_built_for_another_torch_is_still_a_mismatch(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, XFORMERS.format(built="2.2.0+cu121"))
    assert "companion-mismatch" in _causes(doc)


def test_a_source_tree_built_in_place_is_not_a_shadowing_checkout(capsys: Capsys) -> None:
    """656 (a real thread): the checkout's own `_C.abi3.so` loads and misses a torch symbol: the tree was built in
    place against another torch (torch-abi-mismatch), it does not lack its compiled extensions."""
    _, doc = doctor_paste(CORPUS / "656-torch-abi-vllm-source-build-parseschema.txt", capsys)
    assert _causes(doc) == ["torch-abi-mismatch"]


UPGRADE = ("$ pip install {asked}\nCollecting {collected}\nInstalling collected packages: torch\n"
           "  Attempting uninstall: torch\n    Found existing installation: torch 2.5.1+cpu\n"
           "    Uninstalling torch-2.5.1+cpu:\n      Successfully uninstalled torch-2.5.1+cpu\n"
           "Successfully installed torch-2.5.1+cu124\n")


def test_the_user_installing_torch_themselves_is_not_an_installer_replacing_it(tmp_path: Path, capsys: Capsys) -> None:
    """pip asked for torch on its command line ("Collecting torch==2.5.1", no "(from ...)"): replaced on purpose."""
    code, doc = _judge(tmp_path, capsys, UPGRADE.format(asked="torch==2.5.1 --index-url https://download.pytorch.org/"
                                                              "whl/cu124", collected="torch==2.5.1"))
    assert (code, _causes(doc)) == (0, [])


def test_a_dependency_replacing_torch_is_still_said(tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(tmp_path, capsys, UPGRADE.format(asked="-r requirements.txt",
                                                     collected="torch==2.5.1 (from -r requirements.txt (line 3))"))
    assert "installer-replaced-torch" in _causes(doc)


def test_a_builds_own_torch_check_is_not_a_torch_that_fails_to_load(capsys: Capsys) -> None:
    """167 (a real thread): AutoGPTQ's setup "requires PyTorch(>=1.13.0) been installed" in pip's isolated build is
    torch absent there (build-isolation), not a torch whose libraries do not load (library-not-found)."""
    _, doc = doctor_paste(CORPUS / "167-build-isolation-autogptq-windows-requires-pytorch-first.txt", capsys)
    assert _causes(doc) == ["build-isolation"]
