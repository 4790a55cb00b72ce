"""doctor's predicates over compiled packages' reports of their own builds (:class:`~.evidence.model.ExtBuild`:
detectron2's and torchvision's "arch flags", MMCV's "MMCV CUDA Compiler", CuPy's "CUDA Build Version"), set against
the GPUs and the driver the paste shows. :mod:`.predicates` imports it, so its predicates register with the rest."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from ..values import ArchList, Capability, DriverVersion

if TYPE_CHECKING:
    from .evidence import Seen

from .paste_predicates import gpu_capabilities, pasted_line
from .predicate_base import Facts, Hit, predicate

__all__: list[str] = []


def _reports(f: Facts) -> list[Seen[Any]]:
    return list(f.log.ext_reports) if f.log is not None else []


def _gpus(f: Facts) -> list[tuple[Seen[Any], Capability]]:
    """The GPUs the paste shows, each with its compute capability (as shown, else the matrix's for its name)."""
    from .evidence import listed_gpus

    return gpu_capabilities(f, listed_gpus(f.log)) if f.log is not None else []


@predicate("extension-arch-list-misses-gpu", ("gpus",), ("package", "archs", "gpus", "sms"))
def _extension_arch_list(f: Facts) -> Iterator[Hit]:
    """A compiled package's library (detectron2's _C, torchvision's _C) whose GPU code, as its own report lists it,
    has no kernels for a GPU the paste shows: SASS runs on its own major at the same or a later minor only. The
    listing (``cuobjdump --list-elf``) names SASS, not PTX, so where the paste does not also show "no kernel image"
    it is said one step softer."""
    failing = f.log is not None and "no-kernel-image" in f.log.signal_codes()
    gpus = _gpus(f) if _reports(f) else []
    for seen in _reports(f):
        build = seen.value
        archs = ArchList.from_torch(build.archs) if build.archs else None
        missing = [(g, cc) for g, cc in gpus if archs is not None and not archs.covers(cc)]
        if missing:
            yield Hit(evidence=(pasted_line(seen), *(pasted_line(g) for g, _ in missing)), seen=(seen,),
                      fill={"package": build.package, "archs": ", ".join(build.archs),
                            "gpus": ", ".join(str(g.value.name or "GPU") for g, _ in missing),
                            "sms": ", ".join(cc.sm for _, cc in missing)},
                      softer=not failing)


def _build_floor(f: Facts, cuda: Version, platforms: tuple[str, ...] = ("linux",)) -> DriverVersion | None:
    """The lowest driver that runs code built with CUDA ``cuda`` on any of ``platforms`` ("linux", "windows"): its
    major's minor-version-compatibility floor, else (CUDA 10 and older) the toolkit's own floor."""
    major, tk = f.matrix.cuda_major(cuda.major), f.matrix.toolkit(cuda)
    floors = [getattr(major.minor_compat_driver, p) for p in platforms] if major is not None else []
    if not any(floors):
        floors = [getattr(tk.min_driver, p) for p in platforms] if tk is not None else []
    known = [d for d in floors if d is not None]
    return min(known) if known else None


def _served(f: Facts) -> tuple[Version | None, Seen[Any] | None, Seen[Any] | None]:
    """(the CUDA the driver serves, that line, the driver's version line) as the paste shows them."""
    assert f.log is not None
    cuda, driver = f.log.best("cuda_driver"), f.log.best("driver")
    try:
        served = Version(cuda.value) if cuda is not None else None
    except InvalidVersion:
        served = None
    return served, cuda, driver


@predicate("build-cuda-above-driver", ("driver", "cuda_driver"), ("package", "cuda", "served", "need"))
def _build_cuda_above_driver(f: Facts) -> Iterator[Hit]:
    """A compiled package built with a CUDA the driver cannot run, by the package's own report: the driver serves an
    older CUDA major (nvidia-smi's, deviceQuery's or the package's own "CUDA Driver Version"), or an older minor where
    that CUDA has no minor-version compatibility (10.x and older), or (on Linux, not WSL) the driver is below the
    floor of the build's CUDA."""
    if f.log is None or not any(s.value.cuda for s in f.log.ext_reports):
        return
    e = f.log
    served, cuda_line, driver_line = _served(f)
    linux = e.value("system") == "linux" and not e.value("wsl")
    for seen in _reports(f):
        if not seen.value.cuda:
            continue
        cuda = Version(seen.value.cuda)
        major = f.matrix.cuda_major(cuda.major)
        no_compat = major is None or major.minor_compat_driver.linux is None
        floor = _build_floor(f, cuda) if linux and driver_line is not None else None
        below_floor = floor is not None and driver_line is not None and driver_line.value < floor
        older = served is not None and (served.major < cuda.major or (
            no_compat and (served.major, served.minor) < (cuda.major, cuda.minor)))
        if older or below_floor:
            shown_line = cuda_line if older else driver_line
            assert shown_line is not None
            shown = f"CUDA {served}" if older else f"driver {driver_line.value if driver_line else ''}"
            yield Hit(evidence=(pasted_line(seen), pasted_line(shown_line)), seen=(seen,),
                      fill={"package": seen.value.package, "cuda": seen.value.cuda, "served": shown,
                            "need": f"NVIDIA driver >= {floor}" if floor is not None
                            else f"a driver that serves CUDA {cuda.major}.{cuda.minor}"})


#: the CUDA an install command asks for: conda's ``cudatoolkit=10.2``, ``pytorch-cuda=12.1``, ``cuda-version=12.4``;
#: pip's PyTorch index ``.../whl/cu118`` (and ``nightly/cu118``) or a ``+cu118`` local version
_ASKED_CUDA_RE = re.compile(r"\b(?:cudatoolkit|pytorch-cuda|cuda-version|cuda-toolkit|cuda-runtime)\s*={1,2}\s*"
                            r"(?P<v>\d{1,2}\.\d)\b|/whl/(?:nightly/|test/)?cu(?P<whl>\d{2,3})\b|\+cu(?P<tag>\d{2,3})\b")


def _asked_cuda(detail: str) -> Version | None:
    m = _ASKED_CUDA_RE.search(detail)
    if m is None:
        return None
    if m["v"]:
        return Version(m["v"])
    digits = m["whl"] or m["tag"]
    return Version(f"{digits[:-1]}.{digits[-1]}")


@predicate("install-asks-cuda-above-driver", ("driver",), ("cuda", "driver", "need"))
def _install_asks_cuda_above_driver(f: Facts) -> Iterator[Hit]:
    """An install command asking for a CUDA runtime (conda's ``cudatoolkit=10.2``, pip's PyTorch index ``cu118``) on a
    machine whose driver, as the paste shows it, is below that CUDA's floor on every platform: what it installs cannot
    run on this driver."""
    e = f.log
    driver = e.best("driver") if e is not None else None
    if e is None or driver is None:
        return
    for command in (s for s in e.signals if s.value.code == "install-command"):
        cuda = _asked_cuda(command.value.detail or "")
        floor = _build_floor(f, cuda, ("linux", "windows")) if cuda is not None else None
        if cuda is not None and floor is not None and driver.value < floor:
            yield Hit(evidence=(pasted_line(command), pasted_line(driver)), seen=(command,),
                      fill={"cuda": f"{cuda.major}.{cuda.minor}", "driver": str(driver.value), "need": str(floor)})
            return
