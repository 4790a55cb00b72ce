"""Lines that show a failure, typed by their form (not by one message's words), so that a paste that shows one is
never judged healthy. Warnings, info and deprecation lines are not failures.

Input (kind of each)::

    RuntimeError: CUDA error: an illegal memory access was encountered             cuda
    CUDA error at kernel.cu:596 code=700(cudaErrorIllegalAddress)                   cuda
    ggml_cuda_init: failed to initialize CUDA: initialization error                 cuda
    ... error="symbol lookup for cuCtxCreate_v3 failed: ..."                        cuda
    RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)     nccl
    ValueError: The checkpoint you are trying to load has model type ...            exception
    Killed                                                                          killed
    error: subprocess-exited-with-error / ERROR: Could not build wheels for vllm    tool
    ... returned non-zero exit status 1.                                            exit
    FAILED: CMakeFiles/_C.dir/csrc/cache_kernels.cu.o                               failed
    Segmentation fault (core dumped)                                                crash
    NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) ...      xid
    ptxas fatal   : Memory allocation failure / nvcc fatal   : Cannot find ...       tool
    x.hpp(3324): catastrophic error : out of memory / GPU #0: FATAL: the ...         tool
    E0715 18:02:17.586518  591934 cuda_dnn.cc:523] Loaded runtime CuDNN ...          tool (an error-level log line)
    ERROR 03-20 07:42:38 [utils.py:613] Cannot use FA version 2 ...                 tool (a logger's error level)
    2024-05-01 10:00:00,123 - root - ERROR - ... / ... | ERROR    | mod:fn:1 - ...   tool (a logger's error level)
    Traceback (most recent call last):   (cut before its exception)                traceback
    UserWarning: ... bitsandbytes was compiled without GPU support.               gpu-unused (at any level)
    ggml_init_cublas: no CUDA devices found, CUDA will be disabled                 gpu-unused
    I tensorflow/...] Could not find cuda drivers on your machine, GPU will not be used.   gpu-unused
    WARNING: Compute capability < 7.5 detected! Only slow 8-bit matmul is supported ...  gpu-feature
    PackagesNotFoundError / ResolvePackageNotFound: / version solving failed       installer
    CMake Error at CMakeLists.txt:12 / make: *** [all] Error 2 / ninja: build stopped  build
    [54/54] /usr/local/cuda/bin/nvcc ...   (the paste's build ends there, no result after it)   cut
"""

from __future__ import annotations

import re

from .collect import Collector
from .lines import Line
from .model import MESSAGE

__all__ = ["FAILURE_KINDS", "FailureReader"]

#: a message that speaks of the GPU stack: its libraries, devices, builds and compiled modules
_OF_THE_STACK = (r"(?=[^\n]{0,300}?(?i:cuda|gpu|nccl|torch|driver|nvidia|nvml|cudnn|cublas|kernel|device|\b_C\b|\.so\b"
                 r"|\.dll\b|c\+\+|symbol|compil|triton|xformers|flash|vllm|glibc|libc))\S")

#: (kind, a literal the lower-cased line must hold, the pattern), the most telling kind first
_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, needle, re.compile(pattern)) for kind, needle, pattern in (
        ("cuda", "cuda", r"\bCUDA error\b|\bcudaError[A-Z]\w*|\bCUDA_ERROR_[A-Z_]+|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+"
                         r"|CUDNN_STATUS_(?!SUCCESS)[A-Z_]+|\b[Ff]ailed to initiali[sz]e CUDA\b"
                         r"|\bCUDA failed with error\b|\bfailed call to cuInit\b|\bcu(?:da)?[A-Z]\w+\(?\)? returned [1-9]\d*\b"),
        # a CUDA driver or runtime call (or its symbol's lookup) said to fail: "cuInit failed", "symbol lookup for
        # cuCtxCreate_v3 failed", "cudaMalloc failed"
        ("cuda", "failed", r"\bcu(?:da)?[A-Z][A-Za-z]+(?:_v\d)?\(?\)? failed\b"),
        # the kernel driver's Xid report of a GPU error (NVIDIA's Xid catalog: 13 and 31 an application's fault, 43
        # a stopped channel, 48 and 94/95 uncorrectable ECC errors, 74 NVLink, 79 fallen off the bus, 119/120 GSP)
        ("xid", "xid", r"\bXid \((?:PCI:)?[0-9A-Fa-f:.]+\): \d+\b"),
        # the kernel driver failing to bring a GPU up ("NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)",
        # "rm_init_adapter failed, device minor number 0"): nvidia-smi then finds no device
        ("xid", "init", r"\b(?:RmInitAdapter|rm_init_adapter) failed\b"),
        ("cuda", "init", r"\b[Ff]ailed to init(?:iali[sz]e)? (?:the )?(?:GPU|device)\b"
                         r"|\b(?:CUDA|GPU|device|backend|cuDNN|cuBLAS|NCCL)\b[\w ]{0,24}? failed to initiali[sz]e\b"
                         # ollama's "cuda driver library init failure: 3", "cudart init failure: 802"
                         r"|\b(?:CUDA|cuda|cudart|driver)\b[\w ]{0,32}? init failure\b"),
        ("nccl", "nccl", r"\bNCCL error\b|\bnccl(?:UnhandledCuda|System|Internal|InvalidUsage|InvalidArgument|Remote)"
                         r"Error\b"
                         # NCCL's own strings for its results (ncclGetErrorString) after a call said to fail
                         r"|\bnccl\w* failed: (?:unhandled (?:cuda|system) error|internal error|invalid (?:usage|argument)"
                         r"|remote process exited or there was a network error)"),
        # (an exception quoted as inline code starts with a backtick: "`ValueError: ...`")
        ("exception", "error", r"^\s*`?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Error: \S"),
        ("exception", "exception", r"^\s*`?(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?Exception: \S"),
        # an exception the user quotes inside their own sentence ("I got the error 'ImportError: cannot import name
        # '_C'", "The full error information is as follows:RuntimeError: Couldn't load custom C++ ops", TensorFlow's
        # "UnknownError (see above for traceback): ..."), whose message speaks of the stack (a model's own ValueError
        # quoted in a question is not); not where the sentence says it is gone
        ("exception", "error", r"^(?!.*\b(?:fixed|solved|resolved|works now|now works|no longer|went away)\b)"
                               r".*?(?:^|[\s\"'`(:])(?:[A-Za-z_][\w.]*\.)?[A-Z][a-z]\w*Error(?: \([^)]{0,40}\))?: "
                               + _OF_THE_STACK),
        ("exception", "exception", r"^(?!.*\b(?:fixed|solved|resolved|works now|now works|no longer|went away)\b)"
                                   r".*?(?:^|[\s\"'`(:])(?:[A-Za-z_][\w.]*\.)?[A-Z][a-z]\w*Exception: " + _OF_THE_STACK),
        # a debugger's report of an exception raised (VS Code's "Exception has occurred: OSError")
        ("exception", "exception has occurred", r"^\s*Exception has occurred: [A-Z]\w*"),
        # an exception whose message starts on the next line (sgl_kernel's "ImportError: " then its report)
        ("exception", "error:", r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Error:\s*$"),
        ("exception", "exception:", r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Exception:\s*$"),
        # Go's and Rust's panics
        ("crash", "panic", r"^\s*panic: \S|^\s*thread '[^']*' panicked at\b"),
        ("crash", "", r"\bSegmentation fault\b|\(core dumped\)|^\s*terminate called after throwing"
                      r"|^\s*(?:Aborted|Bus error|Illegal instruction|Floating point exception)\b"),
        ("killed", "killed", r"^\s*(?:#\d+ [\d.]+\s+)?Killed\s*$|\bkilled by signal \d+|\bKilled signal terminated program\b"),
        ("killed", "signal", r"\bdied due to signal \d+"),
        ("exit", "exit", r"non-zero exit (?:status|code)|exit(?:ed)? with (?:exit )?(?:code|status) [1-9]"
                         r"|\bexit (?:code|status):? [1-9]"),
        ("failed", "failed", r"^\s*(?:#\d+ [\d.]+\s+)?FAILED\b"),
        # systemd: a service whose start failed ("Job for x.service failed", "... status=1/FAILURE", "Failed to start")
        ("exit", "fail", r"^\s*Job for [\w@.-]+\.service failed\b|\bstatus=[1-9]\d*/[A-Z]+\b"
                         r"|\]: Failed to start [\w@. -]+\.?$"),
        # a shared library (a DLL on Windows) a program could not load
        ("library", "load", r"\b[Cc]ould not load (?:dynamic )?library\b|\berror while loading shared libraries\b"),
        ("library", "not found", r"\b[\w.-]+\.(?:dll|so(?:\.[\d.]+)?|dylib)['\"]? (?:was |is )?not found\b"),
        # Python's ImportError on Windows for an extension module whose DLL (or one it needs) failed to load, quoted
        # without its exception's name ("DLL load failed while importing exllamav2_ext: The specified procedure could
        # not be found.": the Windows loader's words for a symbol the DLL lacks)
        ("library", "dll load failed", r"\bDLL load failed\b"),
        # the loader's own words for a shared object it could not open, on a line of their own (the OSError a
        # debugger shows apart: "libtorch_cuda_cu.so: cannot open shared object file")
        ("library", "cannot open shared object", r"^\s*[\w.+-]+\.so(?:\.[\d.]+)?: cannot open shared object file\b"),
        ("failed", "fail", r"\bResult = FAIL\b"),
        # a process ended by a signal or a negative exit code, in the words of Python's faulthandler ("Fatal Python
        # error: Segmentation fault"), the signal's name (SIGSEGV ...), glibc's abort reports, Kubernetes' OOMKilled,
        # torchrun's failure table ("exitcode  : -9") and an IDE's "Process finished with exit code -1073741819"
        ("crash", "fatal python error", r"^\s*Fatal Python error:"),
        ("crash", "sig", r"\bSIG(?:SEGV|ABRT|BUS|ILL|FPE)\b"),
        ("crash", "free", r"\bdouble free or corruption\b|\bfree\(\): invalid (?:pointer|size)\b"),
        ("crash", "corrupt", r"\*\*\* stack smashing detected \*\*\*|\bcorrupted size vs\. prev_size\b"),
        ("killed", "kill", r"\bSIGKILL\b|\bOOMKilled\b"),
        ("exit", "exit", r"\bexit ?code\s*:\s*-[1-9]\d*\b|\bexit (?:code|status):? -[1-9]\d*\b"),
        # a package manager's own failure wording where no line prefix says "error" (conda's and mamba's exceptions and
        # solver, poetry's solver): conda/exceptions.py, libmamba's "Could not solve for environment specs",
        # poetry's mixology ("version solving failed"), and pip's and uv's words quoted inside a sentence
        ("installer", "notfound", r"\bPackagesNotFoundError\b|\bResolvePackageNotFound\b"),
        ("installer", "unsatisfiable", r"\bUnsatisfiableError\b"),
        ("installer", "solv", r"\bSolving environment: failed\b|\bCould not solve for environment specs\b"
                              r"|\bversion solving failed\b"),
        ("installer", "no solution found", r"\bNo solution found when resolving dependencies\b"),
        ("installer", "nothing provides", r"\bnothing provides (?:requested )?\S+"),
        ("installer", "installation candidates", r"\bUnable to find installation candidates for\b"),
        ("installer", "distribution found", r"\bNo matching distribution found for \S"),
        ("installer", "satisfies the requirement", r"\b[Cc]ould not find a version that satisfies the requirement \S"),
        ("installer", "resolutionimpossible", r"\bResolutionImpossible\b"),
        ("installer", "supported wheel", r"\bis not a supported wheel on this platform\b"),
        ("installer", "wheel", r"\bFailed building wheel for \S|\b[Cc]ould not build wheels for \S"),
        ("installer", "generation-failed", r"\bmetadata-generation-failed\b"),
        ("installer", "exited-with-error", r"\bsubprocess-exited-with-error\b"),
        ("installer", "failed to build `", r"\bFailed to build `\S"),
        # apt's error lines ("E: Unable to locate package cuda-toolkit-12-4"; apt-pkg's _error->Error prefix)
        ("installer", "e: ", r"^\s*E: [A-Z]\w"),
        # a program the shell could not find (bash's "nvcc: command not found", dash's "sh: 1: nvcc: not found")
        ("command", "not found", r"^\s*(?:[\w/.-]*sh(?:\.exe)?: )?(?:line \d+: |\d+: )?[\w./+-]+: (?:command )?not found\s*$"),
        # a build tool's own failure wording: CMake's (Source/cmMessenger.cxx "CMake Error", Source/cmake.cxx
        # "Configuring incomplete, errors occurred!"), GNU make's ("make[2]: *** [target] Error 1"), ninja's
        # ("ninja: build stopped: subcommand failed.", "ninja: error: ..."), the compiler driver's and the linker's
        # ("gcc: error: ...", "collect2: error: ld returned 1 exit status", "ld: cannot find -lcuda"), MSBuild's
        ("build", "cmake error", r"^\s*CMake Error\b"),
        ("build", "configuring incomplete", r"\bConfiguring incomplete, errors occurred\b"),
        ("build", "***", r"\bmake(?:\[\d+\])?: \*\*\* .*\bError -?\d+"),
        ("build", "ninja: ", r"\b[Nn]inja: (?:[Bb]uild stopped|error):"),
        ("build", "error:", r"^\s*(?:[\w./-]*/)?(?:[\w-]+-)?(?:gcc|g\+\+|cc|c\+\+|clang(?:\+\+)?|nvcc|cl)(?:-\d+(?:\.\d+)*)?"
                            r"(?:\.exe)?: (?:fatal )?error:|\bcollect2(?:\.exe)?: error:"),
        ("build", "cannot find -l", r"\bld(?:\.\w+)?(?:\.exe)?: cannot find -l\S+"),
        ("build", "error msb", r"\berror MSB\d{4}\b"),
        ("build", "undefined reference to", r"\bundefined reference to `"),
        # an exception Python prints without a message (a bare "AssertionError" closing a traceback; poetry's
        # "  RuntimeError" above its message)
        ("raised", "error", r"^\s*`?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Error`?\s*$"),
        # a tool's own error line after its name ("nvidia-container-cli: initialization error: load library failed",
        # "docker: Error response from daemon: ..."); not argparse's usage errors ("lmdeploy: error: argument command:
        # invalid choice: 'check_en'", a mistyped command, not a failure of the machine)
        ("tool", "error", r"^\s*[\w.+-]+: (?:[a-z]+ ){0,3}[Ee]rror(?: response from daemon)?:\s*"
                          r"(?!argument |unrecognized arguments|the following arguments are required)\S"),
        # structured logs' error level: logrus' logfmt ("level=error msg=..."), JSON loggers' "level":"error"
        ("tool", "level", r"\blevel=(?:error|fatal|panic)\b|\"(?:level|levelname|severity)\"\s*:\s*\"(?:ERROR|error|FATAL|fatal"
                          r"|CRITICAL|critical|PANIC|panic)\""),
        # a logger's critical level, after its own tag ("[sgl_kernel] CRITICAL: ...", Python logging's "CRITICAL:root:")
        ("tool", "critical", r"^\s*(?:\[[\w.-]+\]\s*)?CRITICAL\b(?::| -)\s*\S"),
        ("tool", "error", r"^\s*(?:#\d+ [\d.]+\s+)?(?:ERROR|[Ee]rror|fatal error|FATAL)(?: \[[^\]]*\])?:\s*\S"
                          r"|^[\w./+-]+\(\d+\): (?:catastrophic )?error\b|^[\w./+-]+:\d+(?::\d+)?: (?:fatal )?error:"),
        # a compiler's, assembler's or linker's fatal error, whatever the tool pads before the colon ("ptxas fatal   :",
        # "nvcc fatal   :", MSBuild's "file.hpp(3324): catastrophic error : ...", "LINK : fatal error LNK1257:"), and a
        # program's "FATAL:" after its own prefix ("GPU #0: FATAL: ...")
        ("tool", "fatal", r"\b(?:ptxas|nvcc|nvlink|cicc|fatbinary|cudafe\+*|ld|collect2|cc1(?:plus)?|g(?:cc|\+\+)|clang)"
                          r"(?:\.exe)?\b:?[^:]{0,60}?\bfatal(?: error)?\s*:\s*\S|\bfatal error [A-Z]+\d+\s*:|(?:^|:\s)FATAL:\s*\S"),
        ("tool", "catastrophic error", r"\bcatastrophic error\s*:\s*\S"),
        # a C++ logger's error level in its tags, quoted in a sentence ("I get `[TensorRT-LLM][ERROR] 6: ...`")
        ("tool", "][", r"\[[\w.-]+\]\[(?:ERROR|FATAL|E)\]\s*\S"),
        ("tool", "error", r"\): error\s*(?:[A-Z]+\d+\s*)?:\s*\S"),
        # error- and fatal-level lines of the C++ loggers CUDA programs use: glog's "E0715 18:02:17.586518  591934
        # cuda_dnn.cc:523] ...", "[rank4]:[E421 02:05:38.764 ProcessGroupGloo.cpp:143] ...", TensorFlow's "2021-10-16
        # 14:56:09.420644: E tensorflow/...", Go's slog "level=ERROR"
        ("tool", "", r"(?:^|[\]:])\[?[EF]\d{3,4} \d\d:\d\d:\d\d\.\d+\s+(?:\d+\s+)?[\w.]+:\d+\]"
                     r"|^\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [EF] \S+:\d+\]|\blevel=(?:ERROR|FATAL)\b"),
    )
)

#: lines a library prints at its warning's or info's level that say the GPU is not used or lacks what a feature needs:
#: a failure whatever the level (bitsandbytes' "The installed version of bitsandbytes was compiled without GPU support.",
#: llama.cpp's "no CUDA devices found, CUDA will be disabled" and "no usable GPU found", ollama's "no compatible GPUs
#: were discovered", TensorFlow's "Could not find cuda drivers on your machine, GPU will not be used." and "Skipping
#: registering GPU devices...", JAX's "No GPU/TPU found, falling back to CPU." and "a CUDA-enabled jaxlib is not
#: installed", torch's autocast "User provided device_type of 'cuda', but CUDA is not available. Disabling",
#: ONNX Runtime's "Failed to create CUDAExecutionProvider"; bitsandbytes' "Compute capability < 7.5 detected! Only
#: slow 8-bit matmul is supported for your GPU!")
_WARNED: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, needle, re.compile(pattern, re.IGNORECASE)) for kind, needle, pattern in (
        ("gpu-unused", "without", r"\b(?:compiled|built) without (?:GPU|CUDA|cuBLAS)(?: support)?\b"),
        # llama.cpp's older "warning: not compiled with GPU offload support, --gpu-layers option will be ignored"
        ("gpu-unused", "compiled with", r"\bnot compiled with (?:GPU|CUDA)\b"),
        # Whisper's "UserWarning: FP16 is not supported on CPU; using FP32 instead": the model runs on the CPU
        ("gpu-unused", "on cpu", r"\bis not supported on CPU; using\b"),
        ("gpu-unused", "will", r"\b(?:CUDA|GPUs?|cuBLAS)(?: support)? will (?:be disabled|not be used)\b"),
        ("gpu-unused", "no ", r"\bno (?:usable |compatible |available |supported )?(?:CUDA |NVIDIA )?(?:GPUs?|CUDA)"
                              r"(?: devices?)? (?:were |was )?(?:found|detected|discovered)\b"),
        ("gpu-unused", "fall", r"\b(?:falling|fall(?:s|ing)?|fell) ?back to (?:the )?CPU\b"),
        # `ollama ps`' PROCESSOR column: a model loaded wholly on the CPU
        ("gpu-unused", "100% cpu", r"(?<![\d/])100% CPU\b"),
        ("gpu-unused", "skipping registering gpu", r"\bSkipping registering GPU devices\b"),
        # TensorFlow's gpu_device.cc: "Ignoring visible gpu device (...) with Cuda compute capability 3.0. The minimum
        # required Cuda capability is 3.5."
        ("gpu-unused", "ignoring visible gpu", r"\bIgnoring visible gpu device\b"),
        ("gpu-unused", "jaxlib is not installed", r"\bCUDA-enabled jaxlib is not installed\b"),
        ("gpu-unused", "cuda is not available", r"\bbut CUDA is not available\b"),
        ("gpu-unused", "executionprovider", r"\bFailed to create (?:CUDA|TensorRT)ExecutionProvider\b"),
        # a program's own count of the GPUs it sees, zero: TensorFlow's documented check ("Num GPUs Available:  0"),
        # PyTorch Lightning's "GPU available: False, used: False" (and "GPU available: True, used: False": there but
        # not used), torch's device_count() printed as 0
        ("gpu-unused", "gpu", r"\b(?:Num(?:ber of)? )?GPUs? (?:[Aa]vailable|found|detected)\s*[:=]\s*(?:0|False)\b"),
        ("gpu-unused", "used", r"\bGPU available: True,? used: False\b|\bGPU available but not used\b"),
        ("gpu-unused", "device_count", r"\bdevice_count\(\)\s*(?:[:=]+|returns?|->)?\s*0\b"),
        # nvidia-smi's whole answer where the driver sees no GPU (a line of its own)
        ("gpu-unused", "no devices were found", r"^\s*No devices were found\s*$"),
        ("gpu-feature", "compute capability", r"\bcompute capability\s*(?:<=?|below|lower than|less than)\s*\d"),
        ("gpu-feature", "gpu", r"\b(?:is|are) (?:not |only )?supported (?:on|for) (?:this|your) GPU\b"
                               r"|\byour GPU does not support\b"),
    )
)
#: words one of which every :data:`_WARNED` line holds (lower-cased): a line with none is not read for them
_WARNED_GATE = ("gpu", "cuda", "cpu", "devic", "capability", "cublas", "executionprovider")
#: a build's step (ninja's "[54/54] /usr/local/cuda/bin/nvcc ...", "[3/9] Building CUDA object ...", CMake's make
#: output "[ 42%] Building CXX object ..."): where a paste's build ends at one with no result after it, the log was cut
#: before the failure (or the success) it ends with
_STEP_RE = re.compile(r"^\s*\[(?:\d+/\d+|\s*\d+%)\]\s+(?:\S*(?:nvcc|gcc|g\+\+|c\+\+|clang\+*|cc|cl|hipcc|ld)(?:-\d+)?"
                      r"(?:\.exe)?\s|(?:Building|Linking|Compiling|Generating)\b)")
#: what a compiler prints while a build goes on (its warnings and notes, the source lines and carets it quotes, the
#: includes it came through): after a build's last step, any other line is the build's result (a success, the program
#: run after it, an error); these are not
_DIAGNOSTIC_RE = re.compile(r"^\s*(?:In file included from|from \S+[:,]|\S+:\d+(?::\d+)?:\s*(?:warning|note)\b"
                            r"|\S+\(\d+\): (?:warning|remark)\b|.*\bwarning\b|[\s|~^]*$|\d+\s*\||\^)", re.IGNORECASE)

#: a logger's error level in the prefix a line's reading cut off (vLLM's ``ERROR 03-20 07:42:38 [utils.py:613]``,
#: uvicorn's ``ERROR:    ``, a ``[ERROR]`` or ``[error]`` tag), whatever the message after it says
_PREFIX_LEVEL_RE = re.compile(r"(?<![\w-])(?:ERROR|CRITICAL|FATAL)(?![\w-])|\[(?:error|Error|fatal|critical)\]"
                              r"|\[[EF]\d{3,4} \d\d:\d\d:\d\d")  # glog's and c10's "[E421 02:05:38.764 ...]"
#: a logger's error level at the start of a line, after no words but a timestamp (digits and punctuation) and
#: Python logging's ``- name -`` (after a process's ``(VllmWorker rank=0 pid=2412)``): ``2024-05-01 10:00:00,123 - root - ERROR - ...``, loguru's ``... | ERROR    | ...``,
#: ``ERROR something``; not ``ERRORS``, nor a word before it (``NO ERROR``)
_BODY_LEVEL_RE = re.compile(r"^(?:\([^()]{1,60}\)\s+)?[^A-Za-z]{0,40}?(?:[\w.]+ - )?\[?(?:ERROR|CRITICAL|FATAL)\]?(?=[\s|:-]|$)")
_LOWER_LEVEL_RE = re.compile(r"(?<![\w-])(?:WARNING|WARN|INFO|DEBUG)(?![\w-])|\[[WI]\d{3,4} \d\d:\d\d:\d\d")
#: a traceback's first line: a failure even where the paste is cut before the exception it ends with
_TRACEBACK_RE = re.compile(r"^\s*Traceback \(most recent call last\):")

#: the kinds, the most telling first (the one a "cause not named" leads with)
FAILURE_KINDS = (*dict.fromkeys(kind for kind, _, _ in _RULES), "gpu-feature", "gpu-unused", "traceback", "cut", "said", "said-error")


def _error_level(line: Line) -> re.Match[str] | None:
    """A logger's error level in the line's cut-off prefix or at its start (the level, not the message, says it)."""
    if line.prefixes and line.text.endswith(line.body):
        head = line.text[:len(line.text) - len(line.body)]
        m = _PREFIX_LEVEL_RE.search(head)
        if m or _LOWER_LEVEL_RE.search(head):  # a warning's or info line's message is not read for a level
            return m
    return _BODY_LEVEL_RE.match(line.body) if "ERROR" in line.body[:60] or "CRITICAL" in line.body[:60] \
        or "FATAL" in line.body[:60] else None


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    for needle in needles:  # (a loop, not any(): faster, and this runs for every line of a big log)
        if needle in text:
            return True
    return False


class FailureReader:
    """The first kind of failure a line shows, if any; and, at the paste's end (:meth:`end`), a build cut short."""

    def __init__(self) -> None:
        self._step: Line | None = None  # the build's last step with no result after it yet

    def _warned(self, line: Line, lower: str, out: Collector) -> bool:
        """A failure said at any level (:data:`_WARNED`)."""
        if _holds(lower, _WARNED_GATE):
            for kind, needle, pattern in _WARNED:
                if needle in lower and (m := pattern.search(line.body)):
                    out.add("failures", kind, line, MESSAGE, "failure", m.span())
                    return True
        return False

    def feed(self, line: Line, out: Collector) -> bool:
        lower = line.lower
        if "[" in lower[:12] and _STEP_RE.match(line.body):
            self._step = line
            return False
        if self._step is not None and not _DIAGNOSTIC_RE.match(line.body):
            self._step = None
        if self._warned(line, lower, out):
            return True
        if lower.lstrip().startswith(("warning", "[warning]", "info")) or "warning:" in lower[:40]:
            return False
        for kind, needle, pattern in _RULES:
            if needle in lower and (m := pattern.search(line.body)):
                out.add("failures", kind, line, MESSAGE, "failure", m.span())
                self._step = None
                return True
        if _error_level(line) is not None:
            out.add("failures", "tool", line, MESSAGE, "failure")
            self._step = None
            return True
        if "traceback" in lower and (m := _TRACEBACK_RE.match(line.body)):
            out.add("failures", "traceback", line, MESSAGE, "failure", m.span())
            return True
        return False

    def end(self, out: Collector) -> None:
        """The paste's build ends at a step with no result after it (no failure, no success): cut before its end."""
        if self._step is not None:
            out.add("failures", "cut", self._step, MESSAGE, "failure")
