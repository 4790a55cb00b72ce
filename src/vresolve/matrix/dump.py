"""The matrix as YAML documents again (``matrix_to_dicts``), and the house style of its YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from ..values import ArchList, Capability
from .model import CudaToolkit, DriverFloor, DriverSupport, GlibcFact, Kernels, Matrix, Provenance, SourceBuild, Wheel


def _glibc_fact(g: GlibcFact) -> dict[str, Any]:
    d: dict[str, Any] = {} if g.requires is None else {"package": g.package, "requires": str(g.requires)}
    d["wheels"] = list(g.wheels)
    if g.needs is not None:
        d["needs"] = str(g.needs)
    return {**d, **_prov(g.provenance)}


def _prov(p: Provenance) -> dict[str, Any]:
    d: dict[str, Any] = {"source": p.source[0] if len(p.source) == 1 else list(p.source), "verified": p.verified}
    if p.note is not None:
        d["note"] = p.note
    return d


def _carried(version: Version | None, fields: tuple[str, ...]) -> dict[str, Any]:
    return {"carried_from": {"version": str(version), "fields": list(fields)}} if version is not None else {}


def _floor(f: DriverFloor) -> dict[str, str | None]:
    d: dict[str, str | None] = {"linux": str(f.linux) if f.linux is not None else None}
    if f.windows is not None:
        d["windows"] = str(f.windows)
    return d


def _caps(caps: tuple[Capability, ...]) -> list[str]:
    return [str(c) for c in caps]


def _driver_support(d: DriverSupport | None) -> dict[str, Any]:
    """A row's ``driver:`` (gpus.yaml), or nothing."""
    if d is None:
        return {}
    return {"driver": {**({"first": str(d.first)} if d.first is not None else {}),
                       **({"last_branch": str(d.last_branch)} if d.last_branch is not None else {}),
                       **_prov(d.provenance)}}


def _archlist(a: ArchList) -> dict[str, Any]:
    return {"sass": _caps(a.sass), "ptx": _caps(a.ptx)}


def _kernels(k: Kernels) -> dict[str, Any]:
    return {**_archlist(k.archs), "min_compute_capability": str(k.min_compute_capability)}


def _source_build(b: SourceBuild) -> dict[str, Any]:
    d: dict[str, Any] = {"cuda_archs": [{"cuda": str(spec), "archs": _caps(a)} for spec, a in b.cuda_archs],
                         "use_existing_torch": b.use_existing_torch or False}
    if b.requirements is not None:
        d["requirements"] = b.requirements
    d.update(precompiled=b.precompiled, cpu=b.cpu)
    if b.cmake is not None:
        d["cmake"] = str(b.cmake)
    return {**d, **_prov(b.provenance)}


def _toolkit_host(t: CudaToolkit) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if t.host_gcc is not None:
        d["host_gcc"] = {"min": str(t.host_gcc[0]), "max": str(t.host_gcc[1])}
    if t.install_conda is not None or t.install_pip:
        inst: dict[str, Any] = {}
        if t.install_conda is not None:
            inst["conda"] = {"channel": t.install_conda[0], "packages": list(t.install_conda[1])}
        if t.install_pip:
            inst["pip"] = list(t.install_pip)
        d["install"] = inst
    if t.host_provenance is not None:
        p = t.host_provenance
        d["host_source"] = p.source[0] if len(p.source) == 1 else list(p.source)
        d["host_verified"] = p.verified
    return d


def _wheel(w: Wheel) -> dict[str, Any]:
    d: dict[str, Any] = {"filename": w.filename}
    if w.requires_python is not None:
        d["requires_python"] = str(w.requires_python)
    if w.requires:
        d["requires"] = {k: str(v) for k, v in w.requires.items()}
    if w.pythons:
        d["pythons"] = [str(v) for v in w.pythons]
    if w.cuda is not None:
        d["cuda"] = str(w.cuda)
    if w.extensions:
        d["extensions"] = list(w.extensions)
    if w.features:
        d["features"] = list(w.features)
    if w.sha256 is not None:
        d["sha256"] = w.sha256
    if w.yanked:
        d["yanked"] = True
    return {**d, **_prov(w.provenance)}


def _wheels_doc(package: str, releases: Mapping[Version, tuple[Wheel, ...]]) -> dict[str, Any]:
    return {"package": package, "releases": [
        {"version": str(v), "wheels": [_wheel(w) for w in ws]} for v, ws in releases.items()]}


def matrix_to_dicts(m: Matrix) -> dict[str, dict[str, Any]]:
    """The matrix as YAML documents, file name -> document (the inverse of :func:`load_matrix`)."""
    cuda = {
        "majors": [{"major": c.major, "minor_compat_driver": _floor(c.minor_compat_driver), **_prov(c.provenance)}
                   for c in m.cuda_majors],
        "toolkits": [{
            "version": str(t.version), "released": t.released,
            **({"ptx_isa": str(t.ptx_isa)} if t.ptx_isa is not None else {}), "min_driver": _floor(t.min_driver),
            **({"updates": [{"version": str(u.version), **_floor(u.min_driver)} for u in t.updates]}
               if t.updates else {}),
            "nvcc_archs": {"lowest": str(t.nvcc_lowest), "highest": str(t.nvcc_highest),
                           **({"list": _caps(t.nvcc_list)} if t.nvcc_list else {})},
            **_toolkit_host(t), **_prov(t.provenance)} for t in m.toolkits],
    }
    gpus = {
        "architectures": [{"family": a.family, "compute_capabilities": _caps(a.compute_capabilities),
                           **_prov(a.provenance), **_driver_support(a.driver)} for a in m.architectures],
        "gpus": [{
            "name": g.name, **({"names": list(g.names)} if g.names else {}),
            **({"aliases": list(g.aliases)} if g.aliases else {}),
            "compute_capability": str(g.compute_capability), "family": g.family, "segment": g.segment,
            **({"memory_gib": g.memory_gib} if g.memory_gib is not None else {}),
            **_prov(g.provenance), **_driver_support(g.driver)} for g in m.gpus],
    }
    torch = {
        "index": {"url": m.torch_index, **_prov(m.torch_index_provenance)},
        "releases": [{
            "version": str(t.version), "python": [str(v) for v in t.python],
            "companions": {k: str(v) for k, v in t.companions.items()},
            "variants": [{
                "variant": v.variant, **({"cuda": str(v.cuda)} if v.cuda is not None else {}),
                **({"pypi_default": {p: True for p in v.archs if p in v.pypi_default}} if v.pypi_default else {}),
                "archs": {p: _archlist(a) for p, a in v.archs.items()},
                **_prov(v.provenance)} for v in t.variants],
            **_carried(t.carried_from, t.carried), **_prov(t.provenance)} for t in m.torch],
    }
    vllm = {
        "index": {"url": m.vllm_index, **_prov(m.vllm_index_provenance)},
        "releases": [{
            "version": str(r.version), **({"cuda": str(r.cuda)} if r.cuda is not None else {}),
            **({"kernels": _kernels(r.kernels)} if r.kernels is not None else {}),
            **({"kernel_modules": [{"module": k.module, "platforms": list(k.platforms), **_archlist(k.archs),
                                    **_prov(k.provenance)} for k in r.kernel_modules]} if r.kernel_modules else {}),
            **({"build": _source_build(r.build)} if r.build is not None else {}),
            **({"closure": [_glibc_fact(c) for c in r.closure]} if r.closure else {}),
            **({"variants": [{
                "variant": v.variant, **({"cuda": str(v.cuda)} if v.cuda is not None else {}),
                "where": v.where, "platforms": list(v.platforms),
                **({"kernels": _kernels(v.kernels)} if v.kernels is not None else {}),
                **({"torch_pins": {k: str(x) for k, x in v.torch_pins.items()}} if v.torch_pins else {}),
                **({"asset": {"url": v.asset.url, **_prov(v.asset.provenance)}} if v.asset else {}),
                **({"glibc": _glibc_fact(v.glibc)} if v.glibc else {}),
                **_prov(v.provenance)} for v in r.variants]} if r.variants else {}),
            **_carried(r.carried_from, r.carried), **_prov(r.provenance)} for r in m.vllm],
    }
    issues = {"issues": [{
        "id": k.id, "cause": k.cause, "severity": k.severity, "title": k.title,
        **({"signals": list(k.signals)} if k.signals else {}),
        **({"signatures": list(k.signatures)} if k.signatures else {}),
        **({"when": k.when} if k.when else {}),
        **({"applies_to": {"gpus": list(k.gpus), "torch_variants": list(k.torch_variants)}}
           if k.gpus or k.torch_variants else {}), "explanation": k.explanation, "fix": k.fix,
        **_prov(k.provenance)} for k in m.known_issues]}
    return {
        "cuda.yaml": cuda, "gpus.yaml": gpus, "torch.yaml": torch, "vllm.yaml": vllm,
        "known_issues.yaml": issues,
        "wheels/torch.yaml": _wheels_doc("torch", {t.version: t.wheels for t in m.torch}),
        "wheels/torchvision.yaml": _wheels_doc("torchvision", m.extra_wheels["torchvision"]),
        "wheels/torchaudio.yaml": _wheels_doc("torchaudio", m.extra_wheels["torchaudio"]),
        "wheels/vllm.yaml": _wheels_doc("vllm", {r.version: r.wheels for r in m.vllm}),
        **{f"wheels/{k}.yaml": _wheels_doc(k, m.extra_wheels[k]) for k in ("xformers", "flashinfer-python")
           if m.extra_wheels.get(k)},
        **({"jetson.yaml": {"jetpacks": [{
            "jetpack": str(j.version), "l4t": [str(x) for x in j.l4t], "cuda": str(j.cuda), "modules": list(j.modules),
            "sbsa_modules": list(j.sbsa_modules), "python": str(j.python),
            "torch": [{"version": t.version, "python": str(t.python), **_prov(t.provenance)} for t in j.torch],
            **({"index_path": j.index_path} if j.index_path else {}),
            **_prov(j.provenance)} for j in m.jetpacks],
            **({"index_wheels": [{
                "path": w.path, "jetpacks": [str(v) for v in w.jetpacks], "modules": list(w.modules),
                "python": str(w.python), "archs": [str(c) for c in w.archs], "vllm": str(w.vllm),
                "torch": str(w.torch), "companions": {k: str(v) for k, v in w.companions.items()},
                "requires_torch": w.requires_torch, "constraints": list(w.constraints),
                "system_libs": list(w.system_libs), "sha256": list(w.sha256), "seen": w.seen,
                **_prov(w.provenance)} for w in m.jetson_wheels]} if m.jetson_wheels else {})}} if m.jetpacks else {}),
        **({"pythons.yaml": {"packages": [{
            "name": p.name, "wheels_only": p.wheels_only, **_prov(p.provenance),
            "releases": [{"releases": [_release_text(str(s)) for s in row.releases],
                          "python": {k: [str(v) for v in vs] for k, vs in row.python.items()}, **_prov(row.provenance)}
                         for row in p.rows]} for p in m.pythons]}} if m.pythons else {}),
        **({"features.yaml": {
            "features": [{"id": f.id, "name": f.name, "min_compute_capability": str(f.min_compute_capability),
                          "signals": list(f.signals), **_prov(f.provenance)} for f in m.features],
            "libraries": [{"name": x.name, **_prov(x.provenance), "releases": [{
                "releases": [_release_text(str(s)) for s in row.releases],
                "lowest": str(row.lowest), "highest": str(row.highest), **_prov(row.provenance)}
                for row in x.rows]} for x in m.library_sms]}} if m.features or m.library_sms else {}),
    }


def _release_text(spec: str) -> str:
    """pythons.yaml's release as written: an exact release bare (``1.13.1``), else the specifier."""
    return spec[2:] if spec.startswith("==") and "*" not in spec and "," not in spec else spec


def dump_yaml(doc: Any) -> str:
    """YAML text in the matrix's house style (block style, keys in insertion order)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)
