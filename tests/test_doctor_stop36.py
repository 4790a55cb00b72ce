"""Rules from the twenty-fourth to twenty-sixth held-out sets' misses, once measured (issue 25, stop 36).

- a CUDA library's soname from before CUDA 11 names its minor (``libcudart.so.10.0`` is 10.0's; CUDA 11 made minor
  versions compatible and keeps ``libcudart.so.11.0`` for every 11.x): asked for where the paste shows another
  toolkit, it is a package built for another CUDA (``cuda-variant-mismatch``), not a library merely not found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import DATA, doctor_paste, doctor_text, worst_severities

HELDOUT = DATA / "heldout"


@pytest.mark.parametrize("number", ["682", "379"])
def test_a_pre_cuda_11_soname_of_another_minor_is_another_variant(number: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # 682 tensorflow/tensorflow#17629: libcublas.so.9.0 missing with CUDA 9.1 installed (TensorFlow 1.6's wheels are
    # CUDA 9.0 builds); 379 apache/mxnet#14514: mxnet-cu100mkl (CUDA 10.0) asks libcudart.so.10.0 on CUDA 10.1
    _, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert worst_severities(doc).get("cuda-variant-mismatch") == "warning", "a CUDA said in the user's words: one step softer"
    [finding] = [f for f in doc["findings"] if f["cause"] == "cuda-variant-mismatch"]
    assert "is CUDA 9.0's, but this environment has CUDA 9.1" in finding["title"] or \
        "is CUDA 10.0's, but this environment has CUDA 10.1" in finding["title"]


@pytest.mark.parametrize("text, cause", [
    # CUDA 11's minor version compatibility: libcudart.so.11.0 is what every 11.x toolkit provides
    ("I have CUDA 11.4 installed\nImportError: libcudart.so.11.0: cannot open shared object file: No such file or "
     "directory\n", "cuda-variant-mismatch"),
    # cuBLAS from CUDA 10.1 on is libcublas.so.10 (no minor): CUDA 10.2 provides it
    ("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 10.2, V10.2.89\nOSError: libcublas.so.10: "
     "cannot open shared object file: No such file or directory\n", "cuda-variant-mismatch"),
    # a driver at the floor of what is asked for
    ("conda install pytorch cudatoolkit=10.2 -c pytorch\nDriver Version: 440.33.01\nRuntimeError: boom\n",
     "driver-too-old"),
    # CUDA 11's minor version compatibility: 11.8 runs from 450.80.02 on
    ("pip install torch --index-url https://<index>/whl/cu118\nDriver Version: 470.82.01\nRuntimeError: boom\n",
     "driver-too-old"),
])
def test_look_alikes_the_facts_rule_out(text: str, cause: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_text(text, tmp_path, capsys)
    assert cause not in worst_severities(doc)


def test_an_undefined_symbol_wrapped_after_undefined_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    # Dao-AILab/flash-attention#950: "flash_attn_2_cuda...so: undefined" / " symbol: _ZN3c104impl3cow11cow_deleterEPv"
    # (a torch symbol: flash-attn built against another torch than 2.1.2)
    code, doc = doctor_paste(next(HELDOUT.glob("129-*.txt")), capsys)
    assert code == 1 and worst_severities(doc).get("companion-mismatch") == "error"


@pytest.mark.parametrize("number, line", [
    # turboderp-org/exllamav2#434: Python's Windows ImportError without its name
    ("634", "DLL load failed while importing exllamav2_ext"),
    # turboderp/exllama#65: ninja's words capitalised
    ("290", "Ninja: Build stopped: subcommand failed"),
    # tensorflow/tensorflow#6083: TensorFlow skipping a GPU below its minimum capability, at info level
    ("581", "Ignoring visible gpu device"),
])
def test_failures_of_other_wordings_are_not_no_problems(number: str, line: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 1 and doc["unclear"] and line in doc["unclear"][0]["error"]


def test_an_alternative_offered_is_no_failure_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a healthy question's code (held-out 134): "# or run on CPU with INT8" offers an option, says no failure
    code, doc = doctor_text('GPU: A100\nmodel = WhisperModel(path, device="cuda")\n# or run on CPU with INT8\n', tmp_path,
                            capsys)
    assert code == 0 and not doc["unclear"]
    (tmp_path / "said").mkdir()
    code, doc = doctor_text("My install runs on the CPU, not the GPU\n", tmp_path / "said", capsys)
    assert doc["unclear"], "the failure said is still read"


@pytest.mark.parametrize("number, cause", [
    # Wan-Video/Wan2.1#25: "FlashAttention only supports Ampere GPUs or newer" on "4 2080ti" (written lower-case)
    ("095", "gpu-too-old-for-feature"),
    # huggingface/text-generation-inference#533: "GPU with CUDA capability 7 0 is not supported" beside a V100
    ("638", "gpu-too-old-for-feature"),
    # ai4d-iasc/trixie#6: `conda install pytorch torchvision cudatoolkit=10.2` on driver 418.67 (CUDA 10.2: 440.33)
    ("288", "driver-too-old"),
    # tamakoji/pytorch-syncbn#7: torch.utils.cpp_extension's "Command '['which', 'c++']' returned non-zero exit status 1"
    ("121", "c-compiler-missing"),
    # ChristophReich1996/Cell-DETR#13: "nvcc fatal : Failed to preprocess host compiler properties." (-ccbin gcc-6.3.0)
    ("685", "c-compiler-missing"),
    # tensorflow/tensorflow#1158: "kernel version 384.90.0 does not match DSO versio[n]" (the paste cut there)
    ("582", "nvml-driver-mismatch"),
    # jax-ml/jax#1297: "jaxlib is version 0.1.23, but this version of jax requires version 0.1.26."
    ("577", "companion-mismatch"),
    # pytorch/functorch#926: torch's "cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked
    # against (8, 0, 3)" with a cluster's cuDNN on LD_LIBRARY_PATH
    ("118", "cuda-variant-mismatch"),
    # pytorch/pytorch#90673: libtorch_cuda_cu.so "undefined symbol: cusparseSpSM_analysis, version libcusparse.so.11"
    ("119", "cuda-variant-mismatch"),
])
def test_development_misses_of_the_stop36_sets(number: str, cause: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_paste(next(HELDOUT.glob(f"{number}-*.txt")), capsys)
    assert code == 1 and worst_severities(doc).get(cause) == "error"


def test_a_cuda_stated_older_than_the_gpu_refused_by_nvcc(capsys: pytest.CaptureFixture[str]) -> None:
    # facebookresearch/detectron2#272: "Unsupported gpu architecture 'compute_75'" with "CUDA9.2" and an RTX2060 stated
    # (sm_75 needs the nvcc of CUDA 10.0): the user's words, one step softer
    _, doc = doctor_paste(next(HELDOUT.glob("109-*.txt")), capsys)
    assert worst_severities(doc).get("toolkit-mismatch") == "warning"


def test_a_cuda_library_function_is_told_from_torchs_and_unknown_ones() -> None:
    from vresolve.doctor.evidence.symbols import attribute

    assert attribute("cusparseSpSM_analysis").owner == "cuda-library"
    assert attribute("cublasLtMatmulAlgoGetHeuristic").owner == "cuda-library"
    assert attribute("_ZN3c104cuda9SetDeviceEi").owner == "torch"
    assert attribute("cusparse").owner == "unknown"  # (not a function of its API)
    assert attribute("some_other_function").owner == "unknown"
