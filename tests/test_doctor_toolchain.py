"""doctor's build-time and library-variant families, judged from facts, and their look-alikes: the local toolkit's CUDA
beside torch's (torch's extension builder, DeepSpeed's op builder), uv's isolated builds, a build out of memory (and a
compiler killed where the paste shows nothing of memory), a CUDA library of one major beside an environment of another.
Pastes are the corpus's (real, cited in their sidecars) or lines cut from the public threads and sources cited at each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main

from .conftest import doctor_text

CORPUS = Path(__file__).parent / "data" / "corpus"


def _doctor(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    return doctor_text(text, tmp_path, capsys)


def _said(answer: dict) -> list[tuple[str, str]]:
    return [(f["severity"], f["cause"]) for f in answer["findings"]]


# ------------------------------------------------------------------------------------------------------------
# the toolkit's CUDA beside torch's
# ------------------------------------------------------------------------------------------------------------

#: JIA-Lab-research/MGM#91 (DeepSpeed's refusal: another major)
DS_REFUSED = ("deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version "
              "12.2 does not match the version torch was compiled with 11.7, unable to compile cuda/cpp extensions "
              "without a matching cuda version.\n")
#: DeepSpeed's acceptance of a minor mismatch (op_builder/builder.py, assert_no_cuda_mismatch's print), as a training
#: log shows it before the op builds
DS_ACCEPTED = ("Installed CUDA version 12.6 does not match the version torch was compiled with 12.4 but since the APIs "
               "are compatible, accepting this combination\n"
               "Using /home/user/.cache/torch_extensions/py39_cu124 as PyTorch extensions root...\n"
               "Emitting ninja build file /home/user/.cache/torch_extensions/py39_cu124/cpu_adam/build.ninja...\n"
               "Building extension module cpu_adam...\n")
#: torch's warning of a minor mismatch (torch/utils/cpp_extension.py, CUDA_MISMATCH_WARN), in a build that goes on
TORCH_MINOR = ("running build_ext\n/home/eric/llm-awq/.venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py:388: "
               "UserWarning: The detected CUDA version (11.8) has a minor version mismatch with the version that was "
               "used to compile PyTorch (11.7). Most likely this shouldn't be a problem.\n"
               "  warnings.warn(CUDA_MISMATCH_WARN.format(cuda_str_version, torch.version.cuda))\n"
               "building 'awq_inference_engine' extension\n")


def test_deepspeeds_refusal_is_the_toolkit_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _doctor(tmp_path, DS_REFUSED, capsys)
    assert code == 1 and _said(answer) == [("error", "toolkit-mismatch")] and not answer["unclear"]


@pytest.mark.parametrize("name", ["931-toolkit-mismatch-lightseq-builder-cuda-123-torch-121-minor-refused",
                                  "932-toolkit-mismatch-lightseq-builder-cuda-90-torch-101"])
def test_a_builders_refusal_is_an_error_of_either_mismatch(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """LightSeq's copy of DeepSpeed's builder refuses a minor mismatch (12.3 against 12.1) as it does a major one: the
    program stopped, whatever the versions."""
    assert main(["doctor", "--no-env", "--log", str(CORPUS / f"{name}.txt"), "--json"]) == 1
    assert _said(json.loads(capsys.readouterr().out)) == [("error", "toolkit-mismatch")]


@pytest.mark.parametrize(("text", "said", "title"), [
    (DS_ACCEPTED, ("info", "toolkit-mismatch"), "nvcc 12.6 is not torch's CUDA 12.4"),
    (TORCH_MINOR, ("info", "toolkit-mismatch"), "nvcc 11.8 is not torch's CUDA 11.7"),
    # DeepSpeed told to skip its check, across majors: no refusal, but the ops it builds will not load beside this torch
    ("[WARNING] DeepSpeed Op Builder: Installed CUDA version 11.8 does not match the version torch was compiled with "
     "12.1.Detected `DS_SKIP_CUDA_CHECK=1`: Allowing this combination of CUDA, but it may result in unexpected "
     "behavior.\n", ("warning", "toolkit-mismatch"), "nvcc 11.8 is not torch's CUDA 12.1"),
])
def test_a_builder_that_goes_on_is_said_by_the_versions(text: str, said: tuple[str, str], title: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _doctor(tmp_path, text, capsys)
    assert _said(answer) == [said] and answer["findings"][0]["title"] == title
    assert code == 0 and not answer["unclear"]


@pytest.mark.parametrize(("nvcc", "said"), [("12.4, V12.4.131", ("info", "toolkit-mismatch")),
                                            ("11.8, V11.8.89", ("warning", "toolkit-mismatch"))])
def test_nvcc_beside_torch_same_major_is_no_error(nvcc: str, said: tuple[str, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """nvcc 12.4 beside a cu121 torch (the same major) is an info, 11.8 beside it a warning; neither is an error
    while nothing failed."""
    code, answer = _doctor(tmp_path, f"$ nvcc --version\nCuda compilation tools, release {nvcc}\n"
                                     "$ python -c \"import torch; print(torch.__version__)\"\n2.3.0+cu121\n", capsys)
    assert _said(answer) == [said] and code == 0


# ------------------------------------------------------------------------------------------------------------
# uv's isolated builds
# ------------------------------------------------------------------------------------------------------------

def test_uv_build_without_torch_is_build_isolation_in_uvs_words(capsys: pytest.CaptureFixture[str]) -> None:
    paste = CORPUS / "930-build-isolation-uv-flagembedding-flash-attn-282-torch-nightly-installed.txt"
    assert main(["doctor", "--no-env", "--log", str(paste), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["severity"], f["cause"]) for f in findings] == [("error", "build-isolation")]
    assert "uv" in findings[0]["title"]
    assert "--no-build-isolation" in findings[0]["fix"] and "no-build-isolation-package" in findings[0]["fix"]
    assert "extra-build-dependencies" in findings[0]["fix"]


def test_uvs_build_environment_path_shows_the_isolated_build(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """GeeeekExplorer/nano-vllm#96: uv's traceback runs in ~/.cache/uv/builds-v0/.tmpXXXX (its build environment)."""
    text = ("Resolved 44 packages in 978ms\n"
            "  × Failed to build `flash-attn==2.8.2`\n"
            "  ├─▶ The build backend returned an error\n"
            "  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)\n"
            "      Traceback (most recent call last):\n"
            '        File "/home/cjchen/.cache/uv/builds-v0/.tmpEHrRRA/lib/python3.11/site-packages/setuptools/'
            'build_meta.py", line 331, in get_requires_for_build_wheel\n'
            "      ModuleNotFoundError: No module named 'torch'\n")
    code, answer = _doctor(tmp_path, text, capsys)
    assert code == 1 and _said(answer) == [("error", "build-isolation")]
    assert any("builds-v0" in line for line in answer["findings"][0]["evidence"])


@pytest.mark.parametrize("text", [
    # a healthy uv install that built flash-attn
    "$ uv pip install flash-attn --no-build-isolation\nResolved 24 packages in 1.21s\nPrepared 1 package in 2m 10s\n"
    "Installed 1 package in 20ms\n + flash-attn==2.8.3\n",
    # a script run by uv without torch in its environment: no build at all
    "$ uv run python train.py\nTraceback (most recent call last):\n  File \"/home/u/proj/train.py\", line 1, in <module>\n"
    "    import torch\nModuleNotFoundError: No module named 'torch'\n",
    # uv failing to build for another reason (no C compiler), in its isolated environment
    "  × Failed to build `xformers==0.0.28.post1`\n  ├─▶ The build backend returned an error\n"
    "  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)\n"
    "      error: command 'gcc' failed: No such file or directory\n",
])
def test_uv_lookalikes_are_not_build_isolation(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert "build-isolation" not in [c for _, c in _said(answer)]


# ------------------------------------------------------------------------------------------------------------
# builds out of memory, and compilers killed where the paste shows nothing of memory
# ------------------------------------------------------------------------------------------------------------

def test_a_lone_compiler_kill_is_a_warning_and_not_settled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cms-sw/cmssw#43117: cudafe++ killed by signal 9, which went away with CUDA 12.4 (a compiler's, not the machine's
    memory): the paste shows one line and nothing of memory, so the OOM killer is said as likely, and the error asks
    for the kernel's own lines."""
    code, answer = _doctor(tmp_path, "nvcc error   : 'cudafe++' died due to signal 9 (Kill signal)\n", capsys)
    assert code == 1 and _said(answer) == [("warning", "build-oom")]
    assert len(answer["unclear"]) == 1 and "dmesg" in answer["unclear"][0]["paste"]


@pytest.mark.parametrize("extra", [
    "gmake[2]: *** Waiting for unfinished jobs....\n",  # make running jobs in parallel
    "$ MAX_JOBS=16 pip install -e . --no-build-isolation\n",
    "[59433.551382] Out of memory: Kill process 21993 (cc1plus) score 707 or sacrifice child\n",
])
def test_a_compiler_kill_where_memory_is_shown_is_build_oom(extra: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _doctor(tmp_path, extra + "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n", capsys)
    assert code == 1 and _said(answer) == [("error", "build-oom")] and not answer["unclear"]


def test_memory_used_up_in_words_is_build_oom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NVlabs/instant-ngp#607: the reporter's words, no compiler line."""
    text = ("While installing, it's using all available RAM (16GB), then all available SWAP (2GB). After using all "
            "available memory it's killed and the installation never finishes.\n\n"
            "It happens after calling `cmake --build build --config RelWithDebInfo -j 16`\n")
    code, answer = _doctor(tmp_path, text, capsys)
    assert _said(answer) == [("error", "build-oom")] and code == 1


def test_cannot_allocate_memory_beside_a_cuda_path_is_the_hosts(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/pytorch (summitdev): the path holds "cuda"; the words are the host's memory, not a GPU's."""
    text = ("/sw/summitdev/cuda/9.2.148/include/thrust/system/cuda/detail/cub/util_device.cuh: Cannot allocate memory\n"
            "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n")
    _, answer = _doctor(tmp_path, text, capsys)
    assert _said(answer) == [("error", "build-oom")]


@pytest.mark.parametrize("text", [
    # a user's Ctrl-C
    "[12/345] Building CUDA object CMakeFiles/_C.dir/csrc/attention/attention_kernels.cu.o\n^CKeyboardInterrupt\n"
    "ninja: build stopped: interrupted by user.\n",
    # a compiler's own error, after which ninja stops
    "[3/40] /usr/local/cuda/bin/nvcc -c csrc/ops.cu -o build/ops.o -gencode arch=compute_80,code=sm_80\n"
    "FAILED: build/ops.o\ncsrc/ops.cu(12): error: identifier \"__hfma2\" is undefined\n"
    "1 error detected in the compilation of \"csrc/ops.cu\".\nninja: build stopped: subcommand failed.\n",
    # memory denied in words, in a build that failed otherwise
    "$ cmake --build build -j 4\nThe build does not use all the RAM, it stops at 40% with an error\n",
    # a GPU's memory used up while serving, after a build that went well
    "Building wheel for vllm (pyproject.toml) ... done\n$ vllm serve Qwen/Qwen2.5-7B-Instruct\n"
    "The server is using all available GPU memory and then the process is killed\n",
])
def test_build_oom_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert "build-oom" not in [c for _, c in _said(answer)]


# ------------------------------------------------------------------------------------------------------------
# a CUDA library of one major beside an environment of another
# ------------------------------------------------------------------------------------------------------------

_ORT_11 = ("FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open "
           "shared object file: No such file or directory\n")


@pytest.mark.parametrize(("shown", "said"), [
    # a toolkit's directory on the loader's path
    ("export LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:$LD_LIBRARY_PATH\n", ("error", "cuda-variant-mismatch")),
    # pip's CUDA 12 packages
    ("nvidia-cublas-cu12      12.1.3.1\nnvidia-cudnn-cu12       8.9.2.26\n", ("error", "cuda-variant-mismatch")),
    # only the user's words (microsoft/onnxruntime#13932's form field): said softer
    ("### Execution Provider Library Version\n\nCUDA 12.0\n", ("warning", "cuda-variant-mismatch")),
])
def test_a_library_of_another_major_is_the_variant(shown: str, said: tuple[str, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, _ORT_11 + shown, capsys)
    assert _said(answer) == [said]


@pytest.mark.parametrize("name", ["934-cuda-variant-mismatch-faster-whisper-1-libcublas12-torch-cu118",
                                  "935-cuda-variant-mismatch-onnxruntime-gpu-1171-libcublas11-cuda-124-wsl",
                                  "936-library-not-found-onnxruntime-java-libcublas11-cuda-112-k8s",
                                  "937-library-not-found-faster-whisper-1-libcublas12-cuda-122-stated"])
def test_variant_and_its_lookalikes_in_the_corpus(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The same major on both sides (CUDA 11.2 and libcublas.so.11; CUDA 12.2 and libcublas.so.12) is a library the
    loader does not find, not another build."""
    main(["doctor", "--no-env", "--log", str(CORPUS / f"{name}.txt"), "--json"])
    causes = [f["cause"] for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] != "info"]
    expected = name.split("-", 1)[1].split("-")[:3]
    assert causes == ["cuda-variant-mismatch" if expected[0] == "cuda" else "library-not-found"]


def test_libcublaslt_12_missing_on_cuda_12_is_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("OSError: libcublasLt.so.12: cannot open shared object file: No such file or directory\n"
            "nvidia-cublas-cu12      12.4.5.8\ntorch                   2.5.1+cu124\n")
    _, answer = _doctor(tmp_path, text, capsys)
    assert "cuda-variant-mismatch" not in [c for _, c in _said(answer)]
    assert ("error", "library-not-found") in _said(answer)


@pytest.mark.parametrize(("home", "said"), [("/usr/local/cuda-11.8", ("warning", "toolkit-mismatch")),
                                            ("/usr/local/cuda-12.4", ("info", "toolkit-mismatch"))])
def test_cuda_home_names_the_toolkit_a_build_uses(home: str, said: tuple[str, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """CUDA_HOME naming a toolkit's directory (NVIDIA's installers name it after the version) is the toolkit torch's
    extension builder uses: another major beside a cu121 torch a warning, another minor an info."""
    code, answer = _doctor(tmp_path, f"export CUDA_HOME={home}\n$ python -c \"import torch; print(torch.__version__)\"\n"
                                     "2.3.0+cu121\n", capsys)
    assert _said(answer) == [said] and code == 0
