"""The ``--json`` objects of every command (DESIGN.md fixes their field names).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import VresolveError
from ..host import Host
from ..matrix import Matrix, Provenance, VllmRelease, Wheel

if TYPE_CHECKING:
    from ..resolve import Stack


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
        "torch": {p: _pins(r.wheels_for(p)[0]).get("torch") for p in platforms},
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
                                    if t.version.major in floors and floors[t.version.major].minor_compat_driver.linux
                                    else None),
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
    if table == "jetson":
        return [{"jetpack": str(j.version), "l4t": [str(x) for x in j.l4t], "cuda": str(j.cuda),
                 "modules": list(j.modules), "sbsa_modules": list(j.sbsa_modules), "python": str(j.python),
                 "torch": [{"version": t.version, "python": str(t.python), **_prov(t.provenance)} for t in j.torch],
                 "index_wheels": [{"path": w.path, "vllm": str(w.vllm), "torch": str(w.torch),
                                   "companions": {k: str(v) for k, v in w.companions.items()},
                                   "modules": list(w.modules), "seen": w.seen, **_prov(w.provenance)}
                                  for w in m.jetson_wheels_for(j.version)],
                 **_prov(j.provenance)} for j in m.jetpacks]
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
        "jetson": {"rows": len(m.jetpacks), "index_wheels": len(m.jetson_wheels),
                   "verified": _verified(j.provenance for j in m.jetpacks)},
    }}


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


def stack_view(s: Stack) -> dict[str, Any]:
    """The ``stack`` object of the plan JSON (and of a lock's header)."""
    return {
        "vllm": str(s.vllm), "torch": s.torch, "torchvision": s.torchvision, "torchaudio": s.torchaudio,
        "companions": dict(s.companions), "variant": s.variant, "vllm_variant": s.vllm_variant,
        "vllm_source": s.vllm_source, "torch_source": s.torch_source, "cuda": str(s.cuda) if s.cuda else None,
        "python": str(s.python), "install_kind": s.install_kind,
    }


def plan_view(p: Any, detected_by: str) -> dict[str, Any]:
    """The ``vresolve.plan/1`` body of an InstallPlan (DESIGN.md fixes the field names). A plan with checks before
    its install has them (``checks``) and its script; a wheel set of a target's own index says where it comes from
    (``jetson``) instead of the builds the resolver turned down (it turned none down: that index decides)."""
    from .shell import render_install_script, shell_line

    r = p.resolution
    out = {
        "host": _host_view(r.host, detected_by),
        "stack": stack_view(r.stack),
        "requires": {"min_driver": str(r.min_driver) if r.min_driver else None,
                     "driver_policy": r.request.driver_policy,
                     "glibc": str(r.glibc_floor) if r.glibc_floor else None},
        "installer": p.installer, "environment": p.env_dir,
        "steps": [{"tool": s.tool, "argv": list(s.argv), "shell": shell_line(s.argv), "why": s.why,
                   "needs_gpu": s.needs_gpu} for s in p.steps],
        "env": dict(p.env),
        "verify": [{"name": c.name, "argv": list(c.argv), "expect": c.expect, "needs_gpu": c.needs_gpu}
                   for c in p.verify],
        "reasons": list(r.reasons), "warnings": list(r.warnings),
        "alternatives": [{"stack": stack_view(a.stack), "min_driver": str(a.min_driver) if a.min_driver else None,
                          "why_not_chosen": why} for a, why in p.alternatives],
    }
    if p.checks:
        out["checks"] = [{"name": x.name, "argv": list(x.argv), "expect": x.expect} for x in p.checks]
        out["script"] = render_install_script(p)
    if r.index is not None:
        out["jetson"] = jetson_choice_view(r.index)
    else:
        out["rejected"] = [{"candidate": x.candidate, "kind": x.kind, "reason": x.reason} for x in r.rejections[:50]]
    return out


def plan_error_view(err: Any) -> dict[str, Any]:
    return {"error": {"code": err.code, "message": err.headline, "causes": list(err.causes), "hints": list(err.hints)}}


def jetson_choice_view(c: Any) -> dict[str, Any]:
    """A Jetson's wheel set: its module and JetPack, the index path the wheels come from, and their facts."""
    w = c.wheels
    return {"module": c.jetson.module.name, "jetpack": str(c.jetpack.version), "how": c.jetson.how,
            "l4t_cuda": str(c.jetpack.cuda), "index": c.index, "path": w.path, "vllm_wheel": str(w.vllm),
            "sha256_seen": list(w.sha256), "seen": w.seen, "source": list(w.provenance.source),
            "verified": w.provenance.verified}


def source_plan_view(p: Any, detected_by: str) -> dict[str, Any]:
    """The ``vresolve.plan/1`` body of a SourcePlan: the same fields, plus the script."""
    from .shell import render_script, shell_line

    return {
        "host": _host_view(p.host, detected_by), "stack": stack_view(p.stack),
        "requires": {"min_driver": str(p.min_driver) if p.min_driver else None,
                     "driver_policy": p.request.driver_policy},
        "installer": p.installer, "environment": p.env_dir,
        "steps": [{"tool": s.tool, "argv": list(s.argv), "shell": shell_line(s.argv), "why": s.why,
                   **({"cwd": s.cwd} if s.cwd else {})} for s in p.steps],
        "env": dict(p.env),
        "checks": [{"name": c.name, "argv": list(c.argv), "expect": c.expect} for c in p.checks],
        "verify": [{"name": c.name, "argv": list(c.argv), "expect": c.expect, "needs_gpu": c.needs_gpu}
                   for c in p.verify],
        "reasons": list(p.reasons), "warnings": list(p.warnings), "alternatives": [],
        "build": {"toolkit": str(p.toolkit.version) if p.toolkit else None, "cuda_home": p.cuda_home,
                  "toolkit_found": p.toolkit_found.path if p.toolkit_found else None,
                  "host_gcc": list(p.toolkit.host_gcc) if p.toolkit and p.toolkit.host_gcc else None,
                  "max_jobs": p.max_jobs, "nvcc_threads": p.nvcc_threads if p.max_jobs is not None else None,
                  "src_dir": p.src_dir},
        "script": render_script(p),
    }
