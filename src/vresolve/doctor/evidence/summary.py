"""The best value of each fact, as plain JSON values, and the machine's GPUs as the paste lists them.

A paste may name the same GPU several ways (collect_env's list, a torch warning cut at the first letter,
nvidia-smi's ``NVIDIA GeForce ...``): :func:`listed_gpus` takes the names of the best-ranked sightings, folds
cut names into whole ones, and gives each the compute capability any sighting shows for it.
"""

from __future__ import annotations

from typing import Any

from ...values import Capability
from .model import Evidence, Gpu, Seen

__all__ = ["listed_gpus", "summary"]


def _canonical(names: list[str]) -> dict[str, str]:
    """Each name -> the whole name it is a cut of (``VIDIA GeForce RTX 5090``, ``NVIDIA GeForce ...``), or itself."""
    out = {}
    for a in names:
        stem = a[:-3].rstrip() if a.endswith("...") else None
        whole = next((b for b in names if b != a and (b.endswith(a) and len(a) >= 6
                                                        or stem is not None and b.startswith(stem))), a)
        out[a] = whole
    return out


def _capabilities(seen: tuple[Seen[Gpu], ...], canonical: dict[str, str]) -> dict[str, Capability]:
    caps: dict[str, Capability] = {}
    for s in sorted(seen, key=lambda s: (s.rank, s.line)):
        name, cc = s.value.name, s.value.compute_capability
        if name is None or cc is None:
            continue
        whole = canonical.get(name) or next((w for w in canonical.values() if w.endswith(name)), name)
        caps.setdefault(whole, cc)
    return caps


def listed_gpus(evidence: Evidence) -> list[Seen[Gpu]]:
    """The GPUs the paste shows, each with the sighting that names it: one per device where indices are shown,
    else one per name; capabilities shown without a name (``Current capability: 86``) are GPUs of their own when
    no GPU is named."""
    named = [s for s in evidence.gpus if s.value.name]
    if not named:
        unnamed = {s.value.compute_capability: s for s in evidence.gpus if s.value.compute_capability is not None}
        return list(unnamed.values())
    best = min(s.rank for s in named)
    group = [s for s in named if s.rank == best]
    canonical = _canonical(list(dict.fromkeys(str(s.value.name) for s in group)))
    caps = _capabilities(evidence.gpus, canonical)
    out: list[Seen[Gpu]] = []
    indices: set[int] = set()
    names: set[str] = set()
    for s in group:
        name = canonical[str(s.value.name)]
        index = s.value.index
        if (index is not None and index in indices) or (index is None and name in names):
            continue
        if index is not None:
            indices.add(index)
        names.add(name)
        gpu = Gpu(name=name, index=index, compute_capability=caps.get(name), truncated=name.endswith("..."))
        out.append(Seen(value=gpu, line=s.line, text=s.text, rank=s.rank, how=s.how))
    return out


def _best(evidence: Evidence, name: str) -> Any:
    value = evidence.value(name)
    return str(value) if value is not None and not isinstance(value, (bool, str, tuple)) else value


def _dists(seen: tuple[Seen[Any], ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in sorted(seen, key=lambda s: (s.rank, s.line)):
        if s.value.version:
            out.setdefault(s.value.name, s.value.version)
    return out


def _platform(evidence: Evidence) -> str | None:
    system, machine = evidence.value("system"), evidence.value("machine")
    return f"{system}-{machine}" if system and machine else system or (f"linux-{machine}" if machine else None)


def summary(evidence: Evidence) -> dict[str, Any]:
    """The best value of each fact the paste shows (absent keys: not shown), in plain JSON values."""
    nvcc = evidence.value("nvcc")
    torch_cuda = evidence.torch_cuda_seen()
    out: dict[str, Any] = {
        "gpus": list(dict.fromkeys(str(g.value.name) for g in listed_gpus(evidence) if g.value.name)),
        "compute_capabilities": [str(c) for c in evidence.capabilities()],
        "dists": _dists(evidence.dists),
        "platform": _platform(evidence),
        "nvcc": nvcc.release if nvcc else None,
        "undefined_symbols": list(dict.fromkeys(s.value.mangled for s in evidence.symbols)),
        "symbol_owners": {s.value.mangled: s.value.owner for s in evidence.symbols},
        "import_failures": {s.value.module: s.value.error for s in evidence.import_failures},
        "uninstalled": _dists(tuple(s for s in evidence.installer if s.value.action == "uninstalled")),
        "not_installed": sorted({str(s.value.name) for s in evidence.installer if s.value.action == "not-installed"}),
        "build_env": _dists(evidence.build_env),
        "build_env_paths": list(dict.fromkeys(s.value for s in evidence.build_env_paths)),
        "built_for": {s.value.package: s.value.torch for s in evidence.built_for if s.value.torch},
        "gencode": list(dict.fromkeys(s.value for s in evidence.gencode)),
        "signals": sorted(evidence.signal_codes()),
        "env": dict(s.value for s in sorted(evidence.env, key=lambda s: (-s.rank, s.line))),
        "tools": dict(s.value for s in sorted(evidence.tools, key=lambda s: (-s.rank, s.line))),
        "kinds": sorted(evidence.kinds),
    }
    if torch_cuda is not None:
        out["torch_cuda"] = torch_cuda.value
    for name in ("driver", "cuda_driver", "nvidia_smi", "nvml_library", "cuda_available", "cuda_runtime", "cuda",
                 "cudnn", "rocm", "torch_arch_list", "python", "os", "wsl", "container", "jetson", "l4t", "accelerator",
                 "glibc", "glibc_required", "build_env_torch_cuda", "vllm_cuda_archs"):
        value = _best(evidence, name)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    return {k: v for k, v in out.items() if v not in (None, [], {}) or k == "torch_cuda"}
