"""Presentation: JSON envelopes and rich tables. Builds text and objects; ``cli`` prints them.

The JSON views are plain dicts (``*_view`` functions, pure); the human views are rich
renderables. Nothing here reads the machine or the network.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import VresolveError
from .host import Host
from .matrix import Matrix, Provenance, VllmRelease, Wheel

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "TABLES",
    "envelope",
    "error_envelope",
    "to_json",
    "matrix_summary_view",
    "matrix_table_view",
    "matrix_table_human",
    "detect_human",
    "plan_view",
    "plan_error_view",
    "plan_human",
    "stack_view",
    "error_human",
    "source_plan_view",
    "source_plan_human",
    "doctor_human",
]

TABLES = ("cuda", "gpus", "torch", "vllm", "issues")


def to_json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False)


def envelope(command: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"schema": f"vresolve.{command}/1", **body}


def error_envelope(command: str, err: VresolveError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": err.code, "message": err.message}
    problems = getattr(err, "problems", None)
    if problems:
        body["problems"] = [{"file": p.file, "row": p.row, "field": p.field, "message": p.message}
                            for p in problems]
    return envelope(command, {"error": body})


def _prov(p: Provenance) -> dict[str, Any]:
    d: dict[str, Any] = {"source": list(p.source), "verified": p.verified}
    if p.note:
        d["note"] = p.note
    return d


def _exact_or_spec(spec: Any) -> str:
    text = str(spec)
    return text[2:] if text.startswith("==") and "," not in text else text


def _pins(w: Wheel) -> dict[str, str]:
    return {k: _exact_or_spec(v) for k, v in w.requires.items()}


def _vllm_row(r: VllmRelease) -> dict[str, Any]:
    platforms = sorted({w.platform for w in r.wheels if not w.yanked})
    by_platform = {}
    for plat in platforms:
        ws = r.wheels_for(plat)
        w = ws[0]
        by_platform[plat] = {
            "pins": _pins(w), "manylinux": w.manylinux, "wheels": [x.filename for x in ws],
            "python_tags": sorted({x.python_tag for x in ws}),
        }
    return {
        "version": str(r.version),
        "requires_python": str(r.requires_python) if r.requires_python else None,
        "torch": {p: v["pins"].get("torch") for p, v in by_platform.items()},
        "platforms": by_platform,
        "cuda": str(r.cuda) if r.cuda else None,
        "kernels": None if r.kernels is None else {
            "sass": [str(c) for c in r.kernels.archs.sass], "ptx": [str(c) for c in r.kernels.archs.ptx],
            "min_compute_capability": str(r.kernels.min_compute_capability)},
        "variants": [{"variant": v.variant, "cuda": str(v.cuda) if v.cuda else None, "where": v.where,
                      "platforms": list(v.platforms), **_prov(v.provenance)} for v in r.variants],
        **_prov(r.provenance),
    }


def matrix_table_view(m: Matrix, table: str) -> list[dict[str, Any]]:
    """The rows of one table as JSON-ready dicts (curated and generated facts merged)."""
    if table == "cuda":
        floors = {c.major: c for c in m.cuda_majors}
        return [{
            "version": str(t.version), "released": t.released,
            "min_driver": {"linux": str(t.min_driver.linux) if t.min_driver.linux else None,
                           "windows": str(t.min_driver.windows) if t.min_driver.windows else None},
            "minor_compat_driver": ({"linux": str(floors[t.version.major].minor_compat_driver.linux)}
                                    if t.version.major in floors else None),
            "updates": [{"version": str(u.version), "linux": str(u.min_driver.linux)} for u in t.updates],
            "nvcc_archs": {"lowest": str(t.nvcc_lowest), "highest": str(t.nvcc_highest),
                           "list": [str(c) for c in t.nvcc_list] if t.nvcc_list else None},
            **_prov(t.provenance)} for t in m.toolkits]
    if table == "gpus":
        return [{"name": g.name, "names": list(g.names), "aliases": list(g.aliases),
                 "compute_capability": str(g.compute_capability), "family": g.family, "segment": g.segment,
                 "memory_gib": g.memory_gib, **_prov(g.provenance)} for g in m.gpus]
    if table == "torch":
        return [{
            "version": str(t.version), "python": [str(p) for p in t.python],
            "companions": {k: str(v) for k, v in t.companions.items()},
            "pypi": {w.platform: {"cuda": str(w.cuda) if w.cuda else None, "requires_python":
                                  str(w.requires_python) if w.requires_python else None,
                                  "pins": _pins(w), "manylinux": w.manylinux} for w in t.wheels},
            "variants": [{"variant": v.variant, "cuda": str(v.cuda) if v.cuda else None,
                          "pypi_default": sorted(v.pypi_default),
                          "archs": {p: {"sass": [str(c) for c in a.sass], "ptx": [str(c) for c in a.ptx]}
                                    for p, a in v.archs.items()}, **_prov(v.provenance)} for v in t.variants],
            **_prov(t.provenance)} for t in m.torch]
    if table == "vllm":
        return [_vllm_row(r) for r in m.vllm]
    if table == "issues":
        return [{"id": k.id, "cause": k.cause, "severity": k.severity, "title": k.title,
                 "signatures": list(k.signatures), "explanation": k.explanation,
                 "fix": k.fix, **_prov(k.provenance)} for k in m.known_issues]
    raise ValueError(table)


def _verified(items: Iterable[Provenance]) -> dict[str, int]:
    return dict(sorted(Counter(p.verified for p in items).items()))


def matrix_summary_view(m: Matrix) -> dict[str, Any]:
    """Row counts and verification levels of every table."""
    torch_variants = [v for t in m.torch for v in t.variants]
    vllm_wheels = [w for r in m.vllm for w in r.wheels]
    return {"path": m.path, "revision": m.revision, "tables": {
        "cuda": {"rows": len(m.toolkits), "verified": _verified(t.provenance for t in m.toolkits)},
        "gpus": {"rows": len(m.gpus), "verified": _verified(g.provenance for g in m.gpus)},
        "torch": {"rows": len(m.torch), "variants": len(torch_variants),
                  "verified": _verified(v.provenance for v in torch_variants)},
        "vllm": {"rows": len(m.vllm), "wheels": len(vllm_wheels),
                 "verified": _verified(r.provenance for r in m.vllm)},
        "issues": {"rows": len(m.known_issues), "verified": _verified(k.provenance for k in m.known_issues)},
    }}


def _source_cell(p: Provenance) -> str:
    return p.verified + ("" if len(p.source) == 1 else f" ({len(p.source)} sources)")


def matrix_table_human(m: Matrix, table: str) -> Table:  # noqa: C901 (issue 12: to split)
    """A rich table of one matrix table, one line per row."""
    from rich.table import Table

    t = Table(title=f"{table} ({m.path}, revision {m.revision})", show_lines=False)
    if table == "cuda":
        for col in ("CUDA", "released", "min driver (Linux)", "minor-compat floor", "nvcc archs", "verified"):
            t.add_column(col)
        floors = {c.major: c.minor_compat_driver.linux for c in m.cuda_majors}
        for tk in m.toolkits:
            t.add_row(str(tk.version), tk.released, str(tk.min_driver.linux or "unknown"),
                      str(floors.get(tk.version.major, "?")), f"{tk.nvcc_lowest}..{tk.nvcc_highest}",
                      _source_cell(tk.provenance))
    elif table == "gpus":
        for col in ("GPU", "aliases", "CC", "family", "segment", "verified"):
            t.add_column(col)
        for g in m.gpus:
            t.add_row(g.name, ", ".join(g.aliases), str(g.compute_capability), g.family, g.segment,
                      _source_cell(g.provenance))
    elif table == "torch":
        for col in ("torch", "python", "PyPI CUDA", "variants", "vision/audio/triton"):
            t.add_column(col)
        for r in m.torch:
            pypi = ", ".join(f"{w.platform.split('-')[1]}:{w.cuda or 'cpu'}" for w in r.wheels)
            comps = "/".join(str(r.companions.get(k, "-")) for k in ("torchvision", "torchaudio", "triton"))
            t.add_row(str(r.version), f"{r.python[0]}..{r.python[-1]}" if r.python else "",
                      pypi, " ".join(v.variant for v in r.variants), comps)
    elif table == "vllm":
        for col in ("vLLM", "python", "torch pin (x86_64 / aarch64)", "CUDA", "kernels", "variants", "verified"):
            t.add_column(col)
        for r in m.vllm:
            pins = [str(r.pins(p).get("torch", "-")).removeprefix("==") if r.wheels_for(p) else "-"
                    for p in ("linux-x86_64", "linux-aarch64")]
            t.add_row(str(r.version), str(r.requires_python or ""), " / ".join(pins), str(r.cuda or "-"),
                      str(r.kernels.archs) if r.kernels else "-", " ".join(v.variant for v in r.variants),
                      _source_cell(r.provenance))
    elif table == "issues":
        for col in ("id", "cause", "severity", "title"):
            t.add_column(col)
        for k in m.known_issues:
            t.add_row(k.id, k.cause, k.severity, k.title)
    return t


def detect_human(h: Host) -> Table:  # noqa: C901 (issue 12: to split)
    """The detected machine, one fact per line, with the source that answered it."""
    from rich.table import Table

    t = Table(title="this machine", show_header=True)
    t.add_column("fact")
    t.add_column("value")
    t.add_column("from")
    d = h.driver
    if d.version is not None:
        t.add_row("NVIDIA driver", f"{d.version}" + (f" ({d.kernel_module} kernel module)" if d.kernel_module else ""),
                  d.source or "")
        t.add_row("CUDA (driver)", str(d.cuda or "unknown"), d.cuda_source or "")
    else:
        t.add_row("NVIDIA driver", "none found", "")
    if d.nvml_library_mismatch:
        t.add_row("NVML", "driver/library version mismatch", "")
    if not h.gpus:
        t.add_row("GPUs", "none", "")
    for g in h.gpus:
        mem = f", {g.memory_mib / 1024:.0f} GiB" if g.memory_mib else ""
        cc = f"sm_{g.compute_capability.major}{g.compute_capability.minor}" if g.compute_capability else "sm_?"
        src = g.source or ""
        if g.cc_source and g.cc_source != g.source:
            src += f" (capability: {g.cc_source})"
        t.add_row(f"GPU {g.index}", f"{g.name} ({cc}{mem})", src)
    p = h.platform
    hints = [x for x in ("WSL" if p.wsl else "", f"container: {p.container}" if p.container else "",
                         f"Jetson: {p.jetson}" if p.jetson else "") if x]
    t.add_row("platform", p.tag + (f", glibc {p.glibc}" if p.glibc else "") + (f" ({', '.join(hints)})" if hints else ""),
              "")
    t.add_row("Python", str(h.python), h.python_executable or "")
    if h.cpu_count or h.memory_mib:
        t.add_row("CPU / memory", f"{h.cpu_count} cores, {(h.memory_mib or 0) / 1024:.1f} GiB", "")
    for tk in h.toolkits:
        t.add_row("CUDA toolkit", f"{tk.version} at {tk.path}", tk.source)
    for dist in h.installed:
        extra = f" (CUDA {dist.cuda})" if dist.cuda else ""
        t.add_row(dist.name, dist.version + extra, dist.location or "")
    if h.torch_runtime is not None:
        tr = h.torch_runtime
        if tr.error:
            t.add_row("torch (runtime)", tr.error, "import torch")
        else:
            t.add_row("torch (runtime)", f"{tr.version}, CUDA {tr.cuda}, available={tr.available}, "
                      f"archs {' '.join(tr.arch_list) or '-'}", "import torch")
    for k, v in h.tools:
        t.add_row(k, v, "build tool")
    for k, v in h.env:
        t.add_row(k, v, "environment")
    for problem in h.problems:
        t.add_row("[dim]not learned[/dim]", problem, "")
    return t


# --------------------------------------------------------------------------- plan


def _host_view(h: Host, detected_by: str) -> dict[str, Any]:
    groups: dict[tuple[str, str | None], int] = {}
    for g in h.gpus:
        key = (g.name, str(g.compute_capability) if g.compute_capability else None)
        groups[key] = groups.get(key, 0) + 1
    return {"driver": str(h.driver.version) if h.driver.version else None,
            "cuda_driver": str(h.driver.cuda) if h.driver.cuda else None,
            "gpus": [{"name": n, "compute_capability": cc, "count": c} for (n, cc), c in groups.items()],
            "python": str(h.python_minor), "platform": h.platform.tag,
            "glibc": str(h.platform.glibc) if h.platform.glibc else None, "detected_by": detected_by}


def stack_view(r: Any) -> dict[str, Any]:
    """The ``stack`` object of the plan JSON for a Resolution."""
    return {
        "vllm": str(r.vllm.version), "torch": str(r.torch.version),
        "torchvision": r.companions.get("torchvision"), "torchaudio": r.companions.get("torchaudio"),
        "companions": {k: v for k, v in r.companions.items() if k not in ("torchvision", "torchaudio")},
        "variant": r.torch.variant.variant, "vllm_variant": r.vllm.variant,
        "vllm_source": r.vllm.where, "torch_source": "pypi" if r.torch.pypi else "pytorch-index",
        "cuda": str(r.cuda) if r.cuda else None, "python": str(r.host.python_minor), "install_kind": "wheel",
    }


def plan_view(p: Any, detected_by: str) -> dict[str, Any]:
    """The ``vresolve.plan/1`` body of an InstallPlan (DESIGN.md fixes the field names)."""
    from .plan import shell_line

    r = p.resolution
    return {
        "host": _host_view(r.host, detected_by),
        "stack": stack_view(r),
        "requires": {"min_driver": str(r.min_driver) if r.min_driver else None,
                     "driver_policy": r.request.driver_policy,
                     "glibc": str(r.glibc_floor) if r.glibc_floor else None},
        "installer": p.installer, "environment": p.env_dir,
        "steps": [{"tool": s.tool, "argv": list(s.argv), "shell": shell_line(s.argv), "why": s.why} for s in p.steps],
        "env": dict(p.env),
        "verify": [{"name": c.name, "argv": list(c.argv), "expect": c.expect} for c in p.verify],
        "reasons": list(r.reasons), "warnings": list(r.warnings),
        "alternatives": [{"stack": stack_view(a), "min_driver": str(a.min_driver) if a.min_driver else None,
                          "why_not_chosen": why} for a, why in p.alternatives],
        "rejected": [{"candidate": x.candidate, "kind": x.kind, "reason": x.reason} for x in r.rejections[:50]],
    }


def plan_error_view(err: Any) -> dict[str, Any]:
    return {"error": {"code": err.code, "message": err.headline, "causes": list(err.causes), "hints": list(err.hints)}}


def plan_human(p: Any, detected_by: str) -> list[Any]:  # noqa: C901 (issue 12: to split)
    """Renderables: the stack table, then why, then copy-pasteable commands."""
    from rich.table import Table
    from rich.text import Text

    from .plan import shell_line

    r = p.resolution
    out: list[Any] = []
    t = Table(title=f"vLLM stack for {_machine_line(r.host)} ({detected_by})")
    t.add_column("package")
    t.add_column("version")
    t.add_column("build / from")
    t.add_row("vllm", str(r.vllm.version), f"{r.vllm.variant}, {r.vllm.where}")
    t.add_row("torch", str(r.torch.version), f"{r.torch.variant.variant}, " + ("PyPI" if r.torch.pypi else "PyTorch index"))
    for k, v in r.companions.items():
        t.add_row(k, v, "pinned by the vLLM wheel")
    if r.cuda is not None:
        floor = f"NVIDIA driver >= {r.min_driver}" if r.min_driver else "a driver the matrix cannot name"
        t.add_row("[bold]needs[/bold]", floor, f"CUDA {r.cuda}, {r.request.driver_policy} policy")
    else:
        t.add_row("[bold]needs[/bold]", "no GPU, no driver", "the CPU backend")
    if r.glibc_floor is not None:
        t.add_row("", f"glibc >= {r.glibc_floor}", f"manylinux_{r.glibc_floor.major}_{r.glibc_floor.minor} wheels")
    out.append(t)
    out.append(Text("Why:", style="bold"))
    out += [Text(f"  - {x}") for x in r.reasons]
    if r.warnings:
        out.append(Text("Warnings:", style="bold yellow"))
        out += [Text(f"  ! {x}") for x in r.warnings]
    out.append(Text(f"Install ({p.installer}, into {p.env_dir}):", style="bold"))
    for s in p.steps:
        out.append(Text(f"  # {s.why}", style="dim"))
        out.append(Text(f"  {shell_line(s.argv)}"))
    if p.env:
        out.append(Text("Environment:", style="bold"))
        for (k, v), (_, why) in zip(p.env, p.env_reasons, strict=True):
            out.append(Text(f"  # {why}", style="dim"))
            out.append(Text(f"  export {k}={v}"))
    out.append(Text("Verify:", style="bold"))
    for c in p.verify:
        out.append(Text(f"  # {c.name}: expect {c.expect!r}", style="dim"))
        out.append(Text(f"  {shell_line(c.argv)}"))
    if p.alternatives:
        out.append(Text("Alternatives:", style="bold"))
        for a, why in p.alternatives:
            out.append(Text(f"  - vLLM {a.vllm.version} + torch {a.torch.version}+{a.torch.variant.variant}: {why}"))
    return out


def _machine_line(h: Host) -> str:
    groups: dict[str, int] = {}
    for g in h.gpus:
        groups[g.name] = groups.get(g.name, 0) + 1
    gpus = ", ".join(n if c == 1 else f"{c}x {n}" for n, c in groups.items()) or "no GPU"
    drv = f"driver {h.driver.version}" if h.driver.version else "driver not given"
    return f"{gpus}, {drv}, Python {h.python_minor}, {h.platform.tag}"


def error_human(err: Any) -> str:
    """pip-style diagnostic text for NoCompatibleStack."""
    return f"error: {err.code}\n" + err.format(head="  × ", causes_head="  ╰─> ", hints_head="  hint: ",
                                               indent="        ")


# --------------------------------------------------------------------------- source builds


def source_stack_view(p: Any) -> dict[str, Any]:
    return {"vllm": str(p.vllm.version), "torch": p.torch_version.split("+")[0], "torchvision": None,
            "torchaudio": None, "companions": {},
            "variant": (f"cu{p.torch_cuda.major}{p.torch_cuda.minor}" if p.torch_cuda else "cpu"),
            "vllm_variant": "source", "vllm_source": f"git tag v{p.vllm.version}",
            "torch_source": "kept" if p.keep_torch else ("pypi" if p.torch_build and p.torch_build.pypi else "pytorch-index"),
            "cuda": str(p.torch_cuda) if p.torch_cuda else None, "python": str(p.host.python_minor),
            "install_kind": "source"}


def source_plan_view(p: Any, detected_by: str) -> dict[str, Any]:
    """The ``vresolve.plan/1`` body of a SourcePlan: the same fields, plus the script."""
    from .plan import shell_line
    from .srcbuild import render_script

    return {
        "host": _host_view(p.host, detected_by), "stack": source_stack_view(p),
        "requires": {"min_driver": str(p.min_driver) if p.min_driver else None,
                     "driver_policy": p.request.driver_policy},
        "installer": p.installer, "environment": p.env_dir,
        "steps": [{"tool": s.tool, "argv": list(s.argv), "shell": shell_line(s.argv), "why": s.why,
                   **({"cwd": s.cwd} if s.cwd else {})} for s in p.steps],
        "env": dict(p.env),
        "checks": [{"name": c.name, "argv": list(c.argv), "expect": c.expect} for c in p.checks],
        "verify": [{"name": c.name, "argv": list(c.argv), "expect": c.expect} for c in p.verify],
        "reasons": list(p.reasons), "warnings": list(p.warnings), "alternatives": [],
        "build": {"toolkit": str(p.toolkit.version) if p.toolkit else None, "cuda_home": p.cuda_home,
                  "toolkit_found": p.toolkit_found.path if p.toolkit_found else None,
                  "host_gcc": list(p.toolkit.host_gcc) if p.toolkit and p.toolkit.host_gcc else None,
                  "max_jobs": p.max_jobs, "nvcc_threads": p.nvcc_threads if p.max_jobs is not None else None,
                  "src_dir": p.src_dir},
        "script": render_script(p),
    }


def source_plan_human(p: Any, detected_by: str) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    from .srcbuild import render_script

    t = Table(title=f"vLLM source build for {_machine_line(p.host)} ({detected_by})")
    for col in ("what", "choice"):
        t.add_column(col)
    t.add_row("vllm", f"{p.vllm.version} (git tag v{p.vllm.version})")
    t.add_row("torch", p.torch_version + (" (kept)" if p.keep_torch else ""))
    if p.toolkit is not None:
        t.add_row("CUDA toolkit", f"{p.toolkit.version} at {p.cuda_home}")
        t.add_row("TORCH_CUDA_ARCH_LIST", ";".join(str(c) for c in p.archs))
    if p.max_jobs == 0:
        t.add_row("kernels", "precompiled (VLLM_USE_PRECOMPILED=1): nothing is compiled")
    else:
        t.add_row("MAX_JOBS / NVCC_THREADS", f"{p.max_jobs} / {p.nvcc_threads}" if p.max_jobs is not None
                  else "computed on the build machine from its memory and cores")
    if p.min_driver:
        t.add_row("needs", f"NVIDIA driver >= {p.min_driver}")
    out: list[Any] = [t, Text("Why:", style="bold")]
    out += [Text(f"  - {x}") for x in p.reasons]
    if p.warnings:
        out.append(Text("Warnings:", style="bold yellow"))
        out += [Text(f"  ! {x}") for x in p.warnings]
    out.append(Text("Recipe (bash):", style="bold"))
    out.append(Text(render_script(p)))
    return out


# --------------------------------------------------------------------------- doctor


def doctor_human(findings: Any, host: Host, env: Any) -> list[Any]:
    """One screen: what was checked, then each finding with its evidence and fix."""
    from rich.text import Text

    style = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
    out: list[Any] = []
    from .doctor import observations

    out.append(Text("checked:", style="bold"))
    out += [Text(f"  - {line}") for line in observations(host, env)]
    if not findings:
        out.append(Text("no problems found", style="bold green"))
    for f in findings:
        out.append(Text(f"{f.severity}: {f.title} [{f.cause}]" + (" (from the log)" if f.source == "log" else ""),
                        style=style[f.severity]))
        out.append(Text(f"  {f.explanation}"))
        for ev in f.evidence:
            out.append(Text(f"  > {ev}", style="dim"))
        out.append(Text("  fix: " + f.fix.replace("\n", "\n       ")))
    return out
