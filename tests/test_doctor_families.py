"""The families audit (issue 25): doctor reads each error family from its primary vocabulary (CUDA's error enums by
name, number and string; libraries' own words about their builds), in any program's wording, and names a cause only
where the family member settles one. Texts are built from the message forms each program prints (the thread or
source of each form in a comment); the cited excerpts are tests/data/corpus/340-348.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence
from vresolve.doctor.evidence.families import CODES, CUDA_ERRORS, MARKERS
from vresolve.matrix import load_matrix

from .conftest import doctor_text

Capsys = pytest.CaptureFixture[str]
_GPU = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1b2c3d)\n"


def _causes(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["cause"] for f in doc.get("findings", []) if f["severity"] != "info"]


NAMED = [
    # CuPy's CUDARuntimeError (chainer/chainer#4166): the runtime's enum name and string
    ("cupy-insufficient-driver", "cupy.cuda.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version "
     "is insufficient for CUDA runtime version\n", "driver-too-old"),
    # numba's CudaSupportError (numba/numba#5793's form) with the driver enum of 804
    ("numba-compat-804", "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in "
     "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)\n", "driver-too-old"),
    # ollama's cudart probe (its "cudart init failure: N"): the runtime's 804 by number
    ("ollama-cudart-804", 'time=2024-05-01T10:00:00Z level=INFO source=gpu.go:1 msg="Unable to load cudart library '
     '/usr/lib/x86_64-linux-gnu/libcudart.so.12: cudart init failure: 804"\n', "driver-too-old"),
    # the runtime's 36: an API call needs a newer driver
    ("call-requires-newer-driver", "RuntimeError: CUDA error: API call requires a newer CUDA driver\n", "driver-too-old"),
    # JAX/XLA loading a CUBIN: the driver enum alone
    ("jax-no-binary-for-gpu", "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to load in-memory CUBIN: "
     "CUDA_ERROR_NO_BINARY_FOR_GPU\n", "arch-not-in-build"),
    # the CUDA samples' checkCudaErrors ("CUDA error at file:line code=N(name)")
    ("samples-222", "CUDA error at bandwidthTest.cu:616 code=222(cudaErrorUnsupportedPtxVersion) "
     "\"cudaSetDevice(currentDevice)\"\n", "ptx-toolchain-too-new"),
    # ggml's host check, the GPU's own arch (ggml-org/llama.cpp's common.cuh) beside the device it found
    ("ggml-no-arch-at-or-below-gpu", "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce GTX 1050 Ti, "
     "compute capability 6.1, VMM: yes\n/x/ggml/src/ggml-cuda/common.cuh:112: ggml was not compiled with any CUDA arch "
     "<= 610\n", "arch-not-in-build"),
    # ggml's device-side bad_arch (KoboldCpp 1.55 on Pascal)
    ("ggml-bad-arch", "ERROR: ggml-cuda was compiled without support for the current GPU architecture.\n",
     "arch-not-in-build"),
    # OpenCV DNN's refusal of a GPU its CUDA_ARCH_BIN left out (opencv/opencv#20706, corpus 352)
    ("opencv-arch", "cv2.error: OpenCV(4.5.3) dnn.cpp:2385: error: (-216:No CUDA support) OpenCV was not built to work "
     "with the selected device. Please check CUDA_ARCH_PTX or CUDA_ARCH_BIN in your build configuration. in function "
     "'initCUDABackend'\n", "arch-not-in-build"),
    # libraries' own words that their build has no CUDA
    ("ctranslate2", "ValueError: This CTranslate2 package was not compiled with CUDA support\n", "cpu-only-build"),
    ("dgl", "dgl._ffi.base.DGLError: [14:00:04] /opt/dgl/src/runtime/c_runtime_api.cc:82: Check failed: allow_missing: "
     "Device API cuda is not enabled. Please install the cuda version of dgl.\n", "cpu-only-build"),
    ("paddle", "E0101 10:00:00.000000  1234 place.cc:80] Cannot use GPU because you have installed CPU version "
     "PaddlePaddle.\n", "cpu-only-build"),
    ("opencv", "cv2.error: OpenCV(4.8.0) /io/opencv/modules/core/include/opencv2/core/private.cuda.hpp:106: error: "
     "(-216:No CUDA support) The library is compiled without CUDA support in function 'throw_no_cuda'\n",
     "cpu-only-build"),
    ("torch-extension", "Traceback (most recent call last):\n  File \"train_net.py\", line 9, in <module>\n"
     "RuntimeError: Not compiled with GPU support\n", "cpu-only-build"),
]


@pytest.mark.parametrize(("name", "text", "cause"), NAMED, ids=[c[0] for c in NAMED])
def test_a_family_member_that_settles_a_cause_names_it(name: str, text: str, cause: str, tmp_path: Path,
                                                       capsys: Capsys) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert cause in _causes(doc), doc
    assert code == 1


UNSETTLED = [
    # (name, text, a cause its words suggest, a word of what to paste next)
    ("torch-unknown-error", "RuntimeError: CUDA error: unknown error\nCUDA kernel errors might be asynchronously "
     "reported at some other API call\n", "driver-too-old", "dmesg"),
    ("thc-30-unknown-error", "RuntimeError: cuda runtime error (30) : unknown error at "
     "/pytorch/aten/src/THC/THCGeneral.cpp:87\n", "arch-not-in-build", "dmesg"),
    ("ggml-busy", "ggml_cuda_init: failed to initialize CUDA: CUDA-capable device(s) is/are busy or unavailable\n",
     "gpu-not-visible", "Compute M."),
    ("tensorflow-stub-34", "2023-08-24 10:00:00.000000: E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:266]"
     " failed call to cuInit: UNKNOWN ERROR (34)\n", "library-not-found", "stubs"),
    ("invalid-ordinal", "RuntimeError: CUDA error: invalid device ordinal\n", "gpu-not-visible", "CUDA_VISIBLE_DEVICES"),
    # the pre-CUDA 11 string of 46, in Caffe's check (NVIDIA/DIGITS#2005, corpus 351)
    ("caffe-46-old-string", "F0326 10:00:00.000000  1234 common.cpp:142] Check failed: error == cudaSuccess (46 vs. 0)  "
     "all CUDA-capable devices are busy or unavailable\n", "gpu-not-visible", "Compute M."),
    ("driver-mismatch-803", "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display "
     "driver / cuda driver combination\n", "driver-too-old", "/proc/driver/nvidia/version"),
    # a device not found is no build's statement (llama.cpp#23209's form; held-out 984's ggml form; bitsandbytes loads
    # its CPU library also where it does not find the CUDA runtime: held-out 982)
    ("ggml-no-cuda-devices", "ggml_init_cublas: no CUDA devices found, CUDA will be disabled\n", "cpu-only-build",
     "nvidia-smi"),
    ("llama-no-usable-gpu", "warning: no usable GPU found, --gpu-layers option will be ignored\nwarning: one possible "
     "reason is that llama.cpp was compiled without GPU support\n", "cpu-only-build", "nvidia-smi"),
    ("bitsandbytes-cpu-library", "/x/site-packages/bitsandbytes/cextension.py:34: UserWarning: The installed version of "
     "bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit multiplication, and GPU quantization are "
     "unavailable.\n", "cpu-only-build", "nvidia-smi"),
    ("jax-falling-back", "WARNING:jax._src.xla_bridge:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 "
     "and rerun for more info.)\n", "cpu-only-build", "nvidia-smi"),
    # ggml's no_device_code names the arch of the code that ran, not the GPU's
    ("ggml-no-device-code", "/x/ggml/src/ggml-cuda/mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no device code "
     "compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 520\n", "arch-not-in-build", "compute_cap"),
    # ggml's host check naming an arch that is not the GPU's (llama.cpp#15589, corpus 342)
    ("ggml-arch-750-on-a100", "  Device 0: NVIDIA A100-SXM4-80GB, compute capability 8.0, VMM: yes\n"
     "/root/llama.cpp/ggml/src/ggml-cuda/../ggml-cuda/common.cuh:112: ggml was not compiled with any CUDA arch <= 750\n",
     "arch-not-in-build", "GPU"),
]


@pytest.mark.parametrize(("name", "text", "wrong", "ask"), UNSETTLED, ids=[c[0] for c in UNSETTLED])
def test_a_family_member_that_settles_nothing_is_not_named_and_says_what_to_paste(
        name: str, text: str, wrong: str, ask: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert wrong not in _causes(doc)
    assert code == 1 and doc["unclear"], "a failure whose cause is not settled is 'cause not named', not 'no problems'"
    said = " ".join(u["paste"] + " " + u["missing"] for u in doc["unclear"])
    assert ask in said


HEALTHY = [
    # TensorFlow JIT-compiling its PTX for a GPU newer than its SASS: it runs (tensorflow/tensorflow#62320, corpus 348)
    ("tensorflow-jit-from-ptx", _GPU + "2024-12-25 21:32:43.137142: W tensorflow/core/common_runtime/gpu/gpu_device.cc:"
     "2348] TensorFlow was not built with CUDA kernel binaries compatible with compute capability 9.0. CUDA kernels will "
     "be jit-compiled from PTX, which could take 30 minutes or longer.\n"),
    # XLA compiling serially where the driver is older than its ptxas: it runs
    ("xla-ptxas-newer-than-driver", _GPU + "2024-05-28 04:48:02.870689: W external/xla/xla/service/gpu/nvptx_compiler.cc:"
     "760] The NVIDIA driver's CUDA version is 12.4 which is older than the ptxas CUDA version (12.5.40). Because the "
     "driver is older than the ptxas version, XLA is disabling parallel compilation, which may slow down compilation. "
     "You should update your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.\n"),
    # a number after "returned" in a CUDA call that is not an error
    ("device-count-returned", _GPU + ">>> torch.cuda.device_count() returned 2 devices\n"),
]


@pytest.mark.parametrize(("name", "text"), HEALTHY, ids=[c[0] for c in HEALTHY])
def test_a_healthy_paste_with_a_familys_words_stays_silent(name: str, text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 0 and _causes(doc) == [] and not doc.get("unclear"), doc


def test_llama_cpp_without_gpu_offload_is_a_cpu_build_warning(tmp_path: Path, capsys: Capsys) -> None:
    """llama.cpp's "not compiled with GPU offload support" is about its build, and it goes on on the CPU: a warning."""
    code, doc = doctor_text("warning: not compiled with GPU offload support, --gpu-layers option will be ignored\n"
                            "warning: see main README.md for information on enabling GPU BLAS support\n", tmp_path, capsys)
    assert [(f["cause"], f["severity"]) for f in doc["findings"]] == [("cpu-only-build", "warning")]
    assert code == 0


def test_a_cuda_error_number_is_read_only_where_it_means_one_error_in_every_release() -> None:
    """The runtime enum was renumbered in CUDA 10.1 (38 was no device, 48 no kernel image, 8 invalid device function):
    such numbers alone type nothing; 35 (the same in every release) and CUresults said by a driver call do."""
    codes = {s.value.code for s in read_evidence("THCudaCheck FAIL file=x.cu line=1 error=38 CUDA error 38\n").signals}
    assert codes & {"no-cuda-gpus", "cuda-error"} == set()
    codes = {s.value.code for s in read_evidence("cudaGetDeviceCount returned 35\n").signals}
    assert "driver-insufficient" in codes
    # 34 (the stub library) only as a CUresult: the runtime's old 34 was cudaErrorNotReady
    assert not {s.value.code for s in read_evidence("CUDA error 34\n").signals} & CODES
    said = read_evidence("CudaAPIError: [34] Call to cuInit results in an error\n")
    assert "cuda-error" in {s.value.code for s in said.signals}


def test_every_family_code_has_a_cause_row_or_is_a_failure_not_named() -> None:
    """One table: each code a family types is a known-issues row's signal (its cause) or a failure that no row names."""
    from vresolve.doctor.pasted import _FAILURE_SIGNALS

    rows = {code for k in load_matrix().known_issues for code in k.signals}
    assert {c for c in CODES - MARKERS if c not in rows and c not in _FAILURE_SIGNALS} == set()
    assert all(e.paste for e in CUDA_ERRORS if e.code == "cuda-error"), "an unsettled error says what settles it"


_BUILT_HERE = ("$ cmake -B build -DGGML_CUDA=ON && cmake --build build --config Release\n$ nvcc --version\n"
               "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
               "Cuda compilation tools, release 13.0, V13.0.48\n$ nvidia-smi\n"
               "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
               "$ ./build/bin/llama-cli -m model.gguf -ngl 99\n"
               "warning: no usable GPU found, --gpu-layers option will be ignored\n")


def test_no_device_found_is_named_where_the_toolkit_that_built_it_is_above_the_drivers_cuda_major(
        tmp_path: Path, capsys: Capsys) -> None:
    """"No usable GPU found" settles nothing alone; a build here with CUDA 13.0's nvcc on a driver serving CUDA 12.4 does
    (held-out 984's cause, llama.cpp#6184): driver-too-old, with both versions."""
    code, doc = doctor_text(_BUILT_HERE, tmp_path, capsys)
    assert _causes(doc) == ["driver-too-old"] and code == 1
    assert "CUDA 13.0" in doc["findings"][0]["title"] and "12.4" in doc["findings"][0]["title"]


def test_no_device_found_beside_a_toolkit_of_the_drivers_major_or_without_a_build_is_not_driver_too_old(
        tmp_path: Path, capsys: Capsys) -> None:
    # the build's command not shown: the nvcc shown may not be what built the program
    _, doc = doctor_text(_BUILT_HERE.replace("-DGGML_CUDA=ON", ""), tmp_path, capsys)
    assert "driver-too-old" not in _causes(doc)
    # one CUDA major: minor-version compatibility runs it
    _, doc = doctor_text(_BUILT_HERE.replace("release 13.0, V13.0.48", "release 12.6, V12.6.77"), tmp_path, capsys)
    assert "driver-too-old" not in _causes(doc)
