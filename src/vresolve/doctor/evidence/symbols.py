"""Undefined symbols: demangled when the optional ``cxxfilt`` package is installed, and attributed to an owner.

Pure: no ``c++filt`` process is run. Without ``cxxfilt`` the mangled name is kept and its owner read off the
outermost name of the Itanium mangling (``_ZN3c10...`` is ``c10::...``).

- ``at::``, ``c10::``, ``torch::``, ``caffe2::`` and torch's C shim (``torch_dtype_...``, ``aoti_torch_...``):
  owner ``torch``, the library was built against another torch (its C++ ABI);
- ``__nvJitLinkComplete_12_4``: owner ``nvjitlink``, the libnvJitLink loaded is older than 12.4 (``needs``);
- anything else: ``unknown``.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from .model import Symbol

__all__ = ["attribute", "demangle", "outer_name"]

_TORCH = frozenset({"c10", "at", "torch", "caffe2"})
# _Z, then a special name (TV vtable, TI typeinfo, TS typeinfo name, TT VTT), then a nested name (N + CV and
# ref qualifiers) or a local one (L), then the first <source-name>: its length and characters
_OUTER_RE = re.compile(r"^_Z(?:T[VIST])?(?:N[rVKRO]*|L)?(\d+)")
_NVJITLINK_RE = re.compile(r"^__nvJitLink\w*?_(\d+)_(\d+)$")
_DEMANGLED_RE = re.compile(r"^(?:\w+\s+)*(\w+)::")


def _cxxfilt() -> ModuleType | None:
    try:
        return importlib.import_module("cxxfilt")
    except ImportError:
        return None


_CXXFILT = _cxxfilt()


def demangle(name: str) -> str | None:
    """``c10::cuda::SetDevice(int)`` for ``_ZN3c104cuda9SetDeviceEi`` when ``cxxfilt`` is installed, else None."""
    if _CXXFILT is None or not name.startswith("_Z"):
        return None
    try:
        text = str(_CXXFILT.demangle(name))
    except Exception:  # cxxfilt raises its own InvalidName, and may fail on names it does not know
        return None
    return text if text != name else None


def outer_name(mangled: str) -> str | None:
    """The outermost name of an Itanium-mangled symbol: ``_ZNK3c106SymInt6sym_neERKS0_`` -> ``c10``."""
    m = _OUTER_RE.match(mangled)
    if not m:
        return None
    return mangled[m.end():m.end() + int(m[1])] or None


#: a CUDA library's C API (cuSPARSE's ``cusparseSpSM_analysis``, cuBLAS's ``cublasLtMatmul``, cuDNN's, NCCL's, cuFFT's,
#: cuRAND's, cuSOLVER's, CUPTI's): its functions are named after the library
_CUDA_LIBRARY_RE = re.compile(r"(?:cusparse|cublas(?:Lt)?|cudnn|nccl|cufft|curand|cusolver(?:Dn|Sp)?|cupti)[A-Z_]")


def attribute(name: str, library: str | None = None) -> Symbol:
    """The symbol ``name`` (as the loader printed it), demangled where possible, with its owner."""
    demangled = demangle(name)
    m = _NVJITLINK_RE.match(name)
    if m:
        return Symbol(mangled=name, demangled=demangled, owner="nvjitlink", needs=f"{m[1]}.{m[2]}", library=library)
    outer = outer_name(name) if name.startswith("_Z") else None
    if outer is None:
        d = _DEMANGLED_RE.match(demangled or name)
        outer = d[1] if d else None
    torch = outer in _TORCH or name.startswith(("torch_", "aoti_torch_"))
    owner = "torch" if torch else "cuda-library" if _CUDA_LIBRARY_RE.match(name) else "unknown"
    return Symbol(mangled=name, demangled=demangled, owner=owner, library=library)
