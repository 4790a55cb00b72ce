"""What NVIDIA's tools print: ``nvidia-smi`` (banner, table, ``-L``, ``-q``, ``--query-gpu`` CSV), the NVML
messages, ``/proc/driver/nvidia/version`` and ``nvcc --version``. The banner, /proc and nvcc lines are parsed by
:mod:`vresolve.parsers`, the live probe's parsers too.

Input::

    | NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |
    |   0  NVIDIA A40          On   | 00000000:35:00.0 Off |                    0 |
    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6c3b...)        (also collect_env's GPU list)
    name, compute_cap, driver_version
    NVIDIA H200, 9.0, 580.159.04
    NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024
    Cuda compilation tools, release 12.4, V12.4.131
"""

from __future__ import annotations

import re

from ...parsers import parse_nvcc_version, parse_proc_driver_version, parse_smi_banner
from ...values import Capability, DriverVersion
from .collect import Collector
from .lines import Line
from .model import REPORT, Gpu, Nvcc
from .tokens import NOT_SHOWN, key_value, nvidia_of_windows_driver, version_token

__all__ = ["SmiReader"]

HOW = "nvidia-smi"

_SMI_VERSION_RE = re.compile(r"NVIDIA-SMI\s+(\d+\.\d+(?:\.\d+)?)")
_ROW_RE = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>\S.*?)\s+(?:On|Off|WDDM|TCC)\s*\|")
_LIST_RE = re.compile(r"^\s*GPU (?P<index>\d+): (?P<name>[A-Za-z].*?)(?:\s+\(UUID: [^)]*\)?)?\s*$")
_GPU_KEY_RE = re.compile(r"^\s*GPU models and configuration\s*:\s*")
_RELEASE_RE = re.compile(r"Cuda compilation tools, release (\d+\.\d+)")
_CC_RE = re.compile(r"^\d{1,2}\.\d$")
_DRIVER_RE = re.compile(r"^\d{3}\.\d{1,3}(?:\.\d{1,3})?$")
_WINDOWS_DRIVER_RE = re.compile(r"Driver Version:\s*(\d+\.\d+\.\d+\.\d+)(?![\d.])")
_GPU_NAME_RE = re.compile(r"^(?:NVIDIA|Tesla|Quadro|GeForce|TITAN|GRID|RTX)\b")
# --query-gpu field names (a header line names some of them; units in brackets are ignored)
_FIELDS = {"index": "index", "name": "name", "compute_cap": "cc", "driver_version": "driver", "gpu_name": "name"}


def _gpu(out: Collector, line: Line, name: str, index: int | None, how: str = HOW,
         cc: Capability | None = None) -> None:
    name = name.strip()
    out.add("gpus", Gpu(name=name, index=index, compute_capability=cc, truncated=name.endswith("...")),
            line, REPORT, how)


class SmiReader:
    """nvidia-smi's forms, NVML's messages, /proc's driver line, nvcc's version line."""

    def __init__(self) -> None:
        self._columns: tuple[str, ...] = ()  # the --query-gpu header's fields, while its rows follow

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if "Version" in body and self._banner(body, line, out):
            return True
        if body.startswith("|") and self._row(body, line, out):
            return True
        if "GPU " in body and self._list(body, line, out):
            return True
        if "," in body and self._csv(body, line, out):
            return True
        if "NVRM version" in body:
            return self._proc(body, line, out)
        if "compilation tools" in body:
            return self._nvcc(body, line, out)
        return ("NVML" in body or "Product Name" in body) and self._keyed(body, line, out)

    def _banner(self, body: str, line: Line, out: Collector) -> bool:
        if "Driver Version" not in body and "KMD Version" not in body:
            return self._cuda_after_driver(body, line, out)
        windows = _WINDOWS_DRIVER_RE.search(body)
        if windows:  # dxdiag's, Device Manager's: NVIDIA's 31.0.15.5222 is its 552.22; Intel's 31.0.101.4502 is not
            nvidia = nvidia_of_windows_driver(windows[1])  # NVIDIA's at all
            if nvidia is not None:
                out.add("driver", DriverVersion.parse(nvidia), line, REPORT, "windows driver version")
            return nvidia is not None
        driver, cuda = parse_smi_banner(body)
        if driver is not None:
            out.kinds.add("nvidia_smi")
            out.add("driver", driver, line, REPORT, HOW)
            out.mark("driver", line)
        if cuda is not None:
            out.add("cuda_driver", str(cuda), line, REPORT, HOW)
        m = _SMI_VERSION_RE.search(body)
        if m:
            out.add("nvidia_smi", m[1], line, REPORT, HOW)
        return driver is not None or cuda is not None

    @staticmethod
    def _cuda_after_driver(body: str, line: Line, out: Collector) -> bool:
        """``CUDA Version: 12.3`` on its own line right after a driver version (``nvidia-smi -q``, a retyped banner)."""
        kv = key_value(body)
        if kv is None or kv[0] != "cuda version" or not out.near("driver", line, 3):
            return False
        version = version_token(kv[1])
        if version:
            out.add("cuda_driver", version, line, REPORT, HOW)
        return version is not None

    @staticmethod
    def _row(body: str, line: Line, out: Collector) -> bool:
        m = _ROW_RE.match(body)
        if not m:
            return False
        out.kinds.add("nvidia_smi")
        _gpu(out, line, m["name"], int(m["index"]))
        return True

    @staticmethod
    def _list(body: str, line: Line, out: Collector) -> bool:
        m = _LIST_RE.match(_GPU_KEY_RE.sub("", body, count=1))
        if not m or m["name"].lower() in NOT_SHOWN:
            return False
        uuid = "(UUID:" in body
        if uuid:
            out.kinds.add("nvidia_smi")
        _gpu(out, line, m["name"], int(m["index"]), how=HOW if uuid else "collect_env")
        return True

    def _csv(self, body: str, line: Line, out: Collector) -> bool:
        cells = [c.strip() for c in body.split(",")]
        names = [c.split(" [")[0].strip().lower().replace(".", "_") for c in cells]
        if len(cells) >= 2 and all(n in _FIELDS for n in names):
            self._columns = tuple(_FIELDS[n] for n in names)
            out.kinds.add("nvidia_smi")
            return True
        row = dict(zip(self._columns, cells, strict=False)) if len(cells) == len(self._columns) else _shaped(cells)
        if not row.get("name") or not (row.get("cc") or row.get("driver")):
            return False
        out.kinds.add("nvidia_smi")
        self._csv_row(row, line, out)
        return True

    @staticmethod
    def _csv_row(row: dict[str, str], line: Line, out: Collector) -> None:
        cc = row.get("cc", "")
        index = row.get("index", "")
        _gpu(out, line, row["name"], int(index) if index.isdigit() else None, "nvidia-smi --query-gpu",
             Capability.parse(cc) if _CC_RE.match(cc) else None)
        driver = row.get("driver", "")
        if _DRIVER_RE.match(driver):
            out.add("driver", DriverVersion.parse(driver), line, REPORT, "nvidia-smi --query-gpu")

    @staticmethod
    def _proc(body: str, line: Line, out: Collector) -> bool:
        found = parse_proc_driver_version(body)
        if found is None:
            return False
        out.add("driver", found[0], line, REPORT, "/proc/driver/nvidia/version")
        out.mark("driver", line)
        return True

    @staticmethod
    def _nvcc(body: str, line: Line, out: Collector) -> bool:
        m = _RELEASE_RE.search(body)
        if not m:
            return False
        full = parse_nvcc_version(body)
        out.add("nvcc", Nvcc(release=m[1], version=str(full) if full else None), line, REPORT, "nvcc --version")
        return True

    @staticmethod
    def _keyed(body: str, line: Line, out: Collector) -> bool:
        kv = key_value(body)
        if kv is None:
            return False
        key, value = kv
        if key == "nvml library version" and version_token(value):
            out.kinds.add("nvidia_smi")
            out.add("nvml_library", version_token(value), line, REPORT, HOW)
            return True
        if key == "product name" and value:
            _gpu(out, line, value, None, "nvidia-smi -q")
            return True
        return False


def _shaped(cells: list[str]) -> dict[str, str]:
    """A header-less ``--query-gpu`` row, its fields told apart by their shape (name, capability, driver)."""
    row: dict[str, str] = {}
    for cell in cells:
        if _GPU_NAME_RE.match(cell):
            row.setdefault("name", cell)
        elif _CC_RE.match(cell):
            row.setdefault("cc", cell)
        elif _DRIVER_RE.match(cell):
            row.setdefault("driver", cell)
        elif cell.isdigit() and not row:
            row["index"] = cell
    return row
