"""Rules from the seventeenth and eighteenth held-out sets' misses, once measured (issue 25, stop 35), each read from
its family's primary wording, with look-alikes that must not get the cause.

- a program's own limit (PyTorch's out-of-memory with PyTorch holding the card; vLLM's heads/parallel-size check):
  ``program-limit`` (info), the paste's failure explained, not "cause not named";
- a CPU-only torch where every failure is that no GPU is used: ``cpu-only-build`` (error), GPU shown or not;
- torch.compile's Windows "Compiler: cl is not found.": ``c-compiler-missing``;
- full-width punctuation (CJK input: "python：3.9") read as ASCII.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence.lines import clean

from .conftest import DATA, doctor_paste, doctor_text

HELDOUT = DATA / "heldout"


def _causes(doc: dict) -> dict[str, str]:
    return {f["cause"]: f["severity"] for f in doc.get("findings", [])}


@pytest.mark.parametrize("number", ["035", "065"])
def test_a_programs_own_limit_is_no_fault_of_the_stack(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 035: vLLM refuses tensor_parallel_size=6 for 64 heads; 065: Fooocus out of a K80's memory, PyTorch holding it
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 0 and doc["unclear"] == []
    assert _causes(doc).get("program-limit") == "info"
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


_OOM_OLD = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 622.00 MiB (GPU 0; 11.17 GiB total "
            "capacity; {used} already allocated; 195.25 MiB free; 10.57 GiB reserved in total by PyTorch)\n")
# PyTorch 2.1's wording (c10/cuda/CUDACachingAllocator.cpp)
_OOM_NEW = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
            "23.69 GiB of which 18.06 MiB is free. Process 2291 has 23.66 GiB memory in use. Of the allocated memory "
            "{used} is allocated by PyTorch, and 301.72 MiB is reserved by PyTorch but unallocated.\n")


@pytest.mark.parametrize("text", [_OOM_OLD.format(used="10.36 GiB"), _OOM_NEW.format(used="22.93 GiB"),
                                  "ValueError: Total number of attention heads (40) must be divisible by tensor "
                                  "parallel size (3).\n"])
def test_the_limit_read_from_the_messages_numbers(text: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 0 and "program-limit" in _causes(doc) and doc["unclear"] == []


@pytest.mark.parametrize("text", [
    # the card held elsewhere (another process, a MIG slice): not the program's budget
    _OOM_OLD.format(used="0 bytes"),
    _OOM_OLD.format(used="1.20 GiB"),
    _OOM_NEW.format(used="100.00 MiB"),
    # an out-of-memory beside another failure: judged by the other
    _OOM_OLD.format(used="10.36 GiB") + "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    # numbers that divide: not the refusal it looks like
    "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (8).\n"
    "RuntimeError: NCCL error: unhandled system error\n",
])
def test_limits_look_alikes_are_not_named(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert "program-limit" not in _causes(doc)
    assert code == 1 and (doc["unclear"] or [f for f in doc["findings"] if f["severity"] == "error"])


def test_a_cpu_torch_whose_only_failure_is_no_gpu_used(capsys: pytest.CaptureFixture[str]) -> None:
    # 028 (ogkalu2/comic-translate#17): Ultralytics' banner "torch-2.1.0+cpu", "Invalid CUDA 'device=0' requested",
    # "torch.cuda.device_count(): 0"; the GPU only in the user's words
    code, doc = doctor_paste(next(HELDOUT.glob("028-*.txt")), capsys)
    assert code == 1 and _causes(doc).get("cpu-only-build") == "error"


_CPU_TORCH = "Ultralytics YOLOv8.1.3 Python-3.10.11 torch-2.1.0+cpu\ntorch.cuda.device_count(): 0\n"


@pytest.mark.parametrize("text", [
    # another failure beside it: the CPU build does not explain an undefined symbol
    _CPU_TORCH + "ImportError: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
    # the CPU build asked for (PyTorch's cpu index)
    "pip install torch --index-url https://download.pytorch.org/whl/cpu\n" + _CPU_TORCH,
    # a CUDA torch: not a CPU build
    _CPU_TORCH.replace("+cpu", "+cu121"),
])
def test_cpu_torch_look_alikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_text(text, tmp_path, capsys)
    assert not [f for f in doc.get("findings", []) if f["cause"] == "cpu-only-build" and f["severity"] == "error"
                and "that is why no GPU is used" in f["title"]]


def test_torch_compiles_windows_compiler_not_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc = doctor_paste(next(HELDOUT.glob("037-*.txt")), capsys)
    assert code == 1 and _causes(doc).get("c-compiler-missing") == "error"
    # words near it that are not the message
    _, doc = doctor_text("The compiler: cl is found on PATH now.\nCompiler cl is not found in the docs index\n",
                         tmp_path, capsys)
    assert "c-compiler-missing" not in _causes(doc)


def test_full_width_forms_read_as_ascii() -> None:
    assert clean("CUDA Version：11.3") == "CUDA Version:11.3"
    assert clean("显卡：RTX 4090（24G），python：3.9") == "显卡:RTX 4090(24G),python:3.9"
    assert clean("plain ascii: unchanged") == "plain ascii: unchanged"
    # typographic quotes as programs print them; a CJK character touching a Latin word is spaced from it
    assert clean("interface version 550.90.07 don’t match with driver version") == \
        "interface version 550.90.07 don't match with driver version"
    assert clean("提示bus error，insufficient shared memory") == "提示 bus error,insufficient shared memory"


def test_a_chinese_environment_list_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    # 030 (NVlabs/tiny-cuda-nn#239): "python：3.9", "pytorch:1.10" under "My environment："
    _, doc = doctor_paste(next(HELDOUT.glob("030-*.txt")), capsys)
    assert "environment: 3.9" in doc["observations"]


@pytest.mark.parametrize("number", ["013", "049"])
def test_a_program_that_says_it_does_not_run_on_this_python(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 013: A1111's "INCOMPATIBLE PYTHON VERSION ... tested with 3.10.6 Python, but you have 3.11.2"; 049: InvokeAI's
    # installer "Please install Python 3.10.0 or higher (maximum 3.11.100)" beside "Python 3.12.7"
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 1 and _causes(doc).get("python-unsupported") == "error"


@pytest.mark.parametrize(("text", "named"), [
    ("ERROR: CreepyAI requires Python 3.6 or higher\n$ python --version\nPython 3.5.2\n", True),
    ("Incompatible Python version! Required >= 3.4\nPython 3.3.7 (default)\n", True),
    ("RuntimeError: Python 3.13 is not supported by this release\n", True),
    ("Please install Python 3.10.0 or higher (maximum 3.11.100) before running this script.\nPython 3.11.9\n", False),
    ("This package requires Python 3.8 or higher.\nPython 3.10.12\n", False),  # within what it says
    ("vLLM supports Python 3.9-3.12; for CUDA 12.1 use the default wheel.\nPython 3.12.3\n", False),
    ("Ensure you are using Python 3.9-3.12.\n", False),  # no Python shown: nothing settled
    ("INCOMPATIBLE PYTHON VERSION\n", False),  # a refusal with no Python shown: "cause not named" (below)
    ("vLLM supports Python 3.9-3.12.\nPython 3.13.0\n", True),
])
def test_a_programs_python_range_against_the_python_shown(text: str, named: bool, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_text(text, tmp_path, capsys)
    said = [f for f in doc.get("findings", []) if f["cause"] == "python-unsupported"
            and f["title"].startswith("The program says it does not run on")]
    assert bool(said) is named


@pytest.mark.parametrize(("typed", "cc"), [("rtx4090", "8.9"), ("3060ti", "8.6"), ("RTX3060 Ti", "8.6"),
                                           ("RTX 4090", "8.9"), ("4090D", "8.9")])
def test_a_gpu_typed_without_the_spaces_of_its_name(typed: str, cc: str) -> None:
    from vresolve.matrix import load_matrix

    gpu = load_matrix().find_gpu(typed)
    assert gpu is not None and str(gpu.compute_capability) == cc


def test_no_gpu_is_made_up_from_letters_and_digits() -> None:
    from vresolve.matrix import load_matrix

    assert load_matrix().find_gpu("python3") is None and load_matrix().find_gpu("cu118") is None


@pytest.mark.parametrize(("text", "runs"), [
    # 045 (NVIDIA/nccl#631): a negation in another sentence of the line; a space before "=1"
    ('I do not know the exact reason, but the model "freeze"(stuck). So I confirmed that the model works by setting '
     "the variable NCCL_P2P_DISABLE =1 .", True),
    ("It works with NCCL_P2P_DISABLE=1.", True),
    ("NCCL_P2P_DISABLE=1 does not help, it still hangs", False),
    ("Does NCCL_P2P_DISABLE=1 fix it? I have not tried yet.", False),
    ("Setting NCCL_P2P_DISABLE=1 resolved the deadlock", True),
])
def test_the_users_finding_that_nccl_runs_without_p2p_is_read_per_sentence(text: str, runs: bool) -> None:
    from vresolve.doctor.evidence import read_evidence

    codes = {s.value.code for s in read_evidence(text + "\n").signals}
    assert ("nccl-p2p-off-works" in codes) is runs


@pytest.mark.parametrize("number", [
    "008",  # TGI in docker: "Download process was signaled to shutdown with signal 7"
    "223",  # fastai: torch's DataLoader SIGBUS message wrapped over two lines of the text
])
def test_a_process_killed_by_sigbus(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert _causes(doc).get("shared-memory-too-small") == "error"


@pytest.mark.parametrize("text", [
    "$ python train.py\nBus error (core dumped)\n",
    # held-out 058's shape: a SIGBUS with NCCL's shm words but no container, /dev/shm size or workers shown
    "Fatal Python error: Bus error\n",
])
def test_a_sigbus_alone_is_not_guessed(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 1 and "shared-memory-too-small" not in _causes(doc)
    assert doc["unclear"] and "df -h /dev/shm" in doc["unclear"][0]["paste"]


@pytest.mark.parametrize("text", [
    # PCIe's AER "Bus Error" lines are the bus, not SIGBUS
    "[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer\n",
    # /dev/shm shown large (held-out 617's look-alike): SIGBUS for another reason
    "docker run --ipc=host --gpus all img python train.py\nBus error (core dumped)\n",
])
def test_sigbus_look_alikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_text(text, tmp_path, capsys)
    assert "shared-memory-too-small" not in _causes(doc)


def test_a_message_wrapped_between_its_words_is_read_once_across_the_break() -> None:
    from vresolve.doctor.evidence import read_evidence

    text = ("it erred with: RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus\n"
            "error. It is possible that dataloader's workers are out of shared\nmemory.\n")
    signals = [(s.value.code, s.line) for s in read_evidence(text).signals]
    assert ("shm-exhausted", 1) in signals
    # a break between words no needle holds together: nothing joined
    assert not read_evidence("the kernel\nimage was fine\n").signals



@pytest.mark.parametrize(("number", "cause"), [
    ("032", "gpu-not-visible"),  # nvidia-docker: NVML's Unknown Error inside a running container after daemon-reload
    ("433", "gpu-not-visible"),  # Kubernetes: the same inside a container ("在容器中"), /dev/nvidiactl EPERM
    ("543", "fabric-manager-not-running"),  # Fabric Manager's "don’t match with driver version" (a typographic quote)
    ("347", "shared-memory-too-small"),  # "提示bus error，insufficient shared memery (shm)"
])
def test_forms_that_were_quiet(number: str, cause: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 1 and _causes(doc).get(cause) == "error"


@pytest.mark.parametrize("number", ["374", "385", "440", "332", "353"])
def test_failures_said_in_other_forms_are_not_no_problems(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 374: TensorFlow's "UnknownError (...): ncclCommInitRank failed: unhandled cuda error"; 385, 440, 332: an
    # exception quoted inside the user's sentence; 353: "load models entirely onto CPU"
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 1 and (doc["unclear"] or [f for f in doc["findings"] if f["severity"] == "error"])


@pytest.mark.parametrize(("text", "failure"), [
    ("I got the error 'ImportError: cannot import name '_C' from 'detectron2'' first", True),
    ("The full error information is as follows:RuntimeError: Couldn't load custom C++ ops. This can happen", True),
    # a model's own error quoted in a question: not of the stack
    ("it will show me that:ValueError: Processor was not found, please check and update your model file.", False),
    # said to be gone
    ("After pinning the version the ImportError: libcudart.so.12 went away", False),
    ("ncclCommInitRank failed: unhandled cuda error", True),
    ("NAME    ID    SIZE    PROCESSOR    UNTIL\nllama3:8b    365c0bd3c000    6.7 GB    100% CPU    4 minutes from now", True),
    ("llama3:8b    365c0bd3c000    6.7 GB    100% GPU    4 minutes from now", False),
])
def test_failure_forms(text: str, failure: bool) -> None:
    from vresolve.doctor.evidence import read_evidence

    assert bool(read_evidence(text + "\n").failures) is failure


def test_nvml_unknown_error_outside_a_container_is_not_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text("$ nvidia-smi\nFailed to initialize NVML: Unknown Error\n", tmp_path, capsys)
    assert code == 1 and "gpu-not-visible" not in _causes(doc) and doc["unclear"]


def test_a_refusal_of_the_python_with_no_python_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text("INCOMPATIBLE PYTHON VERSION\nThis program is tested with 3.10.6 Python.\n", tmp_path, capsys)
    assert code == 1 and "python-unsupported" not in _causes(doc)
    assert doc["unclear"] and "python -VV" in doc["unclear"][0]["paste"]
