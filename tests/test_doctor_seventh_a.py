"""Families of the seventh split's confident misses, now development material (issue 25, tests/data/heldout 801, 811,
813, 816, 822, 834; see tests/data/heldout/README.md, "The seventh split"), each read by its facts and signals rather
than by one excerpt's wording, with look-alikes that must not get the cause.

The pastes are real text from the public threads their sidecars name (tests/data/corpus 860-867 among them); the single
lines below are real lines of the same families (their threads in the comments) or the fixed output of a tool
(`gcc --version`, `nvcc --version`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_paste, doctor_text, error_causes, excerpt

HELDOUT = Path(__file__).parent / "data" / "heldout"
CORPUS = Path(__file__).parent / "data" / "corpus"
LOGS = Path(__file__).parent / "data" / "logs"
Capsys = pytest.CaptureFixture[str]


_one, _errors, _judge = excerpt, error_causes, doctor_text


# --- a bare `Killed` is a build's out-of-memory only where the paste shows a build ---

def test_killed_after_a_running_engine_is_not_a_build(capsys: Capsys) -> None:
    """816: vLLM's V1 engine fails (an assertion) and the shell reports `Killed`: no build anywhere, and the paste shows
    no GPU (whether the V100 is too old cannot be read from it): cause not named, exit 1."""
    code, doc = doctor_paste(_one(HELDOUT, "816"), capsys)
    assert (code, _errors(doc)) == (1, []) and doc["unclear"]


@pytest.mark.parametrize("number", ["866", "867"])
def test_killed_while_a_model_loads_is_not_a_build(number: str, capsys: Capsys) -> None:
    """Look-alikes (vllm#12346, mlc-llm#1678): a program killed for the host's memory while it runs: not build-oom."""
    code, doc = doctor_paste(_one(CORPUS, number), capsys)
    assert code == 1 and "build-oom" not in _errors(doc) and doc["unclear"][0]["error"] == "Killed"


@pytest.mark.parametrize("path", [LOGS / "build-oom__docker-build-nvcc-killed.txt", CORPUS / "181-build-oom-docker-pip-torch-non-zero-code-137.txt"])
def test_killed_in_a_build_is_still_the_build(path: Path, capsys: Capsys) -> None:
    """The same word in a build (nvcc's command line before it, BuildKit's step prefix; a docker build's RUN step):
    build-oom, an error where the paste shows memory short (nvcc's --threads 8), else a warning with the kill left
    not settled (a pip install killed in a docker build: nothing of memory shown)."""
    code, doc = doctor_paste(path, capsys)
    said = [f["cause"] for f in doc["findings"]]
    assert code == 1 and "build-oom" in said
    assert ("build-oom" in _errors(doc)) == (path.parent == LOGS) and bool(doc["unclear"]) == (path.parent != LOGS)


def test_the_compiler_killed_needs_no_other_build_line(tmp_path: Path, capsys: Capsys) -> None:
    """A compiler's own words for a kill are a build's; alone, they do not show memory (the toolchain helper's
    build-killed-memory-not-shown): build-oom said as a warning, the kill left for dmesg to settle."""
    _, doc = _judge("c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n", tmp_path, capsys)
    assert [f["cause"] for f in doc["findings"]] == ["build-oom"] and "dmesg" in doc["unclear"][0]["paste"]


# --- CUDA error 802 by its code; a library whose initialization fails is not missing ---

@pytest.mark.parametrize(("directory", "number"), [(HELDOUT, "834"), (CORPUS, "864")])
def test_error_802_by_its_code_is_fabric_manager(directory: Path, number: str, capsys: Capsys) -> None:
    """834 ("cuda driver library init failure: 802" on an HGX H100), 864 (ollama#9031: "cudart init failure: 802",
    "cudaSetDevice err: 802" on H200s): the code outranks the words "Unable to load cudart library" around it."""
    code, doc = doctor_paste(_one(directory, number), capsys)
    assert code == 1 and _errors(doc) == ["fabric-manager-not-running"]


def test_another_init_failure_code_is_neither_802_nor_a_missing_library(capsys: Capsys) -> None:
    """Look-alike (ollama#11593): the same line with code 3 (a driver setting fixed it): cause not named, exit 1."""
    code, doc = doctor_paste(_one(CORPUS, "865"), capsys)
    assert (code, _errors(doc)) == (1, []) and doc["unclear"]


@pytest.mark.parametrize("line", ["cudaSetDevice err: 802", "cuInit err: 802", "CUDA error 802 at kernel.cu:12",
                                  "cudaGetDeviceProperties returned 802",
                                  "msg=\"Unable to load cudart library /usr/lib/ollama/libcudart.so.12.4.127: cudart init "
                                  "failure: 802\""])
def test_the_code_802_forms(line: str) -> None:
    assert "system-not-ready" in read_evidence(line).signal_codes()


@pytest.mark.parametrize("line", ["| NVIDIA-SMI 550.802   Driver Version: 550.802   CUDA Version: 12.4 |",
                                  "CUDA error 8020 at kernel.cu:12", "cuda driver library init failure: 3",
                                  "Processed 802 batches, CUDA memory 12 GiB", "error: 802 files changed",
                                  "current error code 802 from the scheduler"])
def test_802_look_alikes(line: str) -> None:
    assert "system-not-ready" not in read_evidence(line).signal_codes()


def test_a_library_whose_init_fails_is_found() -> None:
    init = read_evidence("Unable to load cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.570.169: cuda driver "
                         "library init failure: 802")
    assert [lib.value.missing for lib in init.libraries] == [False]
    gone = read_evidence("OSError: libcuda.so.1: cannot open shared object file: No such file or directory")
    assert [lib.value.missing for lib in gone.libraries] == [True]


# --- a CUDA library of one major beside another major; a lone missing library titled by its own name ---

def test_a_lone_missing_library_is_titled_by_its_name(capsys: Capsys) -> None:
    """811: onnxruntime's provider asks for libcublasLt.so.11 and the paste shows no CUDA of its own: the library is
    not found (its name in the title, not the driver's libcuda)."""
    code, doc = doctor_paste(_one(HELDOUT, "811"), capsys)
    (finding,) = doc["findings"]
    assert (code, finding["cause"]) == (1, "library-not-found")
    assert "libcublasLt.so.11" in finding["title"] and "libcuda" not in finding["title"]


def test_a_library_of_another_major_beside_cuda_12(capsys: Capsys) -> None:
    """862 (hallo#203): the same request beside `nvcc --version` of CUDA 12.1: the package is built for CUDA 11."""
    code, doc = doctor_paste(_one(CORPUS, "862"), capsys)
    assert (code, _errors(doc)) == (1, ["cuda-variant-mismatch"])
    assert "libcublasLt.so.11" in doc["findings"][0]["title"]


ORT_11 = ("FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open "
          "shared object file: No such file or directory\n")


@pytest.mark.parametrize("shown", ["torch                    2.3.1+cu121\n",
                                   "nvidia-cublas-cu12       12.1.3.1\nnvidia-cudnn-cu12        8.9.2.26\n"])
def test_other_majors_shown_by_packages(shown: str, tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge("Package                  Version\n------------------------ ----------\n" + shown + ORT_11,
                    tmp_path, capsys)
    assert _errors(doc) == ["cuda-variant-mismatch"]


@pytest.mark.parametrize("text", [
    # the same major installed: the library is missing from where the loader looks
    "nvidia-cublas-cu11       11.11.3.6\n" + ORT_11,
    # cuDNN's number is its own version, not CUDA's
    "nvidia-cublas-cu12       12.1.3.1\nOSError: libcudnn.so.8: cannot open shared object file: No such file or directory\n",
    # the driver's "CUDA Version" is the newest it serves, not a CUDA installed
    "| NVIDIA-SMI 550.54.14   Driver Version: 550.54.14   CUDA Version: 12.4     |\n" + ORT_11,
])
def test_missing_library_look_alikes_stay_not_found(text: str, tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(text, tmp_path, capsys)
    assert "library-not-found" in _errors(doc) and "cuda-variant-mismatch" not in _errors(doc)


# --- Triton's "Failed to find C compiler" beside a compiler shown ---

TRITON_CC = ('  File "/x/site-packages/triton/runtime/build.py", line 50, in _build\n'
             '    raise RuntimeError("Failed to find C compiler. Please specify via CC environment variable.")\n'
             "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.\n")


def test_no_c_compiler_where_gcc_is_said_present(capsys: Capsys) -> None:
    """822 (intel-xpu-backend-for-triton#4707): "i have gcc and g++": a Triton bug fixed in its main branch, not a
    missing compiler: cause not named, asking for what settles it."""
    code, doc = doctor_paste(_one(HELDOUT, "822"), capsys)
    assert (code, _errors(doc)) == (1, []) and "`echo $CC`" in doc["unclear"][0]["paste"]


@pytest.mark.parametrize("shown", ["gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n", "$ which gcc\n/usr/bin/gcc\n",
                                   "export CC=/usr/bin/gcc-11\n", "Ubuntu clang version 14.0.0-1ubuntu1.1\n",
                                   "GCC version: (Ubuntu 9.4.0-1ubuntu1~20.04.2) 9.4.0\n"])
def test_a_compiler_shown_overrules_the_message(shown: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(TRITON_CC + shown, tmp_path, capsys)
    assert (code, _errors(doc)) == (1, []) and doc["unclear"]


@pytest.mark.parametrize("extra", ["", "I don't have gcc installed, do I need it?\n", "GCC version: Could not collect\n"])
def test_no_compiler_shown_is_still_the_missing_compiler(extra: str, tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _judge(TRITON_CC + extra, tmp_path, capsys)
    assert _errors(doc) == ["c-compiler-missing"]


# --- nvcc older than the architecture it refuses ---

@pytest.mark.parametrize(("directory", "number", "first"), [(HELDOUT, "813", "10.0"), (CORPUS, "863", "11.8")])
def test_nvcc_older_than_the_architecture(directory: Path, number: str, first: str, capsys: Capsys) -> None:
    """813 (/usr/local/cuda-8.0/bin/nvcc refusing compute_75), 863 (3detr#59: nvcc 11.5 refusing compute_89)."""
    code, doc = doctor_paste(_one(directory, number), capsys)
    assert (code, _errors(doc)) == (1, ["toolkit-mismatch"])
    assert f"CUDA {first} or later" in doc["findings"][0]["title"]


def test_an_architecture_the_nvcc_dropped_is_not_an_old_nvcc(tmp_path: Path, capsys: Capsys) -> None:
    """Look-alike: nvcc 12.1 refusing compute_35 (Kepler, dropped in CUDA 12): the nvcc is newer, not older."""
    code, doc = _judge("nvcc fatal   : Unsupported gpu architecture 'compute_35'\n"
                       "Cuda compilation tools, release 12.1, V12.1.105\n", tmp_path, capsys)
    assert (code, _errors(doc)) == (1, []) and doc["unclear"]


def test_an_nvcc_not_shown_is_asked_for(tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge("nvcc fatal   : Unsupported gpu architecture 'compute_86'\n", tmp_path, capsys)
    assert (code, _errors(doc)) == (1, []) and "nvcc --version" in doc["unclear"][0]["paste"]


# --- the driver's library without a CUDA entry point the program calls ---

@pytest.mark.parametrize(("directory", "number"), [(HELDOUT, "801"), (CORPUS, "860"), (CORPUS, "861")])
def test_a_driver_without_the_entry_point_is_too_old(directory: Path, number: str, capsys: Capsys) -> None:
    """801 (ollama on Windows: nvcuda.dll without cuCtxCreate_v3), 860 (T-Rex#95: cuDevicePrimaryCtxSetFlags_v2 under
    driver 440), 861 (pegainfer#263: libcuda.so.1 without cuCtxCreate_v4)."""
    code, doc = doctor_paste(_one(directory, number), capsys)
    assert (code, _errors(doc)) == (1, ["driver-too-old"])


@pytest.mark.parametrize("line", [
    # xmrig/xmrig-cuda#108: no libcuda resolved at all (an unversioned cuInit): not an old driver
    "./xmrig: symbol lookup error: /root/xmrig/xmrig-cuda/libxmrig-cuda.so: undefined symbol: cuInit",
    # cuBLAS's and cuDNN's own functions are not the driver's
    "ImportError: /x/libtorch_cuda.so: undefined symbol: cublasLtMatmulAlgoGetHeuristic_v2",
    "OSError: /x/libcudnn_ops.so.9: undefined symbol: cudnnGetLibConfig_v2",
])
def test_entry_point_look_alikes(line: str) -> None:
    assert "libcuda-entry-point-missing" not in read_evidence(line).signal_codes()


# --- vLLM's FlashAttention backend refused, judged by the GPU the paste shows ---

def test_flash_attention_refused_without_a_gpu_asks_for_it(capsys: Capsys) -> None:
    """816: the assertion names no GPU: what settles it (FlashAttention's compute capability 8.0) is asked for."""
    _, doc = doctor_paste(_one(HELDOUT, "816"), capsys)
    (unclear,) = doc["unclear"]
    assert "is_fa_version_supported" in unclear["error"] and "nvidia-smi" in unclear["paste"]


@pytest.mark.parametrize(("gpu", "named"), [("GPU 0: Tesla V100-SXM2-32GB", True), ("GPU 0: Tesla T4", True),
                                            ("GPU 0: NVIDIA A100-SXM4-80GB", False)])
def test_flash_attention_refused_judged_by_the_gpu(gpu: str, named: bool, tmp_path: Path, capsys: Capsys) -> None:
    text = _one(HELDOUT, "816").read_text(encoding="utf-8") + f"\n{gpu}\n"
    code, doc = _judge(text, tmp_path, capsys)
    assert code == 1 and ("gpu-too-old-for-feature" in _errors(doc)) is named


def test_the_flash_attention_error_line_alone_is_not_the_assertion() -> None:
    """Look-alike (817's kind): vLLM's ERROR line that it cannot use FA 2 falls back to another backend."""
    line = ("ERROR 03-22 10:54:27 [fa_utils.py:145] Cannot use FA version 2 is not supported due to FA2 is only "
            "supported on devices with compute capability >= 8")
    assert "fa-version-unsupported" not in read_evidence(line).signal_codes()
