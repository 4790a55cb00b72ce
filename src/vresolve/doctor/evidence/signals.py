"""Key error lines, typed: each a :class:`~.model.Signal` with a code, so that checks need not match text.

Input (one signal each)::

    RuntimeError: CUDA error: no kernel image is available for execution on the device       no-kernel-image
    The NVIDIA driver on your system is too old (found version 11040).                         driver-too-old
    Failed to initialize NVML: Driver/library version mismatch                                 nvml-mismatch
    CUDA error: the provided PTX was compiled with an unsupported toolchain.                   ptx-toolchain
    ModuleNotFoundError: No module named 'vllm._C'                                             vllm-c-missing
    RuntimeError: No CUDA GPUs are available                                                   no-cuda-gpus
"""

from __future__ import annotations

import re

import msgspec

from .collect import Collector
from .lines import Line
from .model import MESSAGE, Signal

__all__ = ["CONTEXT_SIGNALS", "SIGNALS", "SignalReader"]

#: (code, a literal the lower-cased line must hold, the pattern; group "detail", when present, is kept); a code may
#: have several patterns
SIGNALS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (code, needle, re.compile(pattern, re.IGNORECASE)) for code, needle, pattern in (
        ("no-kernel-image", "no kernel image", r"no kernel image is available for execution"),
        ("no-kernel-image", "kernel image not available", r"kernel image not available for"),
        ("invalid-device-function", "invalid device function", r"invalid device function"),
        ("driver-too-old", "too old", r"driver on your system is too old(?: \(found version (?P<detail>\d+)\))?"),
        ("driver-insufficient", "insufficient", r"driver version is insufficient for CUDA runtime version"),
        # torch's own check of the cuDNN it loaded (torch/backends/cudnn/__init__.py): another cuDNN came first
        ("cudnn-loaded-other", "cudnn version incompatibility",
         r"cuDNN version incompatibility: PyTorch was compiled\s+against \(?[\d, ]+\)?\s+but (?:linked against|found "
         r"runtime version)"),
        ("nvml-mismatch", "mismatch", r"(?P<detail>Driver\s*/\s*library version mismatch|NVML\s*/\s*RM version mismatch)"),
        # the kernel module's own account of the same mismatch in dmesg/journal (older and newer wordings: "the client
        # has the version X, but this kernel module has the version Y", "the client 'kwin' (pid 1005) has the version")
        ("nvml-mismatch", "api mismatch", r"NVRM: (?P<detail>API mismatch): the client\b"),
        # TensorFlow's cuda_diagnostics.cc: the kernel module's version against the user-space libcuda's
        ("nvml-mismatch", "does not match dso", r"(?P<detail>kernel version [\d.]+ does not match DSO)\b"),
        # NVML's own error string for a missing libnvidia-ml (pynvml's NVML_ERROR_LIBRARY_NOT_FOUND), and the library
        # itself not found by the container runtime's hook or a loader: the driver's user-space part is not there
        ("nvml-library-missing", "nvml shared library", r"NVML Shared Library Not Found|NVMLError_LibraryNotFound"),
        # NVML_ERROR_UNKNOWN as nvidia-smi prints it; inside a container, NVIDIA's notice (nvidia-docker#1730): the
        # container lost its device access (systemd's cgroups re-applied by a daemon-reload, no /dev/char links)
        ("nvml-unknown-error", "unknown error", r"Failed to initialize NVML: Unknown Error"),
        # the paste says the program runs in a container (context, not a failure)
        ("container-said", "container", r"\b(?:in|inside|within|into) (?:the |a |my |our |this |same |running )*"
                                        r"(?:docker |running )?containers?\b|\bcontainer'?s? nvidia-smi\b"),
        ("container-said", "容器", r"容器"),
        ("container-said", "docker", r"\bdocker (?:run|exec|compose|start)\b"),
        ("nvml-library-missing", "libnvidia-ml", r"(?:load library failed: )?libnvidia-ml\.so(?:\.1)?: cannot open "
                                                 r"shared object file"),
        # torch._inductor's InvalidCxxCompiler: no C++ compiler for the code torch.compile generates; on Windows its
        # cpp_builder checks MSVC's cl (or $CXX) first: "RuntimeError: Compiler: cl is not found."
        ("no-cxx-compiler", "no working c++ compiler", r"No working C\+\+ compiler found|\bInvalidCxxCompiler\b"),
        ("no-cxx-compiler", "compiler: ", r"\bCompiler: (?P<detail>[\w.+-]+) is not found\."),
        ("ptx-toolchain", "ptx", r"PTX was compiled with an unsupported toolchain|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
        ("vllm-c-missing", "vllm._c", r"No module named ['\"](?P<detail>vllm\._C(?:_stable_libtorch)?)['\"]"),
        ("no-cuda-gpus", "no cuda", r"No CUDA GPUs are available|no CUDA-capable device is detected"),
        ("torch-not-compiled-cuda", "not compiled with cuda", r"Torch not compiled with CUDA enabled"),
        ("no-driver", "driver", r"Found no NVIDIA driver|couldn't communicate with the NVIDIA driver"
                                r"|no NVIDIA driver is installed|NVIDIA driver is not loaded|nvml error: driver not loaded"),
        # the kernel module loaded but bound no GPU (another driver holds it, or the module is not for this kernel)
        ("no-driver", "probe", r"No NVIDIA graphics adapter probed|NVIDIA probe routine was not called"),
        ("container-without-gpu", "device driver", r"could not select device driver \"[^\"]*\" with capabilities"),
        # nvidia-smi absent where it is run (bash's and sh's "command not found", docker's "executable file not found"):
        # no NVIDIA driver on a machine, and, in a container, one started without GPUs (the NVIDIA Container Toolkit
        # mounts nvidia-smi and the driver's libraries only into containers started with GPUs)
        ("nvidia-smi-missing", "nvidia-smi", r"\bnvidia-smi['\"]?:? (?:command )?not found\b"
                                             r"|\bexec: \"nvidia-smi\": executable file not found"),
        # NGC's entrypoint finding no driver inside its container ("WARNING: The NVIDIA Driver was not detected.  GPU
        # functionality will not be available." then "Use 'nvidia-docker run'" or "Use the NVIDIA Container Toolkit to
        # start this container with GPU support"): the container was started without GPUs
        ("container-no-driver", "driver was not detected",
         r"The NVIDIA Driver was not detected\.\s+GPU functionality will not be available"),
        # a container started by a run command that gives it no GPU: no --gpus, no NVIDIA runtime, no CDI or /dev/nvidia
        # device, no NVIDIA_VISIBLE_DEVICES (a line continued with "\\" is not judged: its flags may follow), after a
        # shell's prompt of any platform ("$ ", "PS C:\\Users\\me> ", "C:\\Users\\me>")
        ("run-without-gpus", "run", r"(?:^\W{0,3}|`|^PS [A-Za-z]:\\[^>\n]{0,200}> |^[A-Za-z]:\\[^<>|\"\n]{0,200}>)"
                                    r"(?:sudo\s+)?(?:docker|podman|nerdctl)\s+run\b"
                                    r"(?!.*(?:--gpus|--runtime[= ]\S*nvidia|nvidia\.com/gpu|/dev/nvidia|NVIDIA_VISIBLE_DEVICES"
                                    r"|--device[= ]\S*gpu))(?!.*\\\s*$)"),
        ("forward-compat", "forward compatibility", r"forward compatibility was attempted on non supported HW"),
        # the container runtime's check of an image's CUDA against the host driver: nvidia-container-cli's
        # "requirement error: unsatisfied condition: cuda>=10.2" and nvidia-docker 1's "driver 7.5 < image 8.0"
        ("container-cuda-unmet", "unsatisfied condition",
         r"unsatisfied condition: cuda\s*>=\s*(?P<detail>\d+\.\d+)"),
        ("container-cuda-unmet", "unsupported cuda version",
         r"unsupported CUDA version: driver \d+\.\d+ < image (?P<detail>\d+\.\d+)"),
        # the driver's libcuda lacks an entry point of the CUDA driver API the program was built for: an older driver
        ("libcuda-entry-point-missing", "undefined symbol: cu",
         r"libcuda\.so[\w.]*: undefined symbol: (?P<detail>(?-i:cu[A-Z])\w*)"),
        # the same in other words: ollama's "symbol lookup for cuCtxCreate_v3 failed" (libcuda.so or nvcuda.dll),
        # Windows' "procedure entry point ... nvcuda.dll", and a versioned entry point (cuDevicePrimaryCtxSetFlags_v2)
        # a program's own symbols miss (an unversioned cuInit missing is no driver library at all: not this)
        ("libcuda-entry-point-missing", "symbol lookup for cu", r"\bsymbol lookup for (?P<detail>(?-i:cu[A-Z])\w*) failed"),
        ("libcuda-entry-point-missing", "procedure entry point",
         r"procedure entry point (?P<detail>(?-i:cu[A-Z])\w*) could not be located in the dynamic link library [^\n]*?nvcuda\.dll"),
        ("libcuda-entry-point-missing", "undefined symbol: cu", r"\bundefined symbol: (?P<detail>(?-i:cu[A-Z])\w*_v\d+)\b"),
        ("driver-combination", "unsupported", r"system has unsupported display driver / cuda driver combination"),
        ("cuda-init-failed", "cudagetdevicecount", r"Unexpected error from cudaGetDeviceCount\(\)"
                                                   r"(?:.*?(?P<detail>Error \d+))?"),
        ("cuda-init-failed", "cuda initialization", r"CUDA initialization: (?P<detail>[^(]+?)\s*(?:\(Triggered|$)"),
        ("cuda-oom", "out of memory", r"CUDA out of memory|CUDA error: out of memory"),
        ("flash-attn-needs-ampere", "ampere", r"FlashAttention only supports Ampere GPUs or newer"),
        ("bf16-unsupported", "bfloat16", r"Bfloat16 is only supported on GPUs with compute capability of at least"),
        ("gpu-too-old", "below", r"GPUs with compute capability below (?P<detail>\d+\.\d+) are not supported"),
        ("capability-too-low", "minimum capability", r"Minimum capability: (?P<detail>\d+)"),
        ("arch-not-in-build", "cuda capability sm_", r"with CUDA capability sm_\d+ is not compatible"),
        ("toolkit-mismatch", "mismatches", r"detected CUDA version \(\d+\.\d+\) mismatches the version"),
        # NVIDIA Apex's own check of nvcc against torch's CUDA (apex setup.py, check_cuda_torch_binary_vs_bare_metal)
        ("toolkit-mismatch", "does not match the version used to compile",
         r"Cuda extensions are being compiled with a version of Cuda that does not match the version used to compile "
         r"Pytorch binaries"),
        # a build's own check that the GPU's compute capability is not the one it was compiled for (Hugging Face text-
        # embeddings-inference's candle backend, backends/candle/src/compute_cap.rs)
        ("build-cap-mismatch", "compile time compute cap",
         r"Runtime compute cap \d+ is not compatible with compile time compute cap \d+"),
        # DeepSpeed's op builder refusing to build its ops (op_builder/builder.py, assert_no_cuda_mismatch: raised, not
        # printed, where CUDA_HOME's nvcc and torch's CUDA are not of one major or not minors it accepts)
        ("toolkit-mismatch", "torch was compiled with",
         r"Installed CUDA version \d+\.\d+ does not match the version torch was compiled with \d+(?:\.\d+)*,? unable to "
         r"compile"),
        # the local toolkit's CUDA (CUDA_HOME's nvcc) beside torch's build CUDA, as a builder says them (detail: the two
        # versions, the toolkit's first): torch's refusal and its warning of a minor mismatch (torch/utils/cpp_extension.py),
        # DeepSpeed's refusal and its two acceptances (the minors it accepts, DS_SKIP_CUDA_CHECK=1); judged by
        # toolkit-said-beside-torch-cuda (the majors, the minors)
        ("toolkit-beside-torch-cuda", "compile",
         r"detected CUDA version \((?P<detail>\d+\.\d+\) (?:mismatches|has a minor version mismatch with) the version that "
         r"was used to compile\s*PyTorch \(\d+\.\d+)\)"),
        ("toolkit-beside-torch-cuda", "torch was compiled with",
         r"Installed CUDA version (?P<detail>\d+\.\d+ does not match the version torch was compiled with \d+\.\d+)"),
        ("undefined-symbol", "undefined symbol", r"undefined symbol"),
        ("glibc-too-old", "glibc_", r"GLIBC_(?P<detail>\d+\.\d+(?:\.\d+)?)['`’]? not found"),
        ("libstdcxx-too-old", "glibcxx_", r"GLIBCXX_(?P<detail>\d+\.\d+(?:\.\d+)?)['`’]? not found"),
        ("flash-attn-not-found", "package is not found",
         r"because the (?P<detail>[\w.]+) package is not found|Cannot use FlashAttention because the package is not found"),
        ("flash-attn-not-found", "flash_attn is not found", r"flash_attn is not found"),
        ("torch-replaced", "torch", r"(?i:uninstall(?:ed|s)? (?:the )?(?:existing |installed |my )?(?:version of )?`?torch\b"
                                    r"|replaces? (?:it )?with `?torch\b)"),
        # a CUDA build of torch (its "+cuNNN" local version) said to be uninstalled by an installer or updater
        ("torch-replaced", "uninstall", r"(?i:uninstall(?:ed|s)? (?:the )?(?:torch[- ]?)?\d+\.\d+(?:\.\d+)?\+cu\d{2,3}\b)"),
        ("fp8-unsupported-arch", "fp8e4nv", r"type fp8e4nv not supported in this architecture"),
        ("torchvision-nms-missing", "torchvision::nms", r"operator torchvision::nms does not exist"),
        ("vllm-c-obsolete", "custom op", r"Error in calling custom op (?P<detail>\w+)"),
        ("vllm-circular-import", "from partially initialized module", r"partially initialized module 'vllm'"),
        ("vllm-no-version-module", "vllm._version", r"No module named ['\"]vllm\._version['\"]"),
        ("cuda-home-unset", "cuda_home", r"CUDA_HOME environment variable is not set"),
        ("nvcc-unsupported-arch", "unsupported gpu architecture",
         r"Unsupported gpu architecture '(?P<detail>compute_\w+)'"),
        ("gcc-unsupported", "unsupported gnu version", r"unsupported GNU version"),
        ("xformers-cannot-load", "xformers can't load", r"xFormers can't load C\+\+/CUDA extensions"),
        ("version-mismatch", "does not match", r"(?P<detail>[\w-]+) version \(\S+\) does not match"),
        ("version-check", "is required", r"(?P<detail>[\w.-]+)[<>=!~][^ ]* is required for .*, but found [\w.-]+=="),
        # JAX's own check of the jaxlib beside it (jax/version.py: "jaxlib is version X, but this version of jax
        # requires version Y.")
        ("version-check", "but this version of", r"(?P<detail>jaxlib) is version \S+, but this version of jax requires"),
        ("libcuda-missing", "cuda", r"libcuda\.so(?:\.1)? cannot found|cannot find -lcuda"
                                       r"|libcuda\.so\.1: cannot open shared object file"),
        ("cuda-not-available", "cuda is not", r"CUDA is not (?:available|visible)"),
        # NGC's banner: "ERROR: This container was built for NVIDIA Driver Release 545.23 or later, but ..."
        ("container-driver", "nvidia driver release",
         r"(?:built for|requires) NVIDIA Driver Release (?P<detail>\d+\.\d+(?:\.\d+)?)"),
        # a compiler or assembler of the CUDA build out of memory, whatever the tool and its spacing: nvcc's front end
        # ("catastrophic error: out of memory"; MSBuild pads it: "catastrophic error : out of memory"), ptxas ("ptxas
        # fatal   : Memory allocation failure"), MSVC ("fatal error C1060: compiler is out of heap space")
        ("nvcc-out-of-memory", "catastrophic error", r"catastrophic error\s*:\s*out of memory"),
        ("nvcc-out-of-memory", "memory allocation failure", r"\bptxas\b.*?\bfatal\s*:\s*Memory allocation failure"),
        ("nvcc-out-of-memory", "out of heap space", r"\bfatal error C10(?:60|02)\b.*?out of heap space"),
        # an FP8 type or kernel refused below a compute capability (torch's _scaled_mm, Triton's f8e4m3nv, apps')
        ("fp8-capability", "capability",
         r"(?:fp8|float8|f8e4m3\w*|f8e5m2\w*|e4m3\w*|_scaled_mm)\b.*?(?:not supported|only supported|requires?)\b"
         r".*?compute capability"),
        # a GPU below the compute capability a program (or its build) needs, in any order of the words: "compute
        # capability 8.9 or higher required", "requires a GPU with compute capability >= 7.0", "the kernel requires
        # 5.0 capability", "CUDA GPU is too old", xFormers' "requires device with capability > (8, 0) but your GPU has
        # capability (7, 0) (too old)"; not a GPU "too new" for a build, nor a driver too old
        ("capability-below-required", "capability",
         r"\b(?:requires?|required|needs?|needed)\b[^.;]{0,60}?\bcapability (?:of )?(?:at least |>= ?|> ?)?"
         r"(?P<detail>\d+\.\d+)(?! but)"),
        ("capability-below-required", "capability",
         r"\bcapability (?:of )?(?:at least |>= ?)?(?P<detail>\d+\.\d+)(?: ?\+| or (?:higher|newer|above|greater|later)"
         r"| and (?:above|up|newer|higher))? (?:is )?(?:required|needed)\b"),
        ("capability-below-required", "capability", r"\brequires? (?:compute )?(?P<detail>\d+\.\d+) (?:compute )?capability\b"),
        # a refusal naming the GPU's own capability without the floor (text-generation-inference's "GPU with CUDA
        # capability 7 0 is not supported")
        ("capability-below-required", "capability", r"\bGPUs? with (?:CUDA |compute )*capability \d+[ .,]\d+ (?:is|are) "
                                                    r"not supported\b"),
        ("capability-below-required", "too old", r"\b(?:CUDA )?GPUs? (?:is|are) too old\b"
         r"|capability [<>=]{1,2} ?\(\d+, ?\d+\) but your GPU has capability \(\d+, ?\d+\) \(too old\)"),
        # torch's Inductor refusing a GPU below Triton's floor ("Found Tesla P40 which is too old to be supported by the
        # triton GPU compiler, ... Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA
        # capability 6.1")
        ("capability-below-required", "too old to be supported",
         r"too old to be supported by the triton GPU compiler.*?CUDA Capability >= ?(?P<detail>\d+\.\d+)"),
        # bf16 refused below Ampere, in other programs' words ("bf16 is only supported on A100+ GPUs")
        ("bf16-unsupported", "16", r"\bb(?:f|float)16\b.{0,40}?\b(?:only supported|not supported|requires?)\b.{0,40}?"
                                   r"(?:A100|Ampere|sm_?80|compute capability)"),
        # and a setup said not to support it, then the floor ("Your setup doesn't support bf16/gpu. You need Ampere+
        # GPU": transformers' and Unsloth's check of the device, which a CPU-only torch fails too: said in words only)
        ("bf16-unsupported", "support", r"\b(?:doesn't|does not|don't|do not|can't|cannot) support b(?:f|float)16\b"
                                        r".{0,60}?(?:A100|Ampere|sm_?80|compute capability)"),
        # TensorRT without kernels for the GPU's SM: its builder's "Unsupported SM: 0x809" (the SM in hex, major << 8 |
        # minor; TensorRT 7's "Assertion failed: Unsupported SM." names none) and, from 8.6, "Target GPU SM 120 is not
        # supported by this TensorRT release" (:mod:`..gpu_claims` sets the SM against the GPU and release shown)
        ("trt-unsupported-sm", "unsupported sm", r"\bUnsupported SM\b"),
        ("trt-unsupported-sm", "is not supported by this tensorrt release",
         r"\bTarget GPU SM \d+ is not supported by this TensorRT release"),
        # torch's own capability floor (torch/cuda/__init__.py): its binaries carry no kernels for this GPU
        ("gpu-sm-stated", "which is of cuda capability", r"\bwhich is of cuda capability \d+\.\d+"),
        ("arch-not-in-build", "no longer supports this gpu", r"PyTorch no longer supports this GPU because it is too old"),
        # Gloo (torch's CPU-side collectives) cannot build its mesh of TCP connections between the ranks, and NCCL's
        # socket transport cannot connect: the interface each picked is not one the peers reach. A Gloo connect that
        # only timed out says no more than that a peer did not answer in time (a slow or crashed rank, a busy CI
        # runner, a firewall): it stays a failure whose cause is not named
        ("socket-unreachable", "gloo", r"\bGloo connectFullMesh failed\b(?![^\n]*\bConnect(?:ion)? time[d ]? ?out)"
         r"|\bgloo::IoException\b(?![^\n]*\bConnect(?:ion)? time[d ]? ?out)"
         r"|gloo/transport/tcp/\w+\.(?:cc|h):\d+\]\s*(?:connect \[[^\]]*\]:\d+: )?(?:Connection refused|No route to host)"),
        ("socket-unreachable", "nccl warn", r"NCCL WARN (?:NET/Socket|socket\w*|Bootstrap)\b.*?(?:No route to host"
         r"|Connection refused|Connection timed out|No usable listening interface)"),
        # nvcc (or a Python build) without the host C/C++ compiler it drives: MSVC's cl.exe on Windows, gcc elsewhere
        ("host-compiler-missing", "cannot find compiler", r"\bnvcc\b.*?Cannot find compiler '?(?P<detail>[\w.+-]+)'? in PATH"),
        ("host-compiler-missing", "no such file",
         r"(?:error: command|unable to execute) '(?P<detail>(?:[\w-]+-)?(?:gcc|g\+\+|cc|c\+\+)|cl\.exe)'"
         r"(?: failed)?: No such file or directory"),
        # setuptools' and distutils' words for no MSVC on Windows (setuptools/msvc.py's _augment_exception: "Microsoft
        # Visual C++ 14.0 or greater is required", older setuptools "... 14.0 is required", Python 2.7's "9.0 is required
        # (Unable to find vcvarsall.bat)"; distutils' own "Unable to find vcvarsall.bat"); not the runtime DLLs'
        # "Microsoft Visual C++ Redistributable is not installed", which names no compiler version
        ("host-compiler-missing", "visual c++", r"Microsoft Visual C\+\+ \d+\.\d+ (?:or greater )?is required"),
        ("host-compiler-missing", "vcvarsall", r"Unable to find vcvarsall\.bat"),
        # torch.utils.cpp_extension's check of the compiler (``which c++`` run for it), and nvcc unable to run the host
        # compiler it was given (``-ccbin``) to learn its properties
        ("host-compiler-missing", "which", r"Command '\['which', '(?P<detail>c\+\+|g\+\+|gcc|cc)'\]' returned non-zero"),
        ("host-compiler-missing", "host compiler properties", r"\bnvcc fatal\s*: Failed to preprocess host compiler "
                                                              r"properties"),
        # gcc's driver without its compiler proper: cc1plus is g++'s (installed by g++), cc1 gcc's own
        ("host-compiler-missing", "cannot execute",
         r"\b(?:[\w.-]+-)?(?:gcc|g\+\+|cc|c\+\+)(?:-\d+)?(?:\.exe)?: (?:fatal )?error: cannot execute "
         r"['‘`\"](?P<detail>cc1plus|cc1)['’`\"]"),
        # TensorFlow saying it sees no GPU (its guide's checks: "Num GPUs Available: 0", an empty
        # list_physical_devices('GPU'), the "GPU is NOT AVAILABLE" snippet): kept only where the paste shows
        # TensorFlow 2.11 or later on native Windows, which has no GPU build (:mod:`.tensorflow`)
        ("tensorflow-windows-cpu-build", "gpu", r"\bGPU is NOT AVAILABLE\b|\bNum GPUs Available:?\s+0\b"
         r"|list_physical_devices\(['\"]GPU['\"]\)\)?\s*(?:=|->|:|\bis\b|#)?\s*\[\]"),
        # JAX's own word that its jaxlib has no CUDA backend while it sees an NVIDIA GPU (jax/_src/xla_bridge.py); not
        # its older, undecided "No GPU/TPU found, falling back to CPU"
        ("jaxlib-without-cuda", "cuda-enabled jaxlib", r"a CUDA-enabled jaxlib is not installed"),
        # ONNX Runtime asked for its CUDA execution provider by a build that has none (the CPU `onnxruntime` package, or
        # its files over `onnxruntime-gpu`'s when both are installed): its own warning, and Optimum's error
        ("onnxruntime-without-cuda", "available provider",
         r"Specified provider 'CUDAExecutionProvider' is not in available provider"),  # (a console may wrap the rest)
        ("onnxruntime-without-cuda", "available execution providers",
         r"Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, but the available execution "
         r"providers are \[(?P<detail>[^\]]*)\]"),
        # ONNX Runtime's own list of its execution providers (``get_available_providers()``) with only the CPU's and
        # Azure's: the CPU package's build (onnxruntime-gpu lists CUDAExecutionProvider whether or not it can load it)
        ("onnxruntime-cpu-providers", "executionprovider",
         r"\[\s*['\"](?:Azure|CPU)ExecutionProvider['\"](?:\s*,\s*['\"](?:Azure|CPU)ExecutionProvider['\"])*\s*\]"),
        # the user's words that the torch an install gave is its CPU build ("resulted in the CPU version of torch"):
        # no cause by itself (a default index's wheel judged with it: :mod:`vresolve.doctor.cpu_install`)
        ("cpu-build-said", "cpu", r"\bCPU(?:[- ]only)? (?:version|build|variant|wheel)s? of (?:py)?torch\b"),
        # the same list with CUDAExecutionProvider (onnxruntime-gpu's build; a session's own list may still hold only the
        # CPU's: the CUDA provider failed to load, not a CPU package)
        ("onnxruntime-cuda-providers", "cudaexecutionprovider",
         r"\[[^\]]*['\"]CUDAExecutionProvider['\"][^\]]*\]"),
        # JAX's CUDA plugin installed but failing to load or initialize (JAX then falls back to the CPU with the words
        # above): not a CPU-only build
        ("jax-cuda-plugin-failed", "jax plugin", r"Jax plugin configuration error"),
        ("jax-cuda-plugin-failed", "jax_plugins", r"jax_plugins[/\\.]xla_cuda\d+"),
        # ptxas given PTX of a newer ISA than its own ("Unsupported .version 7.3; current version is '7.2'"): the PTX
        # came from a newer compiler (Triton's, a newer nvcc) than the toolkit whose ptxas assembles it
        ("ptxas-older-than-ptx", "unsupported .version",
         r"\bUnsupported \.version (?P<detail>\d+\.\d+; current version is '\d+\.\d+)'"),
        # ptxas that does not know the GPU architecture it is asked for (Triton asks for the device's own: sm_89 on an
        # RTX 4090, sm_121a on a GB10): the ptxas is of a toolkit older than the GPU
        ("ptxas-unknown-arch", "is not defined for option 'gpu-name'",
         r"\bptxas(?:-blackwell)?\s+fatal\s*:\s*Value '(?P<detail>sm_\d{2,3}[af]?)' is not defined for option 'gpu-name'"),
        # the driver refusing a kernel image (CUDA_ERROR_INVALID_IMAGE, 200): by itself no cause (a cubin of a newer CUDA
        # major than the driver's, a build for another GPU, a corrupt file); :mod:`..paste_predicates` judges it
        ("invalid-image", "image is invalid", r"device kernel image is invalid"),
        ("invalid-image", "invalid_image", r"CUDA_ERROR_INVALID_IMAGE"),
        ("shm-exhausted", "shared memory segment", r"Error while creating shared memory segment"),
        ("shm-exhausted", "posix_fallocate", r"posix_fallocate failed\s*:\s*No space left on device"),
        ("shm-exhausted", "shared memory", r"insufficient shared memory \(shm\)|workers are out of shared memory"
                                            r"|unable to allocate shared memory"),
        # CUDA refusing peer-to-peer access between two GPUs (cudaErrorPeerAccessUnsupported and the driver's
        # CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, both 217), as NCCL's P2P transport reports it: "Cuda failure 217 'peer
        # access is not supported between these two devices'", "failed to open CUDA IPC handle : 217 peer access ...";
        # the words even where the paste cuts them, the code after NCCL's "Cuda failure", the enum names. (NCCL's INFO
        # lines that name its P2P/IPC transport are not failures: "nccl-in-use")
        ("peer-access-unsupported", "peer access", r"\bpeer access is not supported\b"),
        ("peer-access-unsupported", "217", r"\b[Cc]uda failure 217\b|\bIPC handle\s*:\s*217\b"),
        ("peer-access-unsupported", "peeraccessunsupported", r"\bcudaErrorPeerAccessUnsupported\b"),
        ("peer-access-unsupported", "peer_access_unsupported", r"\bCUDA_ERROR_PEER_ACCESS_UNSUPPORTED\b"),
        ("nccl-no-socket-interface", "no socket interface", r"Bootstrap ?: no socket interface found"),
        # the user's own finding that taking NCCL off its P2P transport makes the job run ("NCCL_P2P_DISABLE=1 ...
        # resolves the deadlock", "succeeds when direct GPU P2P is disabled"): the P2P path between these GPUs is broken
        ("nccl-p2p-off-works", "p2p", r"(?:^|(?<=[.!;])\s)(?![^.!?;]*(?:\bnot\b|n't\b|\bnever\b|\bstill\b|\bno longer\b))"
                                     r"(?![^.!?;]*\?)[^.!?;]*?"
                                     r"(?:NCCL_P2P_DISABLE ?= ?1[^.!?;]{0,80}?\b(?:resolv|fix|solv|work|succeed|run)\w*"
                                     r"|\b(?:resolv|fix|solv|work|succeed|run)\w*\b[^.!?;]{0,80}?"
                                     r"(?:\bP2P (?:is |was )?disabled\b|\bNCCL_P2P_DISABLE ?= ?1\b))"),
        # NCCL's bootstrap on the loopback interface (NCCL_SOCKET_IFNAME=lo): the other nodes cannot reach 127.0.0.1
        ("nccl-bootstrap-loopback", "bootstrap", r"Bootstrap ?: Using \[\d+\]lo:127\."),
        # a job of several nodes (torchrun/launch's --nnodes N>1 or a node rank above 0)
        ("multi-node", "node", r"--nnodes?[= ](?:[2-9]|\d{2,})\b|--node_rank[= ][1-9]"),
        # NCCL at work: its own log lines (NCCL_DEBUG=INFO), its tests, its settings (not a failure by itself)
        ("nccl-in-use", "nccl", r"\bNCCL (?:INFO|WARN|CALL|version)\b|\b(?:all_reduce|all_gather|sendrecv)_perf\b"
                                r"|\bNCCL_[A-Z0-9_]+=|\bncclCommInitRank\b"),
        # a program said to hang (no error line: the user's words); a failure shown whose cause the words do not name
        ("hang-said", "hang", r"\b(?:hangs?|hanging)\b(?! ?up\b)"),
        ("hang-said", "freez", r"\bfreez(?:es|ing)\b"),
        ("hang-said", "stuck", r"\b(?:gets?|got|is|are|was|were|remains?|stays?) stuck\b|\bstuck (?:at|on|in|after|during)\b"),
        # NCCL over InfiniBand/RoCE: a work completion with an error status (ibverbs' ibv_wc_status: 12 transport
        # retry counter exceeded, 4 local protection error, 5 flushed), a verbs call NCCL warns failed (its INFO
        # "Call to ibv_set_ece failed" is a probe, not a failure)
        # (NCCL before 2.12 names no peer: "NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129")
        ("nccl-ib-failure", "got completion ",
         r"Got completion (?:from peer \S+ )?with (?:error|status=) ?(?P<detail>\d+)"),
        ("nccl-ib-failure", "call to ibv_", r"\bWARN Call to (?P<detail>ibv_\w+) failed"),
        ("nccl-ib-failure", "retry", r"transport retry counter exceeded|IBV_WC_RETRY_EXC_ERR"),
        # a Kubernetes pod's GPU request (its resources: "nvidia.com/gpu: 1", a quoted count, a kubectl override)
        ("k8s-gpu-request", "nvidia.com/gpu", r"\bnvidia\.com/gpu[\"']?\s*[:=]\s*[\"']?[1-9]"),
        # torch's compiled core not found (Python found a torch/_C folder of stubs, or none) and the torch/__init__.py
        # a traceback ran (:mod:`..runtime_predicates` sets its directory against an installed package tree)
        # (Python 2's "No module named _C"; Python 3's "cannot import name 'x' from 'torch._C' (unknown location)": the
        # stubs' folder imported as a namespace package); a frame in a relative "torch/__init__.py" (the directory
        # Python runs in: detail "") or IPython's "/opt/pytorch/torch/__init__.py in <module>()"
        ("torch-c-unloadable", "torch._c", r"No module named ['\"]torch\._C['\"]|from 'torch\._C' \(unknown location\)"),
        ("torch-c-unloadable", "no module named _c", r"No module named _C\s*$"),
        ("torch-c-unloadable", "torch/_c", r"has loaded the `torch/_C` folder"),
        ("torch-init-frame", "__init__.py", r"File \"(?P<detail>(?:[^\"]*?[/\\])?)torch[/\\]__init__\.py\", line \d+"),
        ("torch-init-frame", "__init__.py in", r"^\s*(?P<detail>\S*?[/\\])torch[/\\]__init__\.py in <module>"),
        # a Slurm job (its commands, its batch script's directives, its variables, the user's words) and a GPU request
        # of its own (sbatch/srun/salloc's --gres=gpu:N, --gpus, --gpus-per-node/-task/-socket, -G N)
        ("slurm-job", "slurm", r"\bslurm"),
        ("slurm-job", "sbatch", r"#SBATCH\b|\bsbatch\b"),
        ("slurm-job", "srun", r"\bsrun\b"),
        ("slurm-job", "salloc", r"\bsalloc\b"),
        ("slurm-gpu-request", "gres", r"--gres[= ]\S*gpu"),
        # (--gpus on a Slurm command or directive only: docker's `--gpus all` is not a Slurm request)
        ("slurm-gpu-request", "--gpus", r"(?:#SBATCH|\bsrun|\bsbatch|\bsalloc)\b.*?--gpus(?:-per-(?:node|task|socket))?[= ]\S"),
        ("slurm-gpu-request", "-g", r"(?:#SBATCH|\bsrun|\bsbatch|\bsalloc)\b.*?\s-G ?\d"),
        # Fabric Manager refusing a driver of another version than its own (the two must be the same release)
        ("fabric-manager-version-mismatch", "match",
         r"fabric ?manager\b.{0,80}?\bversion (?P<detail>\d+\.\d+(?:\.\d+)?) (?:don't|doesn't|does not|do not) "
         r"match(?:es)? with (?:the )?(?:NVIDIA )?driver version \d+\.\d+"),
        ("system-not-ready", "not yet initialized", r"system not yet initialized"),
        ("system-not-ready", "system_not_ready", r"CUDA_ERROR_SYSTEM_NOT_READY"),
        ("system-not-ready", "systemnotready", r"cudaErrorSystemNotReady"),
        # the code alone (802 is cudaErrorSystemNotReady / CUDA_ERROR_SYSTEM_NOT_READY in CUDA's headers), where a CUDA
        # call or library reports it: "cuda driver library init failure: 802", "cudaSetDevice err: 802", "CUDA error 802",
        # "cudaGetDeviceCount returned 802", "code=802"
        ("system-not-ready", "802",
         r"\b(?-i:CUDA|[Cc]uda\w*|cu[A-Z]\w*)\b[^\n]{0,80}?\b(?:[Ee]rror|[Ee]rr|[Ff]ailure|returned|code)\b\s*[:=(]?\s*802\b"
         r"(?![.\d])"),
        ("gpu-off-bus", "fallen off the bus", r"fallen off the bus"),
        ("gpu-off-bus", "xid", r"\bXid \(PCI:[0-9A-Fa-f:.]+\): 79\b"),
        ("gpu-off-bus", "gpu_is_lost", r"ERROR_GPU_IS_LOST"),
        ("gpu-off-bus", "device handle", r"Unable to determine the device handle for GPU ?[0-9A-Fa-f:.]+: Unknown Error"),
        # NVML's NVML_ERROR_GPU_IS_LOST, as nvidia-smi and NVML's users print it ("... GPU is lost. Reboot the system
        # to recover this GPU")
        ("gpu-off-bus", "gpu is lost", r"(?:^|:)\s*GPU is lost\b|\bGPU is lost\.\s*Reboot the system"),
        # torch's shared-memory tensors are files /torch_<pid>_<n> in /dev/shm (libshm, MapAllocator): writing one
        # fails when /dev/shm has no room left
        ("shm-exhausted", "unable to write to file", r"unable to write to file </torch_\w*>"),
        # a DataLoader worker killed by SIGBUS: torch's own handler for that signal in a worker says "This might be caused
        # by insufficient shared memory (shm)" (torch/csrc/DataLoader.cpp); older releases print only the signal
        ("shm-exhausted", "bus error", r"DataLoader worker \(pid[^)]*\) is killed by signal: Bus error"),
        # a process killed by SIGBUS elsewhere than in torch's own DataLoader messages ("Bus error (core dumped)",
        # "signaled to shutdown with signal 7", "received signal SIGBUS"): touching a page of a mapping with nothing
        # behind it, most often a full /dev/shm (judged with what the paste shows of /dev/shm and containers:
        # family_predicates)
        ("sigbus", "bus error", r"(?<!PCIe )(?<!AER: )(?<!signal: )\bBus error\b(?!:? severity| encountered in worker)"),
        ("sigbus", "signal 7", r"\bsignal 7\b(?![\d.])"),
        ("sigbus", "sigbus", r"\bSIGBUS\b"),
        # a DataLoader worker that died without saying why (judged with what the paste shows of /dev/shm:
        # family_predicates)
        ("dataloader-worker-died", "dataloader worker", r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\)? exited unexpectedly"),
        # vLLM finding no platform to run on (its CUDA build, where neither NVML nor CUDA answered): a failure
        ("vllm-no-platform", "unspecifiedplatform", r"No platform detected, vLLM is running on UnspecifiedPlatform"),
        # an installer asked to install something (what it was asked for: the detail), for the torch it replaced
        ("install-command", "install", r"(?:^|[\s>$#\\/])(?:python(?:3(?:\.\d+)?|\.exe)?\s+-m\s+)?(?:pip3?|uv pip|conda|mamba)"
                                       r"(?:\.exe)?\s+install\s+(?P<detail>[^\n]{1,200})"),
        # vLLM's FlashAttention backend refusing to start (its assertion, a failure): FlashAttention 2 and 3 need compute
        # capability 8.0 (vllm-flash-attn's is_fa_version_supported); its ERROR line alone is a fallback, not this
        ("fa-version-unsupported", "is_fa_version_supported", r"\bassert is_fa_version_supported\("),
        ("no-c-compiler", "failed to find c compiler", r"Failed to find C compiler"),
        # a C compiler the paste shows there (Triton's "Failed to find C compiler" beside it is then not a missing
        # compiler): `gcc --version`'s first line, clang's, MSVC's banner, `which gcc`'s answer, CC set, the user's words
        ("c-compiler-present", "(", r"^\s*(?:[\w.-]+-)?(?:gcc|g\+\+|cc|c\+\+)(?:-\d+)?(?:\.exe)? \([^()\n]{1,80}\) \d+\.\d+"),
        ("c-compiler-present", "clang version", r"^\s*(?:[\w ]{1,40} )?clang version \d+\.\d+"),
        ("c-compiler-present", "optimizing compiler", r"Microsoft \(R\) C/C\+\+ Optimizing Compiler Version \d+"),
        ("c-compiler-present", "/", r"^\s*(?:/[\w.+-]+)+/(?:gcc|cc|clang|g\+\+)(?:-\d+)?\s*$"),
        ("c-compiler-present", "cc=", r"(?:^|[\s;])(?:export |set )?CC=['\"]?[\w/\\.:+ -]*?(?:gcc|clang|cl|cc)(?:-\d+)?(?:\.exe)?\b"),
        ("c-compiler-present", "have", r"\b(?:I|i|we|We)\s+(?:do\s+|already\s+)?have\s+(?:the\s+|a\s+)?(?:gcc|g\+\+|clang|MSVC"
                                        r"|C compiler|c compiler)\b"),
        ("c-compiler-present", "installed", r"\b(?:gcc|g\+\+|clang|MSVC)(?: and (?:gcc|g\+\+|clang))? (?:is|are) (?:already )?"
                                             r"installed\b"),
        # make running more than one job at once (it waits for the others only under -j): a parallel build, not a failure
        ("parallel-build", "waiting for unfinished jobs", r"\*\*\* Waiting for unfinished jobs"),
        # pip ran a source package's build backend for its build requirements (in its isolated build environment,
        # unless told otherwise) and that failed; re-typed sdist-imports-torch where the package is one whose setup.py
        # imports torch without declaring it (:mod:`.isolation`)
        ("build-requirements-failed", "build wheel",
         r"Getting requirements to build wheel(?: \.\.\. error\b| did not run successfully)"),
        ("build-requirements-failed", "preparing metadata", r"Preparing metadata \((?:setup\.py|pyproject\.toml)\) \.\.\. error\b"),
        # the same step in other installers' words, and its hook in a traceback: uv's "Build backend failed to
        # determine extra requires with `build_wheel()`" and "Call to `setuptools.build_meta.get_requires_for_build_wheel`
        # failed", poetry's "Backend subprocess exited when trying to invoke get_requires_for_build_wheel", the build
        # backend's frame "..., in get_requires_for_build_wheel"
        ("build-requirements-failed", "requires with",
         r"\bBuild backend failed to determine (?:extra |build )?requires with `build_wheel\(\)`"),
        ("build-requirements-failed", "get_requires_for_build_wheel",
         r"\bget_requires_for_build_wheel`? failed\b|\bwhen trying to invoke get_requires_for_build_wheel\b"
         r"|^\s*File \"?[^\n]*, line \d+, in get_requires_for_build_wheel\s*$"),
        # a traceback's frame in a source package's setup.py that an installer unpacked to build it (pip's
        # pip-install-*/<name>_<hash>/ and pip-req-build-*/, uv's cache): the failure raised while building a wheel
        ("installer-build-frame", "setup.py",
         r"^\s*File \"?[^\"\n]*[/\\](?:pip-install-\w+[/\\](?P<detail>[\w.-]+?)_[0-9a-f]{32}|pip-req-build-\w+"
         r"|uv[/\\](?:cache[/\\])?(?:sdists|git|built-wheels)-v\d+[/\\][^\"\n]*?)[/\\]setup\.py\"?, line \d+"),
        ("sdist-imports-torch", "no module named 'torch'",
         r"(?P<detail>flash[-_]attn|xformers)\b[^\n]{0,200}?No module named 'torch'"),
        # a program's own statement of the Pythons it runs on, or that this one is not among them ("requires Python
        # 3.6 or higher", "Please install Python 3.10.0 or higher (maximum 3.11.100)", "Incompatible Python version!
        # Required >= 3.4", "This program is tested with 3.10.6 Python, but you have 3.11.2", "Python 3.13 is not
        # supported"): judged against the Python the paste shows (pip_versions.program-refuses-python)
        # (a refusal is a failure: with no Python shown it is "cause not named"; a range is context until set against
        # the Python shown)
        ("python-refused-said", "python", r"\b(?:incompatible|unsupported) python version\b"
                                          r"|\bpython (?:version )?3\.\d+(?:\.\d+)? is not (?:supported|compatible)\b"
                                          r"|\btested with 3\.\d+(?:\.\d+)? python, but you have\b"),
        ("python-range-said", "python", r"\bpython 3\.\d+(?:\.\d+)? or (?:higher|newer|later|above)\b"
                                        r"|\b(?:only )?supports? (?:only )?python 3\.\d+ ?(?:-|to|through) ?3\.\d+\b"),
    )
)


#: signals that say what was run or what is there, not a failure (an install command, a small /dev/shm, the Pythons a
#: program says it runs on)
CONTEXT_SIGNALS = ("install-command", "shm-small", "multi-node", "python-range-said", "container-said")

_RULES = tuple((needle, code, pattern) for code, needle, pattern in SIGNALS)


#: xFormers lists every reason an operator was refused; a build without CUDA makes a "(too old)" beside it moot
_XFORMERS_UNBUILT = re.compile(r"xFormers wasn't build with CUDA support|operator wasn't built", re.IGNORECASE)


def _moot(code: str, line: Line, out: Collector) -> bool:
    """Whether a capability reason is one of several an xFormers build without CUDA listed (not the cause)."""
    return code == "capability-below-required" and "(too old)" in line.lower and out.near("xformers-unbuilt", line, 3)


def _split_pairs() -> frozenset[tuple[str, str]]:
    """(a word, the next word) of every needle of several words: where a pasted message was wrapped between them
    ("... is killed by signal: Bus" / "error. It is possible that ..."), the two lines are read together."""
    pairs: set[tuple[str, str]] = set()
    for needle, _, _ in _RULES:
        words = needle.split()
        pairs.update((a.strip(_PUNCTUATION), b.strip(_PUNCTUATION)) for a, b in zip(words, words[1:], strict=False))
    return frozenset(pairs)


_PUNCTUATION = "\"'`.,:;!?()[]<>"
_SPLIT_PAIRS = _split_pairs()


def _edge_words(prev: Line, line: Line) -> tuple[str, str] | None:
    last, first = prev.lower.rsplit(None, 1)[-1:], line.lower.split(None, 1)[:1]
    return (last[0].strip(_PUNCTUATION), first[0].strip(_PUNCTUATION)) if last and first else None


class SignalReader:
    """Every signal a line holds (one line may hold several), and those a message wrapped onto the next line holds
    across the two (read on the first line's number)."""

    def __init__(self) -> None:
        self._prev: Line | None = None

    def feed(self, line: Line, out: Collector) -> bool:
        lower = line.lower
        found = False
        if "wasn't buil" in lower and _XFORMERS_UNBUILT.search(line.body):
            out.mark("xformers-unbuilt", line)
        for needle, code, pattern in _RULES:
            if needle in lower and not _moot(code, line, out) and (m := pattern.search(line.body)):
                detail = m.groupdict().get("detail")
                out.add("signals", Signal(code=code, detail=detail), line, MESSAGE, "message", m.span())
                found = True
        prev, self._prev = self._prev, line
        if prev is not None and prev.no + 1 == line.no and _edge_words(prev, line) in _SPLIT_PAIRS:
            self._wrapped(prev, line, out)
        return found

    @staticmethod
    def _wrapped(prev: Line, line: Line, out: Collector) -> None:
        """The signals a message wrapped from ``prev`` onto ``line`` holds across the break (not those of either)."""
        cut = len(prev.body)
        joined = msgspec.structs.replace(prev, text=f"{prev.text} {line.body}", body=f"{prev.body} {line.body}",
                                         lower=f"{prev.lower} {line.lower}")
        for needle, code, pattern in _RULES:
            if needle in joined.lower and needle not in prev.lower and needle not in line.lower \
                    and not _moot(code, joined, out) and (m := pattern.search(joined.body)) and m.start() < cut < m.end():
                out.add("signals", Signal(code=code, detail=m.groupdict().get("detail")), joined, MESSAGE, "message",
                        m.span())
