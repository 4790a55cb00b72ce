"""Facts about a machine: frozen values, built by ``detect`` or by hand (tests, ``--gpu``).

Pure: nothing here probes anything. ``Host.to_dict()`` / ``Host.from_dict()`` round-trip
through JSON (for ``--json`` and for the machine assumptions recorded in lockfiles).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from packaging.version import Version

from .values import Capability, DriverVersion

__all__ = ["DriverInfo", "HostGpu", "Toolkit", "InstalledDist", "TorchRuntime", "PlatformInfo", "Host", "ModuleReport",
           "EnvReport"]


def _v(text: str | None) -> Version | None:
    return None if text is None else Version(text)


def _s(value: object | None) -> str | None:
    return None if value is None else str(value)


class DriverInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The NVIDIA driver: its version, the newest CUDA it serves, and who said so."""

    version: DriverVersion | None = None
    cuda: Version | None = None  # the CUDA version the driver supports (nvidia-smi's "CUDA Version")
    source: str | None = None  # which probe gave the version
    cuda_source: str | None = None
    kernel_module: str | None = None  # "open" | "proprietary" (from /proc/driver/nvidia/version)
    nvml_library_mismatch: bool = False  # "Failed to initialize NVML: Driver/library version mismatch"
    # what detection concluded: "working" (a probe answered), "broken" (installed, but a probe failed or hung, or
    # nothing lists the GPUs the PCI bus shows), "not-installed" (NVIDIA GPUs on the PCI bus, no driver), "none"
    # (no NVIDIA GPU, no driver: a CPU machine); None when not probed (named on the command line)
    state: str | None = None
    evidence: tuple[str, ...] = ()  # what shows a driver or a GPU is there: module files, device nodes, PCI devices
    failure: str | None = None  # the failing probe's own words ("nvidia-smi: exit code 9: NVIDIA-SMI has failed ...")
    library_version: str | None = None  # the user-space library's version nvidia-smi names on a mismatch

    @property
    def broken(self) -> bool:
        """Installed but not usable, or GPUs without a driver: a plan for this machine must not be made."""
        return self.state in ("broken", "not-installed")

    def to_dict(self) -> dict[str, Any]:
        return {"version": _s(self.version), "cuda": _s(self.cuda), "source": self.source,
                "cuda_source": self.cuda_source, "kernel_module": self.kernel_module,
                "nvml_library_mismatch": self.nvml_library_mismatch, "state": self.state,
                "evidence": list(self.evidence), "failure": self.failure, "library_version": self.library_version}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DriverInfo:
        version = d.get("version")
        return cls(version=DriverVersion.parse(version) if version else None, cuda=_v(d.get("cuda")),
                   source=d.get("source"),
                   cuda_source=d.get("cuda_source"), kernel_module=d.get("kernel_module"),
                   nvml_library_mismatch=bool(d.get("nvml_library_mismatch")), state=d.get("state"),
                   evidence=tuple(str(e) for e in d.get("evidence") or ()), failure=d.get("failure"),
                   library_version=d.get("library_version"))


class HostGpu(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    name: str
    compute_capability: Capability | None = None
    memory_mib: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    source: str | None = None  # which probe found the GPU
    cc_source: str | None = None  # which probe (or "matrix") gave the compute capability

    @property
    def label(self) -> str:
        """``NVIDIA H200 (sm_90)``; the name alone when the capability is unknown."""
        return f"{self.name} ({self.compute_capability.sm})" if self.compute_capability is not None else self.name

    @property
    def cc(self) -> Capability:
        """The compute capability of a GPU known to have one (filter on ``compute_capability`` first)."""
        if self.compute_capability is None:
            raise ValueError(f"GPU {self.index} {self.name!r}: compute capability unknown")
        return self.compute_capability

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "compute_capability": _s(self.compute_capability),
                "memory_mib": self.memory_mib, "uuid": self.uuid, "pci_bus_id": self.pci_bus_id,
                "source": self.source, "cc_source": self.cc_source}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HostGpu:
        cc = d.get("compute_capability")
        return cls(index=int(d["index"]), name=str(d["name"]),
                   compute_capability=Capability.parse(cc) if cc else None, memory_mib=d.get("memory_mib"),
                   uuid=d.get("uuid"), pci_bus_id=d.get("pci_bus_id"), source=d.get("source"),
                   cc_source=d.get("cc_source"))


class Toolkit(msgspec.Struct, frozen=True, kw_only=True):
    """A CUDA toolkit found on the machine."""

    version: Version
    path: str
    source: str  # "PATH", "CUDA_HOME", "/usr/local/cuda*", ...
    nvcc: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"version": str(self.version), "path": self.path, "source": self.source, "nvcc": self.nvcc}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Toolkit:
        return cls(version=Version(d["version"]), path=d["path"], source=d["source"], nvcc=d.get("nvcc"))


class InstalledDist(msgspec.Struct, frozen=True, kw_only=True):
    """An installed distribution that matters to the stack (torch, vllm, ...)."""

    name: str
    version: str  # as installed, local tag included ("2.11.0+cu130")
    location: str | None = None
    cuda: str | None = None  # torch: torch/version.py's ``cuda`` (None for a CPU build)

    @property
    def local(self) -> str | None:
        return Version(self.version).local if self.version else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "local": self.local, "location": self.location,
                "cuda": self.cuda}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InstalledDist:
        return cls(name=d["name"], version=d["version"], location=d.get("location"), cuda=d.get("cuda"))


class TorchRuntime(msgspec.Struct, frozen=True, kw_only=True):
    """torch's own view of the machine, from ``import torch`` in a subprocess (opt-in)."""

    version: str | None = None
    cuda: str | None = None  # torch.version.cuda
    available: bool = False  # torch.cuda.is_available()
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): "sm_90", "compute_90"
    device_capabilities: tuple[str, ...] = ()  # torch.cuda.get_device_capability(i) for each visible GPU
    error: str | None = None  # why the probe failed (import error, timeout)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "cuda": self.cuda, "available": self.available,
                "arch_list": list(self.arch_list), "device_capabilities": list(self.device_capabilities),
                "error": self.error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TorchRuntime:
        return cls(version=d.get("version"), cuda=d.get("cuda"), available=bool(d.get("available")),
                   arch_list=tuple(d.get("arch_list") or ()),
                   device_capabilities=tuple(d.get("device_capabilities") or ()), error=d.get("error"))


class PlatformInfo(msgspec.Struct, frozen=True, kw_only=True):
    os: str = "linux"  # "linux" | "windows" | "darwin"
    machine: str = "x86_64"  # "x86_64" | "aarch64"
    glibc: Version | None = None
    wsl: bool = False
    container: str | None = None  # "docker", "podman", "kubernetes", "containerd", ... or None
    jetson: str | None = None  # the board model, when this is a Jetson
    l4t: Version | None = None  # the Jetson Linux (L4T) release, when this is a Jetson and it is known
    l4t_source: str | None = None  # "/etc/nv_tegra_release", "dpkg nvidia-l4t-core", "--l4t"

    @property
    def tag(self) -> str:
        return f"{self.os}-{self.machine}"

    def to_dict(self) -> dict[str, Any]:
        return {"os": self.os, "machine": self.machine, "tag": self.tag, "glibc": _s(self.glibc),
                "wsl": self.wsl, "container": self.container, "jetson": self.jetson, "l4t": _s(self.l4t),
                "l4t_source": self.l4t_source}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlatformInfo:
        return cls(os=d.get("os", "linux"), machine=d.get("machine", "x86_64"), glibc=_v(d.get("glibc")),
                   wsl=bool(d.get("wsl")), container=d.get("container"), jetson=d.get("jetson"),
                   l4t=_v(d.get("l4t")), l4t_source=d.get("l4t_source"))


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """Everything vresolve knows about one machine, and what it could not learn (``problems``)."""

    driver: DriverInfo = msgspec.field(default_factory=DriverInfo)
    gpus: tuple[HostGpu, ...] = ()
    python: Version = msgspec.field(default_factory=lambda: Version("3.12"))  # major.minor.micro
    python_executable: str | None = None
    platform: PlatformInfo = msgspec.field(default_factory=PlatformInfo)
    cpu_count: int | None = None
    memory_mib: int | None = None  # physical memory, or the cgroup's limit when lower
    toolkits: tuple[Toolkit, ...] = ()
    installed: tuple[InstalledDist, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, CUDA_HOME, ...
    tools: tuple[tuple[str, str], ...] = ()  # build tools: ("gcc", "13.3.0"), ("ccache", "/usr/bin/ccache"), ...
    torch_runtime: TorchRuntime | None = None  # only when asked for (it imports torch)
    problems: tuple[str, ...] = ()  # "nvidia-smi: timed out after 10 s", ...

    @property
    def python_minor(self) -> Version:
        return Version(f"{self.python.major}.{self.python.minor}")

    def tool(self, name: str) -> str | None:
        return next((v for k, v in self.tools if k == name), None)

    def known_gpus(self) -> list[tuple[HostGpu, Capability]]:
        """The GPUs whose compute capability is known, each with it."""
        return [(g, g.compute_capability) for g in self.gpus if g.compute_capability is not None]

    def installed_dist(self, name: str) -> InstalledDist | None:
        return next((d for d in self.installed if d.name == name), None)


    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver.to_dict(), "gpus": [g.to_dict() for g in self.gpus],
            "python": str(self.python), "python_executable": self.python_executable,
            "platform": self.platform.to_dict(), "cpu_count": self.cpu_count, "memory_mib": self.memory_mib,
            "toolkits": [t.to_dict() for t in self.toolkits], "installed": [d.to_dict() for d in self.installed],
            "env": dict(self.env), "tools": dict(self.tools), "problems": list(self.problems),
            "torch_runtime": self.torch_runtime.to_dict() if self.torch_runtime else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Host:
        return cls(
            driver=DriverInfo.from_dict(d.get("driver") or {}),
            gpus=tuple(HostGpu.from_dict(g) for g in d.get("gpus") or ()),
            python=Version(d.get("python") or "3.12"), python_executable=d.get("python_executable"),
            platform=PlatformInfo.from_dict(d.get("platform") or {}), cpu_count=d.get("cpu_count"),
            memory_mib=d.get("memory_mib"), toolkits=tuple(Toolkit.from_dict(t) for t in d.get("toolkits") or ()),
            installed=tuple(InstalledDist.from_dict(x) for x in d.get("installed") or ()),
            env=tuple(sorted((d.get("env") or {}).items())), problems=tuple(d.get("problems") or ()),
            tools=tuple(sorted((d.get("tools") or {}).items())),
            torch_runtime=TorchRuntime.from_dict(d["torch_runtime"]) if d.get("torch_runtime") else None,
        )


class ModuleReport(msgspec.Struct, frozen=True, kw_only=True):
    """One module of the stack as an interpreter sees it: where it comes from, and whether it imports."""

    name: str
    origin: str | None = None  # the file import would load (importlib.util.find_spec)
    version: str | None = None
    error: str | None = None  # the last line of the import's traceback
    traceback: str | None = None  # the whole traceback (evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "origin": self.origin, "version": self.version, "error": self.error,
                "traceback": self.traceback}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModuleReport:
        return cls(name=d["name"], origin=d.get("origin"), version=d.get("version"), error=d.get("error"),
                   traceback=d.get("traceback"))


class EnvReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a Python environment does when the stack is imported (from a subprocess, with a timeout)."""

    python: str
    sys_path: tuple[str, ...] = ()
    modules: tuple[ModuleReport, ...] = ()
    requires: tuple[tuple[str, tuple[str, ...]], ...] = ()  # dist -> its Requires-Dist lines naming torch*
    torch: TorchRuntime | None = None
    error: str | None = None  # the probe itself failed (timeout, crash)
    vllm_extensions: tuple[str, ...] = ()  # compiled modules found in the installed vllm package's directory

    def module(self, name: str) -> ModuleReport | None:
        return next((m for m in self.modules if m.name == name), None)

    def requirement_lines(self, dist: str) -> tuple[str, ...]:
        return next((r for d, r in self.requires if d == dist), ())

    def to_dict(self) -> dict[str, Any]:
        return {"python": self.python, "sys_path": list(self.sys_path), "modules": [m.to_dict() for m in self.modules],
                "requires": {d: list(r) for d, r in self.requires},
                "torch": self.torch.to_dict() if self.torch else None, "error": self.error,
                "vllm_extensions": list(self.vllm_extensions)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EnvReport:
        """From :meth:`to_dict` (a fleet node's report, sent back over Ray)."""
        return cls(python=str(d["python"]), sys_path=tuple(d.get("sys_path") or ()),
                   modules=tuple(ModuleReport.from_dict(x) for x in d.get("modules") or ()),
                   requires=tuple((k, tuple(v)) for k, v in (d.get("requires") or {}).items()),
                   torch=TorchRuntime.from_dict(d["torch"]) if d.get("torch") else None, error=d.get("error"),
                   vllm_extensions=tuple(d.get("vllm_extensions") or ()))


def describe_gpus(gpus: Iterable[HostGpu], *, capability: bool = True) -> str:
    """GPUs in one line, several of a kind counted: ``2x NVIDIA H100 80GB HBM3 (sm_90), NVIDIA A100 (sm_80)``.

    The one way every layer names a machine's GPUs (messages, reasons, titles, build scripts).
    """
    seen: dict[str, int] = {}
    for g in gpus:
        key = g.label if capability else g.name
        seen[key] = seen.get(key, 0) + 1
    return ", ".join(k if n == 1 else f"{n}x {k}" for k, n in seen.items())
