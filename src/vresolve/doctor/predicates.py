"""The predicates that judge known-issues rows from facts, registered by name (a row's ``when:``).

A predicate reads one fact model, :class:`Facts` (the live probe's :class:`~vresolve.host.Host` and
:class:`~vresolve.host.EnvReport`, which a live environment fills and a paste fills through
:func:`~vresolve.doctor.evidence.to_host_facts`; ``unknown`` names the facts a paste did not show) and yields a
:class:`Hit` for each place its row holds: the specific evidence, the values of the placeholders (``{name}``) in
the row's title, explanation and fix, and whether the finding is said one step softer (error -> warning: the
matrix's fact is unverified, or the fault is not failing yet). Everything else a finding says -- cause, severity,
title, explanation, fix, sources -- is its row's (:mod:`.judge` builds the findings). ``facts``: the facts it reads
(the names :func:`~vresolve.doctor.pasted.cite` cites pasted lines by); ``fills``: the placeholders it fills.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..host import EnvReport, Host, HostGpu, TorchRuntime
from ..matrix import Matrix, VllmRelease
from ..matrix.model import JetPack, Kernels
from ..values import Capability, DriverVersion, public_version
from .facts import caps_covered, is_source_tree, needs_libcuda, torch_pin

if TYPE_CHECKING:
    from .evidence import Evidence, Seen


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What is known of the machine and the environment, live or pasted; ``unknown``: fields holding a default,
    not an observation (a paste that does not show them), which no predicate reads as a fact."""

    host: Host
    matrix: Matrix
    env: EnvReport | None = None
    unknown: frozenset[str] = frozenset()
    #: directories of LD_LIBRARY_PATH that hold CUDA libraries pip's nvidia-* packages also ship (live only)
    shadows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the typed facts and signals of a pasted text or log (what only a paste shows: an installer's messages)
    log: Evidence | None = None

    @property
    def gpus(self) -> tuple[HostGpu, ...]:
        """The GPUs whose compute capability is known."""
        return tuple(g for g in self.host.gpus if g.compute_capability is not None)

    @property
    def torch(self) -> TorchRuntime | None:
        return self.env.torch if self.env is not None and not self.env.error else None


@dataclass(frozen=True, kw_only=True)
class Hit:
    """Where a row holds: its evidence, its placeholders' values, and whether it is said one step softer."""

    evidence: tuple[str, ...] = ()
    fill: dict[str, str] = field(default_factory=dict)
    softer: bool = False
    #: the row may hold but a fact it needs is not shown: no finding, an error whose cause is not settled
    missing: Missing | None = None
    #: the pasted lines it holds on, in order (a typed-line predicate's: where doctor says its cause first)
    seen: tuple[Seen[Any], ...] = ()


@dataclass(frozen=True)
class Missing:
    """What a pasted error needs to be judged by its row: the error, the fact not shown, what to paste."""

    error: str
    missing: str
    paste: str


Test = Callable[[Facts], Iterator[Hit]]


@dataclass(frozen=True)
class Predicate:
    name: str
    facts: tuple[str, ...]
    fills: tuple[str, ...]
    test: Test


#: every predicate by name: a known-issues row's ``when:`` names one (``matrix validate`` checks both ways)
PREDICATES: dict[str, Predicate] = {}


def predicate(name: str, facts: tuple[str, ...], fills: tuple[str, ...] = ()) -> Callable[[Test], Test]:
    def register(test: Test) -> Test:
        if name in PREDICATES:
            raise ValueError(f"predicate {name!r} registered twice")
        PREDICATES[name] = Predicate(name, facts, fills, test)
        return test
    return register


# ------------------------------------------------------------------------------------------------------------
# the driver
# ------------------------------------------------------------------------------------------------------------

@predicate("nvml-library-mismatch", ("nvml_library", "driver"))
def _nvml_library_mismatch(f: Facts) -> Iterator[Hit]:
    """The kernel module and the driver's user-space library are of other versions (NVML says so)."""
    if f.host.driver.nvml_library_mismatch:
        yield Hit(evidence=tuple(p for p in f.host.problems if "mismatch" in p))


# ------------------------------------------------------------------------------------------------------------
# torch
# ------------------------------------------------------------------------------------------------------------

def jetson_here(host: Host, matrix: Matrix) -> tuple[str, JetPack, str] | None:
    """(the module, its JetPack, how the L4T release was known) of a Jetson on L4T's own CUDA whose L4T release the
    matrix knows; None elsewhere (no L4T release, or a Thor on the unified ARM build)."""
    from ..resolve import NoCompatibleStack
    from ..resolve.jetson import jetson_of

    if host.platform.l4t is None:
        return None
    try:
        j = jetson_of(host, matrix)
    except NoCompatibleStack:
        return None
    if j is None or j.jetpack is None or j.module.name in j.jetpack.sbsa_modules:
        return None
    return j.module.name, j.jetpack, j.how


def jetson_torch_mismatch(f: Facts, torch: TorchRuntime) -> tuple[str, JetPack, str] | None:
    """(the module, its JetPack, how known) where torch is not built for the CUDA of a Jetson on L4T's own CUDA (a
    CPU build, or a generic aarch64 build of another CUDA); None elsewhere."""
    here = jetson_here(f.host, f.matrix)
    if here is None:
        return None
    built = public_version(torch.cuda) if torch.cuda and re.fullmatch(r"\d+\.\d+", torch.cuda) else None
    cuda = here[1].cuda
    return None if built is not None and (built.major, built.minor) == (cuda.major, cuda.minor) else here


def _torch_judged(f: Facts) -> TorchRuntime | None:
    """torch, when which CUDA it is built for was seen, unless a Jetson's own rule judges it (a torch not built for
    the JetPack's CUDA)."""
    torch = f.torch
    if torch is None or "torch.cuda" in f.unknown or jetson_torch_mismatch(f, torch) is not None:
        return None
    return torch


@predicate("torch-cpu-build-beside-gpus", ("torch_cuda", "torch", "gpus"), ("torch",))
def _cpu_torch(f: Facts) -> Iterator[Hit]:
    """torch built without CUDA (torch.version.cuda is None) on a machine with NVIDIA GPUs."""
    torch = _torch_judged(f)
    gpus = f.gpus or f.host.gpus
    if torch is not None and torch.cuda is None and gpus:
        yield Hit(evidence=(f"torch {torch.version}, torch.version.cuda = None",
                            f"GPUs: {', '.join(g.name for g in gpus)}"), fill={"torch": f"{torch.version}"})


@predicate("torch-arch-list-misses-gpu", ("gpus", "torch_arch_list", "torch"), ("torch", "gpus", "arch_list", "sms"))
def _torch_arch_list(f: Facts) -> Iterator[Hit]:
    """torch sees the GPUs, and its arch list has neither SASS nor older PTX for one of them."""
    torch = _torch_judged(f)
    if torch is None or torch.cuda is None or "torch.available" in f.unknown or not torch.available:
        return
    missing = [g for g in f.gpus if not caps_covered(torch.arch_list, g.cc)] if torch.arch_list else []
    if missing:
        yield Hit(evidence=(f"torch.cuda.get_arch_list() = {torch.arch_list}",),
                  fill={"torch": f"{torch.version}", "gpus": ", ".join(g.name for g in missing),
                        "arch_list": " ".join(torch.arch_list), "sms": ", ".join(g.cc.sm for g in missing)})


@predicate("nvcc-not-torch-cuda", ("nvcc", "torch_cuda", "torch"), ("nvcc", "torch_cuda", "cuda"))
def _toolkit_mismatch(f: Facts) -> Iterator[Hit]:
    """An nvcc on the machine of another CUDA major.minor than torch's (what a build against this torch uses)."""
    torch = f.torch
    tc = public_version(torch.cuda) if torch is not None and torch.cuda else None
    for tk in f.host.toolkits:
        if torch is not None and tc is not None and (tk.version.major, tk.version.minor) != (tc.major, tc.minor):
            yield Hit(evidence=(f"{tk.path}: nvcc {tk.version} ({tk.source})",),
                      fill={"nvcc": str(tk.version), "torch_cuda": str(torch.cuda), "cuda": f"{tc.major}.{tc.minor}"})
            return


@predicate("gpu-below-ampere", ("gpus",))
def _below_ampere(f: Facts) -> Iterator[Hit]:
    """GPUs below compute capability 8.0: no bfloat16, no FlashAttention 2."""
    old = [g for g in f.gpus if g.cc < Capability(8, 0)]
    if old:
        yield Hit(evidence=tuple(f"GPU {g.index}: {g.label}" for g in old))


# ------------------------------------------------------------------------------------------------------------
# vLLM and its companions
# ------------------------------------------------------------------------------------------------------------

@predicate("vllm-pins-other-torch", ("vllm", "torch"), ("vllm", "pin", "torch"))
def _vllm_pins_other_torch(f: Facts) -> Iterator[Hit]:
    """The installed vLLM's own requirement pins a torch other than the one installed (softer while its main
    compiled module still loads)."""
    env, torch = f.env, f.torch
    vllm = env.module("vllm") if env is not None else None
    if env is None or torch is None or vllm is None or not vllm.origin:
        return
    pin, have = torch_pin(env.requirement_lines("vllm")), public_version(torch.version)
    if pin is None or have is None or pin == have:
        return
    core = env.module(_core_name(f))
    no_driver = f.host.driver.version is None and not f.gpus
    c_failed = core is not None and bool(core.error) and not (no_driver and needs_libcuda(core))
    yield Hit(evidence=(f"vllm requires torch=={pin}", f"installed torch {torch.version}"),
              fill={"vllm": str(vllm.version), "pin": str(pin), "torch": f"{torch.version}"}, softer=not c_failed)


def _core_name(f: Facts) -> str:
    """vLLM's main compiled module: the one its release's wheel ships for this platform, else judged from what the
    installed package holds."""
    from ..values import core_extension

    assert f.env is not None
    vllm = f.env.module("vllm")
    version = public_version(vllm.version) if vllm is not None and f.host.platform.l4t is None else None
    release = f.matrix.vllm_release(version) if version is not None else None
    wheels = release.wheels_for(f.host.platform.tag) if release is not None else ()
    expected = wheels[0].extensions if wheels else ()
    return core_extension(expected or f.env.vllm_extensions)


_COMPANION_MODULES = (("torchvision", "torchvision"), ("torchaudio", "torchaudio"), ("xformers", "xformers"),
                      ("flashinfer-python", "flashinfer"), ("flash-attn", "flash_attn"))


@predicate("companion-built-for-other-torch",
           ("torch", "torchvision", "torchaudio", "xformers", "flashinfer", "flash-attn"), ("dist",))
def _companions(f: Facts) -> Iterator[Hit]:
    """torchvision, torchaudio, xformers, FlashInfer, flash-attn: failing to import, or pinning another torch
    (softer while it still imports)."""
    env = f.env
    if env is None or env.error:
        return
    torch = env.torch
    torch_version = public_version(torch.version) if torch else None
    for dist, module in _COMPANION_MODULES:
        rep = env.module(module)
        pin = torch_pin(env.requirement_lines(dist))
        failed = rep is not None and bool(rep.error) and "No module named" not in (rep.error or "")
        mismatch = pin is not None and torch_version is not None and pin != torch_version
        if failed or mismatch:
            ev = [e for e in ((rep.error if rep and failed else ""),
                              (f"{dist} requires torch=={pin}; installed torch {torch.version}"
                               if mismatch and torch else "")) if e]
            yield Hit(evidence=tuple(ev or ()), fill={"dist": dist}, softer=not failed)


# ------------------------------------------------------------------------------------------------------------
# the driver under torch's CUDA
# ------------------------------------------------------------------------------------------------------------

def driver_floors(host: Host, matrix: Matrix, cuda: Version) -> tuple[DriverVersion | None, DriverVersion | None]:
    """(the driver a build of CUDA ``cuda`` needs on this OS: its major's minor-version-compatibility floor, else
    the toolkit's own floor; the toolkit's own floor). Windows (and WSL, whose driver is the Windows one) has
    floors of its own. (None, None) where the matrix knows neither."""
    windows = host.platform.os == "windows" or host.platform.wsl
    tk, major = matrix.toolkit(cuda), matrix.cuda_major(cuda.major)
    own = (tk.min_driver.windows if windows else tk.min_driver.linux) if tk is not None else None
    compat = (major.minor_compat_driver.windows if windows else major.minor_compat_driver.linux) \
        if major is not None else None
    floors = [f for f in (own, compat) if f is not None]
    return (min(floors) if floors else None), own


@dataclass(frozen=True)
class DriverGap:
    """torch built for a CUDA the driver cannot serve: what it needs, why, and whether the report says torch sees
    the GPU all the same."""

    need: str
    why: str
    works: bool


def driver_below_torch(f: Facts) -> DriverGap | None:
    """The driver below the floor of torch's CUDA (its major's minor-version-compatibility floor, or the toolkit's
    own where the major has none: CUDA 9, 10), or the driver's own CUDA (nvidia-smi's "CUDA Version") of an older
    major, or older at all where CUDA had no minor-version compatibility; None otherwise."""
    torch = _torch_judged(f)
    tc = public_version(torch.cuda) if torch is not None else None
    driver = f.host.driver.version
    if torch is None or tc is None or driver is None:
        return None
    floor, own = driver_floors(f.host, f.matrix, Version(f"{tc.major}.{tc.minor}"))
    served = f.host.driver.cuda
    major = f.matrix.cuda_major(tc.major)
    no_compat = major is None or major.minor_compat_driver.linux is None
    works = "torch.available" not in f.unknown and torch.available
    if floor is not None and driver < floor:
        why = (f"CUDA {tc.major}.x minor-version compatibility starts at driver {floor}" if own is None or floor < own
               else f"the CUDA {tc.major}.{tc.minor} toolkit needs driver {floor}")
        return DriverGap(f"NVIDIA driver >= {floor}", why, works)
    if served is not None and ((served.major, served.minor) < (tc.major, tc.minor)) and \
            (served.major < tc.major or no_compat):
        why = (f"the driver serves CUDA {served.major}.{served.minor} (nvidia-smi's CUDA Version), and "
               + ("CUDA of another major does not run on it" if served.major < tc.major else
                  f"CUDA {tc.major}.x has no minor-version compatibility"))
        return DriverGap(f"a driver that serves CUDA {tc.major}.{tc.minor}", why, works)
    return None


_DRIVER_FACTS = ("driver", "cuda_driver", "torch_cuda", "torch", "cuda_available")
_DRIVER_FILLS = ("driver", "torch", "torch_cuda", "why", "need")


def _driver_hit(f: Facts, gap: DriverGap) -> Hit:
    torch = f.torch
    assert torch is not None
    driver = str(f.host.driver.version)
    return Hit(evidence=(f"torch {torch.version}, torch.version.cuda = {torch.cuda}", f"driver {driver}"),
               fill={"driver": driver, "torch": f"{torch.version}", "torch_cuda": f"{torch.cuda}", "why": gap.why,
                     "need": gap.need})


@predicate("driver-below-torch-cuda", _DRIVER_FACTS, _DRIVER_FILLS)
def _driver_below(f: Facts) -> Iterator[Hit]:
    """torch's CUDA does not initialise on this driver (nor does the report say it does)."""
    gap = driver_below_torch(f)
    if gap is not None and not gap.works:
        yield _driver_hit(f, gap)


@predicate("driver-below-torch-cuda-but-runs", _DRIVER_FACTS, _DRIVER_FILLS)
def _driver_below_but_runs(f: Facts) -> Iterator[Hit]:
    """The same gap where the report says torch sees the GPU all the same."""
    gap = driver_below_torch(f)
    if gap is not None and gap.works:
        yield _driver_hit(f, gap)


# ------------------------------------------------------------------------------------------------------------
# the installed vLLM release's kernels
# ------------------------------------------------------------------------------------------------------------

def release_kernels(f: Facts) -> tuple[str, Kernels, bool] | None:
    """(the installed vLLM's version, the kernels of its release's build for this machine, whether the matrix's
    fact is verified): the variant of the CUDA its local tag names (``0.6.1.post1+cu118``), else the PyPI wheel's
    build for this platform. None for a vLLM the matrix does not know (a source build, a dev version), one built
    from a source tree here, or one built for an arch list of its own (``vllm.kernels`` unknown)."""
    env = f.env
    vllm = env.module("vllm") if env is not None and not env.error and "vllm.kernels" not in f.unknown else None
    version = public_version(vllm.version) if vllm is not None and vllm.version else None
    release = f.matrix.vllm_release(version) if version is not None and f.host.platform.l4t is None else None
    if release is None or vllm is None or vllm.version is None or is_source_tree(vllm.origin):
        return None
    local = vllm.version.partition("+")[2].lower()
    tagged = next((v for v in release.variants if v.cuda is not None and local
                   and local == f"cu{v.cuda.major}{v.cuda.minor}"), None)
    pypi = next((v for v in release.variants if v.where == "pypi" and f.host.platform.tag in v.platforms), None)
    build = tagged or pypi
    kernels = (build.kernels if build is not None else None) or release.kernels
    if kernels is None:
        return None
    return vllm.version, kernels, (build.provenance if build is not None else release.provenance).trusted


@predicate("vllm-release-below-gpu", ("gpus", "vllm"), ("vllm", "gpu", "floor", "ccs"))
def _vllm_below_floor(f: Facts) -> Iterator[Hit]:
    """GPUs below the installed vLLM release's minimum compute capability (softer where the matrix's fact is
    unverified)."""
    found = release_kernels(f) if f.gpus else None
    if found is None:
        return
    version, kernels, trusted = found
    old = [g for g in f.gpus if g.cc < kernels.min_compute_capability]
    if old:
        yield Hit(evidence=tuple(f"GPU {g.index}: {g.label}" for g in old) + (f"vllm {version}",),
                  fill={"vllm": version, "gpu": old[0].name, "floor": str(kernels.min_compute_capability),
                        "ccs": ", ".join(f"{g.name} is {g.cc}" for g in old)}, softer=not trusted)


@predicate("vllm-release-arch-misses-gpu", ("gpus", "vllm"), ("vllm", "gpu", "archs", "sms"))
def _vllm_arch_misses(f: Facts) -> Iterator[Hit]:
    """GPUs (at or above vLLM's floor) of a capability the release's build has neither SASS nor PTX for."""
    found = release_kernels(f) if f.gpus else None
    if found is None:
        return
    version, kernels, trusted = found
    if any(g.cc < kernels.min_compute_capability for g in f.gpus):
        return  # said by vllm-release-below-gpu
    missing = [g for g in f.gpus if not kernels.archs.covers(g.cc)]
    if missing:
        yield Hit(evidence=tuple(f"GPU {g.index}: {g.label}" for g in missing) + (f"vllm {version}",),
                  fill={"vllm": version, "gpu": missing[0].name, "archs": str(kernels.archs),
                        "sms": ", ".join(g.cc.sm for g in missing)}, softer=not trusted)


# ------------------------------------------------------------------------------------------------------------
# a driver that cannot drive a GPU, or does not work at all
# ------------------------------------------------------------------------------------------------------------

def _gaps(f: Facts, kind: str) -> Iterator[Hit]:
    """The GPUs (one per model) the driver branch cannot drive: older than the GPU ("too-old"), or past a legacy
    GPU's last branch; softer where the matrix's fact is unverified."""
    from ..resolve.gpudriver import driver_gaps

    if {"driver", "gpus"} & f.unknown:
        return
    seen: set[str] = set()
    for gap in driver_gaps(f.host, f.matrix):
        if gap.gpu.name in seen:
            continue
        seen.add(gap.gpu.name)
        if (gap.kind == "too-old") != (kind == "too-old"):
            continue
        same = [g for g in f.host.gpus if g.name == gap.gpu.name]
        unsure = "" if gap.trusted else " (the matrix's fact is unverified: check NVIDIA's supported-products list)"
        yield Hit(evidence=(f"driver {gap.driver}", *(f"GPU {g.index}: {g.label}" for g in same)),
                  fill={"driver": str(gap.driver), "gpu": gap.gpu.name, "gap": gap.text, "unsure": unsure,
                        "action": f"{gap.fix[0].upper()}{gap.fix[1:]}"}, softer=not gap.trusted)


@predicate("driver-older-than-gpu", ("driver", "gpus"), ("driver", "gpu", "gap", "unsure", "action"))
def _driver_older_than_gpu(f: Facts) -> Iterator[Hit]:
    """A driver branch older than the GPU: it cannot drive it, whatever minor-version compatibility allows."""
    yield from _gaps(f, "too-old")


@predicate("driver-dropped-gpu", ("driver", "gpus"), ("driver", "gpu", "gap", "unsure", "action"))
def _driver_dropped_gpu(f: Facts) -> Iterator[Hit]:
    """A driver branch past a legacy GPU's last one."""
    yield from _gaps(f, "dropped")


def _driver_evidence(f: Facts) -> tuple[str, ...]:
    d = f.host.driver
    return (f"{d.failure}" if d.failure else "no driver probe answered", *d.evidence)


def _broken(f: Facts) -> bool:
    return f.host.driver.broken and not f.host.driver.nvml_library_mismatch


@predicate("driver-not-installed", ("driver", "gpus"))
def _driver_not_installed(f: Facts) -> Iterator[Hit]:
    """NVIDIA GPUs on the PCI bus and no driver at all."""
    if _broken(f) and f.host.driver.state == "not-installed":
        yield Hit(evidence=_driver_evidence(f))


def _hung(f: Facts) -> bool:
    return "timed out after" in (f.host.driver.failure or "")


@predicate("driver-hangs", ("driver", "gpus"))
def _driver_hangs(f: Facts) -> Iterator[Hit]:
    """A driver installed whose nvidia-smi hangs."""
    if _broken(f) and f.host.driver.state != "not-installed" and _hung(f):
        yield Hit(evidence=_driver_evidence(f))


@predicate("driver-not-answering", ("driver", "gpus"))
def _driver_not_answering(f: Facts) -> Iterator[Hit]:
    """A driver installed (module, device nodes or libraries) that does not answer: module not loaded, nvidia-smi
    failing, NVML refusing."""
    if _broken(f) and f.host.driver.state != "not-installed" and not _hung(f):
        yield Hit(evidence=_driver_evidence(f))


# ------------------------------------------------------------------------------------------------------------
# torch that does not see the GPUs
# ------------------------------------------------------------------------------------------------------------

def _unseen(f: Facts) -> TorchRuntime | None:
    """torch, built for CUDA, reporting no GPU (a fact, not a paste's default) beside GPUs, where the driver is not
    already said to be below torch's CUDA."""
    torch = _torch_judged(f)
    if (torch is None or torch.cuda is None or not f.gpus or "torch.available" in f.unknown or torch.available):
        return None
    gap = driver_below_torch(f)
    return None if gap is not None and not gap.works else torch


def _minor_compat_floor(f: Facts, torch: TorchRuntime) -> DriverVersion | None:
    from ..resolve import driver_floor

    tc = public_version(torch.cuda)
    return driver_floor(f.matrix, tc, "minor-compat", False) if tc is not None else None


@predicate("torch-sees-no-gpu-driver-floor", ("driver", "torch_cuda", "torch", "cuda_available"),
           ("driver", "torch", "torch_cuda", "floor"))
def _sees_no_gpu_floor(f: Facts) -> Iterator[Hit]:
    """torch sees no GPU, and the driver is below the minor-version floor of torch's CUDA."""
    torch = _unseen(f)
    floor = _minor_compat_floor(f, torch) if torch is not None else None
    driver = f.host.driver.version
    if torch is not None and floor is not None and driver is not None and driver < floor:
        yield Hit(evidence=("torch.cuda.is_available() = False", f"driver {driver}"),
                  fill={"driver": str(driver), "torch": f"{torch.version}", "torch_cuda": f"{torch.cuda}",
                        "floor": str(floor)})


def _not_by_floor(f: Facts, torch: TorchRuntime) -> bool:
    floor, driver = _minor_compat_floor(f, torch), f.host.driver.version
    return not (floor is not None and driver is not None and driver < floor)


@predicate("torch-sees-no-gpu-hidden", ("env", "cuda_available", "gpus", "container"), ("count",))
def _sees_no_gpu_hidden(f: Facts) -> Iterator[Hit]:
    """torch sees no GPU, and the environment hides them (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES)."""
    from ..host import describe_gpus
    from .facts import hidden_by

    torch = _unseen(f)
    hidden = hidden_by(f.host.env)
    if torch is not None and _not_by_floor(f, torch) and hidden:
        yield Hit(evidence=("torch.cuda.is_available() = False", *hidden, f"GPUs: {describe_gpus(f.gpus)}"),
                  fill={"count": str(len(f.gpus))})


@predicate("torch-sees-no-gpu-no-driver-library", ("cuda_available", "gpus", "ld_library_path"))
def _sees_no_gpu_library(f: Facts) -> Iterator[Hit]:
    """torch sees no GPU; nothing hides them and the driver is not below its floor: the driver library does not
    load here."""
    from .facts import hidden_by

    torch = _unseen(f)
    if torch is not None and _not_by_floor(f, torch) and not hidden_by(f.host.env):
        yield Hit(evidence=("torch.cuda.is_available() = False", torch.error or ""))


# ------------------------------------------------------------------------------------------------------------
# the loader's search path
# ------------------------------------------------------------------------------------------------------------

def _shadows(f: Facts, cuda_torch: bool) -> Iterator[Hit]:
    torch = f.env.torch if f.env is not None else None
    torch_cuda = torch.cuda if torch is not None else None
    if f.shadows and bool(torch_cuda) == cuda_torch:
        yield Hit(evidence=tuple(f"{d}: {', '.join(libs)}" for d, libs in f.shadows),
                  fill={"torch_cuda_note": f" (torch's CUDA: {torch_cuda})" if torch_cuda else ""})


@predicate("ld-library-path-shadows-torch-cuda", ("ld_library_path", "torch_cuda"), ("torch_cuda_note",))
def _shadows_torch_cuda(f: Facts) -> Iterator[Hit]:
    """LD_LIBRARY_PATH puts other CUDA libraries before those of the CUDA torch is built with."""
    yield from _shadows(f, True)


@predicate("ld-library-path-shadows", ("ld_library_path",), ("torch_cuda_note",))
def _shadows_no_torch_cuda(f: Facts) -> Iterator[Hit]:
    """The same where torch's CUDA is not known (no CUDA torch): the libraries are simply not pip's."""
    yield from _shadows(f, False)


# ------------------------------------------------------------------------------------------------------------
# what only a pasted text or log shows (``Facts.log``)
# ------------------------------------------------------------------------------------------------------------

def pasted_line(seen: Seen[Any]) -> str:
    """How a finding cites a pasted line."""
    return f"pasted line {seen.line}: {seen.text}"


def _asked(detail: str | None, name: str) -> SpecifierSet | None:
    """The versions an installer's request asks for (``torch==2.5.1`` -> ``==2.5.1``); None: not a specifier."""
    try:
        return SpecifierSet((detail or name)[len(name):].strip())
    except InvalidSpecifier:
        return None


def _no_wheel_for(matrix: Matrix, name: str, asked: SpecifierSet | None, python: Version) -> bool:
    """Whether no release of ``name`` (vllm, torch) that the request asks for supports this Python: vLLM's
    ``Requires-Python`` (every release where none is asked for, or none asked is known); torch's Pythons with wheels
    (no judgement where the request names no torch release the matrix knows)."""
    if name == "vllm":
        releases = [r for r in matrix.vllm if asked is None or asked.contains(r.version, prereleases=True)] \
            or list(matrix.vllm)
        return not any(r.requires_python is None or r.requires_python.contains(python, prereleases=True)
                       for r in releases)
    torches = [r for r in matrix.torch if asked is not None and asked.contains(r.version, prereleases=True)]
    return bool(torches) and not any((python.major, python.minor) in {(p.major, p.minor) for p in r.python}
                                     for r in torches)


@predicate("pip-finds-no-wheel-for-python", ("python",))
def _no_wheel_for_python(f: Facts) -> Iterator[Hit]:
    """pip finding no vLLM or torch to install ("from versions: none", "No matching distribution") for a Python
    (shown) that no release the request names ships wheels for (the matrix's Pythons of each release)."""
    e = f.log
    python = e.best("python") if e is not None else None
    have = public_version(str(python.value)) if python is not None else None
    if e is None or python is None or have is None:
        return
    for ev in e.installer:
        name = (ev.value.name or "").lower()
        if ev.value.action == "no-matching-distribution" and name in ("vllm", "torch") \
                and _no_wheel_for(f.matrix, name, _asked(ev.value.detail, name), have):
            yield Hit(evidence=(pasted_line(ev), pasted_line(python)))
            return


def pasted_release(matrix: Matrix, version: str | None) -> VllmRelease | None:
    """The matrix's vLLM release of a pasted version (its local tag left out); None when unknown or not a version."""
    try:
        return matrix.vllm_release(Version((version or "").partition("+")[0]))
    except InvalidVersion:
        return None


@predicate("vllm-wheel-cuda-major-not-torch", ("vllm", "torch_cuda", "torch"))
def _vllm_cuda_not_torch(f: Facts) -> Iterator[Hit]:
    """A vLLM from PyPI (no local version tag) beside a torch for another CUDA major than its wheel's: vLLM's
    kernels then look for the other major's runtime libraries."""
    e = f.log
    vllm, cuda = (e.dist("vllm"), e.torch_cuda_seen()) if e is not None else (None, None)
    if vllm is None or cuda is None or cuda.value is None or "+" in (vllm.value.version or "+"):
        return
    release = pasted_release(f.matrix, vllm.value.version)
    torch_cuda = public_version(cuda.value)
    if release is None or release.cuda is None or torch_cuda is None or release.cuda.major == torch_cuda.major:
        return
    yield Hit(evidence=(pasted_line(vllm), pasted_line(cuda)))


@predicate("container-started-without-gpus", ("container", "cuda_available", "torch_cuda"))
def _container_without_gpus(f: Facts) -> Iterator[Hit]:
    """A report from inside a container where a CUDA torch sees no GPU, and no GPU or driver shows at all: the
    container was started without GPUs (``--gpus``, the NVIDIA runtime)."""
    e = f.log
    if e is None:
        return
    cuda, available = e.torch_cuda_seen(), e.best("cuda_available")
    if (e.container and cuda is not None and cuda.value is not None and available is not None
            and available.value is False and not e.gpus and not e.driver):
        yield Hit(evidence=(pasted_line(e.container[0]), pasted_line(available)))


@predicate("container-built-for-newer-driver", ("container", "driver"))
def _container_driver(f: Facts) -> Iterator[Hit]:
    """NGC's banner (the driver release its CUDA needs) set against the host's driver: a hit when the driver is
    older; ``missing`` when the paste does not show the host's driver."""
    e = f.log
    banner = next((s for s in e.signals if s.value.code == "container-driver" and s.value.detail), None) \
        if e is not None else None
    if e is None or banner is None:
        return
    driver = e.best("driver")
    if driver is None:
        yield Hit(evidence=(pasted_line(banner),), missing=Missing(
            error=banner.text.strip(), missing="the host's NVIDIA driver version",
            paste="the output of `nvidia-smi` on the host"))
        return
    try:
        older = driver.value < DriverVersion.parse(banner.value.detail or "")
    except (TypeError, ValueError):
        return
    if older:
        yield Hit(evidence=(pasted_line(banner), pasted_line(driver)))


@predicate("parallel-build-failed", ("build_jobs",), ("jobs",))
def _parallel_build_failed(f: Facts) -> Iterator[Hit]:
    """A build of many parallel jobs that failed without a compiler's error: the usual sign of the OOM killer when
    the lines that name it were not pasted (weaker than a compiler killed; said only where no error is named)."""
    e = f.log
    many = [j for j in e.build_jobs if j.value >= 32] if e is not None else []
    failed = [ev for ev in e.installer if ev.value.action == "build-failed"] if e is not None else []
    if many and failed:
        yield Hit(evidence=(pasted_line(many[0]), pasted_line(failed[0])), fill={"jobs": str(many[0].value)})


# ------------------------------------------------------------------------------------------------------------
# a paste's typed lines, judged among its signals (``TYPED_PREDICATES`` in pasted.py): each hit names its lines
# ------------------------------------------------------------------------------------------------------------

def _typed_hit(seen: list[Seen[Any]]) -> Iterator[Hit]:
    if seen:
        yield Hit(evidence=tuple(pasted_line(s) for s in seen), seen=tuple(seen))


#: a traceback's frame in the torch inside pip's isolated build environment (its code ran the failing build)
_BUILD_ENV_TORCH_RE = re.compile(r"File \"[^\"]*pip-build-env-\w+[/\\]overlay[/\\][^\"]*?[/\\]torch[/\\]")


def _build_isolation(e: Evidence) -> list[Seen[Any]]:
    """The lines that show a build using pip's isolated environment's torch, or none, instead of the torch
    installed: torch not importable while a build runs; a torch frame inside ``pip-build-env-*/overlay``; that
    torch's CUDA unlike the installed torch's."""
    # an install that fails for want of the torch the same paste shows installed builds in isolation too
    torch = e.dist("torch")
    building = "build_log" in e.kinds or bool(e.build_env_paths) or bool(
        torch is not None and (torch.how == "installer" or e.installer))
    no_torch = [f for f in e.import_failures if f.value.module == "torch"]
    if no_torch and building:
        return [no_torch[0], *e.build_env_paths[:1]]
    in_env = [p for p in e.build_env_paths if _BUILD_ENV_TORCH_RE.search(p.text)]
    if in_env:
        return [in_env[0], *e.build_env_torch_cuda[:1]]
    installed = e.torch_cuda_seen()
    other = [c for c in e.build_env_torch_cuda if installed is not None and c.value != installed.value]
    return [other[0], installed] if other and installed is not None else []


@predicate("build-isolated-torch", ("torch", "torch_cuda"))
def _build_isolated_torch(f: Facts) -> Iterator[Hit]:
    """A build that used pip's isolated environment's torch, or none, instead of the torch installed."""
    yield from _typed_hit(_build_isolation(f.log) if f.log is not None else [])


def _building(e: Evidence) -> bool:
    """Whether the paste shows a build anywhere (its lines may come after the kill, or before the excerpt)."""
    return bool("build_log" in e.kinds or e.gencode or e.build_env_paths or e.build_jobs
                or any(ev.value.action == "build-failed" for ev in e.installer))


def _build_oom(e: Evidence) -> list[Seen[Any]]:
    """The lines that show a build running out of memory: a compiler killed; else, in a build, the host's memory
    used up (top) or out of memory said in words."""
    building = _building(e)
    killed = [k for k in e.killed if k.value.in_build or (building and k.value.how != "build stopped")]
    if killed:
        return killed
    if not building:
        return []
    used_up = [m for m in e.memory if m.value[1] < 0.03 * m.value[0]]
    if used_up:
        return [used_up[0], *e.build_jobs[:1]]
    return list(e.oom_words[:1])


@predicate("build-out-of-memory", ("build_jobs",))
def _build_out_of_memory(f: Facts) -> Iterator[Hit]:
    """A build's compiler killed, or, in a build, the host's memory used up or out of memory said in words."""
    yield from _typed_hit(_build_oom(f.log) if f.log is not None else [])


_COMPANION_DISTS = ("torchvision", "torchaudio", "xformers", "flashinfer-python", "flash-attn")


def installer_replaced(e: Evidence) -> Iterator[tuple[str, Seen[Any]]]:
    """pip's check that a package needs another torch (or companion) than the one installed; an installer about
    to bring in another torch than the one the paste shows installed (each installer line: one cause at most)."""
    torch = e.dist("torch")
    have = public_version(torch.value.version) if torch is not None and torch.value.version else None
    for ev in e.installer:
        x = ev.value
        if x.action == "conflict" and x.detail in ("torch", *_COMPANION_DISTS, "vllm"):
            yield ("torch-abi-mismatch" if x.name == "vllm" and x.detail == "torch" else "companion-mismatch"), ev
        elif x.action == "collecting" and x.name == "torch" and x.detail and have is not None \
                and public_version(x.version or "") not in (None, have):
            yield "installer-replaced-torch", ev


def _replaced_hits(f: Facts, cause: str) -> Iterator[Hit]:
    for c, ev in installer_replaced(f.log) if f.log is not None else ():
        if c == cause:
            yield from _typed_hit([ev])


@predicate("pip-check-vllm-needs-other-torch", ("vllm", "torch"))
def _pip_check_vllm_torch(f: Facts) -> Iterator[Hit]:
    """pip's check that the installed vLLM requires another torch than the one installed."""
    yield from _replaced_hits(f, "torch-abi-mismatch")


@predicate("pip-check-needs-other-companion", ("torch", "torchvision", "torchaudio", "xformers"))
def _pip_check_companion(f: Facts) -> Iterator[Hit]:
    """pip's check that a package requires another torch or companion than the one installed."""
    yield from _replaced_hits(f, "companion-mismatch")


@predicate("installer-collects-other-torch", ("torch",))
def _installer_collects_torch(f: Facts) -> Iterator[Hit]:
    """An installer collecting another torch than the one the paste shows installed."""
    yield from _replaced_hits(f, "installer-replaced-torch")


@predicate("built-for-other-torch-or-python", ("torch", "xformers", "python"))
def _companion_built_for(f: Facts) -> Iterator[Hit]:
    """A companion's own record of the torch or Python it was built for (xFormers' table), unlike the one it runs
    with."""
    e = f.log
    if e is None:
        return
    torch = e.dist("torch")
    have_torch = public_version(torch.value.version or "") if torch is not None else None
    have_python = e.value("python")
    for bf in e.built_for:
        built_torch = public_version(bf.value.torch or "")
        if built_torch is not None and have_torch is not None and built_torch != have_torch:
            yield from _typed_hit([bf])
        elif bf.value.python and have_python and bf.value.python.split(".")[:2] != str(have_python).split(".")[:2]:
            yield from _typed_hit([bf])
