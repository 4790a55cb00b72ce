"""The facts read from pasted text: each value with the line it came from (:class:`Seen`), in :class:`Evidence`.

Pure values. A fact seen several times is kept once per value and rank; the best sighting of a fact is the one
of the lowest rank (a report such as collect_env or nvidia-smi before a program's message, before what a user
wrote), then the earliest line.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ...values import Capability, DriverVersion
from .tokens import cuda_of_local

__all__ = ["REPORT", "MESSAGE", "DERIVED", "PROSE", "DOWNLOAD", "Seen", "Gpu", "Dist", "Nvcc", "Library", "Symbol",
           "Killed", "InstallerEvent", "ImportFailure", "BuiltFor", "ExtBuild", "Signal", "Evidence", "KINDS",
           "DIST_ALIASES"]

T = TypeVar("T")

#: ranks: how much a sighting is worth (lower is better)
REPORT = 0  # a tool's report: collect_env, nvidia-smi, nvcc --version, pip/conda lists
MESSAGE = 10  # a program's own message: an error, a log line, a path in a traceback
DERIVED = 15  # follows from another sighting (torch 2.1.2+cu121 -> torch's CUDA 12.1)
PROSE = 20  # what a user wrote ("torch 2.3", "I use an H100")
DOWNLOAD = 30  # a file an installer fetched (what was to be installed, not necessarily what is)

#: what a paste can contain
KINDS = ("collect_env_vllm", "collect_env_torch", "nvidia_smi", "pip_list", "conda_list", "traceback", "build_log",
         "log")

#: distribution names that stand for the same component (looked up by :meth:`Evidence.dist`)
DIST_ALIASES = {
    "torch": ("torch", "pytorch"),
    "triton": ("triton", "pytorch-triton"),
    "flashinfer": ("flashinfer", "flashinfer-python"),
    "flashinfer-python": ("flashinfer-python", "flashinfer"),
    "pytorch-triton": ("pytorch-triton", "triton"),
}


class Seen(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """One sighting of a fact: its value, the 1-based line and that line's text (one plain line), how good it is."""

    value: T
    line: int
    text: str
    rank: int
    how: str  # which reader saw it: "collect_env", "nvidia-smi", "pip list", "message", "path", "prose", ...

    def to_dict(self) -> dict[str, Any]:
        return {"value": _plain(self.value), "line": self.line, "text": self.text, "rank": self.rank, "how": self.how}


class Gpu(msgspec.Struct, frozen=True, kw_only=True):
    """A GPU as printed (``NVIDIA GeForce RTX 4090``), its index and compute capability where shown."""

    name: str | None = None
    compute_capability: Capability | None = None
    index: int | None = None
    truncated: bool = False  # nvidia-smi's "NVIDIA GeForce ..."


class Dist(msgspec.Struct, frozen=True, kw_only=True):
    """A Python distribution and its version as printed (local tag kept: ``2.1.2+cu121``)."""

    name: str  # canonical: "flash-attn", "torch" (conda's "pytorch" is torch)
    version: str | None = None  # None: listed without one (``torch @ file:///src/pytorch``)
    build: str | None = None  # conda's build string ("py3.11_cuda12.4_cudnn9.1.0_0")
    location: str | None = None  # an editable project's directory, a direct reference's URL

    def __post_init__(self) -> None:
        """A version that is not one (prose's ``torch2.0.0+ transformers``) is kept without its trailing separator
        when that makes it one (``2.0.0``), else dropped: every reader of a Dist may compare its version."""
        if self.version is not None and _parsed(self.version) is None:
            trimmed = self.version.rstrip("+.-_")
            msgspec.structs.force_setattr(self, "version", trimmed if _parsed(trimmed) is not None else None)


class Nvcc(msgspec.Struct, frozen=True, kw_only=True):
    """``Cuda compilation tools, release 12.1, V12.1.105``: the release, and the full version when shown."""

    release: str
    version: str | None = None


class Library(msgspec.Struct, frozen=True, kw_only=True):
    """A shared library named in the text (``libcudart.so.12``), and whether the text says it was not found."""

    soname: str  # as printed: "libcudart.so.12", "libcudnn.so.8.9.0", "libcuda.so" ("-lcuda" at link time)
    name: str  # "cudart", "cudnn", "nccl", "nvJitLink", "cuda"
    version: str | None = None  # what follows ".so.": "12", "8.9.0"
    missing: bool = False


class Symbol(msgspec.Struct, frozen=True, kw_only=True):
    """An undefined symbol, demangled when the ``cxxfilt`` package is installed, and whose it is.

    ``owner``: ``torch`` (``at::``, ``c10::``, ``torch::``, torch's C shim: the library was built against another
    torch), ``cuda-library`` (a CUDA library's C API: ``cusparseSpSM_analysis``), ``nvjitlink`` (``__nvJitLinkComplete_12_4``: the nvJitLink loaded is older than ``needs``), ``unknown``.
    """

    mangled: str
    demangled: str | None = None
    owner: str = "unknown"
    needs: str | None = None  # nvjitlink: the version the symbol's suffix asks for ("12.4")
    library: str | None = None  # the file that needs it ("_C.abi3.so", "libcusparse.so.12")


class Killed(msgspec.Struct, frozen=True, kw_only=True):
    """A process killed during a build or a run (the kernel's OOM killer: signal 9, exit status 137)."""

    program: str | None = None  # "cc1plus", "nvcc", "cicc", "ptxas", None when the text does not say
    how: str = "signal 9"  # "signal 9" | "exit status 137" | "build stopped"
    in_build: bool = False


class InstallerEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What pip, uv or conda said it did or could not do.

    ``action``: ``uninstalled``, ``installed``, ``no-matching-distribution``, ``requires-python``,
    ``resolution-failed``, ``build-failed``, ``not-installed``; ``index`` (``detail``: an index URL it was told to
    use); ``index-unreachable`` (an index that did not answer: a connection, proxy or TLS failure); ``collecting`` (an exact version on its way in;
    ``detail``: the package that asks for it); ``conflict`` (pip's check: ``name`` ``version`` needs another
    version of ``detail`` than the one installed); a resolver's conflict: ``requested`` (``detail``: what the user asked
    for), ``depends`` (``name`` ``version`` depends on ``detail``); ``no-wheel-for-python`` (uv: no wheel of ``name``
    ``version`` matches the interpreter's tag; ``detail``: the tag uv names, if any).
    """

    action: str
    name: str | None = None
    version: str | None = None
    detail: str | None = None  # a requirement ("vllm==0.10"), a Requires-Python specifier ("<3.13,>=3.9")
    #: ``no-matching-distribution``: the versions pip's "(from versions: ...)" offered (() for "none"); None: not shown
    offered: tuple[str, ...] | None = None


class ImportFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A module that failed to import, and the error (``vllm._C``: ``libcudart.so.12: cannot open ...``)."""

    module: str
    error: str


class BuiltFor(msgspec.Struct, frozen=True, kw_only=True):
    """A package's report of the torch it was built for (xFormers: ``PyTorch 2.0.1 (you have 2.1.0+cu121)``)."""

    package: str
    torch: str | None = None
    python: str | None = None


class ExtBuild(msgspec.Struct, frozen=True, kw_only=True):
    """A compiled package's own report of its build (detectron2's and torchvision's "arch flags", MMCV's "MMCV CUDA
    Compiler", CuPy's "CUDA Build Version"): the CUDA it was compiled with, and the GPU code its library carries."""

    package: str  # "detectron2", "torchvision", "mmcv", "cupy"
    cuda: str | None = None  # "11.3"
    archs: tuple[str, ...] = ()  # as torch.cuda.get_arch_list() names them: "sm_37", "compute_80"


class Signal(msgspec.Struct, frozen=True, kw_only=True):
    """A key error line, typed: ``no-kernel-image``, ``driver-too-old``, ``nvml-mismatch``, ``ptx-toolchain``,
    ``vllm-c-missing``, ``no-cuda-gpus``, ... (:data:`vresolve.doctor.evidence.signals.SIGNALS` lists them)."""

    code: str
    detail: str | None = None


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """Everything read from one paste. Each field holds every distinct sighting, in line order."""

    gpus: tuple[Seen[Gpu], ...] = ()
    gpu_families: tuple[Seen[str], ...] = ()  # a GPU architecture the user says they have ("an Ampere GPU"): "ampere"
    driver: tuple[Seen[DriverVersion], ...] = ()
    cuda_driver: tuple[Seen[str], ...] = ()  # the newest CUDA the driver serves ("CUDA Version: 12.4", 11040)
    nvidia_smi: tuple[Seen[str], ...] = ()  # nvidia-smi's own version (differs from the driver's under WSL)
    nvml_library: tuple[Seen[str], ...] = ()  # "NVML library version: 570.124"
    dists: tuple[Seen[Dist], ...] = ()  # installed (or named) distributions: torch, vllm, companions, nvidia-*
    torch_cuda: tuple[Seen[str | None], ...] = ()  # torch.version.cuda; None: shown to be a CPU build
    cuda_available: tuple[Seen[bool], ...] = ()
    cuda_runtime: tuple[Seen[str], ...] = ()  # collect_env's "CUDA runtime version" (the toolkit found)
    cuda: tuple[Seen[str], ...] = ()  # a CUDA version stated without saying which ("cuda 12.8", "CUDA: 12.2")
    cudnn: tuple[Seen[str], ...] = ()
    rocm: tuple[Seen[str], ...] = ()
    torch_arch_list: tuple[Seen[tuple[str, ...]], ...] = ()
    python: tuple[Seen[str], ...] = ()
    os: tuple[Seen[str], ...] = ()  # "Ubuntu 22.04.4 LTS"
    system: tuple[Seen[str], ...] = ()  # "linux" | "windows" | "darwin"
    machine: tuple[Seen[str], ...] = ()  # "x86_64" | "aarch64"
    wsl: tuple[Seen[bool], ...] = ()
    python_bits: tuple[Seen[int], ...] = ()  # the interpreter's word size where shown (32: no torch wheels at all)
    container: tuple[Seen[str], ...] = ()  # an image ("nvcr.io/nvidia/pytorch:24.08-py3") or "docker"
    jetson: tuple[Seen[str], ...] = ()
    l4t: tuple[Seen[str], ...] = ()  # a Jetson's Jetson Linux release: "36.4.3" (nv_tegra_release, jtop, dpkg)
    accelerator: tuple[Seen[str], ...] = ()  # not CUDA: "ROCm", "XPU", "TPU"
    glibc: tuple[Seen[str], ...] = ()  # the machine's glibc
    glibc_required: tuple[Seen[str], ...] = ()  # "GLIBC_2.32' not found"
    nvcc: tuple[Seen[Nvcc], ...] = ()
    tools: tuple[Seen[tuple[str, str]], ...] = ()  # ("gcc", "11.4.0"), ("cmake", "3.22.1"), ("pip", "24.0")
    ld_library_path: tuple[Seen[tuple[str, ...]], ...] = ()
    env: tuple[Seen[tuple[str, str]], ...] = ()  # CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, CUDA_HOME, ...
    libraries: tuple[Seen[Library], ...] = ()
    symbols: tuple[Seen[Symbol], ...] = ()
    killed: tuple[Seen[Killed], ...] = ()
    installer: tuple[Seen[InstallerEvent], ...] = ()
    import_failures: tuple[Seen[ImportFailure], ...] = ()
    built_for: tuple[Seen[BuiltFor], ...] = ()
    ext_reports: tuple[Seen[ExtBuild], ...] = ()  # compiled packages' reports of their own builds
    build_env: tuple[Seen[Dist], ...] = ()  # what pip put in an isolated build environment (torch 2.3.0)
    memory: tuple[Seen[tuple[float, float]], ...] = ()  # top's or free's (total, free + buff/cache), in MiB
    oom_words: tuple[Seen[str], ...] = ()  # "OOM", "out of memory" said of the host (not of a GPU)
    build_jobs: tuple[Seen[int], ...] = ()  # parallel build jobs asked for: MAX_JOBS=64, cmake -j=64, make -j 32
    vllm_paths: tuple[Seen[str], ...] = ()
    imported: tuple[Seen[str], ...] = ()
    exceptions: tuple[Seen[str], ...] = ()  # a Python exception a traceback ends with ("RuntimeError: ...")  # the packages a traceback or the user says were being imported  # the directory holding the vllm package a frame or warning names
    build_env_paths: tuple[Seen[str], ...] = ()  # "/tmp/pip-build-env-k_b5x9gx/overlay"
    build_env_torch_cuda: tuple[Seen[str], ...] = ()  # the CUDA of the torch in that environment
    #: the torch and CUDA a third-party extension's wheel was built for, as its wheel index or file name says them
    #: (``torch-1.8.0+cu111.html``, ``cu111/torch1.9.0/index.html``, ``+pt21cu121``, ``+cu122torch2.3``):
    #: (torch's version or "", CUDA's "11.1" or "cpu")
    ext_builds: tuple[Seen[tuple[str, str]], ...] = ()
    gencode: tuple[Seen[str], ...] = ()  # "-gencode arch=compute_75,code=sm_75" -> "sm_75"
    vllm_cuda_archs: tuple[Seen[str], ...] = ()  # collect_env's "vLLM Build Flags: CUDA Archs: ..."
    signals: tuple[Seen[Signal], ...] = ()
    shm_ample: tuple[Seen[str], ...] = ()  # what rules a small /dev/shm out: --ipc=host, a /dev/shm of 16 GB or more
    failures: tuple[Seen[str], ...] = ()  # lines that show a failure, by kind ("cuda", "nccl", "exception", ...)
    kinds: frozenset[str] = frozenset()
    lines: int = 0  # lines read
    cut_lines: int = 0  # lines longer than the limit (their start was read)
    dropped: tuple[tuple[str, int], ...] = ()  # facts not kept past a field's limit: (field, how many)

    def best(self, name: str) -> Seen[Any] | None:
        """The best sighting of a field's fact (lowest rank, then earliest line), or None."""
        seen: tuple[Seen[Any], ...] = getattr(self, name)
        return min(seen, key=lambda s: (s.rank, s.line)) if seen else None

    def value(self, name: str) -> Any:
        best = self.best(name)
        return None if best is None else best.value

    def dist(self, name: str) -> Seen[Dist] | None:
        """The best sighting of an installed distribution with a version (``flashinfer`` finds ``flashinfer-python``)."""
        key = canonicalize_name(name)
        names = DIST_ALIASES.get(key, (key,))
        hits = [s for s in self.dists if s.value.name in names and s.value.version]
        return min(hits, key=lambda s: (s.rank, names.index(s.value.name), s.line)) if hits else None

    @property
    def torch(self) -> str | None:
        d = self.dist("torch")
        return d.value.version if d else None

    @property
    def vllm(self) -> str | None:
        d = self.dist("vllm")
        return d.value.version if d else None

    def torch_cuda_seen(self) -> Seen[str | None] | None:
        """torch's CUDA (None: a CPU build): as shown ("CUDA used to build PyTorch", ``torch.version.cuda``), or
        as the best torch's local tag says (``2.1.2+cu121``: 12.1, ``+cpu``: none), whichever sighting is better.
        None when the paste shows neither."""
        seen = list(self.torch_cuda)
        torch = self.dist("torch")
        version = torch.value.version if torch is not None else None
        if torch is not None and version and "+" in version:
            cuda = cuda_of_local(version)
            if cuda is not None or version.partition("+")[2].lower().startswith("cpu"):
                seen.append(Seen(value=cuda, line=torch.line, text=torch.text, rank=torch.rank + 5,
                                 how=f"{torch.how}: local tag"))
        return min(seen, key=lambda s: (s.rank, s.line)) if seen else None

    def signal_codes(self) -> frozenset[str]:
        return frozenset(s.value.code for s in self.signals)

    def capabilities(self) -> tuple[Capability, ...]:
        """Every compute capability shown, each once, in line order."""
        out: list[Capability] = []
        for s in self.gpus:
            cc = s.value.compute_capability
            if cc is not None and cc not in out:
                out.append(cc)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "kinds":
                out["kinds"] = sorted(value)
            elif isinstance(value, tuple) and value and isinstance(value[0], Seen):
                out[name] = [s.to_dict() for s in value]
            elif name == "dropped":
                out["dropped"] = dict(value)
            elif not isinstance(value, tuple):
                out[name] = value
        return out


def _plain(value: Any) -> Any:
    """A fact's value for JSON: records (Structs) as dicts, capabilities and driver versions as strings."""
    if isinstance(value, (Capability, DriverVersion)):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return {name: _plain(getattr(value, name)) for name in value.__struct_fields__}
    return value


def _parsed(version: str) -> Version | None:
    try:
        return Version(version)
    except InvalidVersion:
        return None
