"""Cross-references between the matrix's tables (every problem at once, each naming file, row, field).

One function per table; each appends to ``problems`` and never raises. Versions a table names are
read from the raw documents too, so that a row dropped for another problem causes no knock-on errors.
"""

from __future__ import annotations

import bisect
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ..errors import MatrixProblem
from ..values import Capability, exact_pin
from .model import (
    CAUSE_CODES,
    Architecture,
    CudaToolkit,
    Gpu,
    JetPack,
    JetsonWheels,
    Matrix,
    TorchRelease,
    TorchVariant,
    VllmRelease,
    Wheel,
    gpu_key,
)

Report = Callable[[str, str, str, str], None]  # (file, row, field, message)
Docs = Mapping[str, dict[str, Any] | None]

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 120
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6
_REPR.maxlevel = 3


def shown(value: object) -> str:
    """``repr(value)``, cut short: a value read from YAML can be a megabyte string or a deeply nested list,
    and a problem's message is one line. Short values print exactly as ``repr``."""
    return _REPR.repr(value)


def cut(text: str, limit: int = 120) -> str:
    """``text`` (a field name, a row label) on one line, cut short in the middle."""
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    return text if len(text) <= limit else f"{text[:limit // 2 - 2]}...{text[-(limit // 2 - 1):]}"


def problem(file: str, row: str, fld: str, message: str) -> MatrixProblem:
    """A MatrixProblem whose parts are bounded and on one line, whatever went into them (~1.5 KB at most)."""
    return MatrixProblem(file, cut(row, 300), cut(fld, 300), cut(message, 1000))


def _named_versions(doc: dict[str, Any] | None, table: str, major_minor: bool = False) -> set[Version]:
    """Versions a table names, including rows dropped for other problems (no knock-on errors)."""
    out = set()
    for row in (doc or {}).get(table) or ():
        try:
            v = Version(row["version"])
        except (TypeError, KeyError, InvalidVersion):
            continue
        out.add(Version(f"{v.major}.{v.minor}") if major_minor else v)
    return out


def cross_check(m: Matrix, wheels: Mapping[str, Mapping[Version, tuple[Wheel, ...]]], docs: Docs,
                problems: list[MatrixProblem]) -> None:
    """Every cross-reference problem of ``m``, appended to ``problems``."""

    def p(file: str, row: str, fld: str, msg: str) -> None:
        problems.append(problem(file, row, fld, msg))

    toolkits_named = _named_versions(docs["cuda.yaml"], "toolkits", major_minor=True)

    def need_cuda(file: str, row: str, fld: str, cuda: Version | None) -> None:
        if docs["cuda.yaml"] is None or cuda is None:
            return
        if Version(f"{cuda.major}.{cuda.minor}") not in toolkits_named:
            p(file, row, fld, f"CUDA {cuda} is not in cuda.yaml's toolkits")

    torch_versions = _named_versions(docs["torch.yaml"], "releases")
    _check_cuda(m, p)
    _check_gpus(m, p)
    for i, t in enumerate(m.torch):
        _check_torch_release(m, f"releases[{i}] '{t.version}'", t, p, need_cuda)
    for i, v in enumerate(m.vllm):
        row = f"releases[{i}] '{v.version}'"
        _check_vllm_release(m, row, v, p, need_cuda, torch_versions)
    _check_generated(m, wheels, p)
    _check_carried(m, p)
    _check_issues(m, docs, p)
    _check_jetson(m, p, need_cuda)


def _check_issues(m: Matrix, docs: Docs, p: Report) -> None:
    """Every cause code has a row: doctor explains each cause from this table (the reader checks that ids are
    unique)."""
    doc = docs["known_issues.yaml"]
    if doc is None:
        return
    # the causes the rows name, rows dropped for another problem included (no knock-on errors)
    causes = {row.get("cause") for row in doc.get("issues") or () if isinstance(row, dict)}
    for cause in CAUSE_CODES:
        if cause not in causes:
            p("known_issues.yaml", "issues", "cause", f"no row for cause {cause!r} (doctor explains every cause "
                                                      "from this table)")
    names = {g.name for g in m.gpus}
    for i, k in enumerate(m.known_issues):
        for gpu in k.gpus:
            if gpu not in names:
                p("known_issues.yaml", f"issues[{i}] '{k.id}'", "applies_to.gpus",
                  f"{gpu!r} is not a GPU of gpus.yaml (by its name)")


def _check_cuda(m: Matrix, p: Report) -> None:
    majors = {c.major for c in m.cuda_majors}
    for i, t in enumerate(m.toolkits):
        row = f"toolkits[{i}] '{t.version}'"
        if t.version.major not in majors:
            p("cuda.yaml", row, "version", f"CUDA {t.version.major} has no row in 'majors'")
        for u in t.updates:
            if (u.version.major, u.version.minor) != (t.version.major, t.version.minor):
                p("cuda.yaml", row, "updates", f"update {u.version} is not an update of {t.version}")


def _targetable(toolkits: tuple[CudaToolkit, ...]) -> Callable[[Capability], bool]:
    """Whether any of ``toolkits`` can target a capability: their lists and merged ranges, looked up in
    log time (the check runs for every GPU: GPUs x toolkits would grow with the square of the file)."""
    listed = {c for t in toolkits if t.nvcc_list is not None for c in t.nvcc_list}
    merged: list[list[Capability]] = []
    for lo, hi in sorted((t.nvcc_lowest, t.nvcc_highest) for t in toolkits if t.nvcc_list is None):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    lows = [lo for lo, _ in merged]

    def can(cc: Capability) -> bool:
        i = bisect.bisect_right(lows, cc.base) - 1
        return cc.base in listed or (i >= 0 and cc.base <= merged[i][1])

    return can


def _check_gpus(m: Matrix, p: Report) -> None:
    families = {a.family: a for a in m.architectures}
    seen_names: dict[str, str] = {}
    can_target = _targetable(m.toolkits)
    for i, g in enumerate(m.gpus):
        row = f"gpus[{i}] {shown(g.name)}"
        fam = families.get(g.family)
        if fam is None:
            p("gpus.yaml", row, "family", f"unknown family {shown(g.family)} (not in 'architectures')")
        elif g.compute_capability not in fam.compute_capabilities:
            p("gpus.yaml", row, "compute_capability",
              f"{g.compute_capability} is not a capability of the {g.family} family "
              f"({', '.join(map(str, fam.compute_capabilities))})")
        if m.toolkits and not can_target(g.compute_capability):
            p("gpus.yaml", row, "compute_capability",
              f"no CUDA toolkit in cuda.yaml can target {g.compute_capability}")
        _check_gpu_driver(m, row, g, fam, p)
        for label in (g.name, *g.names, *g.aliases):
            key = gpu_key(label)
            if key in seen_names and seen_names[key] != g.name:
                p("gpus.yaml", row, "aliases" if label in g.aliases else "names",
                  f"{shown(label)} also names {shown(seen_names[key])}")
            seen_names[key] = g.name


def _check_gpu_driver(m: Matrix, row: str, g: Gpu, fam: Architecture | None, p: Report) -> None:
    """A GPU's own first driver is not older than its family's (a later part comes later); its last branch
    (its own or its family's) is not older than its first driver."""
    own, eff = g.driver, m.driver_support(g)
    fam_first = fam.driver.first if fam is not None and fam.driver is not None else None
    if own is not None and own.first is not None and fam_first is not None and own.first < fam_first:
        p("gpus.yaml", row, "driver.first", f"{own.first} is older than the {g.family} family's first driver "
                                            f"{fam_first}")
    if eff is not None and eff.first is not None and eff.last_branch is not None \
            and eff.last_branch < eff.first.key[0]:
        p("gpus.yaml", row, "driver.last_branch", f"branch {eff.last_branch} is older than the first driver "
                                                  f"{eff.first}")


def _check_torch_release(m: Matrix, row: str, t: TorchRelease, p: Report,
                         need_cuda: Callable[[str, str, str, Version | None], None]) -> None:
    for v in t.variants:
        need_cuda("torch.yaml", row, f"variants '{v.variant}'.cuda", v.cuda)
    _check_pypi_defaults(row, t, p)
    _check_torch_companions(m, row, t, p)


def _check_pypi_defaults(row: str, t: TorchRelease, p: Report) -> None:
    """One variant at most is PyPI's default per platform, and PyPI's wheel has that variant's CUDA."""
    for plat in ("linux-x86_64", "linux-aarch64"):
        defaults = [v.variant for v in t.variants if plat in v.pypi_default]
        if len(defaults) > 1:
            p("torch.yaml", row, "variants",
              f"{len(defaults)} variants claim to be PyPI's default on {plat}: {defaults}")
    default_on: dict[str, TorchVariant] = {}  # the first variant that claims each platform
    for v in t.variants:
        for plat in v.pypi_default:
            default_on.setdefault(plat, v)
    for w in t.wheels:
        want = default_on.get(w.platform)
        if want is None or not w.platform.startswith("linux"):
            continue
        said, read = want.cuda, w.cuda
        same = said == read or (said is not None and read is not None
                                and (said.major, said.minor) == (read.major, read.minor))
        if not same:
            p("torch.yaml", row, f"variants '{want.variant}'.pypi_default",
              f"the PyPI wheel {w.filename} requires CUDA {read or 'none'} (its METADATA), not {said or 'none'}")


def _check_torch_companions(m: Matrix, row: str, t: TorchRelease, p: Report) -> None:
    for comp, table in m.extra_wheels.items():
        cv = t.companions.get(comp)
        if cv is None or cv not in table:
            continue
        specs = [w.requires["torch"] for w in table[cv] if w.platform.startswith("linux") and "torch" in w.requires]
        if specs and not any(s.contains(t.version, prereleases=True) for s in specs):
            p("torch.yaml", row, f"companions.{comp}",
              f"{comp} {cv}'s wheels require torch {', '.join(sorted({str(s) for s in specs}))}, "
              f"which excludes {t.version}")


def _check_vllm_release(m: Matrix, row: str, v: VllmRelease, p: Report,
                        need_cuda: Callable[[str, str, str, Version | None], None],
                        torch_versions: set[Version]) -> None:
    need_cuda("vllm.yaml", row, "cuda", v.cuda)
    for var in v.variants:
        need_cuda("vllm.yaml", row, f"variants '{var.variant}'.cuda", var.cuda)
        for plat, pinned in var.torch_pins.items():
            if torch_versions and Version(pinned.public) not in torch_versions:
                p("vllm.yaml", row, f"variants '{var.variant}'.torch_pins.{plat}",
                  f"torch {pinned} is not in torch.yaml's releases")
    memo: dict[tuple[str, Version, Version], tuple[SpecifierSet, ...]] = {}
    for w in v.wheels:
        spec = w.requires.get("torch")
        exact = exact_pin(spec)
        for comp in ("xformers", "flashinfer-python"):  # a pinned companion must be built for the same torch
            cv = exact_pin(w.requires.get(comp))
            for ct in _companion_conflicts(m, comp, cv, exact, memo) if cv is not None and exact is not None else ():
                p("wheels/vllm.yaml", row, f"{w.filename}.requires.{comp}",
                  f"{comp} {cv} requires torch {ct}, but this wheel pins torch {exact}")
        if spec is not None and exact is None:
            p("wheels/vllm.yaml", row, f"{w.filename}.requires.torch", f"expected an exact pin, got {str(spec)!r}")
        elif exact is not None and torch_versions and exact not in torch_versions:
            p("wheels/vllm.yaml", row, f"{w.filename}.requires.torch", f"torch {exact} is not in torch.yaml's releases")


def _companion_conflicts(m: Matrix, comp: str, cv: Version, torch: Version,
                         memo: dict[tuple[str, Version, Version], tuple[SpecifierSet, ...]]
                         ) -> tuple[SpecifierSet, ...]:
    """The torch requirements of ``comp`` ``cv``'s wheels that exclude ``torch``: worked out once per pin, not
    once per wheel that pins it (wheels x companion wheels would grow with the square of the files)."""
    key = (comp, cv, torch)
    if key not in memo:
        memo[key] = tuple(ct for cw in m.wheels_of(comp, cv) for ct in [cw.requires.get("torch")]
                          if ct is not None and str(ct) and not ct.contains(torch, prereleases=True))
    return memo[key]


def _check_generated(m: Matrix, wheels: Mapping[str, Mapping[Version, tuple[Wheel, ...]]], p: Report) -> None:
    """The curated rows and the generated wheel facts name the same releases."""
    curated: dict[str, tuple[str, set[Version], list[Version]]] = {
        "torch": ("torch.yaml", {r.version for r in m.torch}, [r.version for r in m.torch]),
        "vllm": ("vllm.yaml", {r.version for r in m.vllm}, [r.version for r in m.vllm]),
    }
    for pkg, (file, rows, ordered) in curated.items():
        generated = wheels.get(pkg, {})
        if not generated:
            continue
        for i, version in enumerate(ordered):
            if version not in generated:
                p(file, f"releases[{i}] '{version}'", "version",
                  f"no such release in wheels/{pkg}.yaml (regenerate it, or remove the row)")
        for version in sorted(set(generated) - rows):
            p(f"wheels/{pkg}.yaml", f"release '{version}'", "version", f"the release has no row in {file}")


def _check_carried(m: Matrix, p: Report) -> None:
    """A row that carries facts carries them from an older release of its own file."""
    tables: tuple[tuple[str, tuple[TorchRelease | VllmRelease, ...]], ...] = (("torch.yaml", m.torch),
                                                                             ("vllm.yaml", m.vllm))
    for file, rows in tables:
        versions = {r.version for r in rows}
        for i, r in enumerate(rows):
            if r.carried_from is not None and (r.carried_from not in versions or r.carried_from >= r.version):
                p(file, f"releases[{i}] '{r.version}'", "carried_from.version",
                  f"{r.carried_from} is not an older release of {file}")


def awaiting_review(m: Matrix) -> list[dict[str, Any]]:
    """The torch and vLLM release rows marked unverified (those ``matrix refresh --apply`` wrote among them), with
    the fields they carry from an older release."""
    tables: tuple[tuple[str, tuple[TorchRelease | VllmRelease, ...]], ...] = (("torch.yaml", m.torch),
                                                                             ("vllm.yaml", m.vllm))
    return [{"file": file, "version": str(r.version), "note": r.provenance.note,
             "carried_from": str(r.carried_from) if r.carried_from is not None else None, "carried": list(r.carried)}
            for file, rows in tables for r in rows if not r.provenance.trusted]


def _check_jetson(m: Matrix, p: Report, need_cuda: Callable[[str, str, str, Version | None], None]) -> None:
    """Every JetPack's modules are gpus.yaml rows of the jetson segment, and its CUDA a known toolkit."""
    segment = {g.name: g.segment for g in m.gpus}
    for i, j in enumerate(m.jetpacks):
        row = f"jetpacks[{i}] '{j.version}'"
        need_cuda("jetson.yaml", row, "cuda", j.cuda)
        for k, name in enumerate(j.modules):
            if segment.get(name) != "jetson":
                p("jetson.yaml", row, f"modules[{k}]", f"{name!r} is not a GPU of gpus.yaml's jetson segment")
        if j.index_path is not None and j.index_path != f"jp{j.version.major}/cu{j.cuda.major}{j.cuda.minor}" \
                and not j.index_path.startswith("sbsa/"):
            p("jetson.yaml", row, "index_path", f"{j.index_path!r} is not jp{j.version.major}/cu{j.cuda.major}"
                                                f"{j.cuda.minor}, the path of its JetPack major and CUDA")
    _check_jetson_wheels(m, p)


def _check_jetson_wheels(m: Matrix, p: Report) -> None:
    """Every wheel set is for JetPacks of the matrix that support its modules on L4T's own CUDA (not the unified
    ARM build), with the path's CUDA and the JetPack's Python."""
    jetpacks = {j.version: j for j in m.jetpacks}
    caps = {g.name: g.compute_capability for g in m.gpus}
    for i, w in enumerate(m.jetson_wheels):
        row = f"index_wheels[{i}] '{w.vllm}'"
        for k, name in enumerate(w.modules):
            cc = caps.get(name)
            if cc is not None and not any(a.major == cc.major and a.minor <= cc.minor for a in w.archs):
                p("jetson.yaml", row, f"modules[{k}]", f"{name!r} (sm_{cc.major}{cc.minor}) is not in the builds' archs")
        for k, v in enumerate(w.jetpacks):
            j = jetpacks.get(v)
            if j is None:
                p("jetson.yaml", row, f"jetpacks[{k}]", f"JetPack {v} is not a row of jetpacks")
            else:
                for problem in _wheels_against_jetpack(w, j):
                    p("jetson.yaml", row, f"jetpacks[{k}]", problem)


def _wheels_against_jetpack(w: JetsonWheels, j: JetPack) -> list[str]:
    out = []
    if (j.cuda.major, j.cuda.minor) != (w.cuda.major, w.cuda.minor):
        out.append(f"JetPack {j.version} puts CUDA {j.cuda} on the board, not the path's {w.cuda}")
    if j.python != w.python:
        out.append(f"JetPack {j.version}'s Python is {j.python}, not the wheels' {w.python}")
    if j.index_path is not None and j.index_path != w.path:
        out.append(f"JetPack {j.version}'s index path is {j.index_path}, not {w.path}")
    out += [f"JetPack {j.version} does not run {name!r} on L4T's own CUDA" for name in w.modules
            if name not in j.modules or name in j.sbsa_modules]
    return out
