"""The matrix's objects: frozen ``msgspec.Struct`` records, with versions, specifiers and capabilities already parsed.

Frozen Structs rather than dataclasses: a cold plan creates every class here, and a dataclass's methods are generated
source exec'd one by one (11 ms for these 23 classes on Python 3.11), a Struct's are built in C (0.35 ms).

Not ``kw_only`` (they are built by keyword all the same): the validated matrix is cached as a pickle, and a
positional Struct unpickles as one call of its class, where a keyword-only one goes through a Python-level rebuild
per object (twice the matrix's unpickling time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..values import ArchList, Capability, DriverVersion

if TYPE_CHECKING:
    from ..names import Where

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
    "gpu-not-visible",
    "incomplete-install",
    "shared-memory-too-small",
    "nccl-misconfigured",
    "fabric-manager-not-running",
    "gpu-fallen-off-bus",
    "c-compiler-missing",
    "program-limit",
)


SEVERITIES = ("error", "warning", "info")


SEGMENTS = ("datacenter", "workstation", "consumer", "jetson", "superchip")


VLLM_VARIANT_SOURCES: tuple[Where, ...] = ("vllm-index", "release-assets", "pypi")


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
    "jetson.yaml": ("jetpacks", "index_wheels"),
    "pythons.yaml": ("packages",),
    "features.yaml": ("features", "libraries"),
}


OPTIONAL_FILES = ("wheels/xformers.yaml", "wheels/flashinfer-python.yaml",  # companions vLLM pins; may be absent
                  "jetson.yaml",  # a matrix without it knows no JetPack: a Jetson is refused, never planned generically
                  "pythons.yaml",  # doctor's facts of binary-only packages' Pythons; without it, torch.yaml's only
                  "features.yaml")  # doctor's facts: features' compute-capability floors, libraries' SMs


#: the fields a row written by ``matrix refresh --apply`` may carry from the previous release (``carried_from``)
CARRIED_FIELDS = {"vllm.yaml": ("cuda", "kernels", "build", "variants"), "torch.yaml": ("variants",)}


WHEEL_PACKAGES = ("torch", "torchvision", "torchaudio", "vllm", "xformers", "flashinfer-python")


class Provenance(msgspec.Struct, frozen=True):
    """Where a row's facts come from and how they were checked."""

    source: tuple[str, ...]
    verified: str
    note: str | None = None

    @property
    def trusted(self) -> bool:
        """False for ``unverified`` rows, which the resolver treats cautiously."""
        return self.verified != "unverified"


class DriverFloor(msgspec.Struct, frozen=True):
    """Minimum driver versions; None where NVIDIA publishes none (written as ``null``)."""

    linux: DriverVersion | None
    windows: DriverVersion | None = None


class CudaMajor(msgspec.Struct, frozen=True):
    major: int
    minor_compat_driver: DriverFloor
    provenance: Provenance


class ToolkitUpdate(msgspec.Struct, frozen=True):
    version: Version
    min_driver: DriverFloor


class CudaToolkit(msgspec.Struct, frozen=True):
    version: Version  # major.minor
    released: str | None  # "2025-01-23", or "2020-07" where only the month is sourced; None where unsourced
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
    #: the PTX ISA version this toolkit's compiler emits and its ptxas accepts at most (a driver of this CUDA version
    #: JITs PTX up to it); None where not sourced
    ptx_isa: Version | None = None

    def can_target(self, cc: Capability) -> bool:
        """Whether this toolkit's nvcc can emit SASS for ``cc``."""
        if self.nvcc_list is not None:
            return cc.base in self.nvcc_list
        return self.nvcc_lowest <= cc.base <= self.nvcc_highest


class DriverSupport(msgspec.Struct, frozen=True):
    """Which NVIDIA driver branches run a GPU (gpus.yaml ``driver:``): the first driver that supports it
    and, for a legacy GPU, the last branch that still does. Minor-version compatibility never lets an older
    driver run a newer GPU: a driver below ``first`` cannot drive it at all."""

    first: DriverVersion | None  # the lowest Linux driver that supports it (None: older than any that matters)
    last_branch: int | None  # the last branch (driver major, 470) that supports it; None: still supported
    provenance: Provenance

    def refuses(self, driver: DriverVersion) -> str | None:
        """``"too-old"`` below the first driver, ``"too-new"`` past the last branch, else None."""
        if self.first is not None and driver < self.first:
            return "too-old"
        if self.last_branch is not None and driver.key[0] > self.last_branch:
            return "too-new"
        return None


class Architecture(msgspec.Struct, frozen=True):
    family: str
    compute_capabilities: tuple[Capability, ...]
    provenance: Provenance
    driver: DriverSupport | None = None


class Gpu(msgspec.Struct, frozen=True):
    name: str
    names: tuple[str, ...]
    aliases: tuple[str, ...]
    compute_capability: Capability
    family: str
    segment: str
    memory_gib: float | None
    provenance: Provenance
    driver: DriverSupport | None = None  # a later part of its family: its own first driver (or last branch)


class Wheel(msgspec.Struct, frozen=True):
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


class TorchVariant(msgspec.Struct, frozen=True):
    variant: str  # "cu128" | "cpu"
    cuda: Version | None
    pypi_default: frozenset[str]  # platforms where PyPI's plain wheel is this variant
    archs: Mapping[str, ArchList]  # platform -> what the build contains
    provenance: Provenance

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self.archs)


class TorchRelease(msgspec.Struct, frozen=True):
    version: Version
    python: tuple[Version, ...]
    companions: Mapping[str, Version]
    variants: tuple[TorchVariant, ...]
    wheels: tuple[Wheel, ...]  # PyPI's wheels (generated)
    provenance: Provenance
    carried_from: Version | None = None  # a row written by refresh: the release its ``carried`` fields come from
    carried: tuple[str, ...] = ()

    def variant(self, name: str) -> TorchVariant | None:
        return next((v for v in self.variants if v.variant == name), None)


class Kernels(msgspec.Struct, frozen=True):
    archs: ArchList
    min_compute_capability: Capability


class KernelModule(msgspec.Struct, frozen=True):
    """A compiled extension of a vLLM release whose arch list is its own (``vllm_flash_attn/_vllm_fa2_C``): it is
    optional (a GPU it does not cover does not use it), but a GPU it covers only through PTX needs the PTX JIT,
    and so the toolkit's own driver floor, as a build's kernels do."""

    module: str
    platforms: tuple[str, ...]  # the builds of the release on these platforms carry it so
    archs: ArchList
    provenance: Provenance


class SourceBuild(msgspec.Struct, frozen=True):
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


class Asset(msgspec.Struct, frozen=True):
    """Where a release-asset wheel is downloaded from: its URL (``{cp}``: the CPython tag, cp310)."""

    url: str
    provenance: Provenance
    manylinux: str | None = None  # the glibc floor its file name's platform tag says ("2.5" for manylinux1)

    def url_for(self, python: Version) -> str:
        return self.url.replace("{cp}", f"cp{python.major}{python.minor}")


class GlibcFact(msgspec.Struct, frozen=True):
    """A wheel's glibc floor that PyPI's file list does not give: a variant build's (vLLM's index, release
    assets), or a dependency's that the wheel does not pin exactly (llguidance), read off the file names seen;
    ``needs`` where the wheel's libraries need more than its tag says."""

    package: str  # "vllm", "llguidance"
    floors: Mapping[str, Version]  # platform -> the glibc the wheel needs there
    wheels: tuple[str, ...]  # the file names seen
    requires: SpecifierSet | None  # a dependency: the range vLLM's METADATA requires
    provenance: Provenance
    needs: Version | None = None  # what its libraries need, where more than the tag says


class VllmVariant(msgspec.Struct, frozen=True):
    variant: str
    cuda: Version | None
    where: Where
    platforms: tuple[str, ...]
    kernels: Kernels | None  # None: the release's kernels
    torch_pins: Mapping[str, Version]  # platform -> the torch this build pins, where not the PyPI wheel's
    provenance: Provenance
    asset: Asset | None = None  # where == "release-assets": the wheel's download URL
    glibc: GlibcFact | None = None  # its wheels' glibc floor, where recorded

    @property
    def trusted(self) -> bool:
        """The build's facts and, for a release asset, its URL are verified."""
        return self.provenance.trusted and (self.asset is None or self.asset.provenance.trusted)


class VllmRelease(msgspec.Struct, frozen=True):
    version: Version
    cuda: Version | None  # CUDA of the PyPI wheel
    kernels: Kernels | None
    variants: tuple[VllmVariant, ...]
    wheels: tuple[Wheel, ...]  # PyPI's wheels (generated)
    provenance: Provenance
    build: SourceBuild | None = None
    closure: tuple[GlibcFact, ...] = ()  # dependencies (not pinned exactly) whose wheels need a newer glibc
    carried_from: Version | None = None  # a row written by refresh: the release its ``carried`` fields come from
    carried: tuple[str, ...] = ()
    kernel_modules: tuple[KernelModule, ...] = ()  # extensions with arch lists of their own (FlashAttention-2)

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


class KnownIssue(msgspec.Struct, frozen=True):
    """Error lines (typed ``signals``, or ``signatures`` for opaque messages) -> cause -> explanation and fix.
    ``patterns()`` compiles on first use."""

    id: str
    cause: str
    severity: str
    title: str
    signatures: tuple[str, ...]  # regular expressions, checked at load; see patterns()
    explanation: str
    fix: str
    provenance: Provenance
    #: the typed error lines (doctor's evidence reader's signal codes, e.g. ``driver-too-old``) that show this
    #: issue by themselves, wherever they come from
    signals: tuple[str, ...] = ()
    #: the predicate (doctor/predicates.py's registry name) that judges this row from facts: it says where the row
    #: holds and with what evidence; the finding's cause, severity, title, explanation and fix are the row's
    when: str | None = None
    #: where a plan can avoid it (``applies_to``): torch builds of these variants on these GPUs (gpus.yaml names)
    gpus: tuple[str, ...] = ()
    torch_variants: tuple[str, ...] = ()

    def applies(self, gpu: str, torch_variant: str) -> bool:
        """Whether a plan of this torch variant on this GPU (its gpus.yaml name) meets this issue."""
        return gpu in self.gpus and torch_variant in self.torch_variants

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(s, re.MULTILINE) for s in self.signatures)  # re caches compiled patterns


class JetsonTorch(msgspec.Struct, frozen=True):
    """A JetPack-specific torch wheel NVIDIA lists for one JetPack (jetson.yaml)."""

    version: str  # as published, local part included ("2.1.0a0+41361538.nv23.06"); a valid version
    python: Version
    provenance: Provenance


class JetPack(msgspec.Struct, frozen=True):
    """One JetPack release: its L4T releases, the CUDA it puts on the board, the modules it supports."""

    version: Version
    l4t: tuple[Version, ...]
    cuda: Version
    modules: tuple[str, ...]  # gpus.yaml row names ("Orin", "Xavier", "NVIDIA Thor")
    sbsa_modules: tuple[str, ...]  # the modules on which this JetPack's CUDA is the unified ARM (SBSA) build
    python: Version  # the OS's python3
    torch: tuple[JetsonTorch, ...]
    provenance: Provenance
    index_path: str | None = None  # its path on the Jetson AI Lab index ("jp6/cu126"); None: none (Thor's JetPacks)


class JetsonWheels(msgspec.Struct, frozen=True):
    """A JetPack-specific vLLM wheel and the torch it was built beside, both on one path of the Jetson AI Lab
    index (jetson.yaml ``index_wheels``): what a Jetson whose CUDA is L4T's own can install instead of a build."""

    path: str  # the index path that serves them, under the index's root: "jp6/cu126"
    jetpacks: tuple[Version, ...]  # the JetPacks they are for (their CUDA is the path's)
    modules: tuple[str, ...]  # gpus.yaml rows of the jetson segment
    python: Version  # the wheels' interpreter (cp310: the JetPack's python3)
    archs: tuple[Capability, ...]  # the GPU architectures the builds carry
    vllm: Version  # as published, local tag included: 0.14.0+cu126
    torch: Version  # the torch of the same path the vLLM wheel was built and run beside
    companions: Mapping[str, Version]  # torchvision, triton, ... of the same path, in the same set
    requires_torch: bool  # whether the vLLM wheel's METADATA names torch (False: built with use_existing_torch.py)
    constraints: tuple[str, ...]  # requirements the set needs beside its pins ("numpy<2"), PEP 508
    system_libs: tuple[str, ...]  # shared libraries the wheels load that JetPack does not ship ("libcudss.so.0")
    sha256: tuple[str, ...]  # every digest seen for the vLLM file (more than one: replaced on the index)
    seen: str  # the date of the newest evidence of the set
    provenance: Provenance

    @property
    def cuda(self) -> Version:
        """The CUDA of the path (cu126 -> 12.6)."""
        digits = self.path.rsplit("/cu", 1)[1]
        return Version(f"{digits[:-1]}.{digits[-1]}")


class WheelPythons(msgspec.Struct, frozen=True):
    """The CPython versions some releases of a package ship wheels for, per platform (``pythons.yaml``): doctor's
    facts, not a resolver input. ``releases``: specifiers, an exact one (``==1.13.1``) naming a release that exists;
    ``python``: platform (or ``all``) -> the Pythons, ``()`` where that platform has no wheels at all."""

    releases: tuple[SpecifierSet, ...]
    python: Mapping[str, tuple[Version, ...]]
    provenance: Provenance


class PackagePythons(msgspec.Struct, frozen=True):
    """A package whose releases are published as binary wheels only (pip offers a release to an interpreter and
    platform only where a wheel fits), and its rows of :class:`WheelPythons`."""

    name: str
    wheels_only: bool
    rows: tuple[WheelPythons, ...]
    provenance: Provenance


class Feature(msgspec.Struct, frozen=True):
    """A feature's compute-capability floor (``features.yaml``): doctor's facts, not a resolver input. ``signals``: the
    codes of the refusals (doctor's typed lines) that are about this feature."""

    id: str
    name: str
    min_compute_capability: Capability
    signals: tuple[str, ...]
    provenance: Provenance


class LibrarySms(msgspec.Struct, frozen=True):
    """The SMs (compute capabilities) some releases of a binary library support, lowest to highest (``features.yaml``'s
    libraries)."""

    releases: tuple[SpecifierSet, ...]
    lowest: Capability
    highest: Capability
    provenance: Provenance

    def supports(self, cc: Capability) -> bool:
        return self.lowest <= cc.base <= self.highest


class Library(msgspec.Struct, frozen=True):
    """A binary library (TensorRT) and, release by release, the SMs it supports."""

    name: str
    rows: tuple[LibrarySms, ...]
    provenance: Provenance


class Matrix(msgspec.Struct, frozen=True):
    path: str  # not compared (see __eq__)
    revision: str  # sha256 of the files' bytes, first 16 hex digits; not compared
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
    jetpacks: tuple[JetPack, ...] = ()  # jetson.yaml, oldest first
    jetson_wheels: tuple[JetsonWheels, ...] = ()  # jetson.yaml's index_wheels, newest vLLM first
    pythons: tuple[PackagePythons, ...] = ()  # pythons.yaml: the Pythons binary-only packages ship wheels for
    features: tuple[Feature, ...] = ()  # features.yaml: features' compute-capability floors
    library_sms: tuple[Library, ...] = ()  # features.yaml: binary libraries' SMs by release

    def __eq__(self, other: object) -> bool:
        """Equal facts, wherever the files were read from (``path``) and whatever their bytes (``revision``)."""
        if not isinstance(other, Matrix):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__struct_fields__ if f not in _NOT_COMPARED)

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

    def wheels_of(self, package: str, version: Version) -> tuple[Wheel, ...]:
        """PyPI's wheels of a companion release (torchvision, torchaudio, xformers, flashinfer-python)."""
        return self.extra_wheels.get(package, {}).get(version, ())

    def jetson_wheels_for(self, jetpack: Version, module: str | None = None) -> tuple[JetsonWheels, ...]:
        """The Jetson index's wheel sets for a JetPack (and a module), newest vLLM first."""
        return tuple(w for w in self.jetson_wheels if jetpack in w.jetpacks and (module is None or module in w.modules))

    def driver_support(self, gpu: Gpu) -> DriverSupport | None:
        """The drivers that run ``gpu``: its own row's facts where it has them, else its family's."""
        fam = next((a.driver for a in self.architectures if a.family == gpu.family), None)
        own = gpu.driver
        if own is None or fam is None:
            return own or fam
        return DriverSupport(first=own.first if own.first is not None else fam.first,
                             last_branch=own.last_branch if own.last_branch is not None else fam.last_branch,
                             provenance=own.provenance)

    def find_gpu(self, text: str) -> Gpu | None:
        """A GPU by its reported name, another reported name or an alias (case-insensitive)."""
        index = _INDEXES.get(("gpus", self.revision))
        if index is None:
            index = {}
            for g in self.gpus:  # the first row that names it, as a scan in order would find
                for n in (g.name, *g.names, *g.aliases):
                    index.setdefault(gpu_key(n), g)
            _INDEXES[("gpus", self.revision)] = index
        key = gpu_key(text)
        # typed without the spaces of its name ("rtx4090", "3060ti", "A100-80GB" is no such case): letters and digits
        # spaced apart as the matrix names them
        return index.get(key) or index.get(_LETTER_DIGIT_RE.sub(" ", key))


_NOT_COMPARED = ("path", "revision")


_INDEXES: dict[tuple[str, str], Any] = {}  # lookup tables per matrix revision, built on first use


_LETTER_DIGIT_RE = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")


def gpu_key(text: str) -> str:
    return " ".join(text.lower().split())


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
