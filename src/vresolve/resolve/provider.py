"""The host's facts as candidate filters, resolvelib's provider, and :func:`resolve`.

The host's facts (driver, each GPU's compute capability, Python, platform, glibc) are fixed, so
they are applied as candidate filters in ``find_matches``: a build that cannot run on this machine
never reaches resolvelib, and the reason is recorded in hardware terms (:class:`Rejection`).
``ResolutionImpossible`` is caught in exactly one place, :func:`resolve`. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, Resolver

from ..host import Host, HostGpu, describe_gpus
from ..matrix import Matrix
from ..names import POLICIES
from ..values import Capability, DriverVersion, variant_for_cuda
from .candidates import (
    COMPANIONS,
    PYPI_COMPANIONS,
    Candidate,
    Rejection,
    Request,
    Requirement,
    Resolution,
    Stack,
    TorchBuild,
    TorchRequirement,
    VllmBuild,
    VllmRequirement,
    closure_floors,
    companion_floors,
    coverage,
    driver_floor_memo,
    memo,
    module_ptx,
    served_memo,
    torch_builds,
    torch_issues,
    vllm_builds,
    where_text,
)
from .explain import NoCompatibleStack, explain, try_resolve
from .gpudriver import refuse_unsupported_driver

__all__ = ["Resolution", "Stack", "resolve", "resolve_kept_torch", "alternatives", "may_be_jetson"]

if TYPE_CHECKING:
    from typing import Literal

    from ..names import Policy, RejectionKind

    _Verdict = tuple[Literal["ok", "ptx"] | RejectionKind, str]  # ("ok", "") | ("ptx", "") | (kind, reason)


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
        self._python_x = Version(f"{self.python}.0")  # what requires-python is matched against, parsed once
        self.driver = host.driver.version
        self.glibc = host.platform.glibc
        self._rejections: list[Rejection] = []
        self._driver_rejections: list[tuple[Candidate, DriverVersion, bool]] = []
        self.skipped_unverified = False  # the cautious pass left out some build
        self.unknown_glibc = False  # ... some of them because the glibc its wheel needs is not recorded
        self._shape = (matrix.revision, self.platform, self.python, self.glibc,
                       tuple((g.name, g.compute_capability) for g in self.gpus))

    def reject(self, c: Candidate, kind: RejectionKind, reason: str) -> None:
        self._rejections.append(Rejection(build=c, kind=kind, text=reason))

    def pool(self, key: Any, builds: Sequence[Candidate]) -> list[tuple[Candidate, DriverVersion | None, bool]]:
        """The builds that pass every driver-independent check, each with its driver floor.

        Memoised per host shape (GPUs, Python, platform, backend, policy, pass): a sweep asks
        the same question for every driver. The builds it drops are recorded as rejections.
        """
        entries, rejected, skipped, unknown = memo(("pool", key, *self._shape, self.request.cpu,
                                                    self.request.pypi_only, self.request.driver_policy,
                                                    self.allow_unverified, self.request.cuda_major,
                                                    self.request.allow_unknown_glibc),
                                                   lambda: self._filter(builds))
        self._rejections.extend(rejected)
        self.skipped_unverified |= skipped
        self.unknown_glibc |= unknown
        return entries

    def _filter(self, builds: Sequence[Candidate]) -> tuple[list[tuple[Candidate, DriverVersion | None, bool]],
                                                            list[Rejection], bool, bool]:
        entries: list[tuple[Candidate, DriverVersion | None, bool]] = []
        rejected: list[Rejection] = []
        skipped = unknown = False
        policy = self.request.driver_policy
        for c in builds:
            if isinstance(c, VllmBuild) and self.request.cpu != (c.cuda is None):
                continue  # the other backend: not a rejection worth reporting
            if not self.allow_unverified and not c.trusted:
                skipped = True
                continue  # the first, cautious pass uses verified facts only
            if self.request.pypi_only and not (c.pypi if isinstance(c, TorchBuild) else c.where == "pypi"):
                continue  # --pypi-only: the variant indexes are out of reach
            if (not self.allow_unverified and not self.request.allow_unknown_glibc and self.glibc is not None
                    and c.manylinux is None):
                skipped = unknown = True
                continue  # the glibc this build's wheel needs is not recorded: cautious, like an unverified fact
            kind, reason = self._cuda_major(c, self._verdict(c))
            if kind != "ok" and kind != "ptx":
                rejected.append(Rejection(build=c, kind=kind, text=reason))
                continue
            floor = driver_floor_memo(self.matrix, c.cuda, policy, kind == "ptx") if c.cuda is not None else None
            entries.append((c, floor, kind == "ptx"))
        return entries, rejected, skipped, unknown

    def _cuda_major(self, c: Candidate, verdict: _Verdict) -> _Verdict:
        """A build that runs here otherwise, turned down when the request holds the CUDA major (a Jetson Thor)."""
        major = self.request.cuda_major
        if major is None or c.cuda is None or c.cuda.major == major or verdict[0] not in ("ok", "ptx"):
            return verdict
        return "platform", f"{c.label} is built with CUDA {c.cuda}; {self.request.cuda_major_why}"

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
            served = served_memo(self.matrix, self.driver, self.request.driver_policy) if self.driver else None
            policy = self.request.driver_policy
            self._rejections += [Rejection(build=c, kind="driver", needs_driver=floor, driver=self.driver,
                                           served=served, policy=policy, ptx=ptx)
                                 for c, floor, ptx in self._driver_rejections]
            self._driver_rejections = []
        return self._rejections

    def _verdict(self, c: Candidate) -> _Verdict:
        """The driver-independent checks of one build on this host shape."""
        if isinstance(c, VllmBuild):
            if c.wheel is None and c.where == "pypi":
                return "platform", f"{c.label} has no wheel for {self.platform}"
            bad = self._python_reason(c)
        elif self.python not in c.release.python:
            bad = f"{c.label} has no wheel for Python {self.python} (it has {', '.join(map(str, c.release.python))})"
        else:
            bad = None
        if bad:
            return "python", bad
        bad = self._glibc_reason(c)
        if bad:
            return "glibc", bad
        if c.cuda is None or not self.gpus:
            return "ok", ""
        return self._gpu_verdict(c)

    def _gpu_verdict(self, c: Candidate) -> _Verdict:
        """Whether every GPU runs the build: its SASS, or PTX the driver can JIT ("ptx")."""
        if isinstance(c, VllmBuild):
            k = c.kernels
            if k is None:
                return "gpu", f"{c.label}: its kernels' arch list is not in the matrix"
            too_old = [g for g, cc in self.host.known_gpus() if cc < k.min_compute_capability]
            if too_old:
                return "gpu", (f"{c.label} needs compute capability >= {k.min_compute_capability}; "
                               f"{describe_gpus(too_old)} is older")
            missing, ptx = coverage(k.archs, self.gpus)
            if missing:
                return "gpu", f"{c.label}'s kernels ({k.archs}) do not run on {describe_gpus(missing)}"
            return ("ptx" if ptx or module_ptx(c, self.platform, self.gpus)[0] else "ok"), ""
        missing, ptx = coverage(c.archs, self.gpus)
        if missing:
            return "gpu", f"{c.label} ({c.archs}) does not run on {describe_gpus(missing)}"
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
            else:
                for name, spec, cfloor in closure_floors(c, self.platform):
                    if cfloor > self.glibc:
                        floor, what = cfloor, f"{name}{spec or ''} (required by vLLM {c.version}): every wheel"
                        break
        if floor is None or floor <= self.glibc:
            return None
        return f"{what} needs glibc >= {floor} (manylinux_{floor.major}_{floor.minor}); this host has {self.glibc}"

    def _python_reason(self, c: VllmBuild) -> str | None:
        py = self._python_x
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


class _Provider(AbstractProvider):
    """A thin adapter: requirements and candidates own the logic; the checker owns the host."""

    def __init__(self, matrix: Matrix, checker: _Checker, request: Request) -> None:
        self.checker = checker
        self.request = request
        self.vllm = memo(("vllm-builds", matrix.revision, checker.platform),
                          lambda: vllm_builds(matrix, checker.platform))
        self.torch = memo(("torch-builds", matrix.revision, checker.platform),
                           lambda: torch_builds(matrix, checker.platform))
        self.torch_versions = sorted(self.torch, reverse=True)
        self.matrix = matrix
        self.avoid = any(k.gpus for k in matrix.known_issues) and bool(checker.gpus)

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
            if self.avoid:  # a build that meets a known issue on these GPUs comes after the others of its version
                rank = {v: i for i, v in enumerate(versions)}
                pool.sort(key=lambda e: (rank[e[0].version], isinstance(e[0], TorchBuild)
                                         and bool(torch_issues(self.matrix, checker.gpus, e[0]))))
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


def _min_driver(matrix: Matrix, res_vllm: VllmBuild, res_torch: TorchBuild, gpus: Sequence[HostGpu],
                policy: Policy, platform: str | None = None) -> tuple[DriverVersion | None, list[HostGpu]]:
    floors: list[DriverVersion] = []
    ptx_all: list[HostGpu] = []
    modules = module_ptx(res_vllm, platform, gpus)[0] if platform is not None else []  # vLLM's own extensions
    for cuda, archs, more in ((res_vllm.cuda, res_vllm.kernels.archs if res_vllm.kernels else None, modules),
                              (res_torch.cuda, res_torch.archs, [])):
        if cuda is None:
            continue
        ptx = coverage(archs, gpus)[1] if archs is not None else []
        ptx += [g for g in more if g not in ptx]
        ptx_all += [g for g in ptx if g not in ptx_all]
        f = driver_floor_memo(matrix, cuda, policy, bool(ptx))
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
        out.append(f"this machine mixes GPU architectures ({describe_gpus(gpus)}): tensor parallelism across them "
                   "runs at the speed of the slowest and may fail for kernels one of them lacks; set "
                   "CUDA_VISIBLE_DEVICES to GPUs of one kind per vLLM instance")
    old = [g for g, cc in known if cc < Capability(8, 0)]
    if old:
        out.append(f"{describe_gpus(old)}: compute capability below 8.0 has no bfloat16 and no FlashAttention 2; "
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


def may_be_jetson(host: Host, matrix: Matrix) -> bool:
    """False when :func:`.jetson.jetson_of` is sure to answer None (no GPU of gpus.yaml's jetson segment, no board,
    no L4T release): that module is then not imported (a cold plan's import time)."""
    if host.platform.jetson or host.platform.l4t is not None:
        return True
    return any((row := matrix.find_gpu(g.name)) is not None and row.segment == "jetson" for g in host.gpus)


def resolve(host: Host, matrix: Matrix, request: Request) -> Resolution:
    """The best stack for ``host`` under ``request``, or NoCompatibleStack with causes and hints.

    A Jetson is answered by its JetPack (:mod:`.jetson`, its facts): the wheel set of its JetPack's path of the
    Jetson index, when the request allows one (``own_index``); the generic aarch64 builds under its JetPack's CUDA
    major, where that CUDA is the unified ARM build (Thor); else the way forward, as a NoCompatibleStack."""
    if not request.cpu and not request.generic and may_be_jetson(host, matrix):
        from .jetson import UnifiedArm, jetson_answer

        answer = jetson_answer(host, matrix, request)
        if isinstance(answer, UnifiedArm):
            return answer.finish(resolve(answer.host, matrix, answer.request))
        if answer is not None:
            return answer
    if request.driver_policy not in POLICIES:
        raise ValueError(request.driver_policy)
    gpu_driver = refuse_unsupported_driver(host, matrix) if request.gpu_driver and not request.cpu else []
    v, t, checker = _pick(host, matrix, request)
    gpus = checker.gpus
    floor, ptx = _min_driver(matrix, v, t, gpus, request.driver_policy, host.platform.tag)
    cudas = [c for c in (v.cuda, t.cuda) if c is not None]
    cuda = max(cudas) if cudas else None
    reasons = _reasons(host, request, v, t, gpus, floor, cuda) + _avoided(matrix, gpus, t)
    warnings = gpu_driver + _stack_warnings(host, v, t) + _driver_warnings(host, matrix, request, v, ptx, floor, cuda)
    warnings += [f"{g.name} with torch {t.version}+{t.variant.variant}: {k.title} (known issue {k.id}; no other "
                 f"torch build fits this request): {k.fix}" for k, g in torch_issues(matrix, gpus, t)]
    glibc_floor, glibc_by = _glibc_floor(host, matrix, v, t, reasons, warnings)
    if checker.unknown_glibc and not request.allow_unknown_glibc:
        warnings += _set_aside(host, matrix, request, v)
    rejections = functools.cache(lambda: tuple(checker.rejections))
    return Resolution(host=host, request=request, vllm=v, torch=t,
                      companions={k: _exact_text(s) for k, s in v.pins.items() if k in COMPANIONS},
                      cuda=cuda, min_driver=floor, ptx_gpus=tuple(ptx), glibc_floor=glibc_floor, glibc_by=glibc_by,
                      reasons=tuple(reasons), warnings=tuple(warnings), turned_down=rejections)


def _avoided(matrix: Matrix, gpus: Sequence[HostGpu], t: TorchBuild) -> list[str]:
    """Why another build of this torch was passed over: a known issue it meets on these GPUs."""
    out = []
    for x in t.release.variants:
        if x.variant == t.variant.variant:
            continue
        for k, g in torch_issues(matrix, gpus, replace(t, variant=x)):
            out.append(f"torch {t.version}+{x.variant} is passed over on {g.name}: {k.title} (known issue {k.id})")
    return out


def _pick(host: Host, matrix: Matrix, request: Request) -> tuple[VllmBuild, TorchBuild, _Checker]:
    """resolvelib's answer. Cautious about unverified facts: a first pass uses verified facts only; a
    stack that needs an unverified build is chosen only when nothing verified fits, and says so."""
    for allow_unverified in (False, True):
        checker = _Checker(host, matrix, request, allow_unverified)
        provider = _Provider(matrix, checker, request)
        resolver: Resolver[Any, Any, str] = Resolver(provider, BaseReporter())
        try:
            result = resolver.resolve([VllmRequirement(spec=request.vllm)], max_rounds=500)
            return result.mapping["vllm"], result.mapping["torch"], checker
        except ResolutionImpossible:
            if allow_unverified or not checker.skipped_unverified:  # a second pass would see the same
                raise explain(host, matrix, request, builds=provider.vllm, platform=checker.platform,
                              turned_down=checker.rejections, retry=resolve) from None
    raise AssertionError("unreachable: the second pass either resolves or raises")


def _pypi_is_cpu(t: TorchBuild) -> bool:
    return any(x.variant == "cpu" and t.platform in (x.pypi_default or ()) for x in t.release.variants)


def _reasons(host: Host, request: Request, v: VllmBuild, t: TorchBuild, gpus: Sequence[HostGpu],
             floor: DriverVersion | None, cuda: Version | None) -> list[str]:
    reasons = [f"vLLM {v.version} is the newest release that meets the request"
               + (f" ({request.vllm})" if str(request.vllm) else "") + " and runs on this machine"]
    if v.cuda is None:
        reasons.append(f"no NVIDIA GPU to plan for: vLLM's CPU build ({v.version}+cpu, from {where_text(v.where)}) "
                       f"with the CPU torch it pins ({t.version}+cpu)")
    elif v.where == "pypi":
        reasons.append(f"its PyPI wheel is built with CUDA {v.cuda} and pins torch {t.version} "
                       "(read from the wheel's METADATA)")
    else:
        reasons.append(f"its {v.variant} build from {where_text(v.where)} is used: the PyPI wheel "
                       "does not run here (see the rejected builds)")
    reasons.append(f"torch {t.version}+{t.variant.variant} "
                   + ("is PyPI's default build" if t.pypi else f"comes from the PyTorch index ({t.variant.variant})"))
    if not t.pypi and t.variant.cuda is not None and _pypi_is_cpu(t):
        reasons.append(f"PyPI's {t.platform} torch {t.version} is the CPU build: a plain `pip install torch` there "
                       "gives a '+cpu' torch without CUDA, so the plan names the PyTorch index's build")
    if gpus:
        reasons.append(f"both arch lists cover {describe_gpus(gpus)}: torch {t.archs}; vLLM kernels "
                       f"{v.kernels.archs if v.kernels else '(none)'}")
    if floor is not None:
        served = f"driver {host.driver.version} serves it" if host.driver.version else "the driver is not known"
        reasons.append(f"CUDA {cuda} needs driver >= {floor} under the {request.driver_policy} policy; {served}")
    return reasons


def _driver_warnings(host: Host, matrix: Matrix, request: Request, v: VllmBuild, ptx: Sequence[HostGpu],
                     floor: DriverVersion | None, cuda: Version | None) -> list[str]:
    warnings = []
    if v.cuda is None:
        warnings.append("the CPU backend runs models far slower than a GPU; on a machine with NVIDIA GPUs run "
                        "`vresolve plan --gpu auto` there, or plan for it here with --gpu NAME --driver VERSION")
    if ptx:
        modules = module_ptx(v, host.platform.tag, ptx)[1]
        which = f" (vLLM's {', '.join(modules)} has no SASS for it)" if modules else ""
        warnings.append(f"{describe_gpus(ptx)} run{'s' if len(ptx) == 1 else ''} part of the stack only through PTX"
                        f"{which}: the first launch JIT-compiles kernels (slow once), and the driver must be at least "
                        "the toolkit's own floor")
    driver = host.driver.version
    if driver is not None and request.driver_policy == "minor-compat" and cuda is not None:
        own = driver_floor_memo(matrix, cuda, "toolkit", False)
        if own is not None and driver < own:
            warnings.append(f"this stack relies on CUDA minor-version compatibility: CUDA {cuda}'s own "
                            f"minimum driver is {own} (driver {driver} is older); PTX JIT and a few "
                            "newer CUDA APIs are unavailable until the driver is upgraded")
    if driver is None and not request.cpu:
        warnings.append(f"no driver given: the plan needs driver >= {floor}" if floor else
                        "no driver given and the minimum driver is unknown")
    return warnings


def _glibc_floor(host: Host, matrix: Matrix, v: VllmBuild, t: TorchBuild, reasons: list[str],
                 warnings: list[str]) -> tuple[Version | None, tuple[str, ...]]:
    """The newest manylinux floor among the planned wheels (companions from PyPI too, and the dependencies whose
    floor the matrix records: llguidance); says what it found and which package sets it."""
    glibc = host.platform.glibc
    if glibc is not None:
        unknown = [b.format_for_error() for b in (v, t) if b.manylinux is None]
        if unknown:
            warnings.append(f"the glibc that {' and '.join(unknown)} need{'s' if len(unknown) == 1 else ''} is not "
                            f"recorded (not a PyPI wheel): if the installer finds no wheel, glibc "
                            f"{glibc} is too old for it")
    plat = host.platform.tag
    found = [(f, b.name) for b in (v, t) if (f := b.manylinux) is not None]
    found += [(f, name) for name, _, f in companion_floors(matrix, v, plat, PYPI_COMPANIONS
                                                         + (("torchvision", "torchaudio") if t.pypi else ()))]
    found += [(f, name) for name, _, f in closure_floors(v, plat)]
    if not found:
        return None, ()
    floor = max(f for f, _ in found)
    by = sorted({name for f, name in found if f == floor})
    tag = f"manylinux_{floor.major}_{floor.minor}"
    what = f"the wheels need glibc >= {floor} ({tag}, set by {', '.join(by)})"
    if glibc is not None:
        reasons.append(f"{what}; this host has {glibc}")
    else:
        warnings.append(f"glibc not known: {what}; give --glibc X.Y to plan for another machine's")
    return floor, tuple(by)


def _set_aside(host: Host, matrix: Matrix, request: Request, v: VllmBuild) -> list[str]:
    """Newer releases the cautious pass set aside because the glibc their wheels need is not recorded: which,
    why, and the flag that admits them (empty when admitting them would not change the stack)."""
    from msgspec.structs import replace

    try:
        free = resolve(host, matrix, replace(request, allow_unknown_glibc=True))
    except NoCompatibleStack:
        return []
    if free.vllm.version <= v.version:
        return []
    newer = sorted(r.version for r in matrix.vllm if v.version < r.version <= free.vllm.version
                   and request.vllm.contains(r.version, prereleases=True))
    span = f"vLLM {newer[0]}" + (f" to {newer[-1]}" if len(newer) > 1 else "") if newer else f"vLLM {free.vllm.version}"
    unknown = [b.format_for_error() for b in (free.vllm, free.torch) if b.manylinux is None]
    return [f"{span} set aside: the glibc that {' and '.join(unknown)} need{'s' if len(unknown) == 1 else ''} is "
            f"not recorded (not a PyPI wheel), and this host's glibc is {host.platform.glibc}; "
            f"--allow-unknown-glibc admits {'it' if len(newer) == 1 else 'them'} (then vLLM {free.vllm.version} + "
            f"{free.torch.format_for_error()})"]


def resolve_kept_torch(host: Host, matrix: Matrix, request: Request) -> Resolution:
    """The newest vLLM wheel that runs on ``host`` with the torch installed in this environment, kept.

    A wheel fits when its own METADATA pins exactly that torch release and the build is made for the
    kept torch's CUDA major (the rules :func:`resolve` applies: vLLM and torch on one CUDA major, arch
    lists, driver, Python, glibc). NoCompatibleStack when none does (then a source build is the way).
    """
    from msgspec.structs import replace

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
        # (not a target's own index: its wheel set would replace the kept torch)
        return resolve(host, matrix, replace(request, torch=pinned, variant=variant, cpu=request.cpu or cuda is None,
                                             own_index=False))
    except NoCompatibleStack as e:
        raise NoCompatibleStack(f"no vLLM wheel pins your torch {kept.version} and runs here ({e.headline})",
                                causes=e.causes) from None


def alternatives(host: Host, matrix: Matrix, request: Request, chosen: Resolution) -> list[tuple[Resolution, str]]:
    """Stacks worth knowing about that were not chosen, each with the reason.

    A newer vLLM that a driver upgrade would allow (naming the driver); the simplest
    install (PyPI wheels only) when a variant was chosen and a driver upgrade allows it.
    None for a wheel set of a target's own index (a Jetson's: its JetPack decides, not a driver).
    """
    out: list[tuple[Resolution, str]] = []
    if host.driver.version is None or request.cpu or chosen.index is not None:
        return out
    free = try_resolve(resolve, host, matrix, request, driver=None)
    if free is not None and (free.vllm.version, free.vllm.where == "pypi") > (chosen.vllm.version,
                                                                             chosen.vllm.where == "pypi"):
        newer = free.vllm.version > chosen.vllm.version
        what = "a newer vLLM" if newer else "the simpler PyPI install"
        out.append((free, f"{what} needs NVIDIA driver >= {free.min_driver}; this machine has {host.driver.version}"))
    return out + _unknown_glibc_alternative(host, matrix, request, chosen)


def _unknown_glibc_alternative(host: Host, matrix: Matrix, request: Request, chosen: Resolution
                               ) -> list[tuple[Resolution, str]]:
    """A newer vLLM that the cautious pass set aside: the glibc its wheels need is not recorded."""
    if host.platform.glibc is None or request.allow_unknown_glibc or request.cpu:
        return []
    free = try_resolve(resolve, host, matrix, replace(request, allow_unknown_glibc=True))
    if free is None or free.vllm.version <= chosen.vllm.version:
        return []
    unknown = " and ".join(b.format_for_error() for b in (free.vllm, free.torch) if b.manylinux is None)
    return [(free, f"a newer vLLM whose glibc floor is not recorded ({unknown}); --allow-unknown-glibc admits it")]


def _exact_text(spec: SpecifierSet) -> str:
    items = list(spec)
    if len(items) == 1 and items[0].operator == "==":
        return items[0].version
    return str(spec)
