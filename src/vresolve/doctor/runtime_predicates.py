"""Predicates over what a resolver and a cluster's job say (issue 25, runtime2): pip's and uv's account of a conflict
between a companion's torch pin and the torch asked for, uv's "no wheels with a matching Python ABI tag", and a Slurm
job that shows no GPU request while its processes see no driver or GPU."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..matrix.pythons import wheel_pythons
from .evidence import REPORT, Evidence, Seen
from .facts import in_site_packages
from .paste_predicates import pasted_line
from .pip_versions import _platforms, _span, exact_pin
from .predicate_base import Facts, Hit, predicate

#: the packages built against one torch release, which pin it exactly (their wheels' METADATA)
_COMPANIONS = frozenset({"torchvision", "torchaudio", "xformers", "flash-attn", "flashinfer-python"})


def _spec(req: str, name: str) -> SpecifierSet | None:
    """The specifier of ``torch==2.0.1`` (``==2.0.1``), local versions left out (``==2.1.1+cu118`` is judged as the
    release 2.1.1: the build variant is another question); None where it is not one."""
    try:
        return SpecifierSet(re.sub(r"\+[\w.]+", "", req[len(name):].strip().split(";")[0]))
    except InvalidSpecifier:
        return None


def _disjoint(a: SpecifierSet, b: SpecifierSet) -> bool:
    """Whether no release can satisfy both, where one of them is an exact pin (the only case settled here)."""
    for pin, other in ((exact_pin(a), b), (exact_pin(b), a)):
        if pin is not None:
            return not other.contains(pin, prereleases=True)
    return False


def _conflicts(e: Evidence) -> Iterator[tuple[Seen[Any], Seen[Any], SpecifierSet, SpecifierSet]]:
    """(the companion's line, the request's line, the torch asked for, the companion's torch specifier) for each
    companion a resolver says depends on a torch that the request excludes."""
    asked = [(ev, spec) for ev in e.installer if ev.value.action == "requested" and ev.value.name == "torch"
             and (spec := _spec(ev.value.detail or "", "torch")) is not None and str(spec)]
    for ev in e.installer:
        x = ev.value
        detail = x.detail or ""
        if x.action != "depends" or x.name not in _COMPANIONS or not detail.startswith("torch") \
                or detail[5:6].isalnum() or detail[5:6] == "_":
            continue  # (torchvision, torch_geometric: another package whose name starts with "torch")
        wants = _spec(detail, "torch")
        for req, spec in asked:
            if wants is not None and str(wants) and _disjoint(wants, spec):
                yield ev, req, spec, wants


@predicate("resolver-companion-pins-other-torch", ("torch", "torchvision", "torchaudio", "xformers"),
           ("companion", "wants", "asked"))
def _resolver_companion_pins_other_torch(f: Facts) -> Iterator[Hit]:
    """pip's ResolutionImpossible ("The user requested torch==2.0.0" beside "xformers 0.0.20 depends on
    torch==2.0.1") or uv's "Because xformers==0.0.20 depends on torch==2.0.1 and you require torch==2.0.0": a
    companion release whose own requirement (its wheel's METADATA, as the resolver read it) excludes the torch asked
    for. Only an exact torch asked for, and a companion's requirement that excludes it, are judged."""
    e = f.log
    if e is None:
        return
    for dep, req, spec, wants in _conflicts(e):
        x = dep.value
        yield Hit(evidence=(pasted_line(req), pasted_line(dep)),
                  fill={"companion": f"{x.name} {x.version}", "wants": f"torch{wants}", "asked": f"torch{spec}"})
        return


def _python(e: Evidence) -> tuple[Seen[Any] | None, Version | None]:
    seen = e.best("python")
    try:
        return seen, Version(str(seen.value)) if seen is not None else None
    except InvalidVersion:
        return seen, None


@predicate("uv-no-wheel-for-python", ("python", "system"), ("package", "facts", "advice"))
def _uv_no_wheel_for_python(f: Facts) -> Iterator[Hit]:
    """uv's "Because PKG==V has no wheels with a matching Python ABI tag" (later uv: "Python version tag"): uv read the
    release's wheel files and none is tagged for this interpreter's CPython ABI (its version, or a free-threaded
    build's), and the release publishes no source to build from. Set against the Python the paste shows and the
    Pythons the matrix knows the release ships wheels for, where it knows them."""
    e = f.log
    if e is None:
        return
    refused = next((ev for ev in e.installer if ev.value.action == "no-wheel-for-python"), None)
    if refused is None:
        return
    x = refused.value
    name, release = x.name or "the package", x.version or ""
    python_seen, python = _python(e)
    plats, _ = _platforms(e)
    known = sorted({p for plat in plats if (w := wheel_pythons(f.matrix, name, release, plat)) is not None
                    for p in w[0]}) if release else []
    tag = f" ({x.detail})" if x.detail else ""
    facts = f"uv found no wheel of {name} {release} tagged for this interpreter's Python ABI{tag}."
    evidence = [pasted_line(refused)]
    if python_seen is not None and python is not None:
        evidence.append(pasted_line(python_seen))
        facts += f" This Python is {python}."
    if known:
        facts += f" {name} {release} ships wheels for Python {_span(known)} (the matrix)."
        if python is not None and Version(f"{python.major}.{python.minor}") in known:
            return  # the matrix's list holds this Python: a free-threaded or debug build, or another platform
    advice = (f"Use Python {_span(known)} for {name} {release}" if known else
              f"Use a Python {name} {release} publishes wheels for (its files on the index: the `cpXY` in each "
              "wheel's name)") + f", or ask for a release of {name} with wheels for this Python."
    yield Hit(evidence=tuple(evidence), fill={"package": name, "facts": facts, "advice": advice})


#: a process that sees no NVIDIA driver or no GPU (the codes of those signals)
_NO_GPU = ("no-driver", "nvidia-smi-missing", "no-cuda-gpus", "cuda-not-available")


@predicate("slurm-job-without-gpus", ("gpus", "env", "cuda_available"))
def _slurm_job_without_gpus(f: Facts) -> Iterator[Hit]:
    """A paste about a Slurm job (its commands, ``#SBATCH`` lines, its variables, the user's words) where a process
    sees no NVIDIA driver or GPU, and the paste shows no GPU request (``--gres=gpu``, ``--gpus*``, ``-G``), no GPU a
    tool's report lists and no ``CUDA_VISIBLE_DEVICES`` naming one: Slurm gives a job only the GPUs it asks for (with
    ``ConstrainDevices``, the others' device files are closed to it), and a node without GPUs has no driver at all.
    A GPU request shown leaves the failure to the other rows (the node's driver, the program)."""
    e = f.log
    if e is None:
        return
    codes = {s.value.code for s in e.signals}
    slurm = next((s for s in e.signals if s.value.code == "slurm-job"), None)
    failed = next((s for s in e.signals if s.value.code in _NO_GPU), None)
    if slurm is None or failed is None or "slurm-gpu-request" in codes:
        return
    if any(g.rank == REPORT for g in e.gpus):
        return  # a GPU listed by a tool where the job ran: the job has one
    cuda = e.torch_cuda_seen()
    if cuda is not None and cuda.value is None:
        return  # a CPU-only torch sees no GPU anywhere: its own cause
    if any(name == "CUDA_VISIBLE_DEVICES" and value.strip()[:1].isdigit() for name, value in (s.value for s in e.env)):
        return  # Slurm sets it to the GPUs it gave the job
    yield Hit(evidence=tuple(dict.fromkeys((pasted_line(failed), pasted_line(slurm)))))


@predicate("torch-source-tree-shadows", ("torch",), ("tree",))
def _torch_source_tree_shadows(f: Facts) -> Iterator[Hit]:
    """torch's compiled core not found ("No module named 'torch._C'", or torch's own "has loaded the `torch/_C`
    folder") where the traceback's ``torch/__init__.py`` lies outside any installed package tree: Python imported a
    PyTorch checkout (the directory it runs in, or PYTHONPATH), which holds no compiled extension unless built in place.
    The same message from a torch in site-packages is a broken install, not this; without the frame, not settled."""
    e = f.log
    if e is None:
        return
    failed = next((s for s in e.signals if s.value.code == "torch-c-unloadable"), None)
    frames = [s for s in e.signals if s.value.code == "torch-init-frame"]
    if failed is None or not frames:
        return
    if any(in_site_packages(str(s.value.detail or "")) for s in frames):
        return
    tree = str(frames[-1].value.detail or "").rstrip("/\\") or "the directory Python was started in"
    yield Hit(evidence=(pasted_line(frames[-1]), pasted_line(failed)), fill={"tree": tree})


@predicate("pod-gpu-without-driver-library", ("gpus", "ld_library_path", "container"))
def _pod_gpu_without_driver_library(f: Facts) -> Iterator[Hit]:
    """A Kubernetes pod given a GPU (``nvidia.com/gpu: 1`` shown) whose torch finds no NVIDIA driver ("Found no NVIDIA
    driver on your system": the driver's libcuda could not be loaded in the process): the GPU was allocated, and the
    driver's user-space libraries are not visible in the container (GKE mounts them at /usr/local/nvidia/lib64, which
    only NVIDIA's CUDA images put on the loader's path; elsewhere the NVIDIA runtime was not the pod's runtime)."""
    e = f.log
    if e is None:
        return
    asked = next((s for s in e.signals if s.value.code == "k8s-gpu-request"), None)
    failed = next((s for s in e.signals if s.value.code == "no-driver" and "found no nvidia driver" in s.text.lower()),
                  None)
    if asked is None or failed is None or any(g.rank == REPORT for g in e.gpus):
        return
    yield Hit(evidence=tuple(dict.fromkeys((pasted_line(failed), pasted_line(asked)))))


@predicate("gpu-not-found-toolkit-above-driver", ("nvcc", "cuda_driver"), ("nvcc", "served"))
def _gpu_not_found_toolkit_above_driver(f: Facts) -> Iterator[Hit]:
    """A program built here (its CUDA build command shown) that says it found no GPU ("no CUDA devices found, CUDA will
    be disabled", "no usable GPU found"), where the toolkit that built it (``nvcc --version``) is of a newer CUDA major
    than the driver serves (nvidia-smi's "CUDA Version"): its CUDA runtime does not initialise on that driver (error 35,
    which these programs report as no device). A statement of no device alone settles nothing (the families audit)."""
    e = f.log
    said = next((s for s in e.signals if s.value.code == "gpu-not-found-said"), None) if e is not None else None
    built = next((s for s in e.signals if s.value.code == "cuda-build-command"), None) if e is not None else None
    if e is None or said is None or built is None:
        return
    nvcc, served = e.best("nvcc"), e.best("cuda_driver")
    have = _version_of(nvcc.value.release) if nvcc is not None and nvcc.rank == REPORT else None
    serves = _version_of(str(served.value)) if served is not None and served.rank == REPORT else None
    if nvcc is not None and served is not None and have is not None and serves is not None \
            and have.major > serves.major:
        yield Hit(evidence=(pasted_line(said), pasted_line(built), pasted_line(nvcc), pasted_line(served)),
                  fill={"nvcc": f"{have.major}.{have.minor}", "served": f"{serves.major}.{serves.minor}"})


def _version_of(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
