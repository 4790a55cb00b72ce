"""Detection: the only layer that probes the machine. Everything it finds is a Host (pure data).

- :mod:`.probes`: overrides first (flags, ``VRESOLVE_*``), then NVML, /sys and /proc, libcuda,
  nvidia-smi with a timeout; the platform, toolkits, build tools, installed packages;
- :mod:`.environment`: an environment's stack imported in a subprocess (doctor's probe), and
  ``LD_LIBRARY_PATH`` shadows.

What the probes print is read by :mod:`vresolve.parsers` (pure; doctor reads pasted logs with the same parsers).
"""

from __future__ import annotations

from ..parsers import (
    NVML_MISMATCH,
    parse_device_tree_model,
    parse_l4t_core_version,
    parse_nv_tegra_release,
    parse_nvcc_version,
    parse_proc_driver_version,
    parse_proc_gpu_information,
    parse_smi_banner,
    parse_smi_query,
)
from .environment import library_shadows, probe_environment, probe_torch
from .probes import Overrides, detect_host, detect_interpreter, fill_capabilities

__all__ = ["Overrides", "detect_host", "fill_capabilities", "detect_interpreter", "probe_torch", "probe_environment", "library_shadows", "parse_proc_driver_version", "parse_proc_gpu_information", "parse_smi_banner", "parse_smi_query", "parse_nvcc_version", "NVML_MISMATCH",
           "parse_nv_tegra_release", "parse_l4t_core_version", "parse_device_tree_model"]
