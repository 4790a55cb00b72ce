"""Reading the tables of the machine side: ``cuda.yaml`` (CUDA majors, toolkits and their driver floors),
``gpus.yaml`` (architectures, GPUs, their first and last drivers) and ``jetson.yaml`` (JetPack releases, the
Jetson index's wheel sets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from packaging.version import Version

from ..values import Capability
from .checks import shown
from .model import (
    SEGMENTS,
    Architecture,
    CudaMajor,
    CudaToolkit,
    DriverFloor,
    DriverSupport,
    Gpu,
    JetPack,
    JetsonTorch,
    JetsonWheels,
    ToolkitUpdate,
    gpu_key,
)
from .rows import _PROV, _Rows


def _read_cuda(doc: dict[str, Any], r: _Rows) -> tuple[tuple[CudaMajor, ...], tuple[CudaToolkit, ...]]:
    majors = []
    for row, d in r.rows(doc, "majors", "major"):
        r.known(d, row, ("major", "minor_compat_driver", *_PROV))
        major = r.get(d, "major", row, int)
        if major is not None:
            r.once(("major", major), f"CUDA major {major}", row, "major")
        floor = r.driver_floor(d, "minor_compat_driver", row)
        prov = r.provenance(d, row)
        if major is not None and floor is not None and prov is not None:
            majors.append(CudaMajor(major=major, minor_compat_driver=floor, provenance=prov))
    toolkits = []
    for row, d in r.rows(doc, "toolkits", "version"):
        r.known(d, row, ("version", "released", "min_driver", "updates", "nvcc_archs", "host_gcc", "install",
                         "host_source", "host_verified", "ptx_isa", *_PROV))
        version = r.version(d, "version", row)
        if version is not None and len(version.release) != 2:
            r.problem(row, "version", f"expected MAJOR.MINOR, got {shown(d['version'])}")
            version = None
        if version is not None:
            r.once(("toolkit", version), "toolkit", row, "version")
        # null where no source read gives it (the CUDA 9.x/10.x rows)
        released = r.date(d, "released", row, required=d.get("released", "") is not None)
        floor = r.driver_floor(d, "min_driver", row)
        updates = _read_updates(d, row, r)
        lowest, highest, nvcc_list = _read_nvcc_archs(d, row, r)
        host = _read_toolkit_host(d, row, r)
        ptx_isa = r.version(d, "ptx_isa", row, required=False)
        prov = r.provenance(d, row)
        if (version is not None and (released is not None or d.get("released", "") is None) and floor is not None
                and lowest is not None and
            highest is not None and prov is not None):
            toolkits.append(CudaToolkit(
                version=version, released=released, min_driver=floor, updates=tuple(updates),
                nvcc_lowest=lowest, nvcc_highest=highest, nvcc_list=nvcc_list, provenance=prov, ptx_isa=ptx_isa, **host))
    return tuple(majors), tuple(toolkits)


def _read_updates(d: dict[str, Any], row: str, r: _Rows) -> list[ToolkitUpdate]:
    updates = []
    for i, u in enumerate(r.get(d, "updates", row, list, required=False) or ()):
        fld = f"updates[{i}]"
        u = r.mapping(u, row, fld)
        if u is None:
            continue
        r.known(u, row, ("version", "linux", "windows"), prefix=fld + ".")
        uv = r.version(u, "version", row, fld=f"{fld}.version")
        if uv is not None:
            r.once(("update", row, uv), f"update {uv}", row, f"{fld}.version", at=fld)
        ul = r.driver(u, "linux", row, required="linux" not in u, fld=f"{fld}.linux")
        uw = r.driver(u, "windows", row, required=False, fld=f"{fld}.windows")
        if uv is not None:
            updates.append(ToolkitUpdate(version=uv, min_driver=DriverFloor(linux=ul, windows=uw)))
    return updates


def _read_nvcc_archs(d: dict[str, Any], row: str, r: _Rows
                     ) -> tuple[Capability | None, Capability | None, tuple[Capability, ...] | None]:
    """What the toolkit's nvcc can target: (lowest, highest, the whole list where it is not a range)."""
    nvcc = r.get(d, "nvcc_archs", row, dict)
    if nvcc is None:
        return None, None, None
    r.known(nvcc, row, ("lowest", "highest", "list"), prefix="nvcc_archs.")
    lowest = r.cap(nvcc, "lowest", row, fld="nvcc_archs.lowest")
    highest = r.cap(nvcc, "highest", row, fld="nvcc_archs.highest")
    nvcc_list = r.caps(nvcc, "list", row, required=False, fld="nvcc_archs.list") or None
    if lowest and highest and lowest > highest:
        r.problem(row, "nvcc_archs", f"lowest {lowest} is above highest {highest}")
    if nvcc_list and lowest and highest and (min(nvcc_list) != lowest or max(nvcc_list) != highest):
        r.problem(row, "nvcc_archs.list",
                  f"spans {min(nvcc_list)}..{max(nvcc_list)}, but lowest/highest say {lowest}..{highest}")
    return lowest, highest, nvcc_list


def _read_toolkit_host(d: dict[str, Any], row: str, r: _Rows) -> dict[str, Any]:
    """host_gcc / install / host_source / host_verified of a toolkit row (all optional, together)."""
    if not any(k in d for k in ("host_gcc", "install", "host_source", "host_verified")):
        return {}
    out: dict[str, Any] = {}
    gcc = r.get(d, "host_gcc", row, dict, required=False)
    if gcc is not None:
        r.known(gcc, row, ("min", "max"), prefix="host_gcc.")
        lo, hi = r.get(gcc, "min", row, str, fld="host_gcc.min"), r.get(gcc, "max", row, str, fld="host_gcc.max")
        if lo is not None and hi is not None:
            if lo.isdigit() and hi.isdigit() and int(lo) <= int(hi):
                out["host_gcc"] = (int(lo), int(hi))
            else:
                r.problem(row, "host_gcc", f"expected GCC major versions min <= max, got {shown(lo)}..{shown(hi)}")
    inst = r.get(d, "install", row, dict, required=False)
    if inst is not None:
        r.known(inst, row, ("conda", "pip"), prefix="install.")
        conda = r.get(inst, "conda", row, dict, required=False, fld="install.conda")
        if conda is not None:
            r.known(conda, row, ("channel", "packages"), prefix="install.conda.")
            channel = r.get(conda, "channel", row, str, fld="install.conda.channel")
            packages = r.strings(conda, "packages", row, fld="install.conda.packages")
            if channel is not None and packages:
                out["install_conda"] = (channel, packages)
        out["install_pip"] = r.strings(inst, "pip", row, required=False, fld="install.pip") or ()
    sub = {"source": d.get("host_source"), "verified": d.get("host_verified")}
    prov = r.provenance(sub, f"{row} host_source/host_verified")
    if prov is not None:
        out["host_provenance"] = prov
    return out


def _read_gpus(doc: dict[str, Any], r: _Rows) -> tuple[tuple[Architecture, ...], tuple[Gpu, ...]]:
    archs = []
    for row, d in r.rows(doc, "architectures", "family"):
        r.known(d, row, ("family", "compute_capabilities", "driver", *_PROV))
        family = r.get(d, "family", row, str)
        if family is not None:
            r.once(("family", family), "family", row, "family")
        ccs = r.caps(d, "compute_capabilities", row)
        prov = r.provenance(d, row)
        drv = _read_driver_support(d, row, r)
        if family is not None and ccs is not None and prov is not None:  # a bad driver: the row without it
            archs.append(Architecture(family=family, compute_capabilities=ccs, provenance=prov, driver=drv or None))
    gpus = []
    for row, d in r.rows(doc, "gpus", "name"):
        r.known(d, row, ("name", "names", "aliases", "compute_capability", "family", "segment",
                         "memory_gib", "driver", *_PROV))
        name = r.get(d, "name", row, str)
        if name is not None:
            r.once(("gpu", gpu_key(name)), "GPU", row, "name")
        names = r.strings(d, "names", row, required=False)
        aliases = r.strings(d, "aliases", row, required=False)
        cc = r.cap(d, "compute_capability", row)
        family = r.get(d, "family", row, str)
        segment = r.choice(d, "segment", row, SEGMENTS)
        memory = r.get(d, "memory_gib", row, (int, float), required=False)
        prov = r.provenance(d, row)
        drv = _read_driver_support(d, row, r)
        if (name is not None and names is not None and aliases is not None and cc is not None and
            family is not None and segment is not None and prov is not None):
            gpus.append(Gpu(name=name, names=names, aliases=aliases, compute_capability=cc,
                            family=family, segment=segment, memory_gib=memory, provenance=prov, driver=drv or None))
    return tuple(archs), tuple(gpus)


def _branch(text: str) -> int:
    """A driver branch: its major number, ``"470"`` (an ``R`` before it is allowed: ``"R470"``)."""
    digits = text[1:] if text[:1] in "Rr" else text
    if not digits.isdigit() or not 0 < int(digits) < 10000:
        raise ValueError(text)
    return int(digits)


def _read_driver_support(d: dict[str, Any], row: str, r: _Rows) -> DriverSupport | None | Literal[False]:
    """A row's optional ``driver:`` (first driver, last branch, their own provenance); False after a problem."""
    if d.get("driver") is None:
        return None
    m = r.mapping(d["driver"], row, "driver")
    if m is None:
        return False
    r.known(m, row, ("first", "last_branch", *_PROV), prefix="driver.")
    first = r.driver(m, "first", row, required=False, fld="driver.first")
    last = r._parsed(m, "last_branch", row, _branch, "driver branch", "a branch such as '470'",
                     required=False, fld="driver.last_branch")
    prov = r.provenance(m, row)
    if (m.get("first") is not None and first is None) or (m.get("last_branch") is not None and last is None) \
            or prov is None:
        return False
    if first is None and last is None:
        r.problem(row, "driver", "expected 'first' or 'last_branch' (or both)")
        return False
    if first is not None and last is not None and last < first.key[0]:
        r.problem(row, "driver.last_branch", f"branch {last} is older than the first driver {first}")
        return False
    return DriverSupport(first=first, last_branch=last, provenance=prov)


def _read_jetson(doc: dict[str, Any], r: _Rows) -> tuple[tuple[JetPack, ...], tuple[JetsonWheels, ...]]:
    """jetson.yaml: JetPack releases, oldest first; every module a gpus.yaml row of the jetson segment (checked
    in :func:`_check_jetson`), every L4T release named by one JetPack only; then the Jetson index's wheel sets."""
    return _read_jetpacks(doc, r), (_read_jetson_wheels(doc, r) if "index_wheels" in doc else ())


# a path of the Jetson index: jp6/cu126, sbsa/cu130 (the index's own layout; no host is stored)
_JETSON_PATH = re.compile(r"(?:jp\d{1,2}|sbsa)/cu\d{3,4}")


def _read_jetson_wheels(doc: dict[str, Any], r: _Rows) -> tuple[JetsonWheels, ...]:
    out = []
    for row, d in r.rows(doc, "index_wheels", "vllm"):
        r.known(d, row, ("path", "jetpacks", "modules", "python", "archs", "vllm", "torch", "companions",
                         "requires_torch", "constraints", "system_libs", "sha256", "seen", *_PROV))
        path = r.get(d, "path", row, str)
        if path is not None and not _JETSON_PATH.fullmatch(path):
            r.problem(row, "path", f"invalid index path {shown(path)} (expected jpN/cuXYZ or sbsa/cuXYZ)")
            path = None
        vllm = r.version(d, "vllm", row)
        if path is not None and vllm is not None:
            r.once(("index_wheels", path, vllm), "vLLM wheel", row, "vllm")
            if vllm.local != path.split("/")[1]:
                r.problem(row, "vllm", f"{shown(str(vllm))}: its local tag is not the path's CUDA ({path})")
        companions = _read_set_companions(d, row, r)
        requires_torch = r.get(d, "requires_torch", row, bool)
        sha = r.list_of(d, "sha256", row, _sha256, "sha256 digest", required=False)
        fields = dict(path=path, jetpacks=r.list_of(d, "jetpacks", row, Version, "JetPack"),
                      modules=r.strings(d, "modules", row), python=r.version(d, "python", row),
                      archs=r.caps(d, "archs", row), vllm=vllm, torch=r.version(d, "torch", row),
                      companions=companions, requires_torch=requires_torch,
                      constraints=r.list_of(d, "constraints", row, _requirement, "requirement", required=False),
                      system_libs=r.list_of(d, "system_libs", row, _soname, "shared library name", required=False),
                      sha256=sha, seen=r.date(d, "seen", row),
                      provenance=r.provenance(d, row))
        if all(v is not None for v in fields.values()):
            out.append(JetsonWheels(**fields))
    return tuple(sorted(out, key=lambda w: w.vllm, reverse=True))


def _requirement(text: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as e:
        raise ValueError(text) from e
    if req.url or req.marker or req.extras:
        raise ValueError(text)
    return str(req)


def _soname(text: str) -> str:
    if not re.fullmatch(r"lib[A-Za-z0-9_+-]+\.so(?:\.\d+)*", text):
        raise ValueError(text)
    return text


def _sha256(text: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}|[0-9a-f]{16}", text):  # a digest, or the 16 digits an index's file URL shows
        raise ValueError(text)
    return text


def _read_set_companions(d: dict[str, Any], row: str, r: _Rows) -> Mapping[str, Version] | None:
    m = r.get(d, "companions", row, dict)
    if m is None:
        return None
    out = {}
    for name in m:
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,60}", name):
            r.problem(row, "companions", f"invalid package name {shown(name)}")
            return None
        v = r.version(m, name, row, fld=f"companions.{name}")
        if v is None:
            return None
        out[name] = v
    return out


def _read_jetpacks(doc: dict[str, Any], r: _Rows) -> tuple[JetPack, ...]:
    out = []
    for row, d in r.rows(doc, "jetpacks", "jetpack"):
        r.known(d, row, ("jetpack", "l4t", "cuda", "modules", "sbsa_modules", "python", "torch", "index_path", *_PROV))
        version = r.version(d, "jetpack", row)
        if version is not None:
            r.once(("jetpack", version), "JetPack", row, "jetpack")
        l4t = r.list_of(d, "l4t", row, Version, "L4T release")
        for rel in l4t or ():
            r.once(("l4t", rel), "L4T release", row, "l4t")
        cuda = r.version(d, "cuda", row)
        modules = r.strings(d, "modules", row)
        sbsa = r.strings(d, "sbsa_modules", row, required=False)
        python = r.version(d, "python", row)
        torch = _read_jetson_torch(d, row, r)
        index_path = r.get(d, "index_path", row, str, required=False)
        if index_path is not None and not _JETSON_PATH.fullmatch(index_path):
            r.problem(row, "index_path", f"invalid index path {shown(index_path)} (expected jpN/cuXYZ or sbsa/cuXYZ)")
        prov = r.provenance(d, row)
        if (version is not None and l4t and cuda is not None and modules is not None and sbsa is not None
                and python is not None and torch is not None and prov is not None):
            for i, name in enumerate(sbsa):
                if name not in modules:
                    r.problem(row, f"sbsa_modules[{i}]", f"{shown(name)} is not one of this JetPack's modules")
            out.append(JetPack(version=version, l4t=l4t, cuda=cuda, modules=modules, sbsa_modules=sbsa,
                               python=python, torch=torch, provenance=prov, index_path=index_path))
    return tuple(sorted(out, key=lambda j: j.version))


def _read_jetson_torch(d: dict[str, Any], row: str, r: _Rows) -> tuple[JetsonTorch, ...] | None:
    items = r.get(d, "torch", row, list)
    if items is None:
        return None
    out = []
    for i, item in enumerate(items):
        fld = f"torch[{i}]"
        t = r.mapping(item, row, fld)
        if t is None:
            return None
        r.known(t, row, ("version", "python", *_PROV), prefix=fld + ".")
        version = r.get(t, "version", row, str, fld=fld + ".version")
        if version is not None and r.version(t, "version", row, fld=fld + ".version") is None:
            version = None  # not a version (the problem is recorded); the text is kept as published
        python = r.version(t, "python", row, fld=fld + ".python")
        prov = r.provenance(t, f"{row} {fld}")
        if version is None or python is None or prov is None:
            return None
        out.append(JetsonTorch(version=version, python=python, provenance=prov))
    return tuple(out)
