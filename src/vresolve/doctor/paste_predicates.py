"""doctor's predicates over what only a pasted text or log shows (``Facts.log``): the paste's typed lines, judged
by the same rows as the rest (:mod:`.predicates` imports this module, so every predicate is registered together)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..matrix import Matrix, VllmRelease
from ..values import DriverVersion, public_version

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

from .predicate_base import Facts, Hit, Missing, predicate

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


def _no_wheel_for(matrix: Matrix, asked: SpecifierSet | None, python: Version) -> bool:
    """Whether no vLLM release the request asks for supports this Python (``Requires-Python``; every release where
    none is asked for, or none asked is known). torch and the other binary-only packages: :mod:`.pip_versions`."""
    releases = [r for r in matrix.vllm if asked is None or asked.contains(r.version, prereleases=True)] \
        or list(matrix.vllm)
    return not any(r.requires_python is None or r.requires_python.contains(python, prereleases=True)
                   for r in releases)


@predicate("pip-finds-no-wheel-for-python", ("python",))
def _no_wheel_for_python(f: Facts) -> Iterator[Hit]:
    """pip finding no vLLM to install ("from versions: none", "No matching distribution") for a Python (shown) that
    no release the request names supports (``Requires-Python``); torch and the other binary-only packages are
    judged by ``pip-offers-no-wheel-for-interpreter`` (:mod:`.pip_versions`)."""
    e = f.log
    python = e.best("python") if e is not None else None
    have = public_version(str(python.value)) if python is not None else None
    if e is None or python is None or have is None:
        return
    for ev in e.installer:
        name = (ev.value.name or "").lower()
        if ev.value.action == "no-matching-distribution" and name == "vllm" \
                and _no_wheel_for(f.matrix, _asked(ev.value.detail, name), have):
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
