"""Small pieces of text the readers share: versions as printed, "key: value" lines, CUDA from a local tag.

Pure functions; nothing here knows which report a line comes from.
"""

from __future__ import annotations

import re

from packaging.utils import canonicalize_name

__all__ = ["VERSION", "version_token", "key_value", "dist_name", "cuda_of_local", "cuda_of_number", "NOT_SHOWN",
           "first_version", "python_minor", "nvidia_of_windows_driver"]

#: a version as printed: 2.1.2+cu121, 0.10.2.dev378+g4d7fe40fc.d20250829, 2.2.0a0+81ea7a4, 2.7.2.post1
VERSION = r"\d+(?:\.\d+)*(?:(?:a|b|rc|\.?post|\.?dev)\d*)*(?:\+[A-Za-z0-9]+(?:[._][A-Za-z0-9]+)*)?"
_VERSION_RE = re.compile(rf"v?({VERSION})")
_FIRST_VERSION_RE = re.compile(rf"(?<![\w.])v?({VERSION})")

#: what reports print for a fact they could not learn
NOT_SHOWN = frozenset({"", "n/a", "na", "none", "could not collect", "could not collec", "no cuda", "not set",
                       "unknown", "not available", "-"})

# "Key: value", "Key   : value" (vLLM's boxed collect_env), "- Key: value", "* Key: value", "Key：value"
_KEY_RE = re.compile(r"^(?:[-*•]\s+)?(?P<key>[A-Za-z][\w .()/-]{0,48}?)$")
_MARKUP = str.maketrans("", "", "`*")


def version_token(text: str) -> str | None:
    """The version at the start of ``text`` (``"2.5.1+cu118 (git)"`` -> ``2.5.1+cu118``), or None."""
    m = _VERSION_RE.match(text.strip().translate(_MARKUP))
    return m[1].rstrip(".") if m else None


def first_version(text: str) -> str | None:
    """The first version anywhere in ``text``."""
    m = _FIRST_VERSION_RE.search(text)
    return m[1].rstrip(".") if m else None


def key_value(line: str) -> tuple[str, str] | None:
    """``"  CUDA used to build PyTorch   : 12.8"`` -> ``("cuda used to build pytorch", "12.8")`` (key lower-cased)."""
    if "：" in line:
        line = line.replace("：", ":", 1)
    key, colon, value = line.partition(":")
    if not colon or len(key) > 52:
        return None
    m = _KEY_RE.match(key.strip())
    if not m:
        return None
    return " ".join(m["key"].lower().split()), value.translate(_MARKUP).strip()


def dist_name(name: str) -> str:
    """A distribution's canonical name; conda's ``pytorch`` is torch."""
    canonical = canonicalize_name(name)
    return "torch" if canonical == "pytorch" else str(canonical)


_LOCAL_CUDA_RE = re.compile(r"^cu(?:da)?(\d{2,3})$")


def cuda_of_local(version: str) -> str | None:
    """The CUDA a torch build's local tag names: ``2.1.2+cu121`` -> ``12.1``, ``+cu92`` -> ``9.2``; else None."""
    _, plus, local = version.partition("+")
    m = _LOCAL_CUDA_RE.match(local.split(".")[0]) if plus else None
    if not m:
        return None
    digits = m[1]
    return f"{digits[:-1]}.{digits[-1]}"


def cuda_of_number(number: int) -> str:
    """The CUDA driver API version as torch prints it: ``11040`` -> ``11.4``, ``9000`` -> ``9.0``, ``12020`` -> ``12.2``."""
    return f"{number // 1000}.{number % 1000 // 10}"


def python_minor(version: str) -> str:
    """``3.10.15`` -> ``3.10``."""
    return ".".join(version.split(".")[:2])


_WINDOWS_DRIVER_RE = re.compile(r"^\d{2}\.\d\.(\d{2})\.(\d{4})$")


def nvidia_of_windows_driver(version: str) -> str | None:
    """NVIDIA's driver number in Windows' own form of it (the user-mode driver version Device Manager, WMI and DXGI
    show): the last five digits of its last two fields, ``31.0.15.5222`` -> ``552.22``; None for another form."""
    m = _WINDOWS_DRIVER_RE.match(version)
    if not m:
        return None
    digits = (m[1] + m[2])[-5:]
    return f"{digits[:3]}.{digits[3:]}"
