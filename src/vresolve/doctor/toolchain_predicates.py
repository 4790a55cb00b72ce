"""doctor's predicates over what a paste shows of the toolchain and the builds: PTX and kernel images set against the
toolkit or driver that takes them (cuda.yaml's ``ptx_isa``), and builds without CUDA (a CUDA companion beside a CPU
torch, JAX's CPU jaxlib). Cut from :mod:`.paste_predicates` by job; :mod:`.predicates` imports it, so its predicates
register with the rest."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from ..matrix import Matrix
from ..values import DriverVersion, public_version

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, Missing, predicate

# ------------------------------------------------------------------------------------------------------------
# PTX and kernel images set against the toolkit or driver that takes them (cuda.yaml's ptx_isa)
# ------------------------------------------------------------------------------------------------------------

def _isa_toolkits(matrix: Matrix, isa: Version, exact: bool) -> list[Version]:
    """The CUDA toolkits whose PTX ISA (cuda.yaml's ``ptx_isa``) is ``isa`` (``exact``), else the first one whose ptxas
    takes it (its ISA at least ``isa``); empty where the table has none."""
    known = sorted((t.version, t.ptx_isa) for t in matrix.toolkits if t.ptx_isa is not None)
    if exact:
        return [v for v, i in known if i == isa]
    return [v for v, i in known if i >= isa][:1]


#: what torch's extension builder (torch/utils/cpp_extension.py, ``_check_cuda_version``) does with each mismatch
MAJOR_MISMATCH = ("torch's extension builder refuses it (\"The detected CUDA version ({nvcc}) mismatches the version "
                  "that was used to compile PyTorch ({torch_cuda})\"), and kernels built for another CUDA major do "
                  "not load beside this torch")
MINOR_MISMATCH = ("torch's extension builder only warns of a minor version mismatch (\"Most likely this shouldn't be "
                  "a problem\"); a build can still fail where the headers of CUDA {nvcc} and {torch_cuda} differ")


def _isa_said(matrix: Matrix, given: Version, own: Version) -> str:
    """The two PTX ISAs of a ptxas refusal read against cuda.yaml: which toolkit's ptxas takes the PTX given, and
    which toolkit's this ptxas is."""
    takes, mine = _isa_toolkits(matrix, given, False), _isa_toolkits(matrix, own, True)
    first = (f"PTX ISA {given} needs the ptxas of CUDA {takes[0]} or later" if takes
             else f"PTX ISA {given} is newer than every toolkit in cuda.yaml")
    this = f" (CUDA {' or '.join(str(v) for v in mine)})" if mine else ""
    return f"{first}; this ptxas takes PTX ISA {own} at most{this} (cuda.yaml ptx_isa)"


@predicate("ptxas-older-than-ptx", ("nvcc",))
def _ptxas_older_than_ptx(f: Facts) -> Iterator[Hit]:
    """ptxas refusing PTX of a newer ISA than its own: the PTX came from a newer compiler (Triton's, a newer nvcc)
    than the CUDA toolkit whose ptxas assembles it; the ISAs read against cuda.yaml's ``ptx_isa``."""
    for s in f.log.signals if f.log is not None else ():
        m = re.fullmatch(r"(\d+\.\d+); current version is '(\d+\.\d+)", s.value.detail or "") \
            if s.value.code == "ptxas-older-than-ptx" else None
        if m is None or Version(m[1]) <= Version(m[2]):
            continue
        given, own = Version(m[1]), Version(m[2])
        yield Hit(evidence=(pasted_line(s), _isa_said(f.matrix, given, own)), seen=(s,))
        return


def _served_by(f: Facts, driver: DriverVersion) -> Version | None:
    """The newest CUDA toolkit whose own Linux floor ``driver`` meets (cuda.yaml)."""
    return max((t.version for t in f.matrix.toolkits if t.min_driver.linux is not None and t.min_driver.linux <= driver),
               default=None)


def _driver_cuda(f: Facts, e: Evidence) -> tuple[Version, str] | None:
    """The newest CUDA the driver serves, and the line that says so: the paste's nvidia-smi "CUDA Version", else its
    driver read against cuda.yaml; else the machine doctor probed (``doctor --log`` on it)."""
    served = e.best("cuda_driver")
    cuda = public_version(str(served.value)) if served is not None else None
    if served is not None and cuda is not None:
        return cuda, pasted_line(served)
    driver = e.best("driver")
    cuda = _served_by(f, driver.value) if driver is not None else None
    if driver is not None:
        return (cuda, pasted_line(driver)) if cuda is not None else None
    live = f.host.driver
    cuda = live.cuda or (_served_by(f, live.version) if live.version is not None else None)
    return (cuda, f"this machine's driver {live.version} (CUDA {cuda})") if cuda is not None else None


@predicate("triton-image-newer-than-driver", ("driver", "cuda_driver"))
def _triton_image_newer_than_driver(f: Facts) -> Iterator[Hit]:
    """Triton's kernel refused by the driver (CUDA_ERROR_INVALID_IMAGE) where the driver serves CUDA 11 or older:
    Triton assembles its kernels with the ptxas it bundles, of CUDA 12 in every release that runs on today's
    torch, whose cubins a driver of an older CUDA major does not load; ``missing`` when the driver is not shown."""
    e = f.log
    refused = next((s for s in e.signals if s.value.code == "invalid-image" and "triton" in s.text.lower()), None) \
        if e is not None else None
    if e is None or refused is None:
        return
    served = _driver_cuda(f, e)
    if served is None:
        yield Hit(evidence=(pasted_line(refused),), missing=Missing(
            error=refused.text.strip(), missing="the driver's version and the CUDA it serves, and Triton's version",
            paste="the output of `nvidia-smi` and of `pip list | grep -i -E \"triton|torch\"`"))
        return
    cuda, line = served
    if cuda.major < 12:
        isa = next((t.ptx_isa for t in f.matrix.toolkits if (t.version.major, t.version.minor)
                    == (cuda.major, cuda.minor) and t.ptx_isa is not None), None)
        yield Hit(evidence=(pasted_line(refused), line,
                            f"the driver serves CUDA {cuda.major}.{cuda.minor}" + (f" (PTX ISA {isa} at most, cuda.yaml)"
                                                                                  if isa is not None else "")
                            + ": it loads no kernel of a CUDA 12 ptxas"), seen=(refused,))


def _cuda_local(version: str | None) -> bool:
    return (version or "").partition("+")[2].lower().startswith("cu")


def cuda_companion_beside_cpu_torch(e: Evidence) -> list[Seen[Any]]:
    """The lines that show a companion built for a CUDA torch (xFormers' "built for: PyTorch 2.1.0+cu121", a missing
    ``libc10_cuda.so`` / ``libtorch_cuda.so``) where the paste's torch is a CPU build: the CPU torch is the cause."""
    cpu = e.torch_cuda_seen()
    if cpu is None or cpu.value is not None:
        return []
    built: list[Seen[Any]] = [bf for bf in e.built_for if _cuda_local(bf.value.torch)]
    built += [lib for lib in e.libraries if lib.value.missing and lib.value.name.startswith(("torch_cuda", "c10_cuda"))]
    return [*built[:2], cpu] if built else []


@predicate("companion-cuda-build-beside-cpu-torch", ("torch", "torch_cuda", "xformers"))
def _companion_cuda_beside_cpu_torch(f: Facts) -> Iterator[Hit]:
    """A companion (xFormers, flash-attn, torchvision...) built for a CUDA torch beside a CPU-only torch."""
    seen = cuda_companion_beside_cpu_torch(f.log) if f.log is not None else []
    if seen:
        yield Hit(evidence=tuple(dict.fromkeys(pasted_line(s) for s in seen)), seen=tuple(seen))


#: JAX's CUDA packages: their presence means a CUDA build was installed (a failure of it is not a CPU-only jaxlib)
_JAX_CUDA_DISTS = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jax-cuda11-plugin",
                   "jax-cuda11-pjrt")


@predicate("jaxlib-without-cuda", ("jax", "jaxlib"))
def _jaxlib_without_cuda(f: Facts) -> Iterator[Hit]:
    """JAX saying its jaxlib has no CUDA backend while it sees an NVIDIA GPU, where nothing shows its CUDA plugin
    installed (a plugin that fails to initialize makes JAX say the same words)."""
    e = f.log
    said = next((s for s in e.signals if s.value.code == "jaxlib-without-cuda"), None) if e is not None else None
    if e is None or said is None or "jax-cuda-plugin-failed" in e.signal_codes():
        return
    jaxlib = e.dist("jaxlib")
    if any(e.dist(name) is not None for name in _JAX_CUDA_DISTS) or \
            (jaxlib is not None and "cuda" in ((jaxlib.value.version or "").partition("+")[2] + " "
                                               + (jaxlib.value.build or "")).lower()):
        return
    yield Hit(evidence=(pasted_line(said), *((pasted_line(jaxlib),) if jaxlib is not None else ())), seen=(said,))




# ------------------------------------------------------------------------------------------------------------
# the local toolkit's CUDA beside torch's build CUDA, as a builder says them (torch's extension builder, DeepSpeed's)
# ------------------------------------------------------------------------------------------------------------

@predicate("toolkit-said-beside-torch-cuda", ("nvcc", "torch_cuda"), ("nvcc", "torch_cuda", "cuda", "effect"))
def _toolkit_said_beside_torch_cuda(f: Facts) -> Iterator[Hit]:
    """A builder's own line that puts the CUDA toolkit it found (CUDA_HOME's nvcc) beside the CUDA torch was built
    with: torch's extension builder (its refusal, its warning of a minor mismatch), DeepSpeed's op builder (its
    refusal, its acceptance of a minor mismatch or of ``DS_SKIP_CUDA_CHECK=1``). Another major: the toolkit cannot
    build for this torch; another minor: said one step softer (the builders accept it). A refusal is the error its
    own line shows (the ``toolkit-mismatch`` signal); this says the versions."""
    for s in f.log.signals if f.log is not None else ():
        said = re.findall(r"\d+\.\d+", s.value.detail or "") if s.value.code == "toolkit-beside-torch-cuda" else []
        if len(said) != 2:
            continue
        toolkit, torch = Version(said[0]), Version(said[1])
        if (toolkit.major, toolkit.minor) == (torch.major, torch.minor):
            continue
        minor = toolkit.major == torch.major
        effect = (MINOR_MISMATCH if minor else MAJOR_MISMATCH).format(nvcc=said[0], torch_cuda=said[1])
        yield Hit(evidence=(pasted_line(s),), seen=(s,), softer=minor,
                  fill={"nvcc": said[0], "torch_cuda": said[1], "cuda": said[1], "effect": effect})
        return


@predicate("nvcc-newer-than-driver", ("nvcc", "driver", "cuda_driver"), ("nvcc", "cuda"))
def _nvcc_newer_than_driver(f: Facts) -> Iterator[Hit]:
    """The toolkit the paste shows (nvcc's release) newer than the CUDA its driver serves, in one major from CUDA 11
    on: minor-version compatibility runs its cubins, but the driver's JIT takes no PTX of a newer toolkit than its
    own (extensions built for no SASS of the GPU, or PTX only, fail with "the provided PTX was compiled with an
    unsupported toolchain"). Another major is the driver's floor, not this. Said as a warning (a build with SASS for
    the GPU runs), as an info where the paste shows no failure."""
    e = f.log
    nvcc = next(iter(e.nvcc), None) if e is not None else None
    served = _driver_cuda(f, e) if e is not None and nvcc is not None and (e.driver or e.cuda_driver) else None
    if e is None or nvcc is None or served is None:
        return
    cuda, line = served
    try:
        built = Version(nvcc.value.release)
    except ValueError:
        return
    if built.major == cuda.major >= 11 and built.minor > cuda.minor:
        # (where the paste shows no failure, an info: nothing it shows was built for PTX only)
        yield Hit(evidence=(pasted_line(nvcc), line), softer=not e.failures,
                  fill={"nvcc": nvcc.value.release, "cuda": f"{cuda.major}.{cuda.minor}"})
