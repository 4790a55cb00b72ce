"""The resolver: the newest vLLM stack that really works on a Host, on resolvelib.

Design notes
------------
Two packages are resolved, ``vllm`` and ``torch``; the companions (torchvision,
torchaudio, flashinfer, ...) follow from the chosen vLLM wheel's own pins. A **candidate**
is a pinned build: :class:`VllmBuild` (a vLLM release x one of its wheel builds: the PyPI
wheel or a CUDA variant from vLLM's index) or :class:`TorchBuild` (a torch release x
variant x platform). A **requirement** is a name plus a constraint:
:class:`VllmRequirement` (the user's ``--vllm`` range) and :class:`TorchRequirement`
(the exact torch a vLLM wheel pins, on the same CUDA major as the vLLM build).

The host's facts (driver, each GPU's compute capability, Python, platform) are fixed,
so they are applied as *candidate filters* in ``find_matches``: a build that cannot run
on this machine never reaches resolvelib, and the reason is recorded in hardware terms
(:class:`Rejection`). That keeps a resolution to a few candidate visits (the sweep of
every GPU x driver branch depends on it) and lets a failure be explained by what the
machine lacks rather than by resolvelib's internal causes. ``ResolutionImpossible`` is
caught in exactly one place, :func:`resolve`, and turned into :class:`NoCompatibleStack`.

Preference (deterministic, :meth:`_Provider.get_preference` and the candidate order):
the newest vLLM that meets the request; then the simplest install (PyPI wheels over
other indexes); then the newest CUDA the driver serves; then trusted facts over
``unverified`` ones.

Driver policy (:func:`driver_floor`): ``minor-compat`` (default) needs the
minor-version-compatibility floor of the build's CUDA major, or the toolkit's own floor
where a GPU is covered only by PTX (a driver cannot JIT PTX newer than itself);
``toolkit`` always needs the toolkit's own floor.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, Resolver

from .errors import EXIT_NO_STACK, VresolveError
from .host import Host, HostGpu
from .matrix import Asset, Kernels, Matrix, Provenance, TorchRelease, TorchVariant, VllmRelease, Wheel, wheel_platform
from .values import ArchList, Capability, DriverVersion, exact_pin, variant_for_cuda

__all__ = [
    "POLICIES",
    "Request",
    "VllmBuild",
    "TorchBuild",
    "Rejection",
    "Resolution",
    "NoCompatibleStack",
    "driver_floor",
    "driver_serves",
    "vllm_builds",
    "resolve",
    "resolve_kept_torch",
    "alternatives",
]

POLICIES = ("minor-compat", "toolkit")
COMPANIONS = ("torchvision", "torchaudio", "xformers", "flashinfer-python", "triton")


class NoCompatibleStack(VresolveError):
    """No vLLM stack runs on this machine under the request; ``causes`` and ``hints`` say why.

    >>> raise NoCompatibleStack("no vLLM wheel runs here", causes=["driver 470.82 ..."], hints=["install ..."])
    """

    code = "no-compatible-stack"
    exit_code = EXIT_NO_STACK

    def __init__(self, message: str, *, causes: Sequence[str] = (), hints: Sequence[str] = ()) -> None:
        self.causes = tuple(causes)
        self.hints = tuple(hints)
        self._headline = message
        super().__init__(self.format())

    def format(self, head: str = "", causes_head: str = "", hints_head: str = "", indent: str = "    ") -> str:
        """pip's shape: the headline, "The conflict is caused by:", then numbered "To fix this" hints."""
        lines = [head + self._headline]
        if self.causes:
            lines.append(causes_head + "The conflict is caused by:")
            lines += [f"{indent}{c}" for c in self.causes]
        if self.hints:
            lines.append(hints_head + "To fix this you could try to:")
            lines += [f"{indent}{i}. {h}" for i, h in enumerate(self.hints, 1)]
        return "\n".join(lines)

    @property
    def headline(self) -> str:
        return self._headline


@dataclass(frozen=True, kw_only=True, slots=True)
class Request:
    """What the user asks for, beyond the machine's facts."""

    vllm: SpecifierSet = field(default_factory=SpecifierSet)
    torch: SpecifierSet = field(default_factory=SpecifierSet)
    variant: str | None = None  # torch's variant, when the user names one (cuXYZ | cpu)
    driver_policy: str = "minor-compat"
    cpu: bool = False  # plan the CPU backend (--gpu none, or no GPU found)
    pypi_only: bool = False  # only wheels from the configured index (no PyTorch or vLLM variant index)


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True, kw_only=True, slots=True)
class VllmBuild:
    """A vLLM release x one wheel build of it (the PyPI wheel, or a CUDA variant)."""

    release: VllmRelease
    variant: str  # "cu130" | "cpu"
    cuda: Version | None
    where: str  # "pypi" | "vllm-index" | "release-assets"
    kernels: Kernels | None
    wheel: Wheel | None  # the PyPI wheel of this platform (whose METADATA gave the pins)
    pins: Mapping[str, SpecifierSet]
    provenance: Provenance
    name: str = "vllm"
    label: str = ""  # "vLLM 0.33.0 (cu130, PyPI wheel)", filled in by vllm_builds
    trusted: bool = True  # False: the matrix marks this build's facts unverified
    asset: Asset | None = None  # where == "release-assets": the wheel's download URL

    @property
    def manylinux(self) -> Version | None:
        """The glibc floor of the wheel this build installs; None when not known (another index's wheel)."""
        if self.where == "pypi":
            return _glibc(self.wheel.manylinux) if self.wheel is not None else None
        if self.asset is not None:
            plat = wheel_platform(self.asset.url.rsplit("-", 1)[-1].removesuffix(".whl"))
            return _glibc(plat[1]) if plat else None
        return None

    @property
    def version(self) -> Version:
        return self.release.version

    def torch_pin(self) -> Version | None:
        return exact_pin(self.pins.get("torch"))

    def format_for_error(self) -> str:
        return self.label or f"vLLM {self.version} ({self.variant}, {_where_text(self.where)})"


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchBuild:
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
        wheels = [w for w in matrix.extra_wheels.get(name, {}).get(pin, ()) if w.platform == platform and w.manylinux]
        if wheels:
            out.append((name, pin, min(Version(w.manylinux) for w in wheels if w.manylinux)))
    return out


def _where_text(where: str) -> str:
    return {"pypi": "PyPI wheel", "vllm-index": "vLLM's wheel index", "release-assets": "GitHub release assets",
            "pytorch": "PyTorch index"}.get(where, where)


@dataclass(frozen=True, kw_only=True, slots=True)
class VllmRequirement:
    spec: SpecifierSet
    name: str = "vllm"

    @property
    def trivial(self) -> bool:
        return len(self.spec) == 0

    def is_satisfied_by(self, c: VllmBuild) -> bool:
        return self.spec.contains(c.version, prereleases=True)

    def format_for_error(self) -> str:
        return f"vllm{self.spec}" if str(self.spec) else "vllm"


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchRequirement:
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


# --------------------------------------------------------------------------- domain rules


def driver_serves(matrix: Matrix, driver: DriverVersion, policy: str) -> Version | None:
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


def driver_floor(matrix: Matrix, cuda: Version, policy: str, ptx_only: bool) -> DriverVersion | None:
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


def _coverage(archs: ArchList, gpus: Sequence[HostGpu]) -> tuple[list[HostGpu], list[HostGpu]]:
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


def _gpu_list(gpus: Iterable[HostGpu]) -> str:
    seen: dict[str, int] = {}
    for g in gpus:
        key = f"{g.name} (sm_{g.compute_capability.major}{g.compute_capability.minor})" if g.compute_capability else g.name
        seen[key] = seen.get(key, 0) + 1
    return ", ".join(k if n == 1 else f"{n}x {k}" for k, n in seen.items())


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
                                 label=f"vLLM {r.version} ({variant}, {_where_text('pypi')})",
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
                                 label=f"vLLM {r.version} ({v.variant}, {_where_text(v.where)})",
                                 trusted=v.trusted, asset=v.asset))
    out.sort(key=lambda b: (not b.trusted, -_vkey(b.version), b.where != "pypi",
                            -(b.cuda.major * 100 + b.cuda.minor) if b.cuda else 0))
    return out


def _vkey(v: Version) -> float:
    """A number that orders release versions (for a sort key that negates)."""
    n = 0.0
    for i, part in enumerate(v.release[:4]):
        n += part * 1000.0 ** (3 - i)
    return n


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class Rejection:
    """Why one candidate cannot run here, in hardware terms.

    A driver rejection keeps its parts and writes its sentence only when asked: a resolution
    on an old driver rejects hundreds of builds, and most rejections are never shown.
    """

    build: Candidate
    kind: str  # "driver" | "gpu" | "python" | "platform" | "glibc"
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


# --------------------------------------------------------------------------- the provider


# Memo tables shared by every resolution in this process, keyed by the matrix's revision
# (its content): a sweep over many hosts re-asks the same questions about the same builds.
_MEMO: dict[tuple[Any, ...], Any] = {}


def _memo(key: tuple[Any, ...], compute: Any) -> Any:
    try:
        return _MEMO[key]
    except KeyError:
        value = _MEMO[key] = compute()
        return value


def _floor(matrix: Matrix, cuda: Version, policy: str, ptx: bool) -> DriverVersion | None:
    return _memo(("floor", matrix.revision, cuda, policy, ptx), lambda: driver_floor(matrix, cuda, policy, ptx))


def _served(matrix: Matrix, driver: DriverVersion, policy: str) -> Version | None:
    return _memo(("served", matrix.revision, driver, policy), lambda: driver_serves(matrix, driver, policy))


_Verdict = tuple[str, str]  # ("ok", "") | ("ptx", "") | (kind, reason)



class _Checker:
    """The host's facts as candidate filters; remembers every rejection and its reason.

    What does not depend on the driver (GPU coverage, Python, platform) is decided once per
    build and host shape and memoised; the driver check is a comparison with a memoised floor.
    """

    def __init__(self, host: Host, matrix: Matrix, request: Request, allow_unverified: bool) -> None:
        self.host, self.matrix, self.request = host, matrix, request
        self.allow_unverified = allow_unverified
        self.gpus = [g for g in host.gpus if g.compute_capability is not None]
        self.platform = host.platform.tag
        self.python = host.python_minor
        self.driver = host.driver.version
        self.glibc = host.platform.glibc
        self._rejections: list[Rejection] = []
        self._driver_rejections: list[tuple[Candidate, DriverVersion, bool]] = []
        self.skipped_unverified = False  # the cautious pass left out some build
        self._shape = (matrix.revision, self.platform, self.python, self.glibc,
                       tuple((g.name, g.compute_capability) for g in self.gpus))

    def reject(self, c: Candidate, kind: str, reason: str) -> None:
        self._rejections.append(Rejection(build=c, kind=kind, text=reason))

    def pool(self, key: Any, builds: Sequence[Candidate]) -> list[tuple[Candidate, DriverVersion | None, bool]]:
        """The builds that pass every driver-independent check, each with its driver floor.

        Memoised per host shape (GPUs, Python, platform, backend, policy, pass): a sweep asks
        the same question for every driver. The builds it drops are recorded as rejections.
        """
        entries, rejected, skipped = _memo(("pool", key, *self._shape, self.request.cpu, self.request.pypi_only,
                                            self.request.driver_policy, self.allow_unverified),
                                           lambda: self._filter(builds))
        self._rejections.extend(rejected)
        self.skipped_unverified |= skipped
        return entries

    def _filter(self, builds: Sequence[Candidate]) -> tuple[list[tuple[Candidate, DriverVersion | None, bool]],
                                                            list[Rejection], bool]:
        entries: list[tuple[Candidate, DriverVersion | None, bool]] = []
        rejected: list[Rejection] = []
        skipped = False
        policy = self.request.driver_policy
        for c in builds:
            if isinstance(c, VllmBuild) and self.request.cpu != (c.cuda is None):
                continue  # the other backend: not a rejection worth reporting
            if not self.allow_unverified and not c.trusted:
                skipped = True
                continue  # the first, cautious pass uses verified facts only
            if self.request.pypi_only and not (c.pypi if isinstance(c, TorchBuild) else c.where == "pypi"):
                continue  # --pypi-only: the variant indexes are out of reach
            if not self.allow_unverified and self.glibc is not None and c.manylinux is None \
                    and (c.cuda is not None or isinstance(c, VllmBuild)):
                skipped = True
                continue  # the glibc this build's wheel needs is not recorded: cautious, like an unverified fact
            kind, reason = self._verdict(c)
            if kind != "ok" and kind != "ptx":
                rejected.append(Rejection(build=c, kind=kind, text=reason))
                continue
            floor = _floor(self.matrix, c.cuda, policy, kind == "ptx") if c.cuda is not None else None
            entries.append((c, floor, kind == "ptx"))
        return entries, rejected, skipped

    def driver_ok(self, c: Candidate, floor: DriverVersion | None, ptx: bool) -> bool:
        """The one check that depends on the driver; records why not."""
        cuda = c.cuda
        if cuda is None:
            return True
        if floor is None:
            if self.host.driver.cuda is not None and self.host.driver.cuda >= cuda:
                return True  # the driver itself says it serves this CUDA
            self.reject(c, "driver", f"{c.label} is built with CUDA {cuda}, whose minimum driver "
                        "is not known to the matrix")
            return False
        if self.driver is None or not self.driver < floor:
            return True  # no driver: planning for another machine, the plan states the floor
        self._driver_rejections.append((c, floor, ptx))  # made into Rejections only if asked for
        return False

    @property
    def rejections(self) -> list[Rejection]:
        """Every rejection so far: the driver-independent ones, then the driver's."""
        if self._driver_rejections:
            served = _served(self.matrix, self.driver, self.request.driver_policy) if self.driver else None
            policy = self.request.driver_policy
            self._rejections += [Rejection(build=c, kind="driver", needs_driver=floor, driver=self.driver,
                                           served=served, policy=policy, ptx=ptx)
                                 for c, floor, ptx in self._driver_rejections]
            self._driver_rejections = []
        return self._rejections

    def _verdict(self, c: Candidate) -> _Verdict:  # noqa: C901 (issue 12: to split)
        """The driver-independent checks of one build on this host shape."""
        if isinstance(c, VllmBuild):
            if c.wheel is None and c.where == "pypi":
                return "platform", f"{c.label} has no wheel for {self.platform}"
            bad = self._python_reason(c)
            if bad:
                return "python", bad
            bad = self._glibc_reason(c)
            if bad:
                return "glibc", bad
            if c.cuda is None or not self.gpus:
                return "ok", ""
            k = c.kernels
            if k is None:
                return "gpu", f"{c.label}: its kernels' arch list is not in the matrix"
            too_old = [g for g, cc in self.host.known_gpus() if cc < k.min_compute_capability]
            if too_old:
                return "gpu", (f"{c.label} needs compute capability >= {k.min_compute_capability}; "
                               f"{_gpu_list(too_old)} is older")
            missing, ptx = _coverage(k.archs, self.gpus)
            if missing:
                return "gpu", f"{c.label}'s kernels ({k.archs}) do not run on {_gpu_list(missing)}"
            return ("ptx" if ptx else "ok"), ""
        if self.python not in c.release.python:
            return "python", (f"{c.label} has no wheel for Python {self.python} "
                              f"(it has {', '.join(map(str, c.release.python))})")
        bad = self._glibc_reason(c)
        if bad:
            return "glibc", bad
        if c.cuda is None or not self.gpus:
            return "ok", ""
        missing, ptx = _coverage(c.archs, self.gpus)
        if missing:
            return "gpu", f"{c.label} ({c.archs}) does not run on {_gpu_list(missing)}"
        return ("ptx" if ptx else "ok"), ""

    def _glibc_reason(self, c: Candidate) -> str | None:
        """The build's wheel, or a companion it pins from PyPI, needs a newer glibc than the host's."""
        if self.glibc is None:
            return None
        floor = c.manylinux
        what = f"vLLM {c.version}'s {c.variant} wheel" if isinstance(c, VllmBuild) else f"torch {c.version}'s wheel"
        if isinstance(c, VllmBuild) and (floor is None or floor <= self.glibc):
            for name, version, cfloor in companion_floors(self.matrix, c, self.platform, PYPI_COMPANIONS):
                if cfloor > self.glibc:
                    floor, what = cfloor, f"{name} {version}'s wheel (pinned by vLLM {c.version})"
                    break
        if floor is None or floor <= self.glibc:
            return None
        return f"{what} needs glibc >= {floor} (manylinux_{floor.major}_{floor.minor}); this host has {self.glibc}"

    def _python_reason(self, c: VllmBuild) -> str | None:
        py = f"{self.python}.0"
        rp = c.release.requires_python
        if c.where == "pypi":
            tag = f"cp{self.python.major}{self.python.minor}-"
            fits = [w for w in c.release.wheels_for(self.platform)
                    if (w.python_tag.endswith("abi3") or w.python_tag.startswith(tag))
                    and (w.requires_python is None or w.requires_python.contains(py, prereleases=True))]
            if not fits:
                return f"{c.label} has no wheel for Python {self.python}" + (
                    f" (it requires Python {rp})" if rp else "")
        elif rp is not None and not rp.contains(py, prereleases=True):
            return f"{c.label} requires Python {rp}, not {self.python}"
        elif c.asset is not None and "{cp}" in c.asset.url:
            # one asset per CPython, built by the same workflow as the PyPI wheels: the same Pythons
            tag = f"cp{self.python.major}{self.python.minor}-"
            if not any(w.python_tag.startswith(tag) or (w.python_tag.endswith("abi3") and (
                    w.requires_python is None or w.requires_python.contains(py, prereleases=True)))
                       for w in c.release.wheels_for(self.platform)):
                return f"{c.label} has no wheel for Python {self.python}"
        return None


def _torch_builds(matrix: Matrix, platform: str) -> dict[Version, list[TorchBuild]]:
    out: dict[Version, list[TorchBuild]] = {}
    for t in matrix.torch:
        builds = [TorchBuild(release=t, variant=v, platform=platform, pypi=platform in v.pypi_default)
                  for v in t.variants if platform in v.archs]
        # PyPI's default first (the simplest install), then the newest CUDA, trusted facts first
        builds.sort(key=lambda b: (not b.pypi, not b.variant.provenance.trusted,
                                   -(b.cuda.major * 100 + b.cuda.minor) if b.cuda else 0))
        out[t.version] = builds
    return out


class _Provider(AbstractProvider):
    """A thin adapter: requirements and candidates own the logic; the checker owns the host."""

    def __init__(self, matrix: Matrix, checker: _Checker, request: Request) -> None:
        self.checker = checker
        self.request = request
        self.vllm = _memo(("vllm-builds", matrix.revision, checker.platform),
                          lambda: vllm_builds(matrix, checker.platform))
        self.torch = _memo(("torch-builds", matrix.revision, checker.platform),
                           lambda: _torch_builds(matrix, checker.platform))
        self.torch_versions = sorted(self.torch, reverse=True)

    def identify(self, requirement_or_candidate: Any) -> str:
        return requirement_or_candidate.name

    def get_preference(self, identifier: str, resolutions: Mapping[str, Any], candidates: Mapping[str, Any],
                       information: Mapping[str, Any], backtrack_causes: Sequence[Any]) -> tuple[int, str]:
        """vLLM first (it decides the torch pin), then torch; the identifier breaks ties."""
        return (0 if identifier == "vllm" else 1, identifier)

    def find_matches(self, identifier: str, requirements: Mapping[str, Iterator[Requirement]],
                     incompatibilities: Mapping[str, Iterator[Candidate]]) -> Any:
        """A lazy view: the driver is checked only as the resolver reaches each build."""
        reqs = [r for r in requirements[identifier] if not r.trivial]
        bad = {id(c) for c in incompatibilities[identifier]}
        checker = self.checker
        if identifier == "vllm":
            pool = checker.pool("vllm", self.vllm)
        else:
            pins = {r.version for r in reqs if isinstance(r, TorchRequirement)}
            versions = [v for v in self.torch_versions if not pins or v in pins]
            pool = [e for v in versions for e in checker.pool(("torch", v), self.torch[v])]
        seen: dict[int, bool] = {}

        def matches() -> Iterator[Candidate]:
            for c, floor, ptx in pool:
                if id(c) in bad or not all(r.is_satisfied_by(c) for r in reqs):  # type: ignore[arg-type]
                    continue
                ok = seen.get(id(c))
                if ok is None:
                    ok = seen[id(c)] = checker.driver_ok(c, floor, ptx)
                if ok:
                    yield c

        return matches

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        return requirement.is_satisfied_by(candidate)  # type: ignore[arg-type]

    def get_dependencies(self, candidate: Candidate) -> list[Requirement]:
        if isinstance(candidate, VllmBuild):
            return [TorchRequirement(version=candidate.torch_pin(),
                                     cuda_major=candidate.cuda.major if candidate.cuda else None,
                                     user=self.request.torch, variant=self.request.variant)]
        return []


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolution:
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
    checker: Any = field(repr=False, compare=False)  # holds the rejections, made into text only if asked

    @property
    def rejections(self) -> tuple[Rejection, ...]:
        """The builds the resolver turned down on the way, and why (newest first)."""
        return tuple(self.checker.rejections)


def _min_driver(matrix: Matrix, res_vllm: VllmBuild, res_torch: TorchBuild, gpus: Sequence[HostGpu],
                policy: str) -> tuple[DriverVersion | None, list[HostGpu]]:
    floors: list[DriverVersion] = []
    ptx_all: list[HostGpu] = []
    for cuda, archs in ((res_vllm.cuda, res_vllm.kernels.archs if res_vllm.kernels else None),
                        (res_torch.cuda, res_torch.archs)):
        if cuda is None:
            continue
        ptx = _coverage(archs, gpus)[1] if archs is not None else []
        ptx_all += [g for g in ptx if g not in ptx_all]
        f = _floor(matrix, cuda, policy, bool(ptx))
        if f is not None:
            floors.append(f)
    return (max(floors) if floors else None), ptx_all


def _stack_warnings(host: Host, v: VllmBuild, t: TorchBuild) -> list[str]:
    out = []
    known = host.known_gpus()
    gpus = [g for g, _ in known]
    families = {cc.major for _, cc in known}
    ccs = {cc for _, cc in known}
    if len(ccs) > 1:
        out.append(f"this machine mixes GPU architectures ({_gpu_list(gpus)}): tensor parallelism across them "
                   "runs at the speed of the slowest and may fail for kernels one of them lacks; set "
                   "CUDA_VISIBLE_DEVICES to GPUs of one kind per vLLM instance")
    old = [g for g, cc in known if cc < Capability(8, 0)]
    if old:
        out.append(f"{_gpu_list(old)}: compute capability below 8.0 has no bfloat16 and no FlashAttention 2; "
                   "run models with --dtype float16")
    if len(families) and any(c < Capability(7, 0) for c in ccs):
        out.append("GPUs below compute capability 7.0 are not supported by vLLM's kernels")
    if v.asset is not None and not v.asset.provenance.trusted:
        out.append(f"the download URL of {v.format_for_error()} is unverified"
                   f"{': ' + v.asset.provenance.note if v.asset.provenance.note else ''}; if it answers 404, "
                   "look for the file on the release page")
    for what, prov in (("vLLM build", v.provenance), ("torch build", t.variant.provenance)):
        if not prov.trusted:
            out.append(f"the matrix's facts about this {what} ({v.format_for_error() if what.startswith('vLLM') else t.format_for_error()}) "
                       f"are unverified{': ' + prov.note if prov.note else ''}; run the verification step")
    return out


def resolve(host: Host, matrix: Matrix, request: Request) -> Resolution:  # noqa: C901 (issue 12: to split)
    """The best stack for ``host`` under ``request``, or NoCompatibleStack with causes and hints."""
    if request.driver_policy not in POLICIES:
        raise ValueError(request.driver_policy)
    # Cautious about unverified facts: a first pass uses verified facts only; a stack that
    # needs an unverified build is chosen only when nothing verified fits, and says so.
    for allow_unverified in (False, True):
        checker = _Checker(host, matrix, request, allow_unverified)
        provider = _Provider(matrix, checker, request)
        resolver: Resolver[Any, Any, str] = Resolver(provider, BaseReporter())
        try:
            result = resolver.resolve([VllmRequirement(spec=request.vllm)], max_rounds=500)
            break
        except ResolutionImpossible:
            if allow_unverified or not checker.skipped_unverified:  # a second pass would see the same
                raise _explain(host, matrix, request, checker, provider) from None
    v: VllmBuild = result.mapping["vllm"]
    t: TorchBuild = result.mapping["torch"]
    gpus = checker.gpus
    floor, ptx = _min_driver(matrix, v, t, gpus, request.driver_policy)
    cudas = [c for c in (v.cuda, t.cuda) if c is not None]
    companions = {k: _exact_text(s) for k, s in v.pins.items() if k in COMPANIONS}
    reasons = [f"vLLM {v.version} is the newest release that meets the request"
               + (f" ({request.vllm})" if str(request.vllm) else "") + " and runs on this machine"]
    if v.cuda is None:
        reasons.append(f"no NVIDIA GPU to plan for: vLLM's CPU build ({v.version}+cpu, from {_where_text(v.where)}) "
                       f"with the CPU torch it pins ({t.version}+cpu)")
    elif v.where == "pypi":
        reasons.append(f"its PyPI wheel is built with {'CUDA ' + str(v.cuda) if v.cuda else 'no CUDA (CPU)'} "
                       f"and pins torch {t.version} (read from the wheel's METADATA)")
    else:
        reasons.append(f"its {v.variant} build from {_where_text(v.where)} is used: the PyPI wheel "
                       "does not run here (see the rejected builds)")
    reasons.append(f"torch {t.version}+{t.variant.variant} "
                   + ("is PyPI's default build" if t.pypi else f"comes from the PyTorch index ({t.variant.variant})"))
    if gpus:
        reasons.append(f"both arch lists cover {_gpu_list(gpus)}: torch {t.archs}; vLLM kernels "
                       f"{v.kernels.archs if v.kernels else '(none)'}")
    if floor is not None:
        served = f"driver {host.driver.version} serves it" if host.driver.version else "the driver is not known"
        reasons.append(f"CUDA {max(cudas)} needs driver >= {floor} under the {request.driver_policy} policy; {served}")
    warnings = _stack_warnings(host, v, t)
    if v.cuda is None:
        warnings.append("the CPU backend runs models far slower than a GPU; on a machine with NVIDIA GPUs run "
                        "`vresolve plan --gpu auto` there, or plan for it here with --gpu NAME --driver VERSION")
    if ptx:
        warnings.append(f"{_gpu_list(ptx)} run{'s' if len(ptx) == 1 else ''} part of the stack only through PTX: "
                        "the first launch JIT-compiles kernels (slow once), and the driver must be at least the "
                        "toolkit's own floor")
    if host.driver.version is not None and request.driver_policy == "minor-compat" and cudas:
        own = _floor(matrix, max(cudas), "toolkit", False)
        if own is not None and host.driver.version < own:
            warnings.append(f"this stack relies on CUDA minor-version compatibility: CUDA {max(cudas)}'s own "
                            f"minimum driver is {own} (driver {host.driver.version} is older); PTX JIT and a few "
                            "newer CUDA APIs are unavailable until the driver is upgraded")
    if host.driver.version is None and not request.cpu:
        warnings.append(f"no driver given: the plan needs driver >= {floor}" if floor else
                        "no driver given and the minimum driver is unknown")
    if host.platform.glibc is not None:
        unknown = [b.format_for_error() for b in (v, t) if b.manylinux is None]
        if unknown:
            warnings.append(f"the glibc that {' and '.join(unknown)} need{'s' if len(unknown) == 1 else ''} is not "
                            f"recorded (not a PyPI wheel): if the installer finds no wheel, glibc "
                            f"{host.platform.glibc} is too old for it")
    floors = [f for f in (v.manylinux, t.manylinux) if f is not None]
    floors += [f for _, _, f in companion_floors(matrix, v, host.platform.tag, PYPI_COMPANIONS
                                                 + (("torchvision", "torchaudio") if t.pypi else ()))]
    glibc_floor = max(floors) if floors else None
    if glibc_floor is not None:
        if host.platform.glibc is not None:
            reasons.append(f"the wheels need glibc >= {glibc_floor} (manylinux_{glibc_floor.major}_{glibc_floor.minor}); "
                           f"this host has {host.platform.glibc}")
        else:
            warnings.append(f"glibc not known: the wheels need glibc >= {glibc_floor} (manylinux_"
                            f"{glibc_floor.major}_{glibc_floor.minor}); give --glibc X.Y to plan for another machine's")
    return Resolution(host=host, request=request, vllm=v, torch=t, companions=companions,
                      cuda=max(cudas) if cudas else None, min_driver=floor, ptx_gpus=tuple(ptx),
                      glibc_floor=glibc_floor,
                      reasons=tuple(reasons), warnings=tuple(warnings), checker=checker)


def resolve_kept_torch(host: Host, matrix: Matrix, request: Request) -> Resolution:
    """The newest vLLM wheel that runs on ``host`` with the torch installed in this environment, kept.

    A wheel fits when its own METADATA pins exactly that torch release and the build is made for the
    kept torch's CUDA major (the rules :func:`resolve` applies: vLLM and torch on one CUDA major, arch
    lists, driver, Python, glibc). NoCompatibleStack when none does (then a source build is the way).
    """
    from dataclasses import replace

    kept = host.installed_dist("torch")
    if kept is None:
        raise NoCompatibleStack("--keep-torch: no torch is installed in this environment",
                                hints=["run vresolve from the environment whose torch you want to keep",
                                       "or leave out --keep-torch: the plan then installs the torch the release pins"])
    version = Version(kept.version)
    cuda = Version(kept.cuda) if kept.cuda else None
    local = version.local or ""
    variant = local if local == "cpu" or local.startswith("cu") else (variant_for_cuda(cuda) if cuda else "cpu")
    if request.variant is not None and request.variant != variant:
        raise NoCompatibleStack(f"--variant {request.variant}: the kept torch {kept.version} is a {variant} build")
    pinned = SpecifierSet(f"=={version.public}") & request.torch
    try:
        return resolve(host, matrix, replace(request, torch=pinned, variant=variant, cpu=request.cpu or cuda is None))
    except NoCompatibleStack as e:
        raise NoCompatibleStack(f"no vLLM wheel pins your torch {kept.version} and runs here ({e.headline})",
                                causes=e.causes) from None


def _exact_text(spec: SpecifierSet) -> str:
    items = list(spec)
    if len(items) == 1 and items[0].operator == "==":
        return items[0].version
    return str(spec)


def _explain(host: Host, matrix: Matrix, request: Request, checker: _Checker, provider: _Provider) -> NoCompatibleStack:  # noqa: C901 (issue 12: to split)
    """Turn the rejections into a hardware-terms explanation and concrete hints."""
    from dataclasses import replace

    any_version = len(request.vllm) == 0
    wanted = [b for b in provider.vllm if request.cpu == (b.cuda is None)
              and (any_version or request.vllm.contains(b.version, prereleases=True))]
    # only what the request asked about: the pool records every build it turned down
    rejections = [r for r in checker.rejections if not isinstance(r.build, VllmBuild)
                  or any_version or request.vllm.contains(r.build.version, prereleases=True)]
    if not wanted:
        what = f"vllm{request.vllm}" if str(request.vllm) else "vLLM"
        backend = "CPU" if request.cpu else "CUDA"
        return NoCompatibleStack(
            f"the matrix has no {backend} build of {what} for {checker.platform}",
            causes=[f"known vLLM releases: {provider.vllm[-1].version} .. {provider.vllm[0].version}"] if provider.vllm else [],
            hints=["ask for a vLLM version the matrix knows (vresolve matrix show vllm)",
                   "build vLLM from source (--source-build always)"])
    newest = wanted[0].version
    causes: list[str] = []
    driver_rj = [r for r in rejections if r.kind == "driver" and r.needs_driver is not None]
    if driver_rj and host.driver.version is not None:
        served = _served(matrix, host.driver.version, request.driver_policy)
        least = min(driver_rj, key=lambda r: r.needs_driver)  # type: ignore[arg-type, return-value]
        causes.append(f"driver {host.driver.version} serves CUDA {served or 'none'} at most under the "
                      f"{request.driver_policy} policy; the least demanding build that fits otherwise, "
                      f"{least.candidate}, needs {least.needs_driver}")
    for kind in ("gpu", "python", "platform", "glibc"):
        of_kind = [r for r in rejections if r.kind == kind and r.text is not None]
        if of_kind:
            causes.append(of_kind[0].reason)  # the newest release's reason
            if of_kind[-1].reason != of_kind[0].reason:
                causes.append(of_kind[-1].reason)  # the oldest release's: nothing between fits either
    for rj in driver_rj:  # the newest release's builds, one line each
        if len(causes) >= 6:
            break
        if isinstance(rj.build, VllmBuild) and rj.build.version == newest and rj.reason not in causes:
            causes.append(rj.reason)
    hints: list[str] = []
    if driver_rj and host.driver.version is not None:
        # the smallest driver upgrade that lets the newest wanted release through
        relaxed = _try(host, matrix, request, driver=None)
        if relaxed is not None and relaxed.min_driver is not None:
            hints.append(f"install NVIDIA driver >= {relaxed.min_driver} (it serves vLLM {relaxed.vllm.version} "
                         f"with torch {relaxed.torch.version}+{relaxed.torch.variant.variant})")
    if request.driver_policy == "toolkit" and driver_rj:
        alt = _try(host, matrix, request, policy="minor-compat")
        if alt is not None:
            hints.append(f"use --driver-policy minor-compat: vLLM {alt.vllm.version} runs on this driver under "
                         "CUDA minor-version compatibility")
    if str(request.vllm):
        older = _try(host, matrix, replace(request, vllm=SpecifierSet()))  # the rest of the request kept
        if older is not None:
            hints.append(f"drop the vLLM constraint ({request.vllm}): vLLM {older.vllm.version} runs here")
    kinds = {r.kind for r in rejections}
    if "gpu" in kinds:
        hints.append("build vLLM from source for this GPU's architecture (--source-build always)")
    if "python" in kinds:
        hints.append("use a Python version the release supports (--python X.Y; uv can install it)")
    if "glibc" in kinds:
        hints.append("use a newer Linux distribution (glibc), a container image with one, or an older vLLM")
    headline = (f"no build of vLLM {request.vllm or ''}".rstrip() + f" runs on this machine "
                f"({_machine_text(host, request)})")
    return NoCompatibleStack(headline, causes=causes, hints=hints)


def _machine_text(host: Host, request: Request) -> str:
    parts = []
    if host.driver.version is not None:
        parts.append(f"driver {host.driver.version}")
    if not request.cpu and host.gpus:
        parts.append(_gpu_list(host.gpus))
    parts.append(f"Python {host.python_minor}")
    parts.append(host.platform.tag + (f", glibc {host.platform.glibc}" if host.platform.glibc else ""))
    return ", ".join(parts)


def _try(host: Host, matrix: Matrix, request: Request, *, driver: Any = ..., policy: str | None = None
         ) -> Resolution | None:
    from dataclasses import replace

    h = host if driver is ... else replace(host, driver=replace(host.driver, version=driver, cuda=None))
    r = request if policy is None else replace(request, driver_policy=policy)
    try:
        return resolve(h, matrix, r)
    except NoCompatibleStack:
        return None


def alternatives(host: Host, matrix: Matrix, request: Request, chosen: Resolution) -> list[tuple[Resolution, str]]:
    """Stacks worth knowing about that were not chosen, each with the reason.

    A newer vLLM that a driver upgrade would allow (naming the driver); the simplest
    install (PyPI wheels only) when a variant was chosen and a driver upgrade allows it.
    """
    out: list[tuple[Resolution, str]] = []
    if host.driver.version is None or request.cpu:
        return out
    free = _try(host, matrix, request, driver=None)
    if free is not None and (free.vllm.version, free.vllm.where == "pypi") > (chosen.vllm.version,
                                                                             chosen.vllm.where == "pypi"):
        newer = free.vllm.version > chosen.vllm.version
        what = "a newer vLLM" if newer else "the simpler PyPI install"
        out.append((free, f"{what} needs NVIDIA driver >= {free.min_driver}; this machine has {host.driver.version}"))
    return out
