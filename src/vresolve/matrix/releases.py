"""Reading the tables of the releases: ``torch.yaml`` and ``vllm.yaml`` (releases, variants, arch lists, glibc
facts, source builds) and ``wheels/<package>.yaml`` (each release's wheel files).
"""

from __future__ import annotations

import re
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from ..values import PLATFORMS, ArchList, parse_variant
from .checks import cut, shown
from .model import (
    CARRIED_FIELDS,
    VLLM_VARIANT_SOURCES,
    Asset,
    GlibcFact,
    KernelModule,
    Kernels,
    Provenance,
    SourceBuild,
    TorchRelease,
    TorchVariant,
    VllmRelease,
    VllmVariant,
    Wheel,
    wheel_platform,
)
from .rows import _PROV, _Rows


def _read_index(doc: dict[str, Any], r: _Rows) -> tuple[str, Provenance] | None:
    d = r.get(doc, "index", "", dict, fld="index")
    if d is None:
        return None
    r.known(d, "index", ("url", *_PROV))
    url = r.get(d, "url", "index", str)
    if url is not None and not re.match(r"^https?://", url):
        r.problem("index", "url", f"expected an http(s) URL, got {shown(url)}")
        url = None
    prov = r.provenance(d, "index")
    return None if url is None or prov is None else (url.rstrip("/"), prov)


def _read_archs_by_platform(d: dict[str, Any], key: str, row: str, r: _Rows) -> dict[str, ArchList] | None:
    m = r.get(d, key, row, dict)
    if m is None:
        return None
    out = {}
    for plat, al in m.items():
        fld = f"{key}.{cut(str(plat))}"
        if plat not in PLATFORMS:
            r.problem(row, fld, f"unknown platform (expected one of: {', '.join(PLATFORMS)})")
            continue
        archs = _read_archlist(al, fld, row, r)
        if archs is not None:
            out[plat] = archs
    return out


def _read_archlist(al: Any, fld: str, row: str, r: _Rows) -> ArchList | None:
    al = r.mapping(al, row, fld)
    if al is None:
        return None
    r.known(al, row, ("sass", "ptx", "min_compute_capability"), prefix=fld + ".")
    sass = r.caps(al, "sass", row, fld=f"{fld}.sass", unique=False)  # checked below: ascending, without repeats
    ptx = r.caps(al, "ptx", row, required=False, fld=f"{fld}.ptx", unique=False)
    if sass is None or ptx is None:
        return None
    for name, caps in (("sass", sass), ("ptx", ptx)):
        if list(caps) != sorted(set(caps)):
            r.problem(row, f"{fld}.{name}", "expected ascending capabilities without repeats")
    return r.share(ArchList(sass=sass, ptx=ptx))


def _read_kernels(d: dict[str, Any], row: str, r: _Rows, fld: str = "kernels") -> Kernels | None:
    k = r.mapping(d, row, fld)
    if k is None:
        return None
    archs = _read_archlist(k, fld, row, r)
    lowest = r.cap(k, "min_compute_capability", row, fld=f"{fld}.min_compute_capability")
    if archs is None or lowest is None:
        return None
    if archs.lowest is not None and lowest < archs.lowest.base:
        r.problem(row, f"{fld}.min_compute_capability",
                  f"{lowest} is below the lowest arch in the build ({archs.lowest})")
    return Kernels(archs=archs, min_compute_capability=lowest)


def _read_variant_cuda(d: dict[str, Any], row: str, r: _Rows, fld: str) -> tuple[str, Version | None] | None:
    name = r.get(d, "variant", row, str, fld=f"{fld}.variant")
    if name is None:
        return None
    try:
        implied = parse_variant(name)
    except ValueError as e:
        r.problem(row, f"{fld}.variant", str(e))
        return None
    cuda = r.version(d, "cuda", row, required=implied is not None, fld=f"{fld}.cuda")
    if implied is not None and cuda is not None and (cuda.major, cuda.minor) != (implied.major, implied.minor):
        r.problem(row, f"{fld}.cuda", f"{cuda} does not match variant {shown(name)} (CUDA {implied})")
        return None
    if implied is None and cuda is not None:
        r.problem(row, f"{fld}.cuda", "a cpu variant has no CUDA version")
    return name, cuda


def _read_torch(doc: dict[str, Any], r: _Rows, wheels: dict[Version, tuple[Wheel, ...]]
                ) -> tuple[tuple[str, Provenance] | None, tuple[TorchRelease, ...]]:
    index = _read_index(doc, r)
    releases = []
    for row, d in r.rows(doc, "releases", "version"):
        r.known(d, row, ("version", "python", "companions", "variants", "carried_from", *_PROV))
        version = r.version(d, "version", row)
        if version is not None:
            r.once(("release", version), "release", row, "version")
        python = r.list_of(d, "python", row, Version, "Python version")
        companions = _read_companions(d, row, r)
        variants: list[TorchVariant] = []
        names: set[str] = set()
        for i, vd in enumerate(r.get(d, "variants", row, list) or ()):
            variant = _read_torch_variant(vd, row, f"variants[{i}]", r)
            if variant is None:
                continue
            if variant.variant in names:
                r.problem(row, f"variants[{i}].variant", f"variant {shown(variant.variant)} listed twice")
            names.add(variant.variant)
            variants.append(variant)
        prov = r.provenance(d, row)
        carried_from, carried = _read_carried(d, row, r, "torch.yaml", prov)
        if version is not None and python is not None and prov is not None:
            releases.append(TorchRelease(version=version, python=python, companions=companions,
                                         variants=tuple(variants), wheels=wheels.get(version, ()),
                                         provenance=prov, carried_from=carried_from, carried=carried))
    return index, tuple(releases)


def _read_companions(d: dict[str, Any], row: str, r: _Rows) -> dict[str, Version]:
    comps = r.get(d, "companions", row, dict)
    companions = {}
    for k, v in (comps or {}).items():
        if v is None:
            continue  # no release of that companion for this torch
        if k not in ("torchvision", "torchaudio", "triton"):
            r.problem(row, f"companions.{cut(str(k))}", "unknown companion (expected torchvision, torchaudio, triton)")
            continue
        cv = r.version(comps, k, row, fld=f"companions.{k}")
        if cv is not None:
            companions[k] = cv
    return companions


def _read_torch_variant(raw: Any, row: str, fld: str, r: _Rows) -> TorchVariant | None:
    vd = r.mapping(raw, row, fld)
    if vd is None:
        return None
    r.known(vd, row, ("variant", "cuda", "pypi_default", "archs", *_PROV), prefix=fld + ".")
    vc = _read_variant_cuda(vd, row, r, fld)
    defaults = r.get(vd, "pypi_default", row, dict, required=False, fld=f"{fld}.pypi_default") or {}
    archs = _read_archs_by_platform(vd, "archs", f"{row} {fld}", r)
    prov = r.provenance(vd, f"{row} {fld}")
    if vc is None or archs is None or prov is None:
        return None
    for plat in defaults:
        if plat not in archs:
            r.problem(row, f"{fld}.pypi_default.{cut(str(plat))}", f"the variant has no archs for {cut(str(plat))}")
    return TorchVariant(variant=vc[0], cuda=vc[1], archs=archs, provenance=prov,
                        pypi_default=frozenset(p for p, flag in defaults.items() if flag is True))


def _read_vllm(doc: dict[str, Any], r: _Rows, wheels: dict[Version, tuple[Wheel, ...]]
               ) -> tuple[tuple[str, Provenance] | None, tuple[VllmRelease, ...]]:
    index = _read_index(doc, r)
    releases = []
    for row, d in r.rows(doc, "releases", "version"):
        r.known(d, row, ("version", "cuda", "kernels", "kernel_modules", "variants", "build", "closure", "carried_from",
                         *_PROV))
        version = r.version(d, "version", row)
        if version is not None:
            r.once(("release", version), "release", row, "version")
        cuda = r.version(d, "cuda", row, required=False)
        build = _read_source_build(d["build"], row, r) if d.get("build") is not None else None
        kernels = _read_kernels(d["kernels"], row, r) if d.get("kernels") is not None else None
        if cuda is not None and kernels is None:
            r.problem(row, "kernels", "missing (a CUDA wheel needs its kernels' arch list)")
        variants = []
        for i, vd in enumerate(r.get(d, "variants", row, list, required=False) or ()):
            variant = _read_vllm_variant(vd, row, f"variants[{i}]", r, version)
            if variant is not None:
                variants.append(variant)
        closure = [_read_glibc_fact(c, row, f"closure[{i}]", r, None)
                   for i, c in enumerate(r.get(d, "closure", row, list, required=False) or ())]
        modules = _read_kernel_modules(d, row, r)
        prov = r.provenance(d, row)
        carried_from, carried = _read_carried(d, row, r, "vllm.yaml", prov)
        if version is not None and prov is not None:
            releases.append(VllmRelease(version=version, cuda=cuda, kernels=kernels,
                                        variants=tuple(variants), wheels=wheels.get(version, ()),
                                        provenance=prov, build=build, closure=tuple(c for c in closure if c),
                                        carried_from=carried_from, carried=carried, kernel_modules=modules))
    return index, tuple(releases)


def _read_carried(d: dict[str, Any], row: str, r: _Rows, file: str, prov: Provenance | None
                  ) -> tuple[Version | None, tuple[str, ...]]:
    """``carried_from: {version, fields}``: the release a row written by ``matrix refresh`` carries ``fields`` from
    (an unverified row, until someone reviews it)."""
    if d.get("carried_from") is None:
        return None, ()
    c = r.mapping(d["carried_from"], row, "carried_from")
    if c is None:
        return None, ()
    r.known(c, row, ("version", "fields"), prefix="carried_from.")
    version = r.version(c, "version", row, fld="carried_from.version")
    allowed = CARRIED_FIELDS[file]
    fields = r.strings(c, "fields", row, fld="carried_from.fields") or ()
    for i, f in enumerate(fields):
        if f not in allowed:
            r.problem(row, f"carried_from.fields[{i}]", f"unknown field {shown(f)} (expected one of: {', '.join(allowed)})")
    if prov is not None and prov.trusted:
        r.problem(row, "carried_from", f"a row with carried facts is verified: unverified (it is {prov.verified}); "
                                       "remove carried_from once the row is reviewed")
    return version, tuple(f for f in fields if f in allowed)


def _read_kernel_modules(d: dict[str, Any], row: str, r: _Rows) -> tuple[KernelModule, ...]:
    """A release's ``kernel_modules``: compiled extensions with arch lists of their own, per platform."""
    out = []
    for i, raw in enumerate(r.get(d, "kernel_modules", row, list, required=False) or ()):
        fld = f"kernel_modules[{i}]"
        md = r.mapping(raw, row, fld)
        if md is None:
            continue
        r.known(md, row, ("module", "platforms", "sass", "ptx", *_PROV), prefix=fld + ".")
        name = r.get(md, "module", row, str, fld=f"{fld}.module")
        plats = r.strings(md, "platforms", row, fld=f"{fld}.platforms")
        for p in plats or ():
            if p not in PLATFORMS:
                r.problem(row, f"{fld}.platforms", f"unknown platform {shown(p)}")
        archs = _read_archlist({k: md[k] for k in ("sass", "ptx") if k in md}, fld, row, r)
        prov = r.provenance(md, f"{row} {fld}")
        if name is not None and plats is not None and archs is not None and prov is not None:
            out.append(KernelModule(module=name, platforms=plats, archs=archs, provenance=prov))
    return tuple(out)


def _read_vllm_variant(raw: Any, row: str, fld: str, r: _Rows, version: Version | None) -> VllmVariant | None:
    vd = r.mapping(raw, row, fld)
    if vd is None:
        return None
    r.known(vd, row, ("variant", "cuda", "where", "platforms", "kernels", "torch_pins", "asset", "glibc", *_PROV),
            prefix=fld + ".")
    vc = _read_variant_cuda(vd, row, r, fld)
    where = r.choice(vd, "where", row, VLLM_VARIANT_SOURCES, fld=f"{fld}.where")
    plats = r.strings(vd, "platforms", row, fld=f"{fld}.platforms")
    for p in plats or ():
        if p not in PLATFORMS:
            r.problem(row, f"{fld}.platforms", f"unknown platform {shown(p)}")
        elif vc is not None:  # one build per variant and platform (0.10.2's cu129: release assets, and PyPI's aarch64)
            r.once(("variant", row, vc[0], p), f"variant {shown(vc[0])} for {p}", row, f"{fld}.variant", at=fld)
    vk = _read_kernels(vd["kernels"], row, r, f"{fld}.kernels") if vd.get("kernels") is not None else None
    torch_pins = _read_torch_pins(vd, row, fld, r, plats or ())
    prov = r.provenance(vd, f"{row} {fld}")
    asset = _read_asset(vd, row, f"{fld}.asset", r, version, vc[0] if vc else None) \
        if vd.get("asset") is not None else None
    if where == "release-assets" and asset is None:
        r.problem(row, f"{fld}.asset", "missing (a release-asset build needs its download URL)")
        return None
    glibc = _read_glibc_fact(vd["glibc"], row, f"{fld}.glibc", r, (version, vc[0] if vc else None)) \
        if vd.get("glibc") is not None else None
    if vc is None or where is None or plats is None or prov is None:
        return None
    return VllmVariant(variant=vc[0], cuda=vc[1], where=where, platforms=plats, kernels=vk, torch_pins=torch_pins,
                       provenance=prov, asset=asset, glibc=glibc)


def _read_glibc_fact(raw: Any, row: str, fld: str, r: _Rows, build: tuple[Version | None, str | None] | None
                     ) -> GlibcFact | None:
    """A variant's ``glibc`` (``build``: its release and variant) or a ``closure`` entry (a dependency of the
    release's wheels): the file names seen, whose manylinux tags give the floor per platform; ``needs``: the
    glibc its libraries really need, where that is more than the tag says."""
    d = r.mapping(raw, row, fld)
    if d is None:
        return None
    r.known(d, row, ("package", "requires", "wheels", "needs", *_PROV), prefix=fld + ".")
    package = "vllm" if build is not None else r.get(d, "package", row, str, fld=f"{fld}.package")
    requires = r.spec(d, "requires", row, required=build is None, fld=f"{fld}.requires")
    needs = r.version(d, "needs", row, required=False, fld=f"{fld}.needs")
    prov = r.provenance(d, f"{row} {fld}")
    floors: dict[str, Version] = {}
    names = r.strings(d, "wheels", row, fld=f"{fld}.wheels") or ()
    for name in names:
        try:
            wname, wversion, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename as e:
            r.problem(row, f"{fld}.wheels", str(e))
            continue
        plat = wheel_platform(next(iter(tags)).platform)
        if wname != package or plat is None or plat[1] is None:
            r.problem(row, f"{fld}.wheels", f"{shown(name)} is not a manylinux wheel of {package}")
            continue
        if build is not None and build[0] is not None and (
                wversion.public != build[0].public or wversion.local != (build[1] or None)):
            r.problem(row, f"{fld}.wheels", f"{shown(name)} names {wversion}, not {build[0]}+{build[1]}")
            continue
        if requires is not None and not requires.contains(wversion, prereleases=True):
            r.problem(row, f"{fld}.wheels", f"{shown(name)} is outside {requires}")
            continue
        floors[plat[0]] = max(Version(plat[1]), needs) if needs is not None else Version(plat[1])
    if package is None or prov is None or not floors:
        return None
    return GlibcFact(package=package, floors=floors, wheels=tuple(names), requires=requires, provenance=prov,
                     needs=needs)


def _read_torch_pins(vd: dict[str, Any], row: str, fld: str, r: _Rows, plats: tuple[str, ...]
                     ) -> dict[str, Version]:
    """A CPU build's own torch pins, per platform (it differs from the PyPI wheel's)."""
    out = {}
    for plat, pin in (r.get(vd, "torch_pins", row, dict, required=False, fld=f"{fld}.torch_pins") or {}).items():
        if plat not in plats:
            r.problem(row, f"{fld}.torch_pins.{cut(str(plat))}", "not one of the variant's platforms")
            continue
        pv = r.version({plat: pin}, plat, row, fld=f"{fld}.torch_pins.{plat}")
        if pv is not None:
            out[plat] = pv
    return out


_ASSET_RE = re.compile(r"^https://[A-Za-z0-9.-]+/[A-Za-z0-9._~%+/{}-]+\.whl$")


def _read_asset(vd: dict[str, Any], row: str, fld: str, r: _Rows, version: Version | None,
                variant: str | None) -> Asset | None:
    d = r.mapping(vd["asset"], row, fld)
    if d is None:
        return None
    r.known(d, row, ("url", *_PROV), prefix=fld + ".")
    url = r.get(d, "url", row, str, fld=f"{fld}.url")
    prov = r.provenance(d, f"{row} {fld}")
    if url is None or prov is None:
        return None
    name = url.rsplit("/", 1)[-1].replace("{cp}", "cp310")
    if not _ASSET_RE.match(url) or url.replace("{cp}", "").count("{") or url.replace("{cp}", "").count("}"):
        r.problem(row, f"{fld}.url", f"expected an https URL of a wheel ({{cp}} the only placeholder), got {shown(url)}")
        return None
    try:
        _, wversion, _, tags = parse_wheel_filename(name)
    except InvalidWheelFilename as e:
        r.problem(row, f"{fld}.url", str(e))
        return None
    if version is not None and (wversion.public != version.public or wversion.local != (variant or None)):
        r.problem(row, f"{fld}.url", f"names {wversion}, not {version}+{variant}")
        return None
    plat = wheel_platform(next(iter(tags)).platform)
    return Asset(url=url, provenance=prov, manylinux=plat[1] if plat else None)


def _read_source_build(b: Any, row: str, r: _Rows) -> SourceBuild | None:
    b = r.mapping(b, row, "build")
    if b is None:
        return None
    r.known(b, row, ("cuda_archs", "use_existing_torch", "requirements", "precompiled", "cpu", "cmake", *_PROV),
            prefix="build.")
    ranges = []
    for i, item in enumerate(r.get(b, "cuda_archs", row, list, fld="build.cuda_archs") or ()):
        fld = f"build.cuda_archs[{i}]"
        item = r.mapping(item, row, fld)
        if item is None:
            continue
        r.known(item, row, ("cuda", "archs"), prefix=fld + ".")
        spec = r.spec(item, "cuda", row, fld=f"{fld}.cuda")
        archs = r.caps(item, "archs", row, fld=f"{fld}.archs")
        if spec is not None and archs is not None:
            ranges.append((spec, archs))
    flags = {k: r.get(b, k, row, bool, fld=f"build.{k}") for k in ("precompiled", "cpu")}
    script = r.get(b, "use_existing_torch", row, (str, bool), fld="build.use_existing_torch")
    if script is True:
        r.problem(row, "build.use_existing_torch", "expected the script's path in the tree, or false")
    flags["use_existing_torch"] = script or None if script is not None else None
    req = r.get(b, "requirements", row, str, required=False, fld="build.requirements")
    cmake = r.version(b, "cmake", row, required=False, fld="build.cmake")
    prov = r.provenance(b, f"{row} build")
    if prov is None or flags["precompiled"] is None or flags["cpu"] is None:
        return None
    return SourceBuild(cuda_archs=tuple(ranges), requirements=req, cmake=cmake, provenance=prov, **flags)


def _read_wheels(doc: dict[str, Any], r: _Rows, package: str) -> dict[Version, tuple[Wheel, ...]]:
    if doc.get("package") != package:
        r.problem("", "package", f"expected {package!r}, got {shown(doc.get('package'))}")
    out: dict[Version, tuple[Wheel, ...]] = {}
    for row, d in r.rows(doc, "releases", "version"):
        r.known(d, row, ("version", "wheels"))
        version = r.version(d, "version", row)
        wheels = []
        for i, wd in enumerate(r.get(d, "wheels", row, list) or ()):
            fld = f"wheels[{i}]"
            wd = r.mapping(wd, row, fld)
            if wd is None:
                continue
            r.known(wd, row, ("filename", "requires_python", "requires", "pythons", "cuda", "extensions", "features", "sha256",
                              "yanked", *_PROV), prefix=fld + ".")
            w = _read_wheel(wd, row, fld, r, package, version)
            if w is not None:
                r.once(("wheel", row, w.filename), "wheel", row, f"{fld}.filename", at=fld)
                wheels.append(w)
        if version is not None:
            r.once(("release", version), "release", row, "version")
            out[version] = tuple(wheels)
    return out


def _read_wheel(wd: dict[str, Any], row: str, fld: str, r: _Rows, package: str,
                version: Version | None) -> Wheel | None:
    filename = r.get(wd, "filename", row, str, fld=f"{fld}.filename")
    parsed = None
    if filename is not None:
        try:
            name, wversion, build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename as e:
            r.problem(row, f"{fld}.filename", str(e))
        else:
            tag = next(iter(tags))
            plat = wheel_platform(tag.platform)
            if name != package or (version is not None and wversion != version):
                r.problem(row, f"{fld}.filename", f"is not a wheel of {package} {version}")
            elif plat is None:
                r.problem(row, f"{fld}.filename", f"unknown platform tag {tag.platform!r}")
            else:
                parsed = (plat, build[0] if build else None, f"{tag.interpreter}-{tag.abi}")
    rp = r.spec(wd, "requires_python", row, required=False, fld=f"{fld}.requires_python")
    requires = {}
    for k, v in (r.get(wd, "requires", row, dict, required=False, fld=f"{fld}.requires") or {}).items():
        s = r.spec({k: v}, k, row, fld=f"{fld}.requires.{k}")
        if s is not None:
            requires[r.share(k)] = s
    pythons = r.list_of(wd, "pythons", row, Version, "Python version", required=False, fld=f"{fld}.pythons")
    cuda = r.version(wd, "cuda", row, required=False, fld=f"{fld}.cuda")
    extensions = r.list_of(wd, "extensions", row, _module_name, "dotted module name", required=False,
                           fld=f"{fld}.extensions")
    features = r.list_of(wd, "features", row, str, "feature", required=False, fld=f"{fld}.features")
    sha = r.get(wd, "sha256", row, str, required=False, fld=f"{fld}.sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        r.problem(row, f"{fld}.sha256", f"expected 64 hex digits, got {shown(sha)}")
    yanked = r.get(wd, "yanked", row, bool, required=False, fld=f"{fld}.yanked") or False
    prov = r.provenance(wd, f"{row} {fld}")
    if parsed is None or prov is None or pythons is None or extensions is None or features is None:
        return None
    (where, manylinux), build_tag, python_tag = parsed
    assert filename is not None  # parsed from it
    return Wheel(filename=filename, platform=where, manylinux=manylinux, build=build_tag, python_tag=python_tag,
                 requires_python=rp, requires=requires, pythons=pythons, cuda=cuda, sha256=sha,
                 yanked=yanked, provenance=prov, extensions=extensions, features=features)


_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _module_name(text: str) -> str:
    """A dotted Python module name (``vllm._C``); ValueError otherwise (the value goes into a check)."""
    if not isinstance(text, str) or not _MODULE_RE.match(text):
        raise ValueError(text)
    return text
