"""TensorFlow on native Windows: no GPU build from 2.11 on.

TensorFlow's release notes (2.11 on) and install guide: "TensorFlow 2.10 was the last TensorFlow release that
supported GPU on native-Windows"; from 2.11 the Windows package runs on the CPU only (GPU use needs WSL2). So
TensorFlow saying it sees no GPU (the signal ``tensorflow-windows-cpu-build``) names that cause only where the
paste shows TensorFlow 2.11 or later and native Windows (not WSL); elsewhere the signal is not kept (the paste
does not show why TensorFlow sees no GPU).

Input::

    OS Platform and Distribution: Windows 10
    Tensor Flow Version: 2.12.0
    GPU is NOT AVAILABLE                                  tensorflow-windows-cpu-build
"""

from __future__ import annotations

from msgspec.structs import replace
from packaging.version import InvalidVersion, Version

from .model import Evidence

__all__ = ["CODE", "FIRST_CPU_ONLY", "retype_tensorflow"]

CODE = "tensorflow-windows-cpu-build"
#: the first TensorFlow release without a GPU build for native Windows
FIRST_CPU_ONLY = Version("2.11")


def _cpu_only_release(e: Evidence) -> bool:
    tf = e.dist("tensorflow")
    try:
        return tf is not None and Version((tf.value.version or "").partition("+")[0]) >= FIRST_CPU_ONLY
    except InvalidVersion:
        return False


def _native_windows(e: Evidence) -> bool:
    if any(w.value for w in e.wsl) or any(s.value != "windows" for s in e.system):
        return False
    return any(s.value == "windows" for s in e.system) or any(o.value.lower().startswith("windows") for o in e.os)


def retype_tensorflow(e: Evidence) -> Evidence:
    """``e`` without the TensorFlow signal unless the paste shows TensorFlow 2.11+ on native Windows."""
    if not any(s.value.code == CODE for s in e.signals) or (_cpu_only_release(e) and _native_windows(e)):
        return e
    return replace(e, signals=tuple(s for s in e.signals if s.value.code != CODE))
