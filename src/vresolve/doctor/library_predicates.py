"""doctor's predicates over a CUDA library the loader did not find in a paste, and the CUDA its name asks for (a
library of another CUDA than the paste shows installed: a package built for that CUDA). Cut from
:mod:`.paste_predicates` by job; :mod:`.predicates` imports it, so its predicates register with the rest."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

from .evidence.model import Library
from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, predicate

# ------------------------------------------------------------------------------------------------------------
# a CUDA library the loader did not find, and the CUDA major its name asks for
# ------------------------------------------------------------------------------------------------------------

#: the CUDA libraries whose absence is a missing library, not another CUDA major's runtime (cudart, nvrtc):
#: cuDNN's and NCCL's, cuBLAS's family (``libcudnn_ops_infer.so.8`` is cuDNN's); ``libcuda`` is the driver's
MISSING_LIBRARIES = ("cudnn", "nccl", "cublas", "cusparse", "cufft", "curand", "cusolver", "cupti", "nvToolsExt",
                     "nvinfer", "nvonnxparser", "nvparsers", "cufile", "nvshmem")  # (TensorRT's: nvinfer...)
#: CUDA's own libraries whose soname carries the CUDA major (cuDNN's and NCCL's carry their own versions)
#: the CUDA runtime's own libraries (not in :data:`MISSING_LIBRARIES`: checks.py sets them against torch's CUDA)
_RUNTIME_LIBRARIES = ("cudart", "nvrtc", "nvJitLink")
_CUDA_MAJOR_LIBRARIES = ("cudart", "cublas", "cublasLt", "nvrtc", "cusparse", "cufft", "curand", "cusolver",
                         "nvJitLink")


#: a CUDA version as (major, minor), the minor None where not shown
CudaVersion = tuple[int, "int | None"]


def _cuda_version_of(name: str) -> CudaVersion | None:
    """The CUDA (major, minor) a pasted package, tag or version names: ``nvidia-cublas-cu12`` -> (12, None),
    ``12.1`` -> (12, 1)."""
    if m := re.fullmatch(r"nvidia-[\w-]+-cu(\d{2})", name):
        return int(m[1]), None
    m = re.fullmatch(r"(\d{1,2})\.(\d+)(?:\.\d+)*", name)
    return (int(m[1]), int(m[2])) if m else None


def _asked_cuda(lib: Library) -> CudaVersion | None:
    """The CUDA a CUDA library's soname asks for: its major from CUDA 11 on (``libcudart.so.11.0`` is every 11.x's:
    minor version compatibility), its major and minor before (``libcudart.so.10.0`` is 10.0's, not 10.1's;
    ``libcublas.so.10`` names no minor); None for a library whose soname carries its own version (cuDNN, NCCL)."""
    if lib.name not in _CUDA_MAJOR_LIBRARIES or not lib.version or not lib.version.split(".")[0].isdigit():
        return None
    major, _, rest = lib.version.partition(".")
    minor = rest.split(".")[0]
    return int(major), int(minor) if int(major) <= 10 and minor.isdigit() else None


def _other_cuda(asked: CudaVersion, shown: CudaVersion) -> bool:
    """Whether a CUDA shown is another than the one a soname asks for (minors compared where both have one)."""
    if asked[0] != shown[0]:
        return True
    return asked[1] is not None and shown[1] is not None and asked[1] != shown[1]


def other_cuda_versions(e: Evidence) -> list[tuple[CudaVersion, Seen[Any]]]:
    """The CUDA versions (major, minor where the line shows one) the paste shows for this environment, each with its
    line: torch's CUDA, pip's ``nvidia-*-cuNN`` packages, the toolkit (nvcc, collect_env's "CUDA runtime version"),
    a toolkit's directory. Not the driver's "CUDA Version" (the newest it serves, not what is installed)."""
    out: list[tuple[CudaVersion, Seen[Any]]] = []
    cuda = e.torch_cuda_seen()
    if cuda is not None and cuda.value is not None and (v := _cuda_version_of(cuda.value)) is not None:
        out.append((v, cuda))
    out += [(v, d) for d in e.dists if (v := _cuda_version_of(d.value.name)) is not None]
    out += [(v, n) for n in e.nvcc if (v := _cuda_version_of(n.value.release)) is not None]
    out += [(v, r) for r in e.cuda_runtime if (v := _cuda_version_of(r.value)) is not None]
    # a toolkit's directory, named after its version by NVIDIA's installers, on the loader's path or as CUDA_HOME
    # (/usr/local/cuda-12.0/lib64; Windows' "CUDA\v12.1")
    out += [((int(m[1] or m[2]), None), p) for p in e.ld_library_path for d in p.value
            if (m := _TOOLKIT_DIR_RE.search(d))]
    out += [((int(m[1] or m[2]), None), v) for v in e.env if v.value[0] in ("CUDA_HOME", "CUDA_PATH")
            and (m := _TOOLKIT_DIR_RE.search(v.value[1]))]
    return out


#: a CUDA toolkit's directory by its version: ``/usr/local/cuda-12.0``, ``NVIDIA GPU Computing Toolkit\CUDA\v12.1``
_TOOLKIT_DIR_RE = re.compile(r"[/\\]cuda-(\d{1,2})\.\d+(?![\w.])|[/\\]CUDA[/\\]v(\d{1,2})\.\d+", re.IGNORECASE)


def missing_cuda_libraries(e: Evidence) -> list[Seen[Any]]:
    """CUDA libraries (cuBLAS's family, cuDNN, NCCL...) the loader did not find (not the driver's libcuda)."""
    return [lib for lib in e.libraries if lib.value.missing and lib.value.name != "cuda"
            and lib.value.name.startswith(MISSING_LIBRARIES)]


def library_of_other_major(e: Evidence) -> tuple[Seen[Any], Seen[Any], str, str] | None:
    """A missing CUDA library whose soname asks for one CUDA (``libcublasLt.so.11``: 11; ``libcublas.so.9.0``: 9.0,
    before CUDA 11 sonames carry the minor) where the paste shows another and not that one: (its line, the other's
    line, the CUDA asked, the other)."""
    shown = other_cuda_versions(e)
    libs = missing_cuda_libraries(e)
    if not shown:  # else a CUDA the user states without saying which ("CUDA 12.0", "cuda: 12.2"), or the CUDA of the
        # wheel an extension came from (its index's cu111/torch1.9.0, its +cu118 tag): weaker, said softer; beside
        # such a wheel, a runtime's soname (libcudart.so.10.2) of another major says the binary's own CUDA is another
        wheels = [(version, b) for b in e.ext_builds if (version := _cuda_version_of(b.value[1])) is not None]
        shown = [(version, c) for c in e.cuda if (version := _cuda_version_of(c.value)) is not None] + wheels
        libs += [lib for lib in e.libraries if wheels and lib.value.missing and lib.value.name in _RUNTIME_LIBRARIES]
    # a runtime's soname from before CUDA 11 names its minor (libcudart.so.10.0): no other toolkit provides it
    libs += [lib for lib in e.libraries if lib.value.missing and lib.value.name in _RUNTIME_LIBRARIES
             and lib not in libs and (asked := _asked_cuda(lib.value)) is not None and asked[1] is not None]
    for lib in libs:
        asked = _asked_cuda(lib.value)
        if asked is None or not all(_other_cuda(asked, version) for version, _ in shown):
            continue
        other = next(iter(shown), None)
        if other is not None:
            return lib, other[1], _said(asked), _said(other[0])
    return None


def _said(version: CudaVersion) -> str:
    return f"{version[0]}.{version[1]}" if version[1] is not None else str(version[0])


@predicate("cuda-library-of-other-major", ("torch_cuda", "nvcc"), ("library", "asked", "other"))
def _cuda_library_of_other_major(f: Facts) -> Iterator[Hit]:
    """A CUDA library of one major (``libcublasLt.so.11``) asked for where the paste shows another CUDA major
    installed (torch's, pip's ``nvidia-*-cu12`` packages, the toolkit, a toolkit's directory on the loader's path or
    as CUDA_HOME): the package asking was built for the other CUDA. Where only the user's words state a CUDA ("CUDA
    12.0"), said one step softer."""
    found = library_of_other_major(f.log) if f.log is not None else None
    if found is not None:
        lib, other, asked, major = found
        stated = f.log is not None and any(other is c for c in (*f.log.cuda, *f.log.ext_builds))  # (no tool's report)
        yield Hit(evidence=(pasted_line(lib), pasted_line(other)), seen=(lib,), softer=stated,
                  fill={"library": lib.value.soname, "asked": asked, "other": major})


@predicate("cuda-library-not-found", ("ld_library_path",), ("library",))
def _cuda_library_not_found(f: Facts) -> Iterator[Hit]:
    """A CUDA library the loader did not find (by the name the paste shows), where nothing shows another major."""
    e = f.log
    if e is None or library_of_other_major(e) is not None:
        return
    libs = missing_cuda_libraries(e)
    if libs:
        yield Hit(evidence=tuple(dict.fromkeys(pasted_line(s) for s in libs[:3])), seen=tuple(libs[:3]),
                  fill={"library": libs[0].value.soname})


#: torch's own libraries, by the names an extension built against torch links: libtorch_cuda_cu.so (torch 1.8 to
#: 1.12's CUDA 11 builds split libtorch_cuda), libc10_cuda.so, torch_cuda.dll...
_TORCH_LIBRARY_RE = re.compile(r"^(?:lib)?(?:torch(?:_cuda(?:_cu|_cpp)?|_cpu|_python|_hip)?|c10(?:_cuda|_hip)?|shm)$")
#: packages whose own failure to find a torch library is another cause's: torch's own import (a broken torch), its
#: companions' (companion-mismatch)
_NOT_AN_EXTENSION = frozenset({"torch", "torchvision", "torchaudio"})


def missing_torch_libraries(e: Evidence) -> list[Seen[Any]]:
    """torch's own libraries the loader did not find while Python loaded a module linked against them: a third-party
    extension the paste shows (its wheel's build, its import), not while a program started ("error while loading
    shared libraries": a C++ program's path), nor in torch's own import or a companion's."""
    imported = {s.value for s in e.imported}
    extension = bool(e.ext_builds) or bool(imported - _NOT_AN_EXTENSION)  # (its wheel's build, or its import, shown)
    if not extension or imported & {"torchvision", "torchaudio"} or any(
            "error while loading shared libraries" in lib.text for lib in e.libraries):
        return []
    return [lib for lib in e.libraries if lib.value.missing and _TORCH_LIBRARY_RE.match(lib.value.name)]


@predicate("torch-library-not-found-by-extension", ("torch", "torch_cuda"), ("library", "built"))
def _torch_library_not_found_by_extension(f: Facts) -> Iterator[Hit]:
    """A library of torch's own (libtorch_cuda_cu.so, libc10_cuda.so) not found while Python loads an extension:
    torch imports its libraries first, so the extension asks for one the installed torch does not have; it was
    built against another torch build (the one its wheel index or tag names, where the paste shows it)."""
    e = f.log
    libs = missing_torch_libraries(e) if e is not None else []
    if e is None or not libs:
        return
    built = next(iter(e.ext_builds), None)
    said = ""
    if built is not None:
        torch, cuda = built.value
        said = " ".join(filter(None, (f"torch {torch}" if torch else "", "for CPU" if cuda == "cpu" else f"for CUDA {cuda}")))
    evidence = (pasted_line(libs[0]), *((pasted_line(built),) if built is not None else ()))
    yield Hit(evidence=evidence, seen=(libs[0],), fill={"library": libs[0].value.soname,
                                                         "built": said or "another torch build"})


@predicate("cuda-library-symbol-missing", (), ("symbol", "library"))
def _cuda_library_symbol_missing(f: Facts) -> Iterator[Hit]:
    """A CUDA library's own function (``cusparseSpSM_analysis``, ``version libcusparse.so.11``) undefined for a
    binary that was linked against it: the loader found another version of that library than the one the binary was
    built with (an older one first on the loader's path, or another CUDA's in a mixed environment)."""
    e = f.log
    found = next((s for s in e.symbols if s.value.owner == "cuda-library"), None) if e is not None else None
    if found is not None:
        name = found.value.mangled
        library = next((lib for lib in _CUDA_API_LIBRARIES if name.lower().startswith(lib.lower())), "CUDA library")
        yield Hit(evidence=(pasted_line(found),), seen=(found,), fill={"symbol": name, "library": library})


#: the libraries a CUDA API function's name starts with, the longest first (``cublasLt`` before ``cublas``)
_CUDA_API_LIBRARIES = ("cusparse", "cublasLt", "cublas", "cudnn", "nccl", "cufft", "curand", "cusolver", "cupti")

