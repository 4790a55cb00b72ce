"""Parsers of what the machine's tools print: nvidia-smi (banner and CSV query), /proc/driver/nvidia,
nvcc, L4T's release files. Pure: text in, values out; malformed text is a ValueError naming what was expected.
Of no layer: detection reads the live machine's output with them, doctor the same output pasted into a log, and
the fleet the names its nodes report (:func:`machine_text`).
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from .values import INVISIBLE, DriverVersion

NVML_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"

_INVISIBLE_RE = re.compile(f"[{INVISIBLE}]")  # what no GPU name, version or probe message holds

# The parsers below compile their patterns on first use (``re`` caches them): a plan for a named GPU reads none of
# these outputs, and compiling them all at import cost about half a millisecond of every run.

#: the longest name or message kept from the machine (NVIDIA's longest GPU names are under 60 characters)
MACHINE_TEXT_LIMIT = 256


def machine_text(text: str, limit: int = MACHINE_TEXT_LIMIT) -> str:
    """A string the machine printed (a GPU name, a probe's message), made one plain line: controls and
    invisible format characters become spaces, runs of spaces one, and at most ``limit`` characters.

    >>> machine_text("NVIDIA H100\\n$(touch x) #\\x1b[2J")
    'NVIDIA H100 $(touch x) # [2J'
    """
    line = " ".join(_INVISIBLE_RE.sub(" ", text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


_NVML_LIBRARY_RE = r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)"


def parse_nvml_library_version(text: str) -> str | None:
    """The user-space library's version nvidia-smi names after a mismatch, or None.

    >>> parse_nvml_library_version("Failed to initialize NVML: ...\\nNVML library version: 570.124")
    '570.124'
    """
    m = re.search(_NVML_LIBRARY_RE, text)
    return m[1] if m else None


SMI_FIELDS = ("index", "name", "uuid", "compute_cap", "driver_version", "memory.total", "pci.bus_id")


_PROC_VERSION_RE = (
    r"NVRM version: NVIDIA (?P<kind>UNIX(?: Open)? Kernel Module|.*?Kernel Module)[^\d]*?"
    r"(?:for \S+\s+)?(?P<version>\d+\.\d+(?:\.\d+)?)")


def parse_proc_driver_version(text: str) -> tuple[DriverVersion, str] | None:
    """``/proc/driver/nvidia/version`` -> (driver version, "open" | "proprietary").

    Input::

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
        GCC version:  gcc version 15.3.0 (GCC)

    or, for the proprietary module, ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu ...``.
    """
    m = re.search(_PROC_VERSION_RE, text)
    if not m:
        return None
    return DriverVersion.parse(m["version"]), "open" if "Open" in m["kind"] else "proprietary"


def parse_proc_gpu_information(text: str) -> dict[str, str]:
    """``/proc/driver/nvidia/gpus/<bus>/information`` -> its fields.

    Input::

        Model: 		 NVIDIA H200
        IRQ:   		 41
        GPU UUID: 	 GPU-283bb333-7717-fb40-df5e-3812f333d4f7
        Bus Location: 	 0000:00:06.0
        Device Minor: 	 0
    """
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


_BANNER_RE = {
    "driver": r"(?:Driver Version|KMD Version)\s*:\s*(\d+\.\d+(?:\.\d+)?)",
    "cuda": r"CUDA (?:UMD )?Version\s*:\s*(\d+\.\d+)",
}


def parse_smi_banner(text: str) -> tuple[DriverVersion | None, Version | None]:
    """The driver and CUDA versions in ``nvidia-smi``'s banner or ``nvidia-smi --version``.

    Input (drivers before R610)::

        | NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |

    R610 and newer print ``KMD Version: 610.43.02`` and ``CUDA UMD Version: 13.3`` instead.
    """
    d = re.search(_BANNER_RE["driver"], text, re.IGNORECASE)
    c = re.search(_BANNER_RE["cuda"], text, re.IGNORECASE)
    return (DriverVersion.parse(d[1]) if d else None), (Version(c[1]) if c else None)


def parse_smi_query(text: str, fields: tuple[str, ...] = SMI_FIELDS) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` -> one dict per GPU.

    Input::

        0, NVIDIA H200, GPU-283bb333-7717-fb40-df5e-3812f333d4f7, 9.0, 580.159.04, 143771, 00000000:00:06.0

    Raises ValueError on anything that is not such a table (a message, garbage).
    """
    import csv
    import io

    rows = []
    for rec in csv.reader(io.StringIO(text.strip()), skipinitialspace=True):
        if not rec:
            continue
        if len(rec) != len(fields):
            raise ValueError(f"expected {len(fields)} comma-separated fields, got {len(rec)}: {', '.join(rec)[:120]!r}")
        row = {k: v.strip() for k, v in zip(fields, rec, strict=True)}
        if not row["index"].isdigit():
            raise ValueError(f"not a GPU index: {row['index']!r}")
        rows.append(row)
    return rows


_NVCC_RE = r"release (\d+\.\d+), V(\d+\.\d+\.\d+)"


def parse_nvcc_version(text: str) -> Version | None:
    """``nvcc --version`` -> the toolkit version (``13.0.88``).

    Input::

        Cuda compilation tools, release 13.0, V13.0.88
    """
    m = re.search(_NVCC_RE, text)
    return Version(m[2]) if m else None


def version_or_none(text: str | None) -> Version | None:
    try:
        return Version(text.strip()) if text and text.strip() else None
    except InvalidVersion:
        return None


def driver_or_none(text: str | None) -> DriverVersion | None:
    try:
        return DriverVersion.parse(text) if text and text.strip() else None
    except ValueError:
        return None


_TEGRA_RELEASE_RE = r"^# R(\d{2,3}) \((?:release|Release)\), REVISION: (\d{1,3})\.(\d{1,3})\b"


def parse_nv_tegra_release(text: str) -> Version | None:
    """``/etc/nv_tegra_release`` -> the Jetson Linux (L4T) release (``36.4.3``); None when it is not that file.

    Input (its first line)::

        # R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025
    """
    m = re.search(_TEGRA_RELEASE_RE, text[:4096], re.MULTILINE)
    return Version(f"{int(m[1])}.{int(m[2])}.{int(m[3])}") if m else None


_L4T_CORE_RE = r"^(\d{2,3})\.(\d{1,3})(?:\.(\d{1,3}))?-\d{8,14}$"


def parse_l4t_core_version(text: str) -> Version | None:
    """``dpkg-query -W -f='${Version}' nvidia-l4t-core`` -> the L4T release; None when it is not such a version.

    Input::

        36.4.3-20250107174145
    """
    m = re.match(_L4T_CORE_RE, text.strip()[:64])
    return Version(f"{int(m[1])}.{int(m[2])}.{int(m[3] or 0)}") if m else None


def parse_device_tree_model(text: str) -> str | None:
    """``/proc/device-tree/model`` (NUL-terminated) -> the board's name, one plain line; None when empty.

    Input::

        NVIDIA Jetson AGX Orin Developer Kit\\x00
    """
    name = machine_text(text.replace("\x00", " "), 128)
    return name or None
