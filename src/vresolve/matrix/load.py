"""Reading the matrix: every file once (PyYAML's C loader), each row checked against the schema.

Problems are collected, not raised one by one: :func:`load_matrix` raises one MatrixError listing
every problem, each naming its file, row and field. Nothing after this module sees a raw string.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..errors import MatrixError, MatrixProblem
from ..values import PLATFORMS, VERIFIED_LEVELS, ArchList, Capability, DriverVersion, parse_variant
from .checks import cross_check, cut, problem, shown
from .model import (
    CARRIED_FIELDS,
    CAUSE_CODES,
    FILES,
    OPTIONAL_FILES,
    SEGMENTS,
    SEVERITIES,
    VLLM_VARIANT_SOURCES,
    WHEEL_PACKAGES,
    Architecture,
    Asset,
    CudaMajor,
    CudaToolkit,
    DriverFloor,
    DriverSupport,
    GlibcFact,
    Gpu,
    JetPack,
    JetsonTorch,
    JetsonWheels,
    KernelModule,
    Kernels,
    KnownIssue,
    Matrix,
    Provenance,
    SourceBuild,
    ToolkitUpdate,
    TorchRelease,
    TorchVariant,
    VllmRelease,
    VllmVariant,
    Wheel,
    gpu_key,
    wheel_platform,
)


def _yaml_loader() -> Any:
    """PyYAML's C loader (about 10x faster), or the pure-Python one where libyaml is missing."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)





_T = TypeVar("_T")
_S = TypeVar("_S", bound=str)


class _Rows:
    """Typed getters over one YAML file that collect problems instead of raising.

    Each getter returns None after recording a problem; callers drop rows that came back
    incomplete, so one bad value never hides the next one.
    """

    def __init__(self, file: str, problems: list[MatrixProblem], shared: dict[Any, Any]) -> None:
        self.file = file
        self.problems = problems
        self.shared = shared
        self.seen: dict[Hashable, str] = {}  # what once() saw in this file, and where

    def once(self, key: Hashable, what: str, row: str, fld: str, at: str | None = None) -> None:
        """A problem when ``key`` was seen before in this file: ``what`` is listed twice; ``at`` (default:
        the row) names where, in the message of the repeat."""
        here = at or row
        first = self.seen.setdefault(key, here)
        if first != here:
            self.problem(row, fld, f"{what} listed twice (also {first})")

    def share(self, value: _T) -> _T:
        """One object for each value across the matrix: the cache pickles a shared object once, so a
        cold start unpickles a few hundred versions and capabilities instead of thousands.

        Versions, specifiers and driver versions are shared only with ones spelled the same (12.8 and
        12.8.0 are equal but print differently); tuples only when their items are the same objects.
        """
        key: Any
        if isinstance(value, (Version, SpecifierSet, DriverVersion)):
            key = (type(value), str(value))
        elif isinstance(value, tuple) and type(value) is tuple:
            key = (tuple, tuple(map(id, value)))
        else:
            key = (type(value), value)
        return self.shared.setdefault(key, value)  # type: ignore[no-any-return]

    def problem(self, row: str, fld: str, message: str) -> None:
        self.problems.append(problem(self.file, row, fld, message))

    def mapping(self, value: Any, row: str, fld: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(row, fld, f"expected a mapping, got {_kind(value)}")
            return None
        return value

    def rows(self, doc: dict[str, Any], key: str, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (row name, mapping) for each row of the list ``doc[key]``."""
        items = doc.get(key)
        if not isinstance(items, list):
            self.problem("", key, f"expected a list of rows, got {_kind(items)}")
            return
        for i, item in enumerate(items):
            name = f"{key}[{i}]"
            if isinstance(item, dict) and isinstance(item.get(label), str):
                name += f" {shown(item[label])}"
            d = self.mapping(item, name, "")
            if d is not None:
                yield name, d

    def known(self, d: dict[str, Any], row: str, allowed: tuple[str, ...], prefix: str = "") -> None:
        for k in d:
            if k not in allowed:
                self.problem(row, prefix + cut(str(k)), f"unknown field (expected one of: {', '.join(allowed)})")

    def get(self, d: dict[str, Any], key: str, row: str, kind: type | tuple[type, ...], *,
            required: bool = True, fld: str | None = None) -> Any:
        fld = fld or key
        if key not in d or d[key] is None:
            if required:
                self.problem(row, fld, "missing")
            return None
        value = d[key]
        if not isinstance(value, kind) or isinstance(value, bool) and bool not in _as_tuple(kind):
            want = " or ".join(t.__name__ for t in _as_tuple(kind))
            hint = " (quote it: YAML reads 12.10 as a number)" if isinstance(value, (int, float)) and str in _as_tuple(kind) else ""
            self.problem(row, fld, f"expected {want}, got {_kind(value)} {shown(value)}{hint}")
            return None
        return value

    def _parsed(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                expected: str, *, required: bool = True, fld: str | None = None) -> Any:
        text = self.get(d, key, row, str, required=required, fld=fld)
        if text is None:
            return None
        try:
            return self.share(parse(text))
        except (InvalidVersion, InvalidSpecifier, ValueError):
            self.problem(row, fld or key, f"invalid {what} {shown(text)} (expected {expected})")
            return None

    def version(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> Version | None:
        return self._parsed(d, key, row, Version, "version", "a version such as '12.8'", **kw)

    def driver(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> DriverVersion | None:
        return self._parsed(d, key, row, DriverVersion.parse, "driver version", "a version such as '580.65.06'", **kw)

    def spec(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> SpecifierSet | None:
        return self._parsed(d, key, row, SpecifierSet, "specifier", "a specifier such as '>=3.9,<3.13'", **kw)

    def cap(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> Capability | None:
        return self._parsed(d, key, row, Capability.parse, "compute capability",
                            "MAJOR.MINOR such as '8.6'", **kw)

    def date(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> str | None:
        """An ISO date, to the day or to the month (``2025-01-23`` or ``2020-07``)."""
        return self._parsed(d, key, row, _iso_date, "date", "YYYY-MM-DD or YYYY-MM", **kw)

    def list_of(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                *, required: bool = True, fld: str | None = None, unique: bool = True) -> tuple[Any, ...] | None:
        """A list of strings, each parsed; an item listed twice is a problem (unless not ``unique``)."""
        fld = fld or key
        items = self.get(d, key, row, list, required=required, fld=fld)
        if items is None:
            return None if required else ()
        out, seen = [], set()
        for i, item in enumerate(items):
            value = self._item(item, row, f"{fld}[{i}]", parse, what)
            if value is None:
                return None
            if unique and value in seen:
                self.problem(row, f"{fld}[{i}]", f"{shown(item)} listed twice")
            seen.add(value)
            out.append(value)
        return self.share(tuple(out))

    def _item(self, item: Any, row: str, fld: str, parse: Callable[[str], Any], what: str) -> Any:
        if not isinstance(item, str):
            self.problem(row, fld, f"expected str, got {_kind(item)} {shown(item)} (quote it)")
            return None
        try:
            return self.share(parse(item))
        except (InvalidVersion, ValueError, re.error) as e:
            self.problem(row, fld, f"invalid {what} {shown(item)}" + (f": {e}" if what == "regular expression" else ""))
            return None

    def caps(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[Capability, ...] | None:
        return self.list_of(d, key, row, Capability.parse, "compute capability", **kw)

    def strings(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[str, ...] | None:
        return self.list_of(d, key, row, str, "string", **kw)

    def choice(self, d: dict[str, Any], key: str, row: str, choices: tuple[_S, ...], *,
               required: bool = True, fld: str | None = None) -> _S | None:
        value = self.get(d, key, row, str, required=required, fld=fld)
        if value is None:
            return None
        if value not in choices:
            self.problem(row, fld or key, f"invalid value {shown(value)} (expected one of: {', '.join(choices)})")
            return None
        return choices[choices.index(value)]  # the choice itself, typed as one

    def provenance(self, d: dict[str, Any], row: str) -> Provenance | None:
        src = d.get("source")
        if isinstance(src, str) and src.strip():
            sources: tuple[str, ...] | None = (src,)
        elif isinstance(src, list) and src and all(isinstance(s, str) and s.strip() for s in src):
            sources = tuple(src)
        else:
            self.problem(row, "source", "missing" if src is None else
                         f"expected a URL or 'owner/repo@tag:path', or a list of them, got {shown(src)}")
            sources = None
        verified = self.choice(d, "verified", row, VERIFIED_LEVELS)
        note = self.get(d, "note", row, str, required=False)
        if sources is None or verified is None:
            return None
        return self.share(Provenance(source=self.share(sources), verified=verified, note=note))

    def driver_floor(self, d: dict[str, Any], key: str, row: str) -> DriverFloor | None:
        m = self.get(d, key, row, dict)
        if m is None:
            return None
        self.known(m, row, ("linux", "windows"), prefix=f"{key}.")
        # an explicit null is allowed (NVIDIA prints "N/A"); a missing key is not
        linux = self.driver(m, "linux", row, required="linux" not in m, fld=f"{key}.linux")
        windows = self.driver(m, "windows", row, required=False, fld=f"{key}.windows")
        if linux is None and m.get("linux") is not None:
            return None
        return DriverFloor(linux=linux, windows=windows)


MAX_SIGNATURE = 1000  # characters; the longest shipped signature has about 330


_SIGNAL_CODE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _signal_code(text: str) -> str:
    """A signal code: kebab-case, at most 40 characters (the evidence reader's codes; a test checks each exists)."""
    if len(text) > 40 or not _SIGNAL_CODE.fullmatch(text):
        raise ValueError("expected a kebab-case code")
    return text


def _checked_regex(text: str) -> str:
    """A signature that compiles and whose search takes time in proportion to the log (:mod:`.patterns`);
    re.error or ValueError, reported with the row, otherwise."""
    from .patterns import backtracking_problem

    if len(text) > MAX_SIGNATURE:
        raise ValueError(f"longer than {MAX_SIGNATURE} characters")
    try:
        re.compile(text, re.MULTILINE)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    why = backtracking_problem(text)
    if why is not None:
        raise ValueError(why)
    return text


def _iso_date(text: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
        raise ValueError(text)
    _dt.date.fromisoformat(text if len(text) == 10 else text + "-01")
    return text


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


_PROV = ("source", "verified", "note")


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
                         "host_source", "host_verified", *_PROV))
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
        prov = r.provenance(d, row)
        if (version is not None and (released is not None or d.get("released", "") is None) and floor is not None
                and lowest is not None and
            highest is not None and prov is not None):
            toolkits.append(CudaToolkit(
                version=version, released=released, min_driver=floor, updates=tuple(updates),
                nvcc_lowest=lowest, nvcc_highest=highest, nvcc_list=nvcc_list, provenance=prov, **host))
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


def _read_known_issues(doc: dict[str, Any], r: _Rows) -> tuple[KnownIssue, ...]:
    out = []
    for row, d in r.rows(doc, "issues", "id"):
        r.known(d, row, ("id", "cause", "severity", "title", "signals", "signatures", "when", "applies_to", "explanation",
                         "fix", *_PROV))
        ident = r.get(d, "id", row, str)
        if ident is not None:
            r.once(("id", ident), "id", row, "id")
        cause = r.choice(d, "cause", row, CAUSE_CODES)
        severity = r.choice(d, "severity", row, SEVERITIES)
        title = r.get(d, "title", row, str)
        signals = r.list_of(d, "signals", row, _signal_code, "signal code", required=False)
        sigs = r.list_of(d, "signatures", row, _checked_regex, "regular expression", required=False)
        explanation, fix = _paragraphs(d, "explanation", row, r), _paragraphs(d, "fix", row, r)
        when = r.get(d, "when", row, str, required=False)
        prov = r.provenance(d, row)
        gpus, variants = _read_applies_to(d, row, r)
        if (ident is not None and cause is not None and severity is not None and title is not None and
            sigs is not None and signals is not None and explanation is not None and fix is not None
                and prov is not None):
            out.append(KnownIssue(id=ident, cause=cause, severity=severity, title=title, signatures=sigs,
                                  explanation=explanation, fix=fix, provenance=prov, signals=signals, gpus=gpus,
                                  torch_variants=variants, when=when))
    return tuple(out)


def _paragraphs(d: dict[str, Any], key: str, row: str, r: _Rows) -> str | None:
    """A known issue's text: a string, or a list of strings joined by line breaks (so that a row can reuse another's
    paragraph through a YAML anchor)."""
    value = r.get(d, key, row, (str, list))
    if not isinstance(value, list):
        return value
    if not value or not all(isinstance(v, str) for v in value):
        r.problem(row, key, "expected a string or a list of strings")
        return None
    return "\n".join(value)


def _read_applies_to(d: dict[str, Any], row: str, r: _Rows) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A known issue's ``applies_to``: the GPUs (gpus.yaml names, checked with the other cross-references) and
    torch variants on which a plan meets it."""
    a = r.mapping(d["applies_to"], row, "applies_to") if d.get("applies_to") is not None else None
    if a is None:
        return (), ()
    r.known(a, row, ("gpus", "torch_variants"), prefix="applies_to.")
    gpus = r.strings(a, "gpus", row, fld="applies_to.gpus") or ()
    variants = r.strings(a, "torch_variants", row, fld="applies_to.torch_variants") or ()
    for v in variants:
        try:
            parse_variant(v)
        except ValueError:
            r.problem(row, "applies_to.torch_variants", f"invalid variant {shown(v)} (expected cuXYZ or cpu)")
    return tuple(gpus), tuple(variants)


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





def _parse_yaml(name: str, tables: tuple[str, ...], data: bytes | str | None, problems: list[MatrixProblem]
                ) -> dict[str, Any] | None:
    """One file's YAML document, or None (and a problem) when it is missing, unreadable, malformed or not a
    mapping. ``data`` is the file's bytes, None when it is absent, or why it was not read."""
    import yaml

    if data is None:
        if name not in OPTIONAL_FILES:
            problems.append(MatrixProblem(name, "", "", "file missing"))
        return None
    if isinstance(data, str):
        problems.append(problem(name, "", "", data))
        return None
    try:
        doc = _load_yaml(data)
    except _AliasBomb as e:
        problems.append(problem(name, "", "", str(e)))
        return None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problems.append(problem(name, where, "", f"not valid YAML: {getattr(e, 'problem', e)}"))
        return None
    except (ValueError, OverflowError, RecursionError) as e:  # a value Python cannot make (a 5000-digit int, a 13th month)
        problems.append(problem(name, "", "", f"not valid YAML: {str(e).split(';')[0]}"))
        return None
    if not isinstance(doc, dict):
        problems.append(MatrixProblem(name, "", "", f"expected a mapping at the top, got {_kind(doc)}"))
        return None
    for k in doc:
        if k not in tables:
            problems.append(problem(name, "", cut(str(k)), f"unknown table (expected: {', '.join(tables)})"))
    return doc


class _AliasBomb(ValueError):
    """YAML aliases that expand a small file into a huge document."""


def _load_yaml(data: bytes) -> Any:
    """The document (PyYAML's C loader): composed first, and when it has aliases (a ``*``), its size with every
    alias expanded is bounded before anything is built from it."""

    loader = _yaml_loader()(data)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if b"*" in data:
            limit = max(100_000, 4 * len(data))
            if _expanded_size(node, limit) > limit:
                raise _AliasBomb(f"its aliases expand it to more than {limit:,} values (an alias bomb?): a matrix "
                                 "file needs at most a few thousand values; write them out")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(root: Any, limit: int) -> int:
    """How many nodes the document has with every alias (a shared node) and merge key counted where it is used,
    up to ``limit + 1``: each node is visited once, so aliases of aliases (a "billion laughs") cost no more than
    the file's own nodes. An alias inside the value it names (a cycle) is an _AliasBomb."""
    import yaml

    sizes: dict[int, int] = {}
    entered: set[int] = set()  # expanded, not finished: the nodes on the path from the root
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in sizes:
            stack.pop()
            continue
        kids = _children(node, yaml.MappingNode, yaml.ScalarNode)
        if id(node) not in entered:
            entered.add(id(node))
            pending = [k for k in kids if not isinstance(k, yaml.ScalarNode) and id(k) not in sizes]
            if any(id(k) in entered for k in pending):
                raise _AliasBomb("an alias names a value that contains it (a cycle): a matrix file needs none")
            if pending:
                stack.extend(pending)
                continue
        stack.pop()
        size = sizes[id(node)] = 1 + sum(1 if isinstance(k, yaml.ScalarNode) else sizes[id(k)] for k in kids)
        if size > limit:
            return size
    return sizes.get(id(root), 1)


def _children(node: Any, mapping: type, scalar: type) -> list[Any]:
    """A node's children: a mapping's keys and values, a sequence's items; a scalar has none."""
    value: Any = node.value
    if isinstance(node, scalar):
        return []
    return [n for pair in value for n in pair] if isinstance(node, mapping) else list(value)


def parse_matrix(root: Path, raw: Mapping[str, bytes | str | None], revision: str) -> Matrix:
    """The validated matrix from its files' bytes, or MatrixError listing every problem."""
    problems: list[MatrixProblem] = []
    shared: dict[Any, Any] = {}
    docs = {name: _parse_yaml(name, tables, raw[name], problems) for name, tables in FILES.items()}

    def read(name: str, reader: Callable[..., Any], *extra: Any, empty: Any) -> Any:
        doc = docs[name]
        return empty if doc is None else reader(doc, _Rows(name, problems, shared), *extra)

    wheels = {pkg: read(f"wheels/{pkg}.yaml", _read_wheels, pkg, empty={}) for pkg in WHEEL_PACKAGES}
    majors, toolkits = read("cuda.yaml", _read_cuda, empty=((), ()))
    archs, gpus = read("gpus.yaml", _read_gpus, empty=((), ()))
    torch_index, torch = read("torch.yaml", _read_torch, wheels["torch"], empty=(None, ()))
    vllm_index, vllm = read("vllm.yaml", _read_vllm, wheels["vllm"], empty=(None, ()))
    issues = read("known_issues.yaml", _read_known_issues, empty=())
    jetpacks, jetson_wheels = read("jetson.yaml", _read_jetson, empty=((), ()))
    # rows of a file that could not be read are not "missing" again in the cross-references
    unreadable = {name for name, doc in docs.items() if doc is None}
    if "torch.yaml" in unreadable:
        wheels["torch"] = {}
    if "vllm.yaml" in unreadable:
        wheels["vllm"] = {}

    missing_prov = Provenance(source=("",), verified="unverified")
    m = Matrix(
        path=str(root), revision=revision,
        cuda_majors=majors, toolkits=toolkits, architectures=archs, gpus=gpus,
        torch_index=torch_index[0] if torch_index else "", torch_index_provenance=torch_index[1] if torch_index else missing_prov,
        torch=torch,
        vllm_index=vllm_index[0] if vllm_index else "", vllm_index_provenance=vllm_index[1] if vllm_index else missing_prov,
        vllm=vllm, known_issues=issues,
        extra_wheels={k: wheels[k] for k in ("torchvision", "torchaudio", "xformers", "flashinfer-python")},
        jetpacks=jetpacks, jetson_wheels=jetson_wheels,
    )
    cross_check(m, wheels, docs, problems)
    if problems:
        raise MatrixError(problems)
    return m


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
