"""A CPU-only build as installers and package lists show it (cause ``cpu-only-build``), judged from facts: conda's
plan or list giving pytorch's CPU build where CUDA was asked for, pip taking PyPI's Windows torch wheel (a CPU build),
PyPI's aarch64 torch wheel of a release that has no CUDA build there, and ONNX Runtime listing no CUDA execution
provider beside an NVIDIA GPU.

Each judges only where the paste also shows that CUDA was wanted (a GPU or driver, a CUDA spec or index asked for, a
CUDA build elsewhere, CUDA said to be unavailable); where it shows the CPU build was asked for (conda's ``cpuonly``,
PyTorch's ``cpu`` index) nothing is said: a CPU-only machine on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from ..values import public_version
from .evidence.signals import CONTEXT_SIGNALS
from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, predicate

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

__all__ = ["cuda_wanted", "cpu_asked"]

#: conda packages and specs that ask for a CUDA build (pytorch's ``pytorch-cuda``, the old ``cudatoolkit``)
_CUDA_SPECS = frozenset({"pytorch-cuda", "cudatoolkit", "cuda-toolkit", "cuda-version", "cuda-runtime"})
#: conda packages and specs that ask for the CPU build (the feature packages of pytorch's channel)
_CPU_SPECS = frozenset({"cpuonly", "cpu-only"})
#: an index (or a find-links page) of PyTorch's CUDA builds: ``/whl/cu128``, ``/whl/nightly/cu130``, the old
#: ``torch_stable.html`` page of the CUDA wheels
_CUDA_INDEX_RE = re.compile(r"/whl/(?:nightly/|test/)?cu\d+\b|/whl/torch_stable\.html")
_CPU_INDEX_RE = re.compile(r"/whl/(?:nightly/|test/)?cpu\b")
#: a session's providers (``sess.get_providers()``), not the build's (``get_available_providers()``)
_SESSION_RE = re.compile(r"\bget_providers\(|session", re.IGNORECASE)
#: the lines that say the program wanted CUDA and did not get it
_UNAVAILABLE = frozenset({"cuda-not-available", "torch-not-compiled-cuda", "no-cuda-gpus"})


def cuda_shown(e: Evidence) -> bool:
    """Whether a report or torch's own words show torch using CUDA (a CUDA build's version, "Is CUDA available:
    True"): a wheel's name then says nothing of the torch that runs (another environment, a later install)."""
    cuda = e.torch_cuda_seen()
    available = e.best("cuda_available")
    return (cuda is not None and cuda.value is not None and cuda.how not in ("conda plan", "download")) \
        or (available is not None and available.value is True)


def cpu_asked(e: Evidence) -> Seen[Any] | None:
    """The line that asks for the CPU build (conda's ``cpuonly``, PyTorch's ``cpu`` index), or None."""
    for ev in e.installer:
        if ev.value.action == "asked" and ev.value.name in _CPU_SPECS:
            return ev
        if ev.value.action == "index" and _CPU_INDEX_RE.search(ev.value.detail or ""):
            return ev
    return None


def cuda_wanted(e: Evidence, beside: Seen[Any] | None = None) -> Seen[Any] | None:
    """The line that shows CUDA was wanted: an NVIDIA GPU or driver, a CUDA spec or package (``pytorch-cuda``,
    ``cudatoolkit``) or index asked for, a torch built for CUDA on another line than ``beside`` (another
    environment's), CUDA said to be unavailable, a CUDA version the user names; None where none does."""
    for ev in e.installer:
        if ev.value.action == "asked" and ev.value.name in _CUDA_SPECS:
            return ev
        if ev.value.action == "index" and _CUDA_INDEX_RE.search(ev.value.detail or ""):
            return ev
    shown: list[Seen[Any]] = [d for d in e.dists if d.value.name in _CUDA_SPECS]
    shown += [c for c in e.torch_cuda if c.value is not None and (beside is None or c.line != beside.line)]
    shown += [s for s in e.signals if s.value.code in _UNAVAILABLE]
    shown += [*e.gpus[:1], *e.driver[:1], *e.cuda[:1]]
    return min(shown, key=lambda s: s.line, default=None)


@predicate("conda-cpu-pytorch-where-cuda-asked", ("torch", "torch_cuda"), ("torch",))
def _conda_cpu_pytorch(f: Facts) -> Iterator[Hit]:
    """conda's plan or list giving pytorch's CPU build (its build string ``py3.8_cpu_0``, ``cpu_*``) where the paste
    shows CUDA was wanted (``pytorch-cuda`` or ``cudatoolkit`` asked for or beside it, a GPU, a CUDA build of pytorch
    in another environment); not where ``cpuonly`` was asked for."""
    e = f.log
    if e is None or cpu_asked(e) is not None:
        return
    for cpu in e.torch_cuda:
        if cpu.value is not None or cpu.how not in ("conda list", "conda plan"):
            continue
        wanted = cuda_wanted(e, cpu)
        if wanted is None:
            return
        torch = next((d for d in e.dists if d.line == cpu.line and d.value.name == "torch"), None)
        label = f"{torch.value.version} ({torch.value.build})" if torch is not None else "(a cpu build)"
        yield Hit(evidence=tuple(dict.fromkeys((pasted_line(cpu), pasted_line(wanted)))), fill={"torch": label})
        return


def _pypi_windows_wheel(seen: Seen[Any]) -> Version | None:
    """The version of a torch wheel for Windows pip took from PyPI: pip names a file from PyPI's file host by its
    name alone (another index's by its URL), and the wheel has no local tag (``+cu118``); None otherwise."""
    file = next((w for w in seen.text.split() if w.endswith(".whl")), None)
    if file is None or "/" in file:
        return None
    try:
        name, version, _, tags = parse_wheel_filename(file)
    except InvalidWheelFilename:
        return None
    if name != "torch" or version.local or not any(t.platform.startswith("win") for t in tags):
        return None
    return version


@predicate("pypi-windows-torch-wheel", ("torch", "system"), ("torch",))
def _pypi_windows_torch(f: Facts) -> Iterator[Hit]:
    """pip taking torch's Windows wheel from PyPI (every one of them a CPU build: PyTorch's CUDA builds for Windows are
    only on its own index) where the paste shows CUDA was wanted; not where the CPU index was asked for."""
    e = f.log
    if e is None or cpu_asked(e) is not None or cuda_shown(e):
        return
    for seen in e.dists:
        version = _pypi_windows_wheel(seen) if seen.how == "download" and seen.value.name == "torch" else None
        wanted = cuda_wanted(e) if version is not None else None
        if version is not None and wanted is not None:
            yield Hit(evidence=tuple(dict.fromkeys((pasted_line(seen), pasted_line(wanted)))),
                      fill={"torch": str(version)})
            return


@predicate("onnxruntime-providers-without-cuda", ("gpus",))
def _onnxruntime_cpu_providers(f: Facts) -> Iterator[Hit]:
    """ONNX Runtime's available providers listed without CUDAExecutionProvider (only the CPU's and Azure's) where
    the paste shows an NVIDIA GPU, ``onnxruntime-gpu``, or torch seeing CUDA: the CPU package is the one loaded."""
    e = f.log
    listed = next((s for s in e.signals if s.value.code == "onnxruntime-cpu-providers"
                   and not _SESSION_RE.search(s.text)), None) if e else None
    if e is None or listed is None or any(s.value.code == "onnxruntime-cuda-providers" for s in e.signals):
        return  # (a list with CUDA's: the GPU package, whose session fell back to the CPU)
    gpu = e.dist("onnxruntime-gpu") or next(iter(e.gpus), None) \
        or next((a for a in e.cuda_available if a.value is True), None)
    if gpu is not None:
        yield Hit(evidence=tuple(dict.fromkeys((pasted_line(listed), pasted_line(gpu)))))


def _aarch64_pypi_cpu(f: Facts, version: str) -> bool | None:
    """Whether PyPI's linux-aarch64 wheel of this torch release is its CPU build (torch.yaml's ``pypi_default``);
    None where the matrix does not know the release."""
    have = public_version(version)
    release = f.matrix.torch_release(have) if have is not None else None
    if release is None:
        return None
    return any(v.cuda is None and "linux-aarch64" in v.pypi_default for v in release.variants)


def _pypi_aarch64_torch(e: Evidence) -> Seen[Any] | None:
    """The torch the paste shows from the default index on aarch64: a wheel pip named by its file name alone (PyPI's)
    with an aarch64 tag, else a torch listed or installed without a local tag (PyTorch's own index tags its aarch64
    builds: ``+cu128``, ``+cpu``)."""
    for seen in e.dists:
        if seen.value.name != "torch" or not seen.value.version or "+" in seen.value.version:
            continue
        file = next((w for w in seen.text.split() if w.endswith(".whl")), None)
        if seen.how == "download" and (file is None or "/" in file or "aarch64" not in file):
            continue
        if seen.how != "prose":
            return seen
    return None


@predicate("pypi-aarch64-torch-cpu-release", ("torch", "machine"), ("torch",))
def _pypi_aarch64_cpu(f: Facts) -> Iterator[Hit]:
    """On a 64-bit ARM Linux machine (not a Jetson), torch from the default index of a release whose PyPI aarch64
    wheel is its CPU build (torch.yaml: every release before 2.11), or, where the paste shows no version, the user's
    words that the install gave the CPU build; where the paste shows CUDA was wanted, and the CPU index not asked."""
    e = f.log
    machine = next((m for m in e.machine if m.value == "aarch64"), None) if e is not None else None
    if e is None or machine is None or e.jetson or e.l4t or cpu_asked(e) is not None or cuda_shown(e) \
            or e.value("system") in ("darwin", "windows"):
        return
    torch = _pypi_aarch64_torch(e)
    wanted = cuda_wanted(e)
    if wanted is None:
        return
    if torch is not None and torch.value.version is not None:
        if _aarch64_pypi_cpu(f, torch.value.version):
            yield Hit(evidence=tuple(dict.fromkeys((pasted_line(torch), pasted_line(machine), pasted_line(wanted)))),
                      fill={"torch": torch.value.version})
        return
    said = next((s for s in e.signals if s.value.code == "cpu-build-said"), None)
    if said is not None and e.dist("torch") is None:
        yield Hit(evidence=tuple(dict.fromkeys((pasted_line(said), pasted_line(machine), pasted_line(wanted)))),
                  fill={"torch": "(its version not shown)"})


#: signals that say only that torch does not use a GPU (what a CPU-only build makes happen, whatever else is shown)
_GPU_UNUSED_SIGNALS = frozenset({"cuda-not-available", "no-cuda-gpus"})


def _cpu_torch(e: Evidence) -> Hit | None:
    """The pasted torch built without CUDA (``+cpu``, "CUDA used to build PyTorch: None/Could not collect" beside its
    version, conda's ``cpu`` build), not asked for (conda's cpuonly, PyTorch's cpu index), not on macOS, not a
    ROCm/XPU build; where neither the paste nor a report shows a GPU accelerator of another kind."""
    if e.gpus or e.best("accelerator") is not None or cpu_asked(e) is not None:
        return None
    cuda, torch = e.torch_cuda_seen(), e.dist("torch")
    system = e.best("system")
    version = torch.value.version or "" if torch is not None else ""
    if cuda is None or cuda.value is not None or torch is None or (system is not None and system.value == "darwin") \
            or any(tag in version.lower() for tag in ("+rocm", "+xpu")):
        return None
    return Hit(evidence=tuple(dict.fromkeys((pasted_line(torch), pasted_line(cuda)))), fill={"torch": version})


@predicate("torch-cpu-build-gpu-not-shown", ("torch_cuda", "torch", "gpus"), ("torch",))
def _cpu_torch_gpu_not_shown(f: Facts) -> Iterator[Hit]:
    """A pasted report's torch built without CUDA where neither the paste nor the machine shows a GPU: a fact the
    paste shows, said as a warning, for a report that shows no failure (a failure is judged by what it shows:
    :func:`_cpu_torch_gpu_unused`)."""
    e = f.log
    if e is None or f.host.gpus:
        return
    hit = _cpu_torch(e)
    if hit is not None:
        yield hit


@predicate("torch-cpu-build-gpu-unused", ("torch_cuda", "torch", "gpus"), ("torch",))
def _cpu_torch_gpu_unused(f: Facts) -> Iterator[Hit]:
    """A torch built without CUDA where every failure the paste shows is that no GPU is used ("CUDA is not
    available", "device_count(): 0", "No CUDA GPUs are available", a library's "no GPU found"): the build is the
    whole cause of that failure, whether or not the paste shows the machine's GPU."""
    e = f.log
    if e is None or f.host.gpus:
        return
    hit = _cpu_torch(e)
    if hit is None:
        return
    # (the line that shows the CPU build is no failure of its own, whatever level a logger gave it)
    shown = {s.line for s in (e.dist("torch"), e.torch_cuda_seen()) if s is not None}
    failures = [s for s in e.failures if s.line not in shown]
    signals = [s for s in e.signals if s.value.code not in CONTEXT_SIGNALS]
    unused: list[Seen[Any]] = [*(s for s in failures if s.value == "gpu-unused"),
                               *(s for s in signals if s.value.code in _GPU_UNUSED_SIGNALS)]
    if unused and len(unused) == len(failures) + len(signals):
        yield Hit(evidence=(*hit.evidence, pasted_line(unused[0])), fill=hit.fill)


@predicate("library-report-without-cuda", ("gpus",), ("library",))
def _library_report_without_cuda(f: Facts) -> Iterator[Hit]:
    """A compiled package's own report of its build without CUDA (detectron2's and MMCV's "CUDA Compiler: not
    available", k2's "With CUDA: False", a torch extension's "Building with CUDA: False"), where the paste shows CUDA
    was wanted (a GPU, a driver, a CUDA torch, a CUDA asked for), not on macOS: that package cannot use the GPU, and
    its CUDA ops fail or fall back to the CPU."""
    e = f.log
    if e is None or e.value("system") == "darwin":
        return
    report = next((s for s in e.signals if s.value.code == "report-without-cuda"), None)
    wanted = cuda_wanted(e) if report is not None else None
    if report is None or wanted is None:
        return
    yield Hit(evidence=tuple(dict.fromkeys((pasted_line(report), pasted_line(wanted)))),
              fill={"library": str(report.value.detail)})
