"""collect_env reports: PyTorch's ``python -m torch.utils.collect_env`` and vLLM's ``collect_env.py`` /
``vllm collect-env``, old format (``Key: value``) and new (boxed sections, ``Key   : value``).

Input (either form)::

    PyTorch version              : 2.7.1+cu128
    CUDA used to build PyTorch   : 12.8
    Libc version: glibc-2.35
    Python platform: Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35
    GPU models and configuration:
    GPU 0: NVIDIA A100 80GB PCIe            (these lines are nvidia-smi -L's: read by .smi)
    cuDNN version: Probably one of the following:
    /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0

"N/A", "Could not collect", "No CUDA" mean the report did not learn the fact, except for "CUDA used to build
PyTorch" under a "PyTorch version" that shows one: its "None" and "Could not collect" both mean a CPU build (the
script prints torch.version.cuda, and its older editions replace a None by "Could not collect"; a ROCm build
prints N/A there; pytorch/pytorch torch/utils/collect_env.py, get_env_info and pretty_str).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...values import DriverVersion
from .collect import Collector
from .lines import Line
from .model import MESSAGE, REPORT, Dist, Gpu
from .tokens import NOT_SHOWN, key_value, nvidia_of_windows_driver, version_token

__all__ = ["CollectEnvReader", "read_platform_string"]

HOW = "collect_env"

_ARCH_RE = re.compile(r"^(?P<os>.*?)\s*\((?P<arch>x86_64|aarch64|arm64|AMD64|ppc64le|s390x)\)\s*$")
_CUDNN_RE = re.compile(r"libcudnn\.so\.(\d+\.\d+\.\d+)")
_VLLM_HEADERS = frozenset({"system info", "pytorch info", "python environment", "cuda / gpu info", "cpu info",
                           "vllm info", "environment variables", "versions of relevant libraries"})

Handler = Callable[[str, Line, Collector], None]


def _torch(value: str, line: Line, out: Collector) -> None:
    version = version_token(value)
    if version:
        out.add_dist(Dist(name="torch", version=version), line, REPORT, HOW)
        out.mark("torch-version", line)  # the report's torch imported: its CUDA line says what it was built with


def _vllm(value: str, line: Line, out: Collector) -> None:
    out.markers.add("vllm-collect-env")
    version = version_token(value)
    if version:
        out.add_dist(Dist(name="vllm", version=version), line, REPORT, HOW)


def _torch_cuda(value: str, line: Line, out: Collector) -> None:
    word = value.lower()
    if word == "none" or word == "could not collect" and out.near("torch-version", line, 3):
        out.add("torch_cuda", None, line, REPORT, HOW)  # a CPU build (ROCm builds print N/A)
    elif version := version_token(value):
        out.add("torch_cuda", version, line, REPORT, HOW)


def _plain(field: str) -> Handler:
    def handler(value: str, line: Line, out: Collector) -> None:
        version = version_token(value)
        if version and "." in version:  # (CuPy's show_config prints the API's integer under the same key: 12090)
            out.add(field, version, line, REPORT, HOW)
    return handler


def _rocm(value: str, line: Line, out: Collector) -> None:
    version = version_token(value)
    if version:
        out.add("rocm", value.split()[0], line, REPORT, HOW)
        out.add("accelerator", "ROCm", line, REPORT, HOW)


def _os(value: str, line: Line, out: Collector) -> None:
    m = _ARCH_RE.match(value)
    name = m["os"] if m else value
    if m:
        machine = {"AMD64": "x86_64", "arm64": "aarch64"}.get(m["arch"], m["arch"])
        out.add("machine", machine, line, REPORT, HOW)
    if name:
        out.add("os", name, line, REPORT, HOW)
        lower = name.lower()
        system = "windows" if "windows" in lower else "darwin" if "macos" in lower or "mac os" in lower else "linux"
        out.add("system", system, line, REPORT, HOW)


def _tool(name: str) -> Handler:
    def handler(value: str, line: Line, out: Collector) -> None:
        m = re.search(r"\d+\.\d+(?:\.\d+)?", value)
        if m:
            out.add("tools", (name, m[0]), line, REPORT, HOW)
    return handler


def _glibc(value: str, line: Line, out: Collector) -> None:
    m = re.match(r"glibc[- ](\d+\.\d+)", value)
    if m:
        out.add("glibc", m[1], line, REPORT, HOW)
        out.add("system", "linux", line, REPORT, HOW)


def read_platform_string(value: str, line: Line, out: Collector, rank: int = REPORT, how: str = HOW) -> None:
    """Python's platform string: ``Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35``."""
    lower = value.lower()
    system = next((s for s in ("linux", "windows", "macos", "darwin") if lower.startswith(s)), None)
    if system:
        out.add("system", "darwin" if system == "macos" else system, line, rank, how)
    m = re.search(r"[-_](x86_64|aarch64|amd64|arm64)(?:-|$)", lower)
    if m:
        out.add("machine", {"amd64": "x86_64", "arm64": "aarch64"}.get(m[1], m[1]), line, rank, how)
    if "microsoft" in lower or "wsl" in lower:
        out.add("wsl", True, line, rank, how)
    if "tegra" in lower:
        out.add("jetson", "tegra", line, rank, how)
    m = re.search(r"with-glibc(\d+\.\d+)", lower)
    if m:  # the glibc Python was linked against: the machine's is at least this (collect_env's Libc line is better)
        out.add("glibc", m[1], line, max(rank, MESSAGE), how)


def _platform(value: str, line: Line, out: Collector) -> None:
    read_platform_string(value, line, out)


def _python(value: str, line: Line, out: Collector) -> None:
    version = version_token(value)
    if version and version.startswith(("2.", "3.")):
        out.add("python", version, line, REPORT, HOW)


def _available(value: str, line: Line, out: Collector) -> None:
    word = value.lower()
    if word in ("true", "yes", "false", "no"):
        out.add("cuda_available", word in ("true", "yes"), line, REPORT, HOW)


def _gpus(value: str, line: Line, out: Collector) -> None:
    # "GPU 0: NVIDIA ..." on the key's own line is read by .smi (nvidia-smi -L's form); a bare name is read here
    if value and not value.startswith("GPU ") and value.lower() not in NOT_SHOWN:
        out.add("gpus", Gpu(name=value, index=0), line, REPORT, HOW)


def _driver(value: str, line: Line, out: Collector) -> None:
    version = version_token(value)
    if version:
        version = nvidia_of_windows_driver(version) or version  # Windows' 31.0.15.5222 is NVIDIA's 552.22
        try:
            out.add("driver", DriverVersion.parse(version), line, REPORT, HOW)
        except ValueError:
            return


def _cudnn(value: str, line: Line, out: Collector) -> None:
    m = _CUDNN_RE.search(value)
    version = m[1] if m else version_token(value) if not value.startswith("/") else None
    if version:
        out.add("cudnn", version, line, REPORT, HOW)
    elif value.lower().startswith("probably one of the following"):
        out.mark("cudnn-list", line)


def _archs(value: str, line: Line, out: Collector) -> None:
    archs = value.split(";")[0].strip()
    if archs:
        out.add("vllm_cuda_archs", archs, line, REPORT, HOW)


def _machine(value: str, line: Line, out: Collector) -> None:
    if value in ("x86_64", "aarch64"):
        out.add("machine", value, line, REPORT, HOW)


def _marker(value: str, line: Line, out: Collector) -> None:
    return None


#: the report's keys (lower-cased) and what each says; only keys PyTorch's or vLLM's report prints
KEYS: dict[str, Handler] = {
    "pytorch version": _torch,
    "is debug build": _marker,
    "cuda used to build pytorch": _torch_cuda,
    "rocm used to build pytorch": _rocm,
    "os": _os,
    "gcc version": _tool("gcc"),
    "clang version": _tool("clang"),
    "cmake version": _tool("cmake"),
    "libc version": _glibc,
    "python version": _python,
    "python platform": _platform,
    "is cuda available": _available,
    "cuda runtime version": _plain("cuda_runtime"),
    "cuda_module_loading set to": _marker,
    "gpu models and configuration": _gpus,
    "nvidia driver version": _driver,
    "cudnn version": _cudnn,
    "hip runtime version": _marker,
    "miopen runtime version": _marker,
    "is xnnpack available": _marker,
    "vllm version": _vllm,
    "vllm build flags": _marker,
    "cuda archs": _archs,
    "rocm version": _rocm,
    "neuron sdk version": _marker,
    "architecture": _machine,
}
_SHOWN_ONLY = frozenset({"cuda used to build pytorch"})  # keys whose "None" is a fact, not a gap
#: keys only these reports print (the others, "OS", "Python version", also appear in what users write)
_DISTINCT = frozenset({"pytorch version", "is debug build", "cuda used to build pytorch", "rocm used to build pytorch",
                       "libc version", "python platform", "is cuda available", "cuda runtime version",
                       "cuda_module_loading set to", "gpu models and configuration", "nvidia driver version",
                       "cudnn version", "hip runtime version", "miopen runtime version", "is xnnpack available",
                       "vllm version", "vllm build flags"})


class CollectEnvReader:
    """The ``Key: value`` lines of a collect_env report, and the cuDNN file list that may follow its key."""

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if out.near("cudnn-list", line, 1) and body.lstrip().startswith("/"):
            self._cudnn_file(body, line, out)
            return True
        kv = key_value(body) if not body.lstrip().startswith(("-", "*", "•")) else None
        if kv is None:
            return self._header(line, out)
        key, value = kv
        handler = KEYS.get(key)
        if handler is None:
            return False
        if key in _DISTINCT:
            out.kinds.add("collect_env")
        if value.lower() in NOT_SHOWN and key not in _SHOWN_ONLY:
            return True
        handler(value, line, out)
        return True

    @staticmethod
    def _cudnn_file(body: str, line: Line, out: Collector) -> None:
        out.mark("cudnn-list", line)
        m = _CUDNN_RE.search(body)
        if m and not out.has("cudnn"):
            out.add("cudnn", m[1], line, REPORT, HOW)

    @staticmethod
    def _header(line: Line, out: Collector) -> bool:
        text = line.lower.strip()
        if text in _VLLM_HEADERS:
            out.markers.add("vllm-collect-env")
            return True
        if "collecting environment information" in text:
            out.kinds.add("collect_env")
            return True
        if "torch.utils.collect_env" in text:
            out.markers.add("torch-collect-env")
        elif "collect_env.py" in text or "collect-env" in text or "automatically detected platform" in text:
            out.markers.add("vllm-collect-env")
        return False
