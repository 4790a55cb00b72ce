"""Candidates and requirements of the resolution, the driver rules, rejections and the result as data.

A candidate is a pinned build: :class:`VllmBuild` (a vLLM release x one of its wheel builds: the
PyPI wheel or a CUDA variant from vLLM's index or release assets, or the wheel of a target's own
index: a Jetson's JetPack path) or :class:`TorchBuild` (a torch release x variant x platform). The
answer is a :class:`Resolution`; what it installs, a :class:`Stack`. A requirement is a name plus a constraint: :class:`VllmRequirement`
(the user's ``--vllm`` range) and :class:`TorchRequirement` (the exact torch a vLLM wheel pins, on
the same CUDA major as the vLLM build). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..host import Host, HostGpu
from ..matrix import Asset, Kernels, KnownIssue, Matrix, Provenance, TorchRelease, TorchVariant, VllmRelease, Wheel
from ..values import ArchList, DriverVersion, exact_pin, variant_for_cuda

if TYPE_CHECKING:
    from ..matrix.model import Gpu, JetPack, JetsonWheels
    from ..names import InstallKind, Policy, RejectionKind, Where
    from ..values import Capability

COMPANIONS = ("torchvision", "torchaudio", "xformers", "flashinfer-python", "triton")


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What the user asks for, beyond the machine's facts."""

    vllm: SpecifierSet = msgspec.field(default_factory=SpecifierSet)
    torch: SpecifierSet = msgspec.field(default_factory=SpecifierSet)
    variant: str | None = None  # torch's variant, when the user names one (cuXYZ | cpu)
    driver_policy: Policy = "minor-compat"
    cpu: bool = False  # plan the CPU backend (--gpu none, or no GPU found)
    pypi_only: bool = False  # only wheels from the configured index (no PyTorch or vLLM variant index)
    cuda_major: int | None = None  # only builds of this CUDA major (a Jetson Thor: its JetPack's unified ARM CUDA)
    cuda_major_why: str = ""  # why, in words, for the rejections
    jetpack: str | None = None  # --jetpack: the JetPack of a Jetson named on the command line (else from its L4T)
    jetson_index: str | None = None  # --jetson-index: the index of NVIDIA's JetPack wheels (written into hints)
    generic: bool = False  # the host's facts as given, without the Jetson rules (the Jetson planner's own call)
    # a target's own index is a source of candidates (a Jetson's JetPack path of the Jetson index): its wheel set is
    # the answer where the request allows one (what a plan installs); False: the generic builds' question, which
    # names that index's sets as a way forward
    own_index: bool = False
    allow_unknown_glibc: bool = False  # a known glibc: use builds whose glibc floor is not recorded, as first choice
    gpu_driver: bool = True  # refuse a driver that cannot drive a GPU (False: a fleet's composite host, judged per node)


class VllmBuild(msgspec.Struct, frozen=True, kw_only=True):
    """A vLLM release x one wheel build of it (the PyPI wheel, or a CUDA variant)."""

    release: VllmRelease
    variant: str  # "cu130" | "cpu"
    cuda: Version | None
    where: Where
    kernels: Kernels | None
    wheel: Wheel | None  # the PyPI wheel of this platform (whose METADATA gave the pins)
    pins: Mapping[str, SpecifierSet]
    provenance: Provenance
    name: str = "vllm"
    label: str = ""  # "vLLM 0.33.0 (cu130, PyPI wheel)", filled in by vllm_builds
    trusted: bool = True  # False: the matrix marks this build's facts unverified
    asset: Asset | None = None  # where == "release-assets": the wheel's download URL
    recorded_glibc: Version | None = None  # a variant build's floor on this platform, from the matrix's glibc fact

    @property
    def manylinux(self) -> Version | None:
        """The glibc floor of the wheel this build installs; None when not known (another index's wheel)."""
        if self.where == "pypi":
            return _glibc(self.wheel.manylinux) if self.wheel is not None else None
        if self.recorded_glibc is not None:
            return self.recorded_glibc
        return _glibc(self.asset.manylinux) if self.asset is not None else None

    @property
    def version(self) -> Version:
        return self.release.version

    def torch_pin(self) -> Version | None:
        return exact_pin(self.pins.get("torch"))

    def format_for_error(self) -> str:
        return self.label or f"vLLM {self.version} ({self.variant}, {where_text(self.where)})"


class TorchBuild(msgspec.Struct, frozen=True, kw_only=True):
    release: TorchRelease
    variant: TorchVariant
    platform: str
    pypi: bool  # this is what PyPI's plain ``torch`` wheel is on this platform
    name: str = "torch"
    where: str = "pytorch"

    @property
    def trusted(self) -> bool:
        return self.variant.provenance.trusted

    @property
    def label(self) -> str:
        return f"torch {self.release.version}+{self.variant.variant}"

    @property
    def version(self) -> Version:
        return self.release.version

    @property
    def cuda(self) -> Version | None:
        return self.variant.cuda

    @property
    def archs(self) -> ArchList:
        return self.variant.archs.get(self.platform, ArchList())

    @property
    def manylinux(self) -> Version | None:
        """PyPI's wheel's glibc floor; None for the PyTorch index's builds (not recorded)."""
        if not self.pypi:
            return None
        w = next((w for w in self.release.wheels if w.platform == self.platform and not w.yanked), None)
        return _glibc(w.manylinux) if w is not None else None

    def format_for_error(self) -> str:
        return self.label


def _glibc(text: str | None) -> Version | None:
    return Version(text) if text else None


PYPI_COMPANIONS = ("xformers", "flashinfer-python")  # always from PyPI, whatever index torch comes from


def companion_floors(matrix: Matrix, v: VllmBuild, platform: str, names: Sequence[str]
                     ) -> list[tuple[str, Version, Version]]:
    """(name, version, glibc floor) of the companions vLLM pins exactly, from their PyPI wheels' tags."""
    out = []
    for name in names:
        pin = exact_pin(v.pins.get(name))
        if pin is None:
            continue
        wheels = [w for w in matrix.wheels_of(name, pin) if w.platform == platform and w.manylinux]
        if wheels:
            out.append((name, pin, min(Version(w.manylinux) for w in wheels if w.manylinux)))
    return out


def closure_floors(v: VllmBuild, platform: str) -> list[tuple[str, SpecifierSet | None, Version]]:
    """(name, the range vLLM requires, glibc floor) of the dependencies the matrix records for the release:
    packages vLLM does not pin exactly, whose every wheel in that range needs a newer glibc (llguidance)."""
    return [(c.package, c.requires, c.floors[platform]) for c in v.release.closure if platform in c.floors]


def where_text(where: str) -> str:
    return {"pypi": "PyPI wheel", "vllm-index": "vLLM's wheel index", "release-assets": "GitHub release assets",
            "pytorch": "PyTorch index"}.get(where, where)


class VllmRequirement(msgspec.Struct, frozen=True, kw_only=True):
    spec: SpecifierSet
    name: str = "vllm"

    @property
    def trivial(self) -> bool:
        return len(self.spec) == 0

    def is_satisfied_by(self, c: VllmBuild) -> bool:
        return self.spec.contains(c.version, prereleases=True)

    def format_for_error(self) -> str:
        return f"vllm{self.spec}" if str(self.spec) else "vllm"


class TorchRequirement(msgspec.Struct, frozen=True, kw_only=True):
    version: Version | None  # the exact pin; None: any (a build that pins nothing)
    cuda_major: int | None  # None: the CPU build
    user: SpecifierSet
    variant: str | None
    name: str = "torch"
    trivial: bool = False

    def is_satisfied_by(self, c: TorchBuild) -> bool:
        if self.version is not None and c.version != self.version:
            return False
        if not self.user.contains(c.version, prereleases=True):
            return False
        if self.variant is not None and c.variant.variant != self.variant:
            return False
        cuda = c.cuda
        return (cuda is None) if self.cuda_major is None else (cuda is not None and cuda.major == self.cuda_major)

    def format_for_error(self) -> str:
        major = "CPU" if self.cuda_major is None else f"CUDA {self.cuda_major}.x"
        pin = f"=={self.version}" if self.version else ""
        return f"torch{pin} ({major}{', ' + self.variant if self.variant else ''})"


Requirement = VllmRequirement | TorchRequirement


Candidate = VllmBuild | TorchBuild


def driver_serves(matrix: Matrix, driver: DriverVersion, policy: Policy) -> Version | None:
    """The newest CUDA the driver serves under the policy (for messages): 470.82 -> 11.4."""
    best = None
    for t in matrix.toolkits:
        floor = t.min_driver.linux
        if policy == "minor-compat":
            major = matrix.cuda_major(t.version.major)
            if major is not None and major.minor_compat_driver.linux is not None:
                floor = min(filter(None, (floor, major.minor_compat_driver.linux)))
        if floor is not None and floor <= driver and (best is None or t.version > best):
            best = t.version
    return best


def driver_floor(matrix: Matrix, cuda: Version, policy: Policy, ptx_only: bool) -> DriverVersion | None:
    """The minimum Linux driver for a build of CUDA ``cuda``; None when the matrix does not know.

    ``ptx_only``: some GPU runs the build only through PTX JIT, which needs the toolkit's own floor.
    """
    tk = matrix.toolkit(cuda)
    own = tk.min_driver.linux if tk is not None else None
    if policy == "toolkit" or ptx_only:
        return own
    major = matrix.cuda_major(cuda.major)
    compat = major.minor_compat_driver.linux if major is not None else None
    floors = [f for f in (own, compat) if f is not None]
    return min(floors) if floors else None


def coverage(archs: ArchList, gpus: Sequence[HostGpu]) -> tuple[list[HostGpu], list[HostGpu]]:
    """(GPUs the build does not run on, GPUs it runs on only through PTX)."""
    missing, ptx = [], []
    for g in gpus:
        cc = g.compute_capability
        if cc is None:
            continue
        if archs.sass_for(cc) is not None:
            continue
        if archs.ptx_for(cc) is not None:
            ptx.append(g)
        else:
            missing.append(g)
    return missing, ptx


def torch_issues(matrix: Matrix, gpus: Sequence[HostGpu], t: TorchBuild) -> list[tuple[KnownIssue, HostGpu]]:
    """The known issues (``applies_to``) this torch build meets on these GPUs: a plan prefers another build."""
    out = []
    for k in matrix.known_issues:
        if not k.gpus:
            continue
        for g in gpus:
            row = matrix.find_gpu(g.name)
            if row is not None and k.applies(row.name, t.variant.variant):
                out.append((k, g))
                break
    return out


def module_ptx(v: VllmBuild, platform: str, gpus: Sequence[HostGpu]) -> tuple[list[HostGpu], list[str]]:
    """(GPUs that some kernel module of this build reaches only through PTX, those modules' names). A module is
    optional: a GPU it does not cover at all does not use it; one it covers only through PTX JIT-compiles it."""
    if v.cuda is None:
        return [], []
    ptx: list[HostGpu] = []
    names = []
    for k in v.release.kernel_modules:
        if platform not in k.platforms:
            continue
        only = coverage(k.archs, gpus)[1]
        if only:
            names.append(k.module)
            ptx += [g for g in only if g not in ptx]
    return ptx, names


def vllm_builds(matrix: Matrix, platform: str) -> list[VllmBuild]:
    """Every vLLM build for the platform, in the resolver's order of preference.

    Builds whose facts the matrix marks ``unverified`` come after every other build
    (cautious: they may not exist as described); then the newest release first; then
    PyPI's wheel before other indexes; then the newest CUDA.
    """
    out = []
    for r in sorted(matrix.vllm, key=lambda r: r.version, reverse=True):
        wheels = r.wheels_for(platform)
        pins = wheels[0].requires if wheels else {}
        if wheels:
            # the PyPI wheel of another platform can be a different build (0.10.2's aarch64 wheel: CUDA 12.9)
            own = next((v for v in r.variants if v.where == "pypi" and platform in v.platforms), None)
            cuda, kernels, prov = (own.cuda, own.kernels or r.kernels, own.provenance) if own else (
                r.cuda, r.kernels, r.provenance)
            variant = "cpu" if cuda is None else variant_for_cuda(cuda)
            out.append(VllmBuild(release=r, variant=variant, cuda=cuda, where="pypi", kernels=kernels,
                                 wheel=wheels[0], pins=pins, provenance=prov,
                                 label=f"vLLM {r.version} ({variant}, {where_text('pypi')})",
                                 trusted=prov.trusted))
        for v in r.variants:
            if platform not in v.platforms or v.where == "pypi":
                continue
            # a variant wheel pins the same torch release as the PyPI wheel (from the PyTorch index),
            # unless the matrix records its own pin (CPU builds: requirements/cpu.txt)
            own_pin = v.torch_pins.get(platform)
            vpins = {"torch": SpecifierSet(f"=={own_pin.public}")} if own_pin is not None else pins
            out.append(VllmBuild(release=r, variant=v.variant, cuda=v.cuda, where=v.where,
                                 kernels=v.kernels or r.kernels, wheel=wheels[0] if wheels else None,
                                 pins=vpins, provenance=v.provenance,
                                 label=f"vLLM {r.version} ({v.variant}, {where_text(v.where)})",
                                 trusted=v.trusted, asset=v.asset,
                                 recorded_glibc=v.glibc.floors.get(platform) if v.glibc is not None else None))
    out.sort(key=lambda b: (not b.trusted, -_vkey(b.version), b.where != "pypi",
                            -(b.cuda.major * 100 + b.cuda.minor) if b.cuda else 0))
    return out


def _vkey(v: Version) -> float:
    """A number that orders release versions (for a sort key that negates)."""
    n = 0.0
    for i, part in enumerate(v.release[:4]):
        n += part * 1000.0 ** (3 - i)
    return n


class Rejection(msgspec.Struct, frozen=True, kw_only=True, eq=False):
    """Why one candidate cannot run here, in hardware terms.

    A driver rejection keeps its parts and writes its sentence only when asked: a resolution
    on an old driver rejects hundreds of builds, and most rejections are never shown.
    """

    build: Candidate
    kind: RejectionKind
    text: str | None = None  # the sentence, for kinds other than "driver"
    needs_driver: DriverVersion | None = None  # for kind == "driver"
    driver: DriverVersion | None = None
    served: Version | None = None
    policy: str = ""
    ptx: bool = False

    @property
    def candidate(self) -> str:
        return self.build.label

    @property
    def reason(self) -> str:
        if self.text is not None:
            return self.text
        why = ("a GPU runs it only through PTX, which needs the toolkit's own floor"
               if self.ptx and self.policy != "toolkit" else f"under the {self.policy} policy")
        return (f"{self.build.label} needs driver >= {self.needs_driver} for CUDA {self.build.cuda} ({why}); "
                f"driver {self.driver} serves CUDA {self.served or 'none'} at most")


class Stack(msgspec.Struct, frozen=True, kw_only=True):
    """What a plan installs: one record for a wheel plan, a source build, an alternative and a lock's header."""

    vllm: Version
    torch: str  # the version, without a local part
    torchvision: str | None
    torchaudio: str | None
    companions: Mapping[str, str]  # the other pins of the vLLM wheel (xformers, flashinfer-python)
    variant: str  # torch's build: cu128, cpu
    vllm_variant: str  # vLLM's build: cu129, cpu, source
    vllm_source: str  # pypi, release-assets, the vLLM index, git tag vX
    torch_source: str  # pypi, pytorch-index, kept
    cuda: Version | None
    python: Version  # major.minor
    install_kind: InstallKind


class Jetson(msgspec.Struct, frozen=True, kw_only=True):
    """What makes this machine a Jetson: its module (a gpus.yaml row), its GPU, and its JetPack if known."""

    module: Gpu
    gpu: HostGpu | None
    jetpack: JetPack | None
    how: str  # how the JetPack was known ("L4T 36.4.3 from /etc/nv_tegra_release", "--jetpack 6.2", "")
    warnings: tuple[str, ...] = ()

    @property
    def cc(self) -> Capability:
        return self.module.compute_capability


class JetsonWheelChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The wheel set of a target's own index that a Jetson installs: a vLLM wheel and its torch from one path of the
    Jetson index (its JetPack's), and the facts that chose it."""

    jetson: Jetson
    jetpack: JetPack
    wheels: JetsonWheels
    index: str  # the URL of the path (the user's index, with the path the wheels are on)
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def stack(self) -> Stack:
        w = self.wheels
        cu = w.path.rsplit("/", 1)[1]
        return Stack(vllm=Version(w.vllm.public), torch=str(w.torch),
                     torchvision=str(w.companions["torchvision"]) if "torchvision" in w.companions else None,
                     torchaudio=str(w.companions["torchaudio"]) if "torchaudio" in w.companions else None,
                     companions={k: str(v) for k, v in w.companions.items() if k not in ("torchvision", "torchaudio")},
                     variant=cu, vllm_variant=cu, vllm_source=f"jetson-index {w.path}", torch_source="jetson-index",
                     cuda=w.cuda, python=w.python, install_kind="wheel")


class Resolution(msgspec.Struct, frozen=True, kw_only=True):
    host: Host
    request: Request
    vllm: VllmBuild
    torch: TorchBuild
    companions: Mapping[str, str]  # torchvision -> "0.29.0", ... (the vLLM wheel's own pins)
    cuda: Version | None  # the newest CUDA in the stack: the one the driver must serve
    min_driver: DriverVersion | None
    ptx_gpus: tuple[HostGpu, ...]  # GPUs that run some part of the stack only through PTX JIT
    glibc_floor: Version | None  # the newest manylinux floor among the planned wheels (None: not known)
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    # the builds turned down on the way: made into Rejections (and text) only when asked, once
    turned_down: Callable[[], tuple[Rejection, ...]]  # neither compared nor shown (see __eq__, __repr__)
    glibc_by: tuple[str, ...] = ()  # the packages whose wheels set glibc_floor (llguidance, vllm, torch)
    # the wheel set of the target's own index that was chosen (a Jetson's JetPack path): vllm and torch are its
    # builds; its files are replaced on that index under the same name, so it is never locked by hash
    index: JetsonWheelChoice | None = None

    def __eq__(self, other: object) -> bool:
        """The same answer, whatever was turned down on the way."""
        if not isinstance(other, Resolution):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__struct_fields__ if f != "turned_down")

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__struct_fields__ if f != "turned_down")
        return f"Resolution({shown})"

    @property
    def rejections(self) -> tuple[Rejection, ...]:
        """The builds the resolver turned down on the way, and why (newest first)."""
        return self.turned_down()

    @property
    def stack(self) -> Stack:
        if self.index is not None:
            return self.index.stack
        return Stack(vllm=self.vllm.version, torch=str(self.torch.version),
                     torchvision=self.companions.get("torchvision"), torchaudio=self.companions.get("torchaudio"),
                     companions={k: v for k, v in self.companions.items() if k not in ("torchvision", "torchaudio")},
                     variant=self.torch.variant.variant, vllm_variant=self.vllm.variant, vllm_source=self.vllm.where,
                     torch_source="pypi" if self.torch.pypi else "pytorch-index", cuda=self.cuda,
                     python=self.host.python_minor, install_kind="wheel")


# Memo tables shared by every resolution in this process, keyed by the matrix's revision
# (its content): a sweep over many hosts re-asks the same questions about the same builds.
_MEMO: dict[tuple[Any, ...], Any] = {}


def memo(key: tuple[Any, ...], compute: Any) -> Any:
    try:
        return _MEMO[key]
    except KeyError:
        value = _MEMO[key] = compute()
        return value


def driver_floor_memo(matrix: Matrix, cuda: Version, policy: Policy, ptx: bool) -> DriverVersion | None:
    return memo(("floor", matrix.revision, cuda, policy, ptx), lambda: driver_floor(matrix, cuda, policy, ptx))


def served_memo(matrix: Matrix, driver: DriverVersion, policy: Policy) -> Version | None:
    return memo(("served", matrix.revision, driver, policy), lambda: driver_serves(matrix, driver, policy))


def torch_builds(matrix: Matrix, platform: str) -> dict[Version, list[TorchBuild]]:
    out: dict[Version, list[TorchBuild]] = {}
    for t in matrix.torch:
        builds = [TorchBuild(release=t, variant=v, platform=platform, pypi=platform in v.pypi_default)
                  for v in t.variants if platform in v.archs]
        # PyPI's default first (the simplest install), then the newest CUDA, trusted facts first
        builds.sort(key=lambda b: (not b.pypi, not b.variant.provenance.trusted,
                                   -(b.cuda.major * 100 + b.cuda.minor) if b.cuda else 0))
        out[t.version] = builds
    return out
