"""doctor's predicates over what only a pasted text or log shows (``Facts.log``): the paste's typed lines, judged
by the same rows as the rest (:mod:`.predicates` imports this module, so every predicate is registered together)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..matrix import Matrix, VllmRelease
from ..values import DriverVersion, public_version

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

from .evidence.model import REPORT
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


#: a process that sees no NVIDIA driver at all: torch's "Found no NVIDIA driver on your system" (the driver's library
#: could not be loaded), nvidia-smi not there
_NO_DRIVER_SEEN = ("nvidia-smi-missing", "no-driver")
#: a process that sees no GPU (any reason)
_NO_GPU_SEEN = (*_NO_DRIVER_SEEN, "no-cuda-gpus", "cuda-not-available")


@predicate("cuda-visible-devices-names-no-gpu", ("env", "gpus"), ("variable",))
def _visible_devices_name_no_gpu(f: Facts) -> Iterator[Hit]:
    """A process that sees no CUDA GPU ("no CUDA-capable device is detected", "No CUDA GPUs are available") run with
    ``CUDA_VISIBLE_DEVICES`` whose first entry names no GPU: empty or negative, or an index past the GPUs a report of
    the same paste lists (nvidia-smi's ``GPU 2`` on a machine whose table shows GPU 0 only). CUDA reads the list up to
    its first invalid entry, so that process sees none."""
    from .facts import hidden_by

    e = f.log
    if e is None or not any(s.value.code == "no-cuda-gpus" for s in e.signals):
        return
    listed = {g.value.index for g in e.gpus if g.rank == REPORT and g.value.index is not None}
    for seen in e.env:
        name, value = seen.value
        if name != "CUDA_VISIBLE_DEVICES":
            continue
        first = value.split(",")[0].strip()
        past = first.isdigit() and listed and int(first) > max(listed) and listed == set(range(len(listed)))
        if hidden_by(((name, value),)) or past:
            gpus = [pasted_line(g) for g in e.gpus if g.rank == REPORT][:2]
            yield Hit(evidence=(pasted_line(seen), *gpus), fill={"variable": f"{name}={value}"})
            return


@predicate("container-started-without-gpus", ("container", "cuda_available", "torch_cuda", "driver"))
def _container_without_gpus(f: Facts) -> Iterator[Hit]:
    """A process in a container that sees no GPU where the paste shows the container was given none: a report from
    inside where a CUDA torch sees no GPU, no GPU or driver shows at all, and something failed or is said missing
    (a report alone may come from a machine without GPUs: a CPU node's container); a container where nvidia-smi or the
    driver's library is missing while the paste shows the host's driver working (the NVIDIA Container Toolkit mounts
    both only into containers started with GPUs); or a run command without any GPU flag followed by a process that
    sees no GPU; NGC's banner that its container finds no driver. Not where torch is a CPU build (its own cause), nor where the container's GPUs are hidden by a
    setting (``NVIDIA_VISIBLE_DEVICES=void``: another row)."""
    e = f.log
    if e is None:
        return
    banner = next((s for s in e.signals if s.value.code == "container-no-driver"), None)
    if banner is not None and not any(s.value.code in ("no-driver", "nvml-mismatch") for s in e.signals):
        yield Hit(evidence=(pasted_line(banner),))  # said by NGC's entrypoint, inside its container
        return
    containers = [c for c in e.container if c.how != "log prefix"]  # (not a relay's prefix: findings do not depend
    # on how a paste was relayed)
    cuda, available = e.torch_cuda_seen(), e.best("cuda_available")
    run = next((s for s in e.signals if s.value.code == "run-without-gpus"), None)
    if not (containers or run) or (cuda is not None and cuda.value is None):
        return
    unavailable = available if available is not None and available.value is False else None
    seen = [s for s in e.signals if s.value.code in _NO_GPU_SEEN]
    if containers and cuda is not None and unavailable is not None and not e.gpus and not e.driver \
            and (e.failures or seen):
        yield Hit(evidence=(pasted_line(containers[0]), pasted_line(unavailable)))
        return
    no_driver = next((s for s in seen if s.value.code in _NO_DRIVER_SEEN and "communicate" not in s.text), None)
    driver = e.best("driver")
    if no_driver is not None and driver is not None and driver.rank == REPORT and not e.wsl:
        where: Seen[Any] | None = containers[0] if containers else run
        yield Hit(evidence=(pasted_line(no_driver), pasted_line(driver), *([pasted_line(where)] if where else [])))
        return
    sign = next((s for s in (*seen, *([unavailable] if unavailable is not None else [])) if run is not None
                 and s.line > run.line), None)
    if run is not None and sign is not None:
        yield Hit(evidence=(pasted_line(run), pasted_line(sign)))


#: GeForce RTX 40 series boards (RTX 4050 to 4090): NVIDIA does not support CUDA peer-to-peer between them (the
#: professional Ada boards, "RTX 4000 Ada Generation" and the like, are not these)
_NO_P2P_GPU_RE = re.compile(r"\bRTX ?40[5-9]0\b(?!\s*Ada)", re.IGNORECASE)


@predicate("nccl-on-gpus-without-p2p", ("gpus",), ("gpu",))
def _nccl_without_p2p(f: Facts) -> Iterator[Hit]:
    """A multi-GPU NCCL job (NCCL's own lines, its tests or settings) on GeForce RTX 40 boards, which have no CUDA
    peer-to-peer, that hangs (said) or fails with an NCCL error: NCCL's P2P transport is the path to take off."""
    e = f.log
    if e is None:
        return
    gpu = next((g for g in e.gpus if _NO_P2P_GPU_RE.search(g.value.name or "")), None)
    nccl = next((s for s in e.signals if s.value.code == "nccl-in-use"), None)
    failed = next((s for s in e.signals if s.value.code == "hang-said"), None) \
        or next((x for x in e.failures if x.value == "nccl"), None)
    if gpu is not None and nccl is not None and failed is not None:
        yield Hit(evidence=(pasted_line(failed), pasted_line(gpu), pasted_line(nccl)), fill={"gpu": gpu.value.name or "GeForce RTX 40"})


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
    live = f.host.driver.version
    if driver is None and live is not None:  # judged on the machine doctor probed
        older = live < DriverVersion.parse(banner.value.detail or "0")
        if older:
            yield Hit(evidence=(pasted_line(banner), f"this machine's driver {live}"))
        return
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
_BUILD_ENV_TORCH_RE = re.compile(r"File \"?[^\"\n]*(?:pip-build-env-\w+[/\\]overlay|[/\\]builds-v\d+[/\\]\.tmp\w+)[/\\]"
                                 r"[^\"\n]*?[/\\]torch[/\\]")  # (IPython's frames: unquoted)


def _build_isolation(e: Evidence) -> list[Seen[Any]]:
    """The lines that show a build using pip's isolated environment's torch, or none, instead of the torch
    installed: torch not importable while a build runs; a torch frame inside ``pip-build-env-*/overlay``; that
    torch's CUDA unlike the installed torch's."""
    # an install that fails for want of the torch the same paste shows installed builds in isolation too
    torch = e.dist("torch")
    building = "build_log" in e.kinds or bool(e.build_env_paths) or bool(
        torch is not None and (torch.how == "installer" or e.installer))
    no_torch = [f for f in e.import_failures if f.value.module == "torch"]
    # (a frame in an installer's unpacked source, or a build backend's hook for its requirements: a build)
    building = building or any(s.value.code in ("installer-build-frame", "build-requirements-failed")
                               for s in e.signals)
    if no_torch and building:
        return [no_torch[0], *e.build_env_paths[:1]]
    in_env = [p for p in e.build_env_paths if _BUILD_ENV_TORCH_RE.search(p.text)]
    if in_env:
        return [in_env[0], *e.build_env_torch_cuda[:1]]
    installed = e.torch_cuda_seen()
    other = [c for c in e.build_env_torch_cuda if installed is not None and c.value != installed.value]
    return [other[0], installed] if other and installed is not None else []


def built_by_uv(e: Evidence) -> bool:
    """Whether uv ran the build: its isolated build environment's path (``.../uv/builds-v0/.tmpXXXX``), or uv's own
    words for the failure ("× Failed to build `flash-attn==2.8.2`")."""
    return any("builds-v" in p.value for p in e.build_env_paths) or any(ev.how == "uv" for ev in e.installer
                                                                         if ev.value.action == "build-failed")


@predicate("build-isolated-torch", ("torch", "torch_cuda"))
def _build_isolated_torch(f: Facts) -> Iterator[Hit]:
    """A build that used pip's isolated environment's torch, or none, instead of the torch installed."""
    yield from _typed_hit(_build_isolation(f.log) if f.log is not None and not built_by_uv(f.log) else [])


@predicate("uv-build-isolated-torch", ("torch", "torch_cuda"))
def _uv_build_isolated_torch(f: Facts) -> Iterator[Hit]:
    """The same, where uv ran the build (its fix is said in uv's own settings); and a source package that imports
    torch undeclared (flash-attn) failing its build requirements in uv's build (``sdist-imports-torch``)."""
    e = f.log
    undeclared = [s for s in e.signals if s.value.code == "sdist-imports-torch"] if e is not None else []
    yield from _typed_hit((_build_isolation(e) or undeclared[:1]) if e is not None and built_by_uv(e) else [])


def _building(e: Evidence) -> bool:
    """Whether the paste shows a build anywhere (its lines may come after the kill, or before the excerpt)."""
    return bool("build_log" in e.kinds or e.gencode or e.build_env_paths or e.build_jobs
                or any(ev.value.action == "build-failed" for ev in e.installer))


def _kills(e: Evidence) -> list[Seen[Any]]:
    """The processes of a build the paste shows killed (SIGKILL: signal 9, exit status 137): a compiler named by its
    own words ("'cicc' died due to signal 9", "Killed signal terminated program cc1plus"), else a kill in a build.
    Not ninja's "build stopped" (it stops after any failed step, a compiler's error or a user's Ctrl-C alike)."""
    building = _building(e)
    return [k for k in e.killed if k.value.how != "build stopped"
            and (k.value.in_build or building or k.value.program is not None)]


def _memory_shown(e: Evidence) -> bool:
    """Whether the paste shows the build's memory running short: the host's memory used up (top), out of memory said
    in words, parallel jobs asked for (MAX_JOBS, -j) or run (make's "Waiting for unfinished jobs"), or several
    compilers killed (the OOM killer takes one after another while memory stays short)."""
    kills = {k.line for k in e.killed if k.value.how == "signal 9"}  # (one sighting per program killed)
    return bool(any(m.value[1] < 0.03 * m.value[0] for m in e.memory) or e.oom_words
                or any(j.value >= 2 for j in e.build_jobs) or len(kills) >= 2
                or "parallel-build" in e.signal_codes())


def _build_oom(e: Evidence) -> list[Seen[Any]]:
    """The lines that show a build running out of memory: a compiler killed where the paste shows memory running
    short; else, in a build, the host's memory used up (top) or out of memory said in words."""
    killed = _kills(e)
    if killed:  # (with the lines that show memory short: its words, the jobs asked for)
        return [*killed, *e.oom_words[:1], *e.build_jobs[:1]] if _memory_shown(e) else []
    if not _building(e):
        return []
    used_up = [m for m in e.memory if m.value[1] < 0.03 * m.value[0]]
    if used_up:
        return [used_up[0], *e.build_jobs[:1]]
    return list(e.oom_words[:1])


@predicate("build-out-of-memory", ("build_jobs",))
def _build_out_of_memory(f: Facts) -> Iterator[Hit]:
    """A build's compiler killed where memory is shown running short, or, in a build, the host's memory used up or
    out of memory said in words."""
    yield from _typed_hit(_build_oom(f.log) if f.log is not None else [])


#: what settles whether a compiler killed by signal 9 ran out of memory
ASK_FOR_KILL = ("the kernel's lines of the kill (`sudo dmesg -T | grep -i -E \"killed process|out of memory|oom\"`, or "
                "`journalctl -k | grep -i oom`), the machine's or container's memory (`free -h`; in a container its "
                "memory limit), and how many compile jobs ran (MAX_JOBS, `make -j`, `ninja -j`)")


@predicate("build-killed-memory-not-shown", ("build_jobs",))
def _build_killed_memory_not_shown(f: Facts) -> Iterator[Hit]:
    """A compiler killed by signal 9 in a build where the paste shows nothing of memory: the kernel's OOM killer is
    its usual sender, but not its only one (a runaway compiler, a job scheduler's or a user's kill): said one step
    softer, and the error left for the kernel's own lines to settle."""
    e = f.log
    killed = _kills(e) if e is not None else []
    if e is None or not killed or _memory_shown(e):
        return
    yield Hit(evidence=tuple(pasted_line(k) for k in killed[:3]), seen=tuple(killed), missing=Missing(
        error=killed[0].text.strip(), missing="whether the kernel's OOM killer sent the signal (the paste shows "
        "nothing of the build's memory)", paste=ASK_FOR_KILL))


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


@predicate("pip-check-needs-other-companion", ("torch", "torchvision", "torchaudio", "xformers"), ("companion",))
def _pip_check_companion(f: Facts) -> Iterator[Hit]:
    """pip's check that a package requires another torch or companion than the one installed (the package named)."""
    for hit in _replaced_hits(f, "companion-mismatch"):
        yield Hit(evidence=hit.evidence, seen=hit.seen,
                  fill={"companion": getattr(hit.seen[0].value, "name", None) or "A torch companion"})


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


# ------------------------------------------------------------------------------------------------------------
# torch's own symbols or libraries missing for a compiled extension (judged among the signals, in the symbols' order)
# ------------------------------------------------------------------------------------------------------------

#: whose C++ ABI a torch-owned undefined symbol in this library breaks: a companion's, else the ABI's
_COMPANIONS = ("flash_attn", "flashinfer", "xformers", "torchvision", "torchaudio")


def symbol_causes(e: Evidence) -> Iterator[tuple[str, Seen[Any]]]:
    """torch's own symbols or libraries missing for an extension: a companion's build for another torch when the
    extension is a companion's (its file, or the package being imported), else the ABI of torch itself."""
    importing = {i.value for i in e.imported}
    companion_imported = bool(importing & set(_COMPANIONS)) and not importing & {"vllm", "sgl_kernel"}
    for s in e.symbols:
        if s.value.owner != "torch":
            continue
        where = (s.value.library or "") + " " + s.text
        companion = any(c in where for c in _COMPANIONS) or (companion_imported and "vllm" not in where)
        yield ("companion-mismatch" if companion else "torch-abi-mismatch"), s
    for lib in e.libraries:  # libtorch_cuda_cpp.so, libc10_cuda.so: built against a torch that had them
        if lib.value.missing and lib.value.name.startswith(("torch", "c10")) and companion_imported:
            yield "companion-mismatch", lib


def _symbol_hits(f: Facts, cause: str) -> Iterator[Hit]:
    for c, seen in symbol_causes(f.log) if f.log is not None else ():
        if c == cause:
            yield from _typed_hit([seen])


@predicate("torch-symbol-missing-in-companion", ("torch", "torchvision", "torchaudio", "xformers", "flashinfer",
                                                 "flash-attn"), ("companion",))
def _torch_symbol_in_companion(f: Facts) -> Iterator[Hit]:
    """A companion's library (its file, or the package being imported) missing a symbol or library of torch's own;
    the companion named as the line (else the import) shows it."""
    for hit in _symbol_hits(f, "companion-mismatch"):
        seen = hit.seen[0]
        where = (getattr(seen.value, "library", None) or "") + " " + seen.text
        named = [c for c in _COMPANIONS if c in where] or \
            [c for c in _COMPANIONS if f.log is not None and c in {i.value for i in f.log.imported}]
        yield Hit(evidence=hit.evidence, seen=hit.seen, fill={"companion": named[0] if named else "A torch companion"})


#: the extensions a torch-owned undefined symbol is said of, by the words of its path (else "A compiled extension")
_EXTENSIONS = (("sgl_kernel", "sgl-kernel's extension"), ("vllm", "vLLM's extension"))


@predicate("torch-symbol-missing-in-extension", ("vllm", "torch"), ("extension",))
def _torch_symbol_in_extension(f: Facts) -> Iterator[Hit]:
    """Another extension (vLLM's, sgl-kernel's) missing a symbol of torch's own: built against another torch."""
    for hit in _symbol_hits(f, "torch-abi-mismatch"):
        seen = hit.seen[0]
        where = (getattr(seen.value, "library", None) or "") + " " + seen.text
        named = next((said for word, said in _EXTENSIONS if word in where), "A compiled extension")
        yield Hit(evidence=hit.evidence, seen=hit.seen, fill={"extension": named})


#: the predicates of torch's symbols, judged among the signals (pasted.py's ``_causes``)
SYMBOL_PREDICATES = ("torch-symbol-missing-in-companion", "torch-symbol-missing-in-extension")


@predicate("ptxas-older-than-gpu", ("nvcc", "gpus"))
def _ptxas_older_than_gpu(f: Facts) -> Iterator[Hit]:
    """ptxas not knowing the GPU architecture it is asked to assemble for: its toolkit predates the GPU; the first
    toolkit whose ptxas targets it read from cuda.yaml's ``nvcc_archs``."""
    from ..values import Capability

    for s in f.log.signals if f.log is not None else ():
        if s.value.code != "ptxas-unknown-arch" or not s.value.detail:
            continue
        cc = Capability.parse(s.value.detail)
        first = min((t.version for t in f.matrix.toolkits if t.can_target(cc)), default=None)
        said = (f"{cc.base.sm} needs the ptxas of CUDA {first} or later (cuda.yaml nvcc_archs)" if first is not None
                else f"{cc.base.sm}: no toolkit in cuda.yaml targets it")
        yield Hit(evidence=(pasted_line(s), said), seen=(s,))
        return


@predicate("nvcc-older-than-arch", ("nvcc", "gpus"), ("nvcc", "first"))
def _nvcc_older_than_arch(f: Facts) -> Iterator[Hit]:
    """nvcc refusing a GPU architecture (``Unsupported gpu architecture 'compute_75'``) where the nvcc the paste shows
    is older than the first toolkit that targets it (cuda.yaml's ``nvcc_archs``): the toolkit predates the GPU (one
    step softer where only the user's words state the CUDA: "CUDA9.2"). ``missing`` when the paste shows no version; no hit when the nvcc is recent enough (an architecture it dropped,
    or a wrong one)."""
    from ..values import Capability

    e = f.log
    refused = next((s for s in e.signals if s.value.code == "nvcc-unsupported-arch" and s.value.detail), None) \
        if e is not None else None
    if e is None or refused is None:
        return
    try:
        cc = Capability.parse(refused.value.detail or "")
    except ValueError:
        return
    first = min((t.version for t in f.matrix.toolkits if t.can_target(cc)), default=None)
    nvcc = e.best("nvcc")
    have = public_version(nvcc.value.release) if nvcc is not None else None
    stated = e.best("cuda") if nvcc is None or have is None else None  # a CUDA the user states ("CUDA9.2")
    said = public_version(stated.value) if stated is not None else None
    if stated is not None and said is not None and first is not None and (said.major, said.minor) < (first.major,
                                                                                                     first.minor):
        yield Hit(evidence=(pasted_line(refused), pasted_line(stated),
                            f"{cc.base.sm} needs the nvcc of CUDA {first} or later (cuda.yaml nvcc_archs); the CUDA "
                            f"stated is {said}"), seen=(refused,), softer=True, fill={"nvcc": str(said), "first": str(first)})
        return
    if nvcc is None or have is None:
        yield Hit(evidence=(pasted_line(refused),), missing=Missing(
            error=refused.text.strip(), missing="the version of the nvcc that ran (to set against the architecture)",
            paste="the output of `nvcc --version` (and `which nvcc`) in the shell that ran the build, and of "
                  "`python -c \"import torch; print(torch.__version__, torch.version.cuda)\"`"))
        return
    if first is not None and (have.major, have.minor) < (first.major, first.minor):
        yield Hit(evidence=(pasted_line(refused), pasted_line(nvcc),
                            f"{cc.base.sm} needs the nvcc of CUDA {first} or later (cuda.yaml nvcc_archs); this nvcc is "
                            f"CUDA {have}"), seen=(refused,), fill={"nvcc": str(have), "first": str(first)})


# ------------------------------------------------------------------------------------------------------------
# vLLM's FlashAttention backend refused: the GPU against FlashAttention's compute capability 8.0
# ------------------------------------------------------------------------------------------------------------

#: FlashAttention 2 and 3 (vllm-flash-attn's ``is_fa_version_supported``) run from compute capability 8.0 on
_FA_MIN_CAPABILITY = "8.0"


def gpu_capabilities(f: Facts, gpus: Iterable[Seen[Any]]) -> list[tuple[Seen[Any], Any]]:
    """(the line, the compute capability) of each of ``gpus`` (the GPUs a paste shows): its own capability, else the
    matrix's for its name; a GPU of neither is left out."""
    out = []
    for g in gpus:
        cc = g.value.compute_capability
        if cc is None and g.value.name:
            row = f.matrix.find_gpu(g.value.name)
            cc = row.compute_capability if row is not None else None
        if cc is not None:
            out.append((g, cc))
    return out


@predicate("vllm-flash-attention-below-capability", ("gpus",), ("gpu", "cc"))
def _vllm_flash_attention_below_capability(f: Facts) -> Iterator[Hit]:
    """vLLM's FlashAttention backend asserting its version is supported, judged by the GPU the paste shows: below
    compute capability 8.0 the GPU is too old for it; ``missing`` when no GPU is shown; no hit on a GPU of 8.0 or later
    (FlashAttention refused for another reason: a build without it)."""
    from ..values import Capability

    e = f.log
    refused = next((s for s in e.signals if s.value.code == "fa-version-unsupported"), None) if e is not None else None
    if e is None or refused is None:
        return
    gpus = gpu_capabilities(f, e.gpus)
    if not gpus:
        yield Hit(evidence=(pasted_line(refused),), missing=Missing(
            error=refused.text.strip(), missing="the GPU (vLLM's FlashAttention needs compute capability 8.0)",
            paste="the output of `nvidia-smi` and of `vllm collect-env` (or `python -m torch.utils.collect_env`)"))
        return
    old = [(g, cc) for g, cc in gpus if cc.base < Capability.parse(_FA_MIN_CAPABILITY)]
    if old:
        g, cc = old[0]
        yield Hit(evidence=(pasted_line(refused), pasted_line(g)), seen=(refused,),
                  fill={"gpu": g.value.name or "GPU", "cc": str(cc.base)})
