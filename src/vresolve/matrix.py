"""The compatibility matrix: YAML under ``compat_matrix/`` -> frozen typed objects.

``load_matrix(path)`` reads every file once (PyYAML's C loader), checks each row against
the schema of ``compat_matrix/SCHEMA.md`` and the tables against each other, and either
returns a :class:`Matrix` or raises :class:`MatrixError` listing *every* problem, each
naming its file, row and field. Versions, specifiers, capabilities and regular
expressions are parsed here, once; nothing after this module sees a raw version string.

``matrix_to_dicts(matrix)`` is the inverse (file name -> YAML document), so that
``load(dump(load(x))) == load(x)``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import os
import pickle
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from .errors import MatrixError, MatrixProblem, UsageError
from .values import PLATFORMS, VERIFIED_LEVELS, ArchList, Capability, DriverVersion, exact_pin, parse_variant

__all__ = [
    "CAUSE_CODES",
    "FILES",
    "Provenance",
    "DriverFloor",
    "CudaMajor",
    "CudaToolkit",
    "Architecture",
    "Gpu",
    "TorchVariant",
    "TorchRelease",
    "Kernels",
    "Asset",
    "VllmVariant",
    "Wheel",
    "SourceBuild",
    "VllmRelease",
    "KnownIssue",
    "Matrix",
    "default_matrix_path",
    "wheel_platform",
    "dump_yaml",
    "load_matrix",
    "matrix_to_dicts",
]


def _yaml_loader() -> Any:
    """PyYAML's C loader (about 10x faster), or the pure-Python one where libyaml is missing."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CAUSE_CODES = (
    "source-tree-shadowing",
    "cpu-only-build",
    "torch-abi-mismatch",
    "cuda-variant-mismatch",
    "arch-not-in-build",
    "driver-too-old",
    "ptx-toolchain-too-new",
    "optional-kernel-missing",
    "toolkit-mismatch",
    "build-isolation",
    "build-oom",
    "installer-replaced-torch",
    "library-not-found",
    "nvml-driver-mismatch",
    "gpu-too-old-for-feature",
    "python-unsupported",
    "glibc-too-old",
    "companion-mismatch",
)
SEVERITIES = ("error", "warning", "info")
SEGMENTS = ("datacenter", "workstation", "consumer", "jetson", "superchip")
VLLM_VARIANT_SOURCES = ("vllm-index", "release-assets", "pypi")

#: file name -> the tables (top-level keys) it holds
FILES: dict[str, tuple[str, ...]] = {
    "cuda.yaml": ("majors", "toolkits"),
    "gpus.yaml": ("architectures", "gpus"),
    "torch.yaml": ("index", "releases"),
    "vllm.yaml": ("index", "releases"),
    "known_issues.yaml": ("issues",),
    "wheels/torch.yaml": ("package", "releases"),
    "wheels/torchvision.yaml": ("package", "releases"),
    "wheels/torchaudio.yaml": ("package", "releases"),
    "wheels/vllm.yaml": ("package", "releases"),
    "wheels/xformers.yaml": ("package", "releases"),
    "wheels/flashinfer-python.yaml": ("package", "releases"),
}
OPTIONAL_FILES = ("wheels/xformers.yaml", "wheels/flashinfer-python.yaml")  # companions vLLM pins; may be absent
WHEEL_PACKAGES = ("torch", "torchvision", "torchaudio", "vllm", "xformers", "flashinfer-python")


# --------------------------------------------------------------------------- objects
# Frozen dataclasses without __slots__: the validated matrix is cached as a pickle, and
# unpickling slotted dataclasses goes through a Python-level __setstate__ per object
# (about three times slower for the matrix's ~5,000 objects).


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where a row's facts come from and how they were checked."""

    source: tuple[str, ...]
    verified: str
    note: str | None = None

    @property
    def trusted(self) -> bool:
        """False for ``unverified`` rows, which the resolver treats cautiously."""
        return self.verified != "unverified"


@dataclass(frozen=True, kw_only=True)
class DriverFloor:
    """Minimum driver versions; None where NVIDIA publishes none (written as ``null``)."""

    linux: DriverVersion | None
    windows: DriverVersion | None = None


@dataclass(frozen=True, kw_only=True)
class CudaMajor:
    major: int
    minor_compat_driver: DriverFloor
    provenance: Provenance


@dataclass(frozen=True, kw_only=True)
class ToolkitUpdate:
    version: Version
    min_driver: DriverFloor


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    version: Version  # major.minor
    released: str  # "2025-01-23", or "2020-07" where only the month is sourced
    min_driver: DriverFloor
    updates: tuple[ToolkitUpdate, ...]
    nvcc_lowest: Capability
    nvcc_highest: Capability
    nvcc_list: tuple[Capability, ...] | None
    provenance: Provenance
    host_gcc: tuple[int, int] | None = None  # (min, max) GCC major versions this nvcc supports
    install_conda: tuple[str, tuple[str, ...]] | None = None  # (channel, packages) installing exactly this nvcc
    install_pip: tuple[str, ...] = ()  # NVIDIA's pip packages for exactly this nvcc
    host_provenance: Provenance | None = None

    def can_target(self, cc: Capability) -> bool:
        """Whether this toolkit's nvcc can emit SASS for ``cc``."""
        if self.nvcc_list is not None:
            return cc.base in self.nvcc_list
        return self.nvcc_lowest <= cc.base <= self.nvcc_highest


@dataclass(frozen=True, kw_only=True)
class Architecture:
    family: str
    compute_capabilities: tuple[Capability, ...]
    provenance: Provenance


@dataclass(frozen=True, kw_only=True)
class Gpu:
    name: str
    names: tuple[str, ...]
    aliases: tuple[str, ...]
    compute_capability: Capability
    family: str
    segment: str
    memory_gib: float | None
    provenance: Provenance


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """Facts read off one wheel's own METADATA (generated into ``wheels/*.yaml``)."""

    filename: str
    platform: str
    manylinux: str | None  # "2.28", or None for other platform tags
    build: int | None  # the build tag of a re-upload (``-2-`` in the name)
    python_tag: str  # "cp38-abi3", "cp312-cp312"
    requires_python: SpecifierSet | None
    requires: Mapping[str, SpecifierSet]  # relevant Requires-Dist, markers evaluated for the platform
    pythons: tuple[Version, ...]  # CPython versions with a wheel on this platform (torch*)
    cuda: Version | None  # torch: the CUDA its nvidia-* / cuda-toolkit requirements name
    sha256: str | None
    yanked: bool
    provenance: Provenance
    extensions: tuple[str, ...] = ()  # compiled modules the wheel ships (vllm: read off its zip directory)
    features: tuple[str, ...] = ()  # what it can do, known by a file it ships ("download-kernels")


@dataclass(frozen=True, kw_only=True)
class TorchVariant:
    variant: str  # "cu128" | "cpu"
    cuda: Version | None
    pypi_default: frozenset[str]  # platforms where PyPI's plain wheel is this variant
    archs: Mapping[str, ArchList]  # platform -> what the build contains
    provenance: Provenance

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self.archs)


@dataclass(frozen=True, kw_only=True)
class TorchRelease:
    version: Version
    python: tuple[Version, ...]
    companions: Mapping[str, Version]
    variants: tuple[TorchVariant, ...]
    wheels: tuple[Wheel, ...]  # PyPI's wheels (generated)
    provenance: Provenance

    def variant(self, name: str) -> TorchVariant | None:
        return next((v for v in self.variants if v.variant == name), None)


@dataclass(frozen=True, kw_only=True)
class Kernels:
    archs: ArchList
    min_compute_capability: Capability


@dataclass(frozen=True, kw_only=True)
class SourceBuild:
    """How a vLLM release builds from source (its CMakeLists, setup.py and scripts at the tag)."""

    cuda_archs: tuple[tuple[SpecifierSet, tuple[Capability, ...]], ...]  # (nvcc version range, CUDA_SUPPORTED_ARCHS)
    use_existing_torch: str | None  # the script's path in the tree (it moved to tools/ in 0.31.0), or None
    requirements: str | None  # the build-requirements file
    precompiled: bool  # VLLM_USE_PRECOMPILED
    cpu: bool  # VLLM_TARGET_DEVICE=cpu
    cmake: Version | None
    provenance: Provenance

    def archs_for(self, cuda: Version) -> tuple[Capability, ...] | None:
        """What vLLM's CMake accepts from TORCH_CUDA_ARCH_LIST with an nvcc of this CUDA."""
        for spec, archs in self.cuda_archs:
            if spec.contains(cuda, prereleases=True):
                return archs
        return None


@dataclass(frozen=True, kw_only=True)
class Asset:
    """Where a release-asset wheel is downloaded from: its URL (``{cp}``: the CPython tag, cp310)."""

    url: str
    provenance: Provenance

    def url_for(self, python: Version) -> str:
        return self.url.replace("{cp}", f"cp{python.major}{python.minor}")


@dataclass(frozen=True, kw_only=True)
class VllmVariant:
    variant: str
    cuda: Version | None
    where: str
    platforms: tuple[str, ...]
    kernels: Kernels | None  # None: the release's kernels
    torch_pins: Mapping[str, Version]  # platform -> the torch this build pins, where not the PyPI wheel's
    provenance: Provenance
    asset: Asset | None = None  # where == "release-assets": the wheel's download URL

    @property
    def trusted(self) -> bool:
        """The build's facts and, for a release asset, its URL are verified."""
        return self.provenance.trusted and (self.asset is None or self.asset.provenance.trusted)


@dataclass(frozen=True, kw_only=True)
class VllmRelease:
    version: Version
    cuda: Version | None  # CUDA of the PyPI wheel
    kernels: Kernels | None
    variants: tuple[VllmVariant, ...]
    wheels: tuple[Wheel, ...]  # PyPI's wheels (generated)
    provenance: Provenance
    build: SourceBuild | None = None

    def wheels_for(self, platform: str) -> tuple[Wheel, ...]:
        """This platform's wheels, the highest build tag first (what installers pick)."""
        ws = [w for w in self.wheels if w.platform == platform and not w.yanked]
        return tuple(sorted(ws, key=lambda w: w.build or 0, reverse=True))

    def pins(self, platform: str) -> Mapping[str, SpecifierSet]:
        """The Requires-Dist pins of the wheel an installer would take on ``platform``."""
        ws = self.wheels_for(platform)
        return ws[0].requires if ws else {}

    @property
    def requires_python(self) -> SpecifierSet | None:
        return next((w.requires_python for w in self.wheels if w.requires_python), None)


@dataclass(frozen=True, kw_only=True)
class KnownIssue:
    """A log signature -> cause -> explanation and fix. ``patterns()`` compiles on first use."""

    id: str
    cause: str
    severity: str
    title: str
    signatures: tuple[str, ...]  # regular expressions, checked at load; see patterns()
    explanation: str
    fix: str
    provenance: Provenance

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(s, re.MULTILINE) for s in self.signatures)  # re caches compiled patterns


@dataclass(frozen=True, kw_only=True)
class Matrix:
    path: str = field(compare=False)
    revision: str = field(compare=False)  # sha256 of the files' bytes, first 16 hex digits
    cuda_majors: tuple[CudaMajor, ...]
    toolkits: tuple[CudaToolkit, ...]
    architectures: tuple[Architecture, ...]
    gpus: tuple[Gpu, ...]
    torch_index: str
    torch_index_provenance: Provenance
    torch: tuple[TorchRelease, ...]
    vllm_index: str
    vllm_index_provenance: Provenance
    vllm: tuple[VllmRelease, ...]
    known_issues: tuple[KnownIssue, ...]
    extra_wheels: Mapping[str, Mapping[Version, tuple[Wheel, ...]]]  # torchvision, torchaudio

    def toolkit(self, version: Version) -> CudaToolkit | None:
        """The toolkit row of ``version``'s major.minor (12.8.1 -> the 12.8 row)."""
        index = _INDEXES.get(("toolkits", self.revision))
        if index is None:
            index = _INDEXES[("toolkits", self.revision)] = {(t.version.major, t.version.minor): t
                                                             for t in self.toolkits}
        return index.get((version.major, version.minor))

    def cuda_major(self, major: int) -> CudaMajor | None:
        return next((m for m in self.cuda_majors if m.major == major), None)

    def torch_release(self, version: Version) -> TorchRelease | None:
        return next((r for r in self.torch if r.version == version), None)

    def vllm_release(self, version: Version) -> VllmRelease | None:
        return next((r for r in self.vllm if r.version == version), None)

    def find_gpu(self, text: str) -> Gpu | None:
        """A GPU by its reported name, another reported name or an alias (case-insensitive)."""
        key = _gpu_key(text)
        return next(
            (g for g in self.gpus if key in {_gpu_key(n) for n in (g.name, *g.names, *g.aliases)}),
            None,
        )


_INDEXES: dict[tuple[str, str], Any] = {}  # lookup tables per matrix revision, built on first use


def _gpu_key(text: str) -> str:
    return " ".join(text.lower().split())


# --------------------------------------------------------------------------- location


def default_matrix_path() -> Path:
    """``$VRESOLVE_MATRIX``, else the copy inside the installed package, else the checkout's."""
    env = os.environ.get("VRESOLVE_MATRIX")
    if env:
        return Path(env)
    beside = Path(__file__).parent / "compat_matrix"  # where the wheel puts it: the package's own resource
    if beside.is_dir():
        return beside
    from importlib import resources  # slower to import; for installs that are not plain directories

    packaged = resources.files("vresolve") / "compat_matrix"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "compat_matrix"
    return checkout


# --------------------------------------------------------------------------- reading


class _Rows:
    """Typed getters over one YAML file that collect problems instead of raising.

    Each getter returns None after recording a problem; callers drop rows that came back
    incomplete, so one bad value never hides the next one.
    """

    def __init__(self, file: str, problems: list[MatrixProblem]) -> None:
        self.file = file
        self.problems = problems

    def problem(self, row: str, fld: str, message: str) -> None:
        self.problems.append(MatrixProblem(self.file, row, fld, message))

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
                name += f" {item[label]!r}"
            d = self.mapping(item, name, "")
            if d is not None:
                yield name, d

    def known(self, d: dict[str, Any], row: str, allowed: tuple[str, ...], prefix: str = "") -> None:
        for k in d:
            if k not in allowed:
                self.problem(row, prefix + str(k), f"unknown field (expected one of: {', '.join(allowed)})")

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
            self.problem(row, fld, f"expected {want}, got {_kind(value)} {value!r}{hint}")
            return None
        return value

    def _parsed(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                expected: str, *, required: bool = True, fld: str | None = None) -> Any:
        text = self.get(d, key, row, str, required=required, fld=fld)
        if text is None:
            return None
        try:
            return parse(text)
        except (InvalidVersion, InvalidSpecifier, ValueError):
            self.problem(row, fld or key, f"invalid {what} {text!r} (expected {expected})")
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

    def date(self, d: dict[str, Any], key: str, row: str) -> str | None:
        """An ISO date, to the day or to the month (``2025-01-23`` or ``2020-07``)."""
        return self._parsed(d, key, row, _iso_date, "date", "YYYY-MM-DD or YYYY-MM")

    def list_of(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                *, required: bool = True, fld: str | None = None) -> tuple[Any, ...] | None:
        fld = fld or key
        items = self.get(d, key, row, list, required=required, fld=fld)
        if items is None:
            return None if required else ()
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, str):
                self.problem(row, f"{fld}[{i}]", f"expected str, got {_kind(item)} {item!r} (quote it)")
                return None
            try:
                out.append(parse(item))
            except (InvalidVersion, ValueError, re.error) as e:
                self.problem(row, f"{fld}[{i}]", f"invalid {what} {item!r}" + (f": {e}" if what == "regular expression" else ""))
                return None
        return tuple(out)

    def caps(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[Capability, ...] | None:
        return self.list_of(d, key, row, Capability.parse, "compute capability", **kw)

    def strings(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[str, ...] | None:
        return self.list_of(d, key, row, str, "string", **kw)

    def choice(self, d: dict[str, Any], key: str, row: str, choices: tuple[str, ...], *,
               required: bool = True, fld: str | None = None) -> str | None:
        value = self.get(d, key, row, str, required=required, fld=fld)
        if value is not None and value not in choices:
            self.problem(row, fld or key, f"invalid value {value!r} (expected one of: {', '.join(choices)})")
            return None
        return value

    def provenance(self, d: dict[str, Any], row: str) -> Provenance | None:
        src = d.get("source")
        if isinstance(src, str) and src.strip():
            sources: tuple[str, ...] | None = (src,)
        elif isinstance(src, list) and src and all(isinstance(s, str) and s.strip() for s in src):
            sources = tuple(src)
        else:
            self.problem(row, "source", "missing" if src is None else
                         f"expected a URL or 'owner/repo@tag:path', or a list of them, got {src!r}")
            sources = None
        verified = self.choice(d, "verified", row, VERIFIED_LEVELS)
        note = self.get(d, "note", row, str, required=False)
        if sources is None or verified is None:
            return None
        return Provenance(source=sources, verified=verified, note=note)

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


def _checked_regex(text: str) -> str:
    re.compile(text, re.MULTILINE)  # raises re.error, reported with the row
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


def _read_cuda(doc: dict[str, Any], r: _Rows) -> tuple[tuple[CudaMajor, ...], tuple[CudaToolkit, ...]]:  # noqa: C901 (issue 12: to split)
    majors = []
    for row, d in r.rows(doc, "majors", "major"):
        r.known(d, row, ("major", "minor_compat_driver", *_PROV))
        major = r.get(d, "major", row, int)
        floor = r.driver_floor(d, "minor_compat_driver", row)
        prov = r.provenance(d, row)
        if None not in (major, floor, prov):
            majors.append(CudaMajor(major=major, minor_compat_driver=floor, provenance=prov))
    toolkits = []
    for row, d in r.rows(doc, "toolkits", "version"):
        r.known(d, row, ("version", "released", "min_driver", "updates", "nvcc_archs", "host_gcc", "install",
                         "host_source", "host_verified", *_PROV))
        version = r.version(d, "version", row)
        if version is not None and len(version.release) != 2:
            r.problem(row, "version", f"expected MAJOR.MINOR, got {d['version']!r}")
            version = None
        released = r.date(d, "released", row)
        floor = r.driver_floor(d, "min_driver", row)
        updates = []
        for i, u in enumerate(r.get(d, "updates", row, list, required=False) or ()):
            fld = f"updates[{i}]"
            u = r.mapping(u, row, fld)
            if u is None:
                continue
            r.known(u, row, ("version", "linux", "windows"), prefix=fld + ".")
            uv = r.version(u, "version", row, fld=f"{fld}.version")
            ul = r.driver(u, "linux", row, required="linux" not in u, fld=f"{fld}.linux")
            uw = r.driver(u, "windows", row, required=False, fld=f"{fld}.windows")
            if uv is not None:
                updates.append(ToolkitUpdate(version=uv, min_driver=DriverFloor(linux=ul, windows=uw)))
        nvcc = r.get(d, "nvcc_archs", row, dict)
        lowest = highest = None
        nvcc_list = None
        if nvcc is not None:
            r.known(nvcc, row, ("lowest", "highest", "list"), prefix="nvcc_archs.")
            lowest = r.cap(nvcc, "lowest", row, fld="nvcc_archs.lowest")
            highest = r.cap(nvcc, "highest", row, fld="nvcc_archs.highest")
            nvcc_list = r.caps(nvcc, "list", row, required=False, fld="nvcc_archs.list") or None
            if lowest and highest and lowest > highest:
                r.problem(row, "nvcc_archs", f"lowest {lowest} is above highest {highest}")
            if nvcc_list and lowest and highest and (min(nvcc_list) != lowest or max(nvcc_list) != highest):
                r.problem(row, "nvcc_archs.list",
                          f"spans {min(nvcc_list)}..{max(nvcc_list)}, but lowest/highest say {lowest}..{highest}")
        host = _read_toolkit_host(d, row, r)
        prov = r.provenance(d, row)
        if None not in (version, released, floor, lowest, highest, prov):
            toolkits.append(CudaToolkit(
                version=version, released=released, min_driver=floor, updates=tuple(updates),
                nvcc_lowest=lowest, nvcc_highest=highest, nvcc_list=nvcc_list, provenance=prov, **host))
    return tuple(majors), tuple(toolkits)


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
                r.problem(row, "host_gcc", f"expected GCC major versions min <= max, got {lo!r}..{hi!r}")
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
        r.known(d, row, ("family", "compute_capabilities", *_PROV))
        family = r.get(d, "family", row, str)
        ccs = r.caps(d, "compute_capabilities", row)
        prov = r.provenance(d, row)
        if None not in (family, ccs, prov):
            archs.append(Architecture(family=family, compute_capabilities=ccs, provenance=prov))
    gpus = []
    for row, d in r.rows(doc, "gpus", "name"):
        r.known(d, row, ("name", "names", "aliases", "compute_capability", "family", "segment",
                         "memory_gib", *_PROV))
        name = r.get(d, "name", row, str)
        names = r.strings(d, "names", row, required=False)
        aliases = r.strings(d, "aliases", row, required=False)
        cc = r.cap(d, "compute_capability", row)
        family = r.get(d, "family", row, str)
        segment = r.choice(d, "segment", row, SEGMENTS)
        memory = r.get(d, "memory_gib", row, (int, float), required=False)
        prov = r.provenance(d, row)
        if None not in (name, names, aliases, cc, family, segment, prov):
            gpus.append(Gpu(name=name, names=names, aliases=aliases, compute_capability=cc,
                            family=family, segment=segment, memory_gib=memory, provenance=prov))
    return tuple(archs), tuple(gpus)


def _read_index(doc: dict[str, Any], r: _Rows) -> tuple[str, Provenance] | None:
    d = r.get(doc, "index", "", dict, fld="index")
    if d is None:
        return None
    r.known(d, "index", ("url", *_PROV))
    url = r.get(d, "url", "index", str)
    if url is not None and not re.match(r"^https?://", url):
        r.problem("index", "url", f"expected an http(s) URL, got {url!r}")
        url = None
    prov = r.provenance(d, "index")
    return None if url is None or prov is None else (url.rstrip("/"), prov)


def _read_archs_by_platform(d: dict[str, Any], key: str, row: str, r: _Rows) -> dict[str, ArchList] | None:
    m = r.get(d, key, row, dict)
    if m is None:
        return None
    out = {}
    for plat, al in m.items():
        fld = f"{key}.{plat}"
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
    sass = r.caps(al, "sass", row, fld=f"{fld}.sass")
    ptx = r.caps(al, "ptx", row, required=False, fld=f"{fld}.ptx")
    if sass is None or ptx is None:
        return None
    for name, caps in (("sass", sass), ("ptx", ptx)):
        if list(caps) != sorted(set(caps)):
            r.problem(row, f"{fld}.{name}", "expected ascending capabilities without repeats")
    return ArchList(sass=sass, ptx=ptx)


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
        r.problem(row, f"{fld}.cuda", f"{cuda} does not match variant {name!r} (CUDA {implied})")
        return None
    if implied is None and cuda is not None:
        r.problem(row, f"{fld}.cuda", "a cpu variant has no CUDA version")
    return name, cuda


def _read_torch(doc: dict[str, Any], r: _Rows, wheels: dict[Version, tuple[Wheel, ...]]  # noqa: C901 (issue 12: to split)
                ) -> tuple[tuple[str, Provenance] | None, tuple[TorchRelease, ...]]:
    index = _read_index(doc, r)
    releases = []
    for row, d in r.rows(doc, "releases", "version"):
        r.known(d, row, ("version", "python", "companions", "variants", *_PROV))
        version = r.version(d, "version", row)
        python = r.list_of(d, "python", row, Version, "Python version")
        comps = r.get(d, "companions", row, dict)
        companions = {}
        for k, v in (comps or {}).items():
            if v is None:
                continue  # no release of that companion for this torch
            if k not in ("torchvision", "torchaudio", "triton"):
                r.problem(row, f"companions.{k}", "unknown companion (expected torchvision, torchaudio, triton)")
                continue
            cv = r.version(comps, k, row, fld=f"companions.{k}")
            if cv is not None:
                companions[k] = cv
        variants = []
        seen: set[str] = set()
        for i, vd in enumerate(r.get(d, "variants", row, list) or ()):
            fld = f"variants[{i}]"
            vd = r.mapping(vd, row, fld)
            if vd is None:
                continue
            r.known(vd, row, ("variant", "cuda", "pypi_default", "archs", *_PROV), prefix=fld + ".")
            vc = _read_variant_cuda(vd, row, r, fld)
            defaults = r.get(vd, "pypi_default", row, dict, required=False, fld=f"{fld}.pypi_default") or {}
            archs = _read_archs_by_platform(vd, "archs", f"{row} {fld}", r)
            prov = r.provenance(vd, f"{row} {fld}")
            if vc is None or archs is None or prov is None:
                continue
            if vc[0] in seen:
                r.problem(row, f"{fld}.variant", f"variant {vc[0]!r} listed twice")
            seen.add(vc[0])
            for plat in defaults:
                if plat not in archs:
                    r.problem(row, f"{fld}.pypi_default.{plat}", f"the variant has no archs for {plat}")
            variants.append(TorchVariant(
                variant=vc[0], cuda=vc[1], archs=archs, provenance=prov,
                pypi_default=frozenset(p for p, flag in defaults.items() if flag is True)))
        prov = r.provenance(d, row)
        if None not in (version, python, prov):
            releases.append(TorchRelease(version=version, python=python, companions=companions,
                                         variants=tuple(variants), wheels=wheels.get(version, ()),
                                         provenance=prov))
    return index, tuple(releases)


def _read_vllm(doc: dict[str, Any], r: _Rows, wheels: dict[Version, tuple[Wheel, ...]]  # noqa: C901 (issue 12: to split)
               ) -> tuple[tuple[str, Provenance] | None, tuple[VllmRelease, ...]]:
    index = _read_index(doc, r)
    releases = []
    for row, d in r.rows(doc, "releases", "version"):
        r.known(d, row, ("version", "cuda", "kernels", "variants", "build", *_PROV))
        version = r.version(d, "version", row)
        cuda = r.version(d, "cuda", row, required=False)
        build = _read_source_build(d["build"], row, r) if d.get("build") is not None else None
        kernels = _read_kernels(d["kernels"], row, r) if d.get("kernels") is not None else None
        if cuda is not None and kernels is None:
            r.problem(row, "kernels", "missing (a CUDA wheel needs its kernels' arch list)")
        variants = []
        for i, vd in enumerate(r.get(d, "variants", row, list, required=False) or ()):
            fld = f"variants[{i}]"
            vd = r.mapping(vd, row, fld)
            if vd is None:
                continue
            r.known(vd, row, ("variant", "cuda", "where", "platforms", "kernels", "torch_pins", "asset", *_PROV),
                    prefix=fld + ".")
            vc = _read_variant_cuda(vd, row, r, fld)
            where = r.choice(vd, "where", row, VLLM_VARIANT_SOURCES, fld=f"{fld}.where")
            plats = r.strings(vd, "platforms", row, fld=f"{fld}.platforms")
            for p in plats or ():
                if p not in PLATFORMS:
                    r.problem(row, f"{fld}.platforms", f"unknown platform {p!r}")
            vk = (_read_kernels(vd["kernels"], row, r, f"{fld}.kernels")
                  if vd.get("kernels") is not None else None)
            torch_pins = {}
            for plat, pin in (r.get(vd, "torch_pins", row, dict, required=False, fld=f"{fld}.torch_pins") or {}).items():
                if plat not in (plats or ()):
                    r.problem(row, f"{fld}.torch_pins.{plat}", "not one of the variant's platforms")
                    continue
                pv = r.version({plat: pin}, plat, row, fld=f"{fld}.torch_pins.{plat}")
                if pv is not None:
                    torch_pins[plat] = pv
            prov = r.provenance(vd, f"{row} {fld}")
            asset = _read_asset(vd, row, f"{fld}.asset", r, version, vc[0] if vc else None) \
                if vd.get("asset") is not None else None
            if where == "release-assets" and asset is None:
                r.problem(row, f"{fld}.asset", "missing (a release-asset build needs its download URL)")
            elif None not in (vc, where, plats, prov):
                variants.append(VllmVariant(variant=vc[0], cuda=vc[1], where=where, platforms=plats,
                                            kernels=vk, torch_pins=torch_pins, provenance=prov, asset=asset))
        prov = r.provenance(d, row)
        if None not in (version, prov):
            releases.append(VllmRelease(version=version, cuda=cuda, kernels=kernels,
                                        variants=tuple(variants), wheels=wheels.get(version, ()),
                                        provenance=prov, build=build))
    return index, tuple(releases)


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
        r.problem(row, f"{fld}.url", f"expected an https URL of a wheel ({{cp}} the only placeholder), got {url!r}")
        return None
    try:
        _, wversion, _, _ = parse_wheel_filename(name)
    except InvalidWheelFilename as e:
        r.problem(row, f"{fld}.url", str(e))
        return None
    if version is not None and (wversion.public != version.public or wversion.local != (variant or None)):
        r.problem(row, f"{fld}.url", f"names {wversion}, not {version}+{variant}")
        return None
    return Asset(url=url, provenance=prov)


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
        r.known(d, row, ("id", "cause", "severity", "title", "signatures", "explanation", "fix", *_PROV))
        ident = r.get(d, "id", row, str)
        cause = r.choice(d, "cause", row, CAUSE_CODES)
        severity = r.choice(d, "severity", row, SEVERITIES)
        title = r.get(d, "title", row, str)
        sigs = r.list_of(d, "signatures", row, _checked_regex, "regular expression")
        if sigs == ():
            r.problem(row, "signatures", "expected at least one regular expression")
        explanation = r.get(d, "explanation", row, str)
        fix = r.get(d, "fix", row, str)
        prov = r.provenance(d, row)
        if None not in (ident, cause, severity, title, sigs, explanation, fix, prov):
            out.append(KnownIssue(id=ident, cause=cause, severity=severity, title=title, signatures=sigs,
                                  explanation=explanation, fix=fix, provenance=prov))
    return tuple(out)


_MANYLINUX_RE = re.compile(r"^manylinux_(\d+)_(\d+)_(x86_64|aarch64)$")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def wheel_platform(tag_platform: str) -> tuple[str, str | None] | None:
    """``manylinux_2_28_x86_64`` -> ("linux-x86_64", "2.28"); ``win_amd64`` -> ("windows-x86_64", None)."""
    m = _MANYLINUX_RE.match(tag_platform)
    if m:
        return f"linux-{m[3]}", f"{m[1]}.{m[2]}"
    for legacy, glibc in _LEGACY_MANYLINUX.items():
        if tag_platform.startswith(legacy + "_"):
            return f"linux-{tag_platform[len(legacy) + 1:]}", glibc
    if tag_platform.startswith("linux_"):
        return f"linux-{tag_platform[6:]}", None
    if tag_platform == "win_amd64":
        return "windows-x86_64", None
    if tag_platform == "any":
        return "any", None
    return None


def _read_wheels(doc: dict[str, Any], r: _Rows, package: str) -> dict[Version, tuple[Wheel, ...]]:
    if doc.get("package") != package:
        r.problem("", "package", f"expected {package!r}, got {doc.get('package')!r}")
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
                wheels.append(w)
        if version is not None:
            if version in out:
                r.problem(row, "version", "release listed twice")
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
            requires[k] = s
    pythons = r.list_of(wd, "pythons", row, Version, "Python version", required=False, fld=f"{fld}.pythons")
    cuda = r.version(wd, "cuda", row, required=False, fld=f"{fld}.cuda")
    extensions = r.list_of(wd, "extensions", row, _module_name, "dotted module name", required=False,
                           fld=f"{fld}.extensions")
    features = r.list_of(wd, "features", row, str, "feature", required=False, fld=f"{fld}.features")
    sha = r.get(wd, "sha256", row, str, required=False, fld=f"{fld}.sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        r.problem(row, f"{fld}.sha256", f"expected 64 hex digits, got {sha!r}")
    yanked = r.get(wd, "yanked", row, bool, required=False, fld=f"{fld}.yanked") or False
    prov = r.provenance(wd, f"{row} {fld}")
    if parsed is None or prov is None or pythons is None or extensions is None or features is None:
        return None
    (plat, manylinux), build, python_tag = parsed
    return Wheel(filename=filename, platform=plat, manylinux=manylinux, build=build, python_tag=python_tag,
                 requires_python=rp, requires=requires, pythons=pythons, cuda=cuda, sha256=sha,
                 yanked=yanked, provenance=prov, extensions=extensions, features=features)


_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _module_name(text: str) -> str:
    """A dotted Python module name (``vllm._C``); ValueError otherwise (the value goes into a check)."""
    if not isinstance(text, str) or not _MODULE_RE.match(text):
        raise ValueError(text)
    return text


# --------------------------------------------------------------------------- cross references


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


def _cross_check(m: Matrix, wheels: Mapping[str, Mapping[Version, tuple[Wheel, ...]]],  # noqa: C901 (issue 12: to split)
                 docs: Mapping[str, dict[str, Any] | None], problems: list[MatrixProblem]) -> None:
    def p(file: str, row: str, fld: str, msg: str) -> None:
        problems.append(MatrixProblem(file, row, fld, msg))

    # cuda.yaml
    majors = {c.major for c in m.cuda_majors}
    seen_tk: set[Version] = set()
    for i, t in enumerate(m.toolkits):
        row = f"toolkits[{i}] '{t.version}'"
        if t.version in seen_tk:
            p("cuda.yaml", row, "version", "toolkit listed twice")
        seen_tk.add(t.version)
        if t.version.major not in majors:
            p("cuda.yaml", row, "version", f"CUDA {t.version.major} has no row in 'majors'")
        for u in t.updates:
            if (u.version.major, u.version.minor) != (t.version.major, t.version.minor):
                p("cuda.yaml", row, "updates", f"update {u.version} is not an update of {t.version}")

    toolkits_named = _named_versions(docs["cuda.yaml"], "toolkits", major_minor=True)

    def need_cuda(file: str, row: str, fld: str, cuda: Version | None) -> None:
        if docs["cuda.yaml"] is not None and cuda is not None and Version(f"{cuda.major}.{cuda.minor}") not in toolkits_named:
            p(file, row, fld, f"CUDA {cuda} is not in cuda.yaml's toolkits")

    # gpus.yaml
    families = {a.family: a for a in m.architectures}
    any_toolkit = lambda cc: any(t.can_target(cc) for t in m.toolkits)  # noqa: E731
    seen_names: dict[str, str] = {}
    for i, g in enumerate(m.gpus):
        row = f"gpus[{i}] {g.name!r}"
        fam = families.get(g.family)
        if fam is None:
            p("gpus.yaml", row, "family", f"unknown family {g.family!r} (not in 'architectures')")
        elif g.compute_capability not in fam.compute_capabilities:
            p("gpus.yaml", row, "compute_capability",
              f"{g.compute_capability} is not a capability of the {g.family} family "
              f"({', '.join(map(str, fam.compute_capabilities))})")
        if m.toolkits and not any_toolkit(g.compute_capability):
            p("gpus.yaml", row, "compute_capability",
              f"no CUDA toolkit in cuda.yaml can target {g.compute_capability}")
        for label in (g.name, *g.names, *g.aliases):
            key = _gpu_key(label)
            if key in seen_names and seen_names[key] != g.name:
                p("gpus.yaml", row, "aliases" if label in g.aliases else "names",
                  f"{label!r} also names {seen_names[key]!r}")
            seen_names[key] = g.name

    # torch.yaml
    for i, t in enumerate(m.torch):
        row = f"releases[{i}] '{t.version}'"
        for v in t.variants:
            need_cuda("torch.yaml", row, f"variants '{v.variant}'.cuda", v.cuda)
        for plat in ("linux-x86_64", "linux-aarch64"):
            defaults = [v.variant for v in t.variants if plat in v.pypi_default]
            if len(defaults) > 1:
                p("torch.yaml", row, "variants", f"{len(defaults)} variants claim to be PyPI's default on {plat}: {defaults}")
        for w in t.wheels:
            want = [v for v in t.variants if w.platform in v.pypi_default]
            if want and w.platform.startswith("linux") and want[0].cuda != w.cuda and not (
                    want[0].cuda and w.cuda and (want[0].cuda.major, want[0].cuda.minor) == (w.cuda.major, w.cuda.minor)):
                p("torch.yaml", row, f"variants '{want[0].variant}'.pypi_default",
                  f"the PyPI wheel {w.filename} requires CUDA {w.cuda or 'none'} (its METADATA), "
                  f"not {want[0].cuda or 'none'}")
        for comp, table in m.extra_wheels.items():
            cv = t.companions.get(comp)
            if cv is None or cv not in table:
                continue
            specs = [w.requires["torch"] for w in table[cv] if w.platform.startswith("linux") and "torch" in w.requires]
            if specs and not any(s.contains(t.version, prereleases=True) for s in specs):
                p("torch.yaml", row, f"companions.{comp}",
                  f"{comp} {cv}'s wheels require torch {', '.join(sorted({str(s) for s in specs}))}, "
                  f"which excludes {t.version}")
    torch_versions = _named_versions(docs["torch.yaml"], "releases")

    # vllm.yaml
    seen_v: set[Version] = set()
    for i, v in enumerate(m.vllm):
        row = f"releases[{i}] '{v.version}'"
        if v.version in seen_v:
            p("vllm.yaml", row, "version", "release listed twice")
        seen_v.add(v.version)
        need_cuda("vllm.yaml", row, "cuda", v.cuda)
        for var in v.variants:
            need_cuda("vllm.yaml", row, f"variants '{var.variant}'.cuda", var.cuda)
            for plat, pin in var.torch_pins.items():
                if torch_versions and Version(pin.public) not in torch_versions:
                    p("vllm.yaml", row, f"variants '{var.variant}'.torch_pins.{plat}",
                      f"torch {pin} is not in torch.yaml's releases")
        for w in v.wheels:
            pin = w.requires.get("torch")
            exact = exact_pin(pin)
            for comp in ("xformers", "flashinfer-python"):  # a pinned companion must be built for the same torch
                cv = exact_pin(w.requires.get(comp))
                for cw in m.extra_wheels.get(comp, {}).get(cv, ()) if cv is not None else ():
                    ct = cw.requires.get("torch")
                    if exact is not None and ct is not None and str(ct) and not ct.contains(exact, prereleases=True):
                        p("wheels/vllm.yaml", row, f"{w.filename}.requires.{comp}",
                          f"{comp} {cv} requires torch {ct}, but this wheel pins torch {exact}")
            if pin is not None and exact is None:
                p("wheels/vllm.yaml", row, f"{w.filename}.requires.torch", f"expected an exact pin, got {str(pin)!r}")
            elif exact is not None and torch_versions and exact not in torch_versions:
                p("wheels/vllm.yaml", row, f"{w.filename}.requires.torch",
                  f"torch {exact} is not in torch.yaml's releases")
    for pkg, curated, file in (("torch", m.torch, "torch.yaml"), ("vllm", m.vllm, "vllm.yaml")):
        generated = wheels.get(pkg, {})
        if not generated:
            continue
        rows = {r.version for r in curated}
        for i, r in enumerate(curated):
            if r.version not in generated:
                p(file, f"releases[{i}] '{r.version}'", "version",
                  f"no such release in wheels/{pkg}.yaml (regenerate it, or remove the row)")
        for version in sorted(set(generated) - rows):
            p(f"wheels/{pkg}.yaml", f"release '{version}'", "version", f"the release has no row in {file}")

    # known_issues.yaml
    ids: set[str] = set()
    for i, k in enumerate(m.known_issues):
        if k.id in ids:
            p("known_issues.yaml", f"issues[{i}] {k.id!r}", "id", "id used twice")
        ids.add(k.id)


# --------------------------------------------------------------------------- entry points


_CACHE_FORMAT = 2


def _cache_key(revision: str) -> str:
    import sys

    from packaging import __version__ as packaging_version

    from . import __version__, values

    h = hashlib.sha256(f"{_CACHE_FORMAT}|{revision}|{__version__}|{packaging_version}|{sys.version}".encode())
    for module in (__file__, values.__file__):  # the code that built the objects, so edits miss the cache
        with open(module, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:24]


def load_matrix(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> Matrix:
    """Load and validate the matrix in directory ``path`` (default: :func:`default_matrix_path`).

    Raises UsageError when the directory is missing, MatrixError listing every problem.

    Parsing and validating the YAML costs tens of milliseconds, so a matrix that validated
    is kept, pickled, in the user's cache directory under a key made of the files' bytes
    (the revision), the code of this module and of ``values``, and vresolve's, packaging's
    and Python's versions: an edited file, or new code, misses the cache and is validated again. A cache that cannot be read
    or written is ignored.
    """
    root = Path(path) if path is not None else default_matrix_path()
    if not root.is_dir():
        raise UsageError(f"matrix directory {str(root)!r} does not exist (expected a compat_matrix/ directory)")
    raw: dict[str, bytes | None] = {}
    digest = hashlib.sha256()
    for name in FILES:
        try:
            raw[name] = (root / name).read_bytes()
        except FileNotFoundError:
            raw[name] = None
            continue
        digest.update(name.encode() + b"\0" + raw[name] + b"\0")
    revision = digest.hexdigest()[:16]
    from ._cache import cache_dir

    cdir = cache_dir() if cache else None
    cfile = Path(cdir) / f"matrix-{_cache_key(revision)}.pickle" if cdir else None
    if cfile is not None:
        try:
            with open(cfile, "rb") as fh:
                m = pickle.load(fh)
            if isinstance(m, Matrix) and m.revision == revision:
                return m if m.path == str(root) else dataclasses.replace(m, path=str(root))
        except Exception:  # noqa: BLE001 - a missing, stale or corrupt cache is only a miss
            pass
    m = _parse_matrix(root, raw, revision)
    if cfile is not None:
        try:
            from ._atomic import write_bytes_atomic

            write_bytes_atomic(cfile, pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass
    return m


def _parse_matrix(root: Path, raw: Mapping[str, bytes | None], revision: str) -> Matrix:  # noqa: C901 (issue 12: to split)
    import yaml

    loader = _yaml_loader()
    problems: list[MatrixProblem] = []
    docs: dict[str, dict[str, Any] | None] = {}
    for name, tables in FILES.items():
        data = raw[name]
        if data is None:
            if name not in OPTIONAL_FILES:
                problems.append(MatrixProblem(name, "", "", "file missing"))
            docs[name] = None
            continue
        try:
            doc = yaml.load(data, Loader=loader)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark is not None else ""
            problems.append(MatrixProblem(name, where, "", f"not valid YAML: {getattr(e, 'problem', e)}"))
            docs[name] = None
            continue
        if not isinstance(doc, dict):
            problems.append(MatrixProblem(name, "", "", f"expected a mapping at the top, got {_kind(doc)}"))
            docs[name] = None
            continue
        for k in doc:
            if k not in tables:
                problems.append(MatrixProblem(name, "", str(k), f"unknown table (expected: {', '.join(tables)})"))
        docs[name] = doc

    def read(name: str, reader: Callable[..., Any], *extra: Any, empty: Any) -> Any:
        doc = docs[name]
        return empty if doc is None else reader(doc, _Rows(name, problems), *extra)

    wheels = {pkg: read(f"wheels/{pkg}.yaml", _read_wheels, pkg, empty={}) for pkg in WHEEL_PACKAGES}
    majors, toolkits = read("cuda.yaml", _read_cuda, empty=((), ()))
    archs, gpus = read("gpus.yaml", _read_gpus, empty=((), ()))
    torch_index, torch = read("torch.yaml", _read_torch, wheels["torch"], empty=(None, ()))
    vllm_index, vllm = read("vllm.yaml", _read_vllm, wheels["vllm"], empty=(None, ()))
    issues = read("known_issues.yaml", _read_known_issues, empty=())
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
    )
    _cross_check(m, wheels, docs, problems)
    if problems:
        raise MatrixError(problems)
    return m


# --------------------------------------------------------------------------- dumping


def _prov(p: Provenance) -> dict[str, Any]:
    d: dict[str, Any] = {"source": p.source[0] if len(p.source) == 1 else list(p.source), "verified": p.verified}
    if p.note is not None:
        d["note"] = p.note
    return d


def _floor(f: DriverFloor) -> dict[str, str | None]:
    d: dict[str, str | None] = {"linux": str(f.linux) if f.linux is not None else None}
    if f.windows is not None:
        d["windows"] = str(f.windows)
    return d


def _caps(caps: tuple[Capability, ...]) -> list[str]:
    return [str(c) for c in caps]


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
            "version": str(t.version), "released": t.released, "min_driver": _floor(t.min_driver),
            **({"updates": [{"version": str(u.version), **_floor(u.min_driver)} for u in t.updates]}
               if t.updates else {}),
            "nvcc_archs": {"lowest": str(t.nvcc_lowest), "highest": str(t.nvcc_highest),
                           **({"list": _caps(t.nvcc_list)} if t.nvcc_list else {})},
            **_toolkit_host(t), **_prov(t.provenance)} for t in m.toolkits],
    }
    gpus = {
        "architectures": [{"family": a.family, "compute_capabilities": _caps(a.compute_capabilities),
                           **_prov(a.provenance)} for a in m.architectures],
        "gpus": [{
            "name": g.name, **({"names": list(g.names)} if g.names else {}),
            **({"aliases": list(g.aliases)} if g.aliases else {}),
            "compute_capability": str(g.compute_capability), "family": g.family, "segment": g.segment,
            **({"memory_gib": g.memory_gib} if g.memory_gib is not None else {}),
            **_prov(g.provenance)} for g in m.gpus],
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
            **_prov(t.provenance)} for t in m.torch],
    }
    vllm = {
        "index": {"url": m.vllm_index, **_prov(m.vllm_index_provenance)},
        "releases": [{
            "version": str(r.version), **({"cuda": str(r.cuda)} if r.cuda is not None else {}),
            **({"kernels": _kernels(r.kernels)} if r.kernels is not None else {}),
            **({"build": _source_build(r.build)} if r.build is not None else {}),
            **({"variants": [{
                "variant": v.variant, **({"cuda": str(v.cuda)} if v.cuda is not None else {}),
                "where": v.where, "platforms": list(v.platforms),
                **({"kernels": _kernels(v.kernels)} if v.kernels is not None else {}),
                **({"torch_pins": {k: str(x) for k, x in v.torch_pins.items()}} if v.torch_pins else {}),
                **({"asset": {"url": v.asset.url, **_prov(v.asset.provenance)}} if v.asset else {}),
                **_prov(v.provenance)} for v in r.variants]} if r.variants else {}),
            **_prov(r.provenance)} for r in m.vllm],
    }
    issues = {"issues": [{
        "id": k.id, "cause": k.cause, "severity": k.severity, "title": k.title,
        "signatures": list(k.signatures), "explanation": k.explanation, "fix": k.fix,
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
    }


def dump_yaml(doc: Any) -> str:
    """YAML text in the matrix's house style (block style, keys in insertion order)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)
