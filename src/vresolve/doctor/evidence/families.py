"""Error vocabularies by family, written from each message's primary text (NVIDIA's CUDA API documentation, each
library's own source), so that doctor reads a message in whatever program's words it comes: a name, a number or a
string of CUDA's error enums, and libraries' own statements about their builds.

1. **CUDA runtime and driver API errors** (:data:`CUDA_ERRORS`): each ``cudaError_t`` / ``CUresult`` by its enum
   names, its number and the string ``cudaGetErrorString`` / ``cuGetErrorString`` give it, as torch ("CUDA error:
   ..."), CuPy ("CUDARuntimeError: cudaErrorInsufficientDriver: ..."), JAX and TensorFlow ("failed call to cuInit:
   CUDA_ERROR_NO_DEVICE", "UNKNOWN ERROR (34)"), numba ("[100] Call to cuInit results in CUDA_ERROR_NO_DEVICE"),
   llama.cpp ("ggml_cuda_init: failed to initialize CUDA: ...") or ollama ("init failure: 804") print it. An error
   types as the signal whose row names its cause where it settles one (35 and 36: the driver is older than the CUDA
   the program needs; 209: no kernel for this GPU; 222: PTX of a newer CUDA than the driver; 802: Fabric Manager;
   804: forward compatibility on a GPU without it); else as ``cuda-error``, a failure whose cause is not named, with
   what settles it (:func:`advice`). A number alone is read only where it means one error in every CUDA release
   (the runtime's enum was renumbered in CUDA 10.1: 8, 30, 38 and 48 once meant invalid device function, unknown
   error, no device and no kernel image) and where a CUDA call or library says it.
2. **Built without CUDA** (:data:`BUILT_WITHOUT_CUDA`): a library's own statement that its build has no CUDA
   (CTranslate2, PaddlePaddle, DGL, OpenCV, a torch extension's "Not compiled with GPU support", llama.cpp's "not
   compiled with GPU offload support") is ``built-without-cuda`` (cpu-only-build). Statements that only no device was
   found (ggml's "no CUDA devices found, CUDA will be disabled", llama.cpp's "no usable GPU found", JAX's "No GPU/TPU
   found, falling back to CPU", bitsandbytes' "compiled without GPU support", which it also says when it does not
   find the CUDA runtime) settle no build: ``gpu-not-found-said``, a failure whose cause is not named. (torch's "Torch
   not compiled with CUDA enabled", ONNX Runtime's providers, JAX's "a CUDA-enabled jaxlib is not installed" and
   TensorFlow's native Windows build are read in :mod:`.signals`.)
3. **Not built for this GPU** (:data:`NOT_BUILT_FOR_GPU`): ggml's host-side "ggml was not compiled with any CUDA arch
   <= 750" names the GPU's own arch, read from the device (``ggml-arch-missing``, set against the GPUs the paste shows:
   a ggml of late August 2025 asked it of arch 750 on every GPU), and its device-side "compiled without support for
   the current GPU architecture" is said by the code that ran on the GPU (``ggml-bad-arch``): arch-not-in-build; its
   "kernel X has no device code compatible with CUDA arch N" names the arch of the code that ran, not the GPU's, and
   is ``ggml-no-device-code`` (not named: what settles it is asked). OpenCV's DNN "OpenCV was not built to work with the
   selected device. Please check CUDA_ARCH_PTX or CUDA_ARCH_BIN" is ``opencv-arch-missing`` (arch-not-in-build). TensorFlow's "not built with CUDA kernel binaries compatible with compute capability X. CUDA kernels will
   be jit-compiled from PTX" is a warning of a program that runs: no signal. (torch's "sm_XX is not compatible",
   TensorRT's "Unsupported SM", FlashAttention's and xFormers' refusals: :mod:`.signals`.)
4. **Driver too old**: CUDA's own 35 and 36 (above) in every library's words; NGC's banner, torch's "found version
   11040" and libcuda's missing entry points: :mod:`.signals`. XLA's "The NVIDIA driver's CUDA version is 12.4 which
   is older than the ptxas CUDA version" is a warning of a program that runs (it compiles serially): no signal.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .collect import Collector
from .lines import Line
from .model import MESSAGE, Signal

__all__ = ["BUILT_WITHOUT_CUDA", "CODES", "CUDA_ERRORS", "CudaError", "FamilyReader", "MARKERS", "NOT_BUILT_FOR_GPU",
           "advice"]

#: NVIDIA's documentation of the two enums (names, numbers, meanings)
RUNTIME_DOC = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
DRIVER_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"

#: what settles an error of the driver's state (not installed, not loaded, a GPU in a bad state)
_DRIVER_STATE = ("the output of `nvidia-smi` where the program ran, and the kernel's NVIDIA lines "
                 "(`sudo dmesg -T | grep -i -E \"NVRM|Xid\"`)")


class CudaError(NamedTuple):
    """One CUDA error: its number, its runtime and driver enum names, the string CUDA gives it, the signal it is
    typed as, whether its number alone is read (``any``: in every release and API; ``driver``: only where a
    ``CUresult`` is said, by TensorFlow, numba or ollama's driver library; ``""``: never), and what settles it where
    it names no cause."""

    number: int
    runtime: str | None
    driver: str | None
    message: str
    code: str
    by_number: str = ""
    paste: str = ""


#: the CUDA errors doctor reads (:data:`RUNTIME_DOC`, :data:`DRIVER_DOC`); ``cuda-error``: a failure no cause names
CUDA_ERRORS: tuple[CudaError, ...] = (
    CudaError(35, "cudaErrorInsufficientDriver", None, "CUDA driver version is insufficient for CUDA runtime version",
              "driver-insufficient", "any"),
    CudaError(36, "cudaErrorCallRequiresNewerDriver", None, "API call requires a newer CUDA driver",
              "driver-insufficient"),
    CudaError(100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", "no-cuda-gpus",
              "any"),
    CudaError(98, "cudaErrorInvalidDeviceFunction", None, "invalid device function", "invalid-device-function"),
    CudaError(209, "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU",
              "no kernel image is available for execution on the device", "no-kernel-image", "any"),
    CudaError(200, "cudaErrorInvalidKernelImage", "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid",
              "invalid-image", "any"),
    CudaError(222, "cudaErrorUnsupportedPtxVersion", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
              "the provided PTX was compiled with an unsupported toolchain", "ptx-toolchain", "any"),
    CudaError(802, "cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized",
              "system-not-ready", "any"),
    CudaError(803, "cudaErrorSystemDriverMismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
              "system has unsupported display driver / cuda driver combination", "driver-combination", "any",
              "the output of `nvidia-smi`, `cat /proc/driver/nvidia/version` (the kernel module's version) and `ldconfig "
              "-p | grep libcuda` (the user-space driver library's: the two must be of one release), and, in a "
              "container, whether it carries CUDA's forward-compatibility libraries (`ls /usr/local/cuda/compat`)"),
    CudaError(804, "cudaErrorCompatNotSupportedOnDevice", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
              "forward compatibility was attempted on non supported HW", "forward-compat", "any"),
    # the errors that name no cause by themselves, with what settles them
    CudaError(3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED", "initialization error", "cuda-error",
              "", _DRIVER_STATE + ", and whether the program forks worker processes after CUDA started (CUDA does not "
              "initialise again in a forked child: the `spawn` start method does)"),
    CudaError(34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library", "cuda-error",
              "driver", "the output of `ldconfig -p | grep libcuda` and `echo $LD_LIBRARY_PATH` where the program ran (a "
              "CUDA toolkit's `lib64/stubs` found before the driver's own libcuda), and of `nvidia-smi`; in a "
              "container, the flags it was started with (`--gpus`)"),
    CudaError(46, "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE",
              "CUDA-capable device(s) is/are busy or unavailable", "cuda-error", "any",
              "the output of `nvidia-smi` (its `Compute M.` column: a GPU in `Exclusive_Process` mode takes one "
              "process) and of `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`"),
    # (its string before CUDA 11's: "all CUDA-capable devices are busy or unavailable")
    CudaError(46, None, None, "all CUDA-capable devices are busy or unavailable", "cuda-error", "",
              "the output of `nvidia-smi` (its `Compute M.` column: a GPU in `Exclusive_Process` mode takes one "
              "process) and of `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`"),
    CudaError(101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal", "cuda-error", "any",
              "the output of `nvidia-smi -L` and the value of `CUDA_VISIBLE_DEVICES` where the program ran, and the "
              "device index it asked for (`cuda:N`, `--gpu-id`, `device_map`)"),
    CudaError(214, "cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered",
              "cuda-error", "any", "the output of `nvidia-smi -q -d ECC,PAGE_RETIREMENT` and the kernel's Xid lines "
              "(`sudo dmesg -T | grep -i xid`)"),
    CudaError(221, "cudaErrorJitCompilerNotFound", "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
              "PTX JIT compiler library not found", "cuda-error", "any",
              "the output of `ldconfig -p | grep -i ptxjitcompiler` (the driver's PTX compiler, libnvidia-ptxjitcompiler) "
              "and of `nvidia-smi`; in a container, the flags it was started with (`--gpus`, "
              "NVIDIA_DRIVER_CAPABILITIES=compute)"),
    CudaError(999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN", "unknown error", "cuda-error", "any",
              _DRIVER_STATE + ", and whether the machine was suspended or its driver updated since it booted (CUDA "
              "reports 999 after a resume until the `nvidia_uvm` module is reloaded or the machine rebooted)"),
)

#: the strings too common to be read alone: read only after a CUDA error's own words
_GENERIC = frozenset({"initialization error", "unknown error", "invalid device function", "invalid device ordinal"})
#: the words a program puts before a CUDA error's string
_CONTEXT = (r"(?:CUDA error|cuda runtime error \(\d+\)|[Ee]rror \d+|failed to initiali[sz]e CUDA|CUDA_ERROR_[A-Z_]+"
            r"|cudaError[A-Za-z]+|CUDA failure \d+|CUDA driver error|CUDA(?:Runtime|Driver)Error|CUresult \d+)"
            r"\s*[:=]?\s*")


def _pattern(e: CudaError) -> re.Pattern[str]:
    names = [re.escape(n) for n in (e.runtime, e.driver) if n]
    said = re.escape(e.message)
    said = f"{_CONTEXT}{said}" if e.message in _GENERIC else said
    return re.compile(rf"\b(?:{'|'.join(names)})\b|(?i:{said})" if names else rf"(?i:{said})")


_NAMED = tuple((e, _pattern(e)) for e in CUDA_ERRORS)
_BY_NUMBER = {e.number: e for e in CUDA_ERRORS if e.by_number}
#: a number where a CUDA call or library says it: "CUDA error 804", "cudaSetDevice err: 802", "cudaGetDeviceCount
#: returned 35", "code=209" (any of :data:`CUDA_ERRORS` whose number means one error everywhere)
_ANY_NUMBER_RE = re.compile(r"\b(?:CUDA|[Cc]uda\w*|cu[A-Z]\w*)\b[^\n]{0,80}?\b(?:[Ee]rror|ERROR|[Ee]rr|[Ff]ailure"
                            r"|returned|code)\b\s*[:=(]?\s*(?P<n>\d{2,3})\b(?!\d|\.\d)")  # ("error 804." ends a sentence)
#: a ``CUresult`` by number: TensorFlow's "failed call to cuInit: UNKNOWN ERROR (34)", numba's "[100] Call to cuInit
#: results in ...", ollama's "cuda driver library init failure: 34"
_DRIVER_NUMBER_RE = re.compile(r"\bfailed call to cu\w+: UNKNOWN ERROR \((?P<n>\d+)\)|\[(?P<m>\d+)\] Call to cu\w+ results in"
                               r"|\bcuda driver library init failure: (?P<k>\d+)\b")


class Statement(NamedTuple):
    """A library's own statement: the signal it is typed as, the library, a literal its lower-cased line holds, its
    pattern, and where the words are from."""

    code: str
    library: str
    needle: str
    pattern: re.Pattern[str]
    source: str


def _s(code: str, library: str, needle: str, pattern: str, source: str) -> Statement:
    return Statement(code, library, needle, re.compile(pattern), source)


#: libraries saying their build has no CUDA (``built-without-cuda``; llama.cpp's warning ``llama-cpp-without-gpu``), or
#: only that they found no device (``gpu-not-found-said``: no build is settled)
BUILT_WITHOUT_CUDA: tuple[Statement, ...] = (
    _s("built-without-cuda", "CTranslate2", "ctranslate2",
       r"This CTranslate2 package was not compiled with CUDA support", "OpenNMT/CTranslate2 (its Python module)"),
    _s("built-without-cuda", "PaddlePaddle", "paddlepaddle",
       r"Cannot use GPU because you have installed CPU version PaddlePaddle",
       "PaddlePaddle/Paddle: paddle/fluid/pybind/place.cc (CUDAPlace without PADDLE_WITH_CUDA)"),
    _s("built-without-cuda", "PaddlePaddle", "paddlepaddle", r"since PaddlePaddle is not compiled with CUDA",
       "PaddlePaddle/Paddle: python/paddle/device (set_device('gpu') where core.is_compiled_with_cuda() is False)"),
    _s("built-without-cuda", "DGL", "device api",
       r"Device API (?:cuda|gpu) is not enabled\. Please install the cuda version of dgl",
       "dmlc/dgl: src/runtime (DeviceAPIManager::GetAPI)"),
    _s("built-without-cuda", "OpenCV", "compiled without cuda support",
       r"(?:-216:No CUDA support\)|No GPU support \()\s*The library is compiled without CUDA support",
       "opencv/opencv: modules/core/include/opencv2/core/private.cuda.hpp (throw_no_cuda)"),
    # a torch extension's C++ (detectron2, maskrcnn-benchmark, pytorch3d...) built without WITH_CUDA: AT_ERROR("Not
    # compiled with GPU support")
    _s("built-without-cuda", "a torch extension", "not compiled with",
       r"^\s*(?:[\w.]*Error: )?Not compiled with (?:GPU|CUDA) support\b",
       "facebookresearch/detectron2: detectron2/layers/csrc"),
    # a compiled package's own report of its build, without CUDA: a fact, not an error (``report-without-cuda``:
    # judged beside what the paste shows of the machine, :mod:`vresolve.doctor.cpu_install`)
    _s("report-without-cuda", "detectron2", "cuda compiler",
       r"^\s*(?:Detectron2 )?CUDA [Cc]ompiler\s{2,}not available\s*$",
       "facebookresearch/detectron2: detectron2/layers/csrc/vision.cpp (get_cuda_version without WITH_CUDA)"),
    _s("report-without-cuda", "MMCV", "mmcv cuda compiler", r"^\s*MMCV CUDA Compiler:\s*not available\s*$",
       "open-mmlab/mmcv: mmcv/ops/csrc/pytorch/info.cpp (get_compiling_cuda_version without MMCV_WITH_CUDA)"),
    _s("report-without-cuda", "k2", "with cuda", r"^\s*With CUDA:\s*False\s*$",
       "k2-fsa/k2: k2/python/k2/version/version.py"),
    _s("report-without-cuda", "a torch extension's build", "building with cuda", r"\bBuilding with CUDA:\s*False\b",
       "rusty1s/pytorch_scatter: setup.py (WITH_CUDA false where torch sees no GPU or CUDA_HOME is None)"),
    _s("llama-cpp-without-gpu", "llama.cpp", "gpu offload", r"\bnot compiled with GPU offload support\b",
       "ggml-org/llama.cpp: common (llama_supports_gpu_offload() false)"),
    # a CUDA build of llama.cpp shown being made (cmake's GGML_CUDA, older LLAMA_CUBLAS/LLAMA_CUDA; make's; pip's
    # CMAKE_ARGS for llama-cpp-python): no failure, the fact that the toolkit shown built the program
    _s("cuda-build-command", "llama.cpp", "=", r"(?:\bcmake\b|\bCMAKE_ARGS=|\bmake\b)[^\n]*?(?<![\w.])(?:-D)?(?:GGML_CUDA|GGML_CUBLAS"
       r"|LLAMA_CUBLAS|LLAMA_CUDA)=(?:ON|on|1)\b", "https://github.com/ggml-org/llama.cpp/blob/master/docs/build.md"),
    # no device found: the build, the driver or the device's visibility may be why
    _s("gpu-not-found-said", "ggml", "cuda devices found", r"\bno CUDA devices found, CUDA will be disabled",
       "ggml-org/llama.cpp: ggml-cuda.cu (ggml_init_cublas)"),
    _s("gpu-not-found-said", "llama.cpp", "usable gpu", r"\bno usable GPU found, --(?:n-)?gpu-layers option will be ignored",
       "ggml-org/llama.cpp: common"),
    _s("gpu-not-found-said", "JAX", "gpu/tpu", r"\bNo GPU/TPU found, falling back to CPU", "jax-ml/jax: jax/_src/xla_bridge.py"),
    _s("gpu-not-found-said", "bitsandbytes", "bitsandbytes",
       r"The installed version of bitsandbytes was compiled without GPU support",
       "bitsandbytes-foundation/bitsandbytes: bitsandbytes/cextension.py (said where its CPU library was loaded, also "
       "because the CUDA runtime was not found)"),
)

#: builds without this GPU's architecture, in ggml's words
NOT_BUILT_FOR_GPU: tuple[Statement, ...] = (
    _s("ggml-arch-missing", "ggml", "ggml was not compiled", r"\bggml was not compiled with any CUDA arch <= ?\d+",
       "ggml-org/llama.cpp: ggml/src/ggml-cuda/common.cuh (ggml_cuda_highest_compiled_arch)"),
    _s("ggml-bad-arch", "ggml", "current gpu architecture",
       r"\bggml-cuda was compiled without support for the current GPU architecture",
       "ggml-org/llama.cpp: ggml-cuda.cu (bad_arch)"),
    # OpenCV's DNN module refusing a GPU its CUDA build has no code for (CUDA_ARCH_BIN/CUDA_ARCH_PTX without it)
    _s("opencv-arch-missing", "OpenCV", "not built to work with the selected device",
       r"OpenCV was not built to work with the selected device\. Please check CUDA_ARCH_PTX or CUDA_ARCH_BIN",
       "opencv/opencv: modules/dnn/src (initCUDABackend)"),
    _s("ggml-no-device-code", "ggml", "no device code", r"\bhas no device code compatible with CUDA arch \d+",
       "ggml-org/llama.cpp: ggml/src/ggml-cuda/common.cuh (no_device_code)"),
)

_STATEMENTS = (*BUILT_WITHOUT_CUDA, *NOT_BUILT_FOR_GPU)
#: every signal code these families type
CODES = frozenset({e.code for e in CUDA_ERRORS} | {s.code for s in _STATEMENTS})
#: the codes that show a fact, not a failure (a CUDA build command: what built the program)
MARKERS = frozenset({"cuda-build-command", "report-without-cuda"})
_NEEDLES = ("cuda", "ptx", "driver", "device", "error", "failure", "initiali", "call to cu", "stub", "busy", "ecc")

#: what settles a statement that only no device was found
_NOT_FOUND_PASTE = ("the output of `nvidia-smi` where the program ran (the driver and the CUDA it serves), `echo "
                    "$CUDA_VISIBLE_DEVICES`, how the program was built or installed (its CUDA: `nvcc --version`, or the "
                    "package's name and version), and, in a container, the flags it was started with (`--gpus`)")
_ADVICE = {e.runtime or e.message: e.paste for e in CUDA_ERRORS if e.paste}
_ADVICE_BY_CODE = {
    "gpu-not-found-said": _NOT_FOUND_PASTE,
    "no-cuda-gpus": _NOT_FOUND_PASTE,
    "driver-combination": next(e.paste for e in CUDA_ERRORS if e.code == "driver-combination"),
    "ggml-no-device-code": ("the GPU's compute capability (`nvidia-smi --query-gpu=name,compute_cap --format=csv`) "
                            "beside the arch the message names (the code that ran was built for that arch: a GPU above "
                            "it lacks a build for its own), and how llama.cpp was built (`CMAKE_CUDA_ARCHITECTURES`)"),
    # a program's own refusal of the Python (signals.py): which interpreter ran it settles it
    "python-refused-said": ("the output of `python -VV` (and `python -m pip --version`) with the interpreter that ran "
                            "the program, and the Python versions the program's install instructions name"),
}


def advice(code: str, detail: str | None) -> str | None:
    """What settles a failure of this family's signal (its code, its detail), or None where no family says."""
    if code == "cuda-error":
        return _ADVICE.get(detail or "")
    return _ADVICE_BY_CODE.get(code)


def _key(e: CudaError) -> str:
    """One signal per line for each cause's error (a name and its number on one line say one error)."""
    return e.code if e.code != "cuda-error" else f"{e.number}"


class FamilyReader:
    """The families' signals a line holds (see the module)."""

    def feed(self, line: Line, out: Collector) -> bool:
        lower = line.lower
        found = False
        if any(n in lower for n in _NEEDLES):
            seen: set[str] = set()
            for e, pattern in _NAMED:
                if (m := pattern.search(line.body)) is not None:
                    seen.add(_key(e))
                    found = self._add(out, line, e, m.span()) or found
            for m in (*_ANY_NUMBER_RE.finditer(line.body), *_DRIVER_NUMBER_RE.finditer(line.body)):
                numbered = _BY_NUMBER.get(int(next(g for g in m.groups() if g)))
                driver_said = m.re is _DRIVER_NUMBER_RE
                if numbered is not None and (numbered.by_number == "any" or driver_said) and _key(numbered) not in seen:
                    seen.add(_key(numbered))
                    found = self._add(out, line, numbered, m.span()) or found
        for s in _STATEMENTS:
            if s.needle in lower and (m := s.pattern.search(line.body)) is not None:
                out.add("signals", Signal(code=s.code, detail=s.library), line, MESSAGE, "message", m.span())
                found = True
        return found

    @staticmethod
    def _add(out: Collector, line: Line, e: CudaError, span: tuple[int, int]) -> bool:
        detail = (e.runtime or e.message) if e.code == "cuda-error" else None
        out.add("signals", Signal(code=e.code, detail=detail), line, MESSAGE, "message", span)
        return True
