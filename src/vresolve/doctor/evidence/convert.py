"""Evidence as the live probe's objects where the two overlap: a :class:`~vresolve.host.Host` (driver, GPUs,
Python, platform with glibc, installed distributions, environment variables, nvcc) and a partial
:class:`~vresolve.host.EnvReport` with its :class:`~vresolve.host.TorchRuntime`, so that the same checks can judge
pasted and live evidence.

Nothing is guessed: a fact the paste does not show stays None or empty. Where the probe's types have no room for
"not shown" (``Host.python``, ``PlatformInfo.os``/``machine``, ``TorchRuntime.available``, and ``TorchRuntime.cuda``,
whose None means a CPU build), the type's default is used and the field is named in :attr:`HostFacts.unknown`:
a check must not read those as facts. Each fact's source names the pasted line it came from.
"""

from __future__ import annotations

from typing import Any

import msgspec
from packaging.version import InvalidVersion, Version

from ...host import (
    DriverInfo,
    EnvReport,
    Host,
    HostGpu,
    InstalledDist,
    ModuleReport,
    PlatformInfo,
    Toolkit,
    TorchRuntime,
)
from .model import Dist, Evidence, Seen
from .summary import listed_gpus
from .tokens import NOT_SHOWN

__all__ = ["HostFacts", "to_host_facts", "source_of"]

#: signals that are the probe's own problems when it runs (Host.problems)
_PROBLEMS = ("nvml-mismatch", "no-driver")
_COMPANIONS = ("torchvision", "torchaudio", "xformers", "flashinfer-python", "flash-attn", "triton")
_MODULES = {"flashinfer-python": "flashinfer", "flash-attn": "flash_attn"}


class HostFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The pasted facts as the live probe's objects; ``unknown``: fields holding a default, not a pasted fact
    (``driver`` and ``gpus`` when the paste shows none: "not shown", not "no driver")."""

    host: Host
    env: EnvReport | None
    unknown: frozenset[str]


def source_of(seen: Seen[Any]) -> str:
    """Where a fact came from, for ``source`` fields and evidence: ``pasted line 12 (collect_env)``."""
    return f"pasted line {seen.line} ({seen.how})"


def _version(seen: Seen[Any] | None) -> Version | None:
    try:
        return Version(str(seen.value)) if seen is not None and seen.value is not None else None
    except InvalidVersion:
        return None


def _driver(e: Evidence) -> DriverInfo:
    driver, cuda = e.best("driver"), e.best("cuda_driver")
    return DriverInfo(version=driver.value if driver else None, cuda=_version(cuda),
                      source=source_of(driver) if driver else None, cuda_source=source_of(cuda) if cuda else None,
                      nvml_library_mismatch="nvml-mismatch" in e.signal_codes())


def _gpus(e: Evidence) -> tuple[HostGpu, ...]:
    out = []
    for i, seen in enumerate(listed_gpus(e)):
        gpu = seen.value
        out.append(HostGpu(index=gpu.index if gpu.index is not None else i, name=gpu.name or "",
                           compute_capability=gpu.compute_capability, source=source_of(seen),
                           cc_source=source_of(seen) if gpu.compute_capability is not None else None))
    return tuple(out)


def _platform(e: Evidence, unknown: set[str]) -> PlatformInfo:
    system, machine = e.best("system"), e.best("machine")
    if system is None:
        unknown.add("platform.os")
    if machine is None:
        unknown.add("platform.machine")
    container, jetson = e.value("container"), e.value("jetson")
    l4t = e.best("l4t")
    return PlatformInfo(os=system.value if system else "linux", machine=machine.value if machine else "x86_64",
                        glibc=_version(e.best("glibc")), wsl=bool(e.value("wsl")), container=container,
                        jetson=jetson, l4t=_version(l4t), l4t_source=f"pasted line {l4t.line}" if l4t else None)


def _installed(e: Evidence, torch_cuda: Seen[str | None] | None) -> tuple[InstalledDist, ...]:
    best: dict[str, Seen[Dist]] = {}
    for seen in sorted(e.dists, key=lambda s: (s.rank, s.line)):
        if seen.value.version:
            best.setdefault(seen.value.name, seen)
    out = []
    for name, seen in best.items():
        cuda = torch_cuda.value if name == "torch" and torch_cuda is not None else None
        out.append(InstalledDist(name=name, version=seen.value.version or "", location=seen.value.location,
                                 cuda=cuda))
    return tuple(out)


def _toolkits(e: Evidence) -> tuple[Toolkit, ...]:
    nvcc = e.best("nvcc")
    if nvcc is None:
        return ()
    version = nvcc.value.version or nvcc.value.release
    return (Toolkit(version=Version(version), path="", source=source_of(nvcc), nvcc=None),)


def _torch(e: Evidence, torch_cuda: Seen[str | None] | None, unknown: set[str]) -> TorchRuntime | None:
    torch = e.dist("torch")
    if torch is None:
        return None
    available = e.best("cuda_available")
    if torch_cuda is None:
        unknown.add("torch.cuda")
    if available is None:
        unknown.add("torch.available")
    arch = e.value("torch_arch_list")
    return TorchRuntime(version=torch.value.version, cuda=torch_cuda.value if torch_cuda else None,
                        available=bool(available.value) if available else False, arch_list=tuple(arch or ()))


def _modules(e: Evidence) -> tuple[ModuleReport, ...]:
    out: dict[str, ModuleReport] = {}
    for name in ("torch", "vllm", *_COMPANIONS):
        seen = e.dist(name)
        if seen is not None:
            module = _MODULES.get(name, name)
            out[module] = ModuleReport(name=module, version=seen.value.version)
    for failed in e.import_failures:
        failure = failed.value
        known = out.get(failure.module)
        out[failure.module] = ModuleReport(name=failure.module, version=known.version if known else None,
                                           error=failure.error, traceback=failed.text)
    return tuple(out.values())


def to_host_facts(evidence: Evidence) -> HostFacts:
    """The live probe's objects for what the paste shows (see the module's docstring)."""
    unknown: set[str] = set()
    python = _version(evidence.best("python"))
    if python is None:
        unknown.add("python")
    torch_cuda = evidence.torch_cuda_seen()
    torch = _torch(evidence, torch_cuda, unknown)
    host = Host(driver=_driver(evidence), gpus=_gpus(evidence), python=python or Version("3.12"),
                platform=_platform(evidence, unknown), toolkits=_toolkits(evidence),
                installed=_installed(evidence, torch_cuda), env=_latest(evidence.env), tools=_latest(evidence.tools),
                torch_runtime=torch, problems=tuple(s.text for s in evidence.signals if s.value.code in _PROBLEMS))
    unknown |= {name for name, shown in (("driver", host.driver.version), ("gpus", host.gpus)) if not shown}
    archs = evidence.value("vllm_cuda_archs")
    if archs and archs.lower() not in NOT_SHOWN:  # vLLM built for an arch list of its own ("Not Set": the release's)
        unknown.add("vllm.kernels")
    modules = _modules(evidence)
    env = EnvReport(python=str(python) if python else "", modules=modules, torch=torch) if torch or modules else None
    return HostFacts(host=host, env=env, unknown=frozenset(unknown))


def _latest(seen: tuple[Seen[tuple[str, str]], ...]) -> tuple[tuple[str, str], ...]:
    """Name-value pairs, the best sighting of each name (then the last line) winning."""
    pairs = dict(s.value for s in sorted(seen, key=lambda s: (-s.rank, s.line)))
    return tuple(sorted(pairs.items()))
