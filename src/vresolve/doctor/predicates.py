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
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec
from packaging.version import Version

from ..host import Host, TorchRuntime
from ..matrix import Matrix
from ..matrix.model import JetPack, Kernels
from ..values import Capability, DriverVersion, public_version
from .facts import caps_covered, is_source_tree, needs_libcuda, torch_pin
from .toolchain_predicates import MAJOR_MISMATCH, MINOR_MISMATCH

if TYPE_CHECKING:
    pass

from .predicate_base import PREDICATES, Facts, Hit, Missing, Predicate, Test, predicate

__all__ = ["PREDICATES", "Facts", "Hit", "Missing", "Predicate", "Test", "predicate", "jetson_here", "pasted_release"]

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


@predicate("torch-release-arch-misses-gpu", ("gpus", "torch"), ("torch", "gpus", "archs", "sms", "variant"))
def _torch_release_arch(f: Facts) -> Iterator[Hit]:
    """torch's own arch list not shown (a pasted report's), and the arch list torch.yaml gives its release and CUDA
    variant on this platform has neither SASS nor PTX for a GPU shown (softer where the matrix's row is unverified)."""
    torch = _torch_judged(f)
    local = (torch.version or "").partition("+")[2] if torch is not None else ""
    if torch is None or torch.arch_list or not re.fullmatch(r"cu\d{3}", local) or {"platform.os", "platform.machine"} & f.unknown:
        return
    version = public_version(torch.version or "")
    release = f.matrix.torch_release(version) if version is not None else None
    variant = release.variant(local) if release is not None else None
    archs = variant.archs.get(f.host.platform.tag) if variant is not None else None
    missing = [g for g in f.gpus if archs is not None and not archs.covers(g.cc)]
    if variant is not None and archs is not None and missing:
        yield Hit(evidence=tuple(f"GPU {g.index}: {g.label}" for g in missing) + (f"torch {torch.version}",),
                  fill={"torch": f"{torch.version}", "gpus": ", ".join(g.name for g in missing), "archs": str(archs),
                        "sms": ", ".join(g.cc.sm for g in missing), "variant": local},
                  softer=not variant.provenance.trusted)


@predicate("nvcc-not-torch-cuda", ("nvcc", "torch_cuda", "torch"), ("nvcc", "torch_cuda", "cuda", "effect"))
def _toolkit_mismatch(f: Facts) -> Iterator[Hit]:
    """An nvcc on the machine of another CUDA major.minor than torch's (what a build against this torch uses): torch's
    extension builder refuses another major, and only warns of another minor ("Most likely this shouldn't be a
    problem": said one step softer)."""
    torch = f.torch
    tc = public_version(torch.cuda) if torch is not None and torch.cuda else None
    for tk in f.host.toolkits:
        if torch is not None and tc is not None and (tk.version.major, tk.version.minor) != (tc.major, tc.minor):
            minor = tk.version.major == tc.major
            effect = (MINOR_MISMATCH if minor else MAJOR_MISMATCH).format(nvcc=f"{tk.version.major}."
                                                                                 f"{tk.version.minor}",
                                                                            torch_cuda=f"{tc.major}.{tc.minor}")
            where = f"{tk.path}: " if tk.path else ""
            yield Hit(evidence=(f"{where}nvcc {tk.version} ({tk.source})",),
                      fill={"nvcc": str(tk.version), "torch_cuda": str(torch.cuda), "cuda": f"{tc.major}.{tc.minor}",
                            "effect": effect}, softer=minor)
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


class DriverGap(msgspec.Struct, frozen=True):
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
    driver, served = f.host.driver.version, f.host.driver.cuda
    if torch is None or tc is None or (driver is None and served is None):  # (deviceQuery shows the served CUDA only)
        return None
    floor, own = driver_floors(f.host, f.matrix, Version(f"{tc.major}.{tc.minor}"))
    major = f.matrix.cuda_major(tc.major)
    no_compat = major is None or major.minor_compat_driver.linux is None
    works = "torch.available" not in f.unknown and torch.available
    if floor is not None and driver is not None and driver < floor:
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
    served = f.host.driver.cuda
    driver = str(f.host.driver.version) if f.host.driver.version is not None else f"serving CUDA {served}"
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


# registered with the rest: what only a pasted text or log shows
# (pip's "from versions" judgement; PTX, kernel images and builds without CUDA)
from . import (  # noqa: E402, F401
    cpu_install,
    ext_predicates,
    family_predicates,
    library_predicates,
    limit_predicates,
    pip_versions,
    runtime_predicates,
    toolchain_predicates,
)
from .paste_predicates import pasted_release  # noqa: E402
