"""doctor's build and binary-wheel families judged from facts whatever their phrasing, and their look-alikes: a build
that needs torch in an installer's isolated environment (uv's, pip's and poetry's words for the build-requirements step,
a frame in the setup.py an installer unpacked), a build killed for memory told in prose, a toolkit newer than the
driver's CUDA, a third-party extension's wheel built for another torch (a torch library it cannot load) or another CUDA
(its wheel index's CUDA beside a runtime of another major). Pastes are the corpus's (real, cited in their sidecars)
or lines cut from the public threads cited at each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_text

CORPUS = Path(__file__).parent / "data" / "corpus"


def _doctor(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    return doctor_text(text, tmp_path, capsys)


def _causes(answer: dict) -> list[tuple[str, str]]:
    return [(f["severity"], f["cause"]) for f in answer.get("findings", [])]  # (none where nothing was readable)


def _corpus(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["doctor", "--no-env", "--log", str(next(CORPUS.glob(f"{name}-*.txt"))), "--json"])
    return code, json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------------------------------------
# isolated builds: the build-requirements step in each installer's words
# ------------------------------------------------------------------------------------------------------------

#: Emu3#5 (pip on Windows, the frame in pip's unpacked flash-attn source)
PIP_FRAME = ('File "C:\\Users\\user\\AppData\\Local\\Temp\\pip-install-7czi3fmk\\flash-attn_6da82b15991a4532b7dc3a5aefc5ec40'
             '\\setup.py", line 19, in <module>\n          import torch\n'
             "      ModuleNotFoundError: No module named 'torch'\n")
#: flash-attention-v100#23 (uv 0.8, a local source with no requirements frame: torch imported by its setup.py)
UV_LOCAL = ("  × Failed to build `flash-attn-v100 @ file:///[...]/git/flash-attention-v100`\n"
            "  ├─▶ The build backend returned an error\n"
            "  ╰─▶ Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)\n\n      [stderr]\n"
            "      Traceback (most recent call last):\n"
            '        File "<string>", line 15, in get_ext_modules\n'
            "      ModuleNotFoundError: No module named 'torch'\n")


@pytest.mark.parametrize("name", ["992"])
def test_uvs_older_words_for_the_requirements_step_are_build_isolation(name: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """uv 0.4's "Failed to fetch wheel" / "Build backend failed to determine extra requires with `build_wheel()`",
    cut before the exception: flash-attn's build asked for its requirements in uv's isolated environment."""
    code, answer = _corpus(name, capsys)
    assert code == 1 and _causes(answer) == [("error", "build-isolation")]
    assert answer["findings"][0]["title"].startswith("uv built")  # (its fix in uv's terms: no-build-isolation-package)


@pytest.mark.parametrize("text", [PIP_FRAME, UV_LOCAL])
def test_no_torch_in_an_installers_build_is_build_isolation(text: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A frame in the setup.py pip unpacked (Windows' paths), uv's failed build of a local source: no torch there."""
    code, answer = _doctor(tmp_path, text, capsys)
    assert code == 1 and _causes(answer) == [("error", "build-isolation")]


def test_the_requirements_hook_is_read_in_any_installers_words() -> None:
    for text in ("Backend subprocess exited when trying to invoke get_requires_for_build_wheel\n",  # poetry
                 "Call to `setuptools.build_meta.get_requires_for_build_wheel` failed (exit status: 1)\n",  # uv
                 '  File "/tmp/x/build_meta.py", line 332, in get_requires_for_build_wheel\n'):
        assert "build-requirements-failed" in read_evidence(text).signal_codes(), text


@pytest.mark.parametrize("text", [
    # flash-attention-v100#23's "after": uv built the same kind of package
    "Resolved 31 packages in 8ms\n   Building flash-attn-v100 @ file:///[...]/git/flash-attention-v100\n"
    "      Built flash-attn-v100 @ file:///[...]/git/flash-attention-v100\nPrepared 1 package in 1m 55s\n"
    "Installed 1 package in 1ms\n",
    # a plain `python setup.py` in the user's own checkout (not an installer's isolated build): torch not installed
    'Traceback (most recent call last):\n  File "/home/u/src/ext/setup.py", line 3, in <module>\n    import torch\n'
    "ModuleNotFoundError: No module named 'torch'\n",
])
def test_isolation_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert ("error", "build-isolation") not in _causes(answer)


# ------------------------------------------------------------------------------------------------------------
# a build killed for memory, told in prose
# ------------------------------------------------------------------------------------------------------------

#: TensorRT-LLM#186's words (a build script, dmesg's OOM)
TRT_PROSE = ("I'm trying to build TensorRT-LLM in the container with `python3 ./scripts/build_wheel.py --trt_root "
             "/usr/local/tensorrt`, but it failed. Looks get killed on the way of building.\n"
             "Then, I checked `dmesg` and found that was probably because of OOM.\n")


def test_a_build_script_killed_with_oom_said_is_build_oom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _doctor(tmp_path, TRT_PROSE, capsys)
    assert code == 1 and ("error", "build-oom") in _causes(answer)


def test_opensims_lowercase_kill_with_dmesg_is_build_oom(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _corpus("994", capsys)
    assert code == 1 and ("error", "build-oom") in _causes(answer)


@pytest.mark.parametrize("text", [
    # the build script named, OOM only as advice (its README's words), nothing killed
    "python3 ./scripts/build_wheel.py --trt_root /usr/local/tensorrt -j 4\nUse fewer jobs to avoid OOM.\n",
    # a build the user stopped
    "python3 ./scripts/build_wheel.py --trt_root /usr/local/tensorrt\n^C\nKeyboardInterrupt\n",
])
def test_build_oom_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert "build-oom" not in [c for _, c in _causes(answer)]


# ------------------------------------------------------------------------------------------------------------
# a toolkit newer than the driver's CUDA
# ------------------------------------------------------------------------------------------------------------

#: trak#68 (nvcc 11.8, driver 460 of CUDA 11.2; the PTX error is the thread's title)
TRAK = "cuda version: Cuda compilation tools, release 11.8, V11.8.89\n\nnvidia driver: 460.91.03\n"


def test_nvcc_newer_than_the_drivers_cuda_is_the_ptx_family(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """No failure pasted: an info that names the family (the driver serves CUDA 11.2 by cuda.yaml)."""
    _, answer = _doctor(tmp_path, TRAK, capsys)
    assert _causes(answer) == [("info", "ptx-toolchain-too-new")]
    assert "CUDA 11.2" in answer["findings"][0]["title"]


def test_with_a_failure_it_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, TRAK + "RuntimeError: CUDA error: an illegal memory access was encountered\n", capsys)
    assert ("warning", "ptx-toolchain-too-new") in _causes(answer)


@pytest.mark.parametrize("text", [
    "Cuda compilation tools, release 11.2, V11.2.152\nnvidia driver: 460.91.03\n",  # the driver's own CUDA
    "Cuda compilation tools, release 11.1, V11.1.105\nnvidia driver: 460.91.03\n",  # older
    "Cuda compilation tools, release 12.1, V12.1.105\nnvidia driver: 460.91.03\n",  # another major: not this family
    "Cuda compilation tools, release 11.8, V11.8.89\n",  # no driver shown
])
def test_ptx_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert "ptx-toolchain-too-new" not in [c for _, c in _causes(answer)]


# ------------------------------------------------------------------------------------------------------------
# a third-party extension's wheel built for another torch or CUDA
# ------------------------------------------------------------------------------------------------------------

#: pytorch_scatter#211 (the wheel page of torch 1.8.0+cu111; VS Code's "Exception has occurred" above the loader's line)
SCATTER = ("`pip install torch-scatter -f https://<index>/whl/torch-1.8.0+cu111.html`\nbut now throws an error \n"
           "`Exception has occurred: OSError\nlibtorch_cuda_cu.so: cannot open shared object file: No such file or "
           "directory`\n")


def test_a_torch_library_an_extension_cannot_load_is_torch_abi(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _doctor(tmp_path, SCATTER, capsys)
    assert code == 1 and _causes(answer) == [("error", "torch-abi-mismatch")]
    assert "torch 1.8.0 for CUDA 11.1" in answer["findings"][0]["explanation"]


def test_the_extensions_import_shows_it_without_its_wheels_build(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = _corpus("991", capsys)
    assert code == 1 and _causes(answer) == [("error", "torch-abi-mismatch")]


def test_a_failure_is_never_no_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loader's line alone (no exception word before it) is a failure: never "no problems found"."""
    code, answer = _doctor(tmp_path, "libfoo.so: cannot open shared object file: No such file or directory\n", capsys)
    assert code == 1 and (answer["findings"] or answer["unclear"])


@pytest.mark.parametrize("text", [
    # corpus 188's words: torchaudio's own (a companion's cause)
    "it prevents me from importing torchaudio with the message `OSError: libtorch_cuda_cpp.so: cannot open shared "
    "object file: No such file or directory`\n",
    # a C++ program linked against libtorch, started without its directory on the loader's path
    "./example-app: error while loading shared libraries: libtorch_cuda.so: cannot open shared object file: No such "
    "file or directory\n",
    # torch's own import
    "import torch\nOSError: libc10_cuda.so: cannot open shared object file: No such file or directory\n",
    'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n  File "/usr/lib/python3/site-packages/'
    'torch/__init__.py", line 189, in <module>\n    _load_global_deps()\nOSError: libc10_cuda.so: cannot open shared '
    "object file: No such file or directory\n",
])
def test_torch_library_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = _doctor(tmp_path, text, capsys)
    assert not any(f["cause"] == "torch-abi-mismatch" and "library of another torch build" in f["title"]
                   for f in answer["findings"])


@pytest.mark.parametrize("line, built", [
    ("pip install torch-scatter -f https://<index>/whl/torch-1.8.0+cu111.html", ("1.8.0", "11.1")),
    ("pip install mmcv-full -f https://<index>/mmcv/dist/cu102/torch1.9.0/index.html", ("1.9.0", "10.2")),
    ("python -m pip install detectron2 -f https://<index>/detectron2/wheels/cu111/torch1.9/index.html", ("1.9", "11.1")),
    ("Downloading https://<index>/whl/torch-2.0.0%2Bcu117/torch_scatter-2.1.2+pt20cu117-cp310-cp310-linux_x86_64.whl",
     ("2.0", "11.7")),
    ("pip install flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl", ("2.3", "12.2")),
    ("pip install torch-sparse -f https://<index>/whl/torch-2.1.0+cpu.html", ("2.1.0", "cpu")),
])
def test_an_extensions_wheel_names_its_torch_and_cuda(line: str, built: tuple[str, str]) -> None:
    assert [s.value for s in read_evidence(line + "\n").ext_builds] == [built]


def test_torchs_own_wheel_is_no_extensions_build() -> None:
    assert not read_evidence("Downloading torch-2.1.0+cu121-cp310-cp310-linux_x86_64.whl (2200.7 MB)\n").ext_builds


@pytest.mark.parametrize("name", ["990"])
def test_a_runtime_of_another_major_than_the_wheels_index_is_the_variant(name: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """mmcv-full from the cu111/torch1.9.0 index asking for libcudart.so.10.2: the wheel's binary is CUDA 10's (said
    one step softer: only the index and the user's words state CUDA 11), and no "library not found" error."""
    _, answer = _corpus(name, capsys)
    assert _causes(answer) == [("warning", "cuda-variant-mismatch")]


def test_a_runtime_of_the_wheels_own_major_is_not_the_variant(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    text = ("pip install mmcv-full -f https://<index>/mmcv/dist/cu111/torch1.9.0/index.html\n"
            "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n")
    _, answer = _doctor(tmp_path, text, capsys)
    assert "cuda-variant-mismatch" not in [c for _, c in _causes(answer)]
