"""Other programs' reports of the GPUs and the CUDA they found, read as reports: the CUDA samples' ``deviceQuery``,
llama.cpp's (ggml's) CUDA start-up lines, Ultralytics' start-up banner and CuPy's ``cupy.show_config()``.

Input (as each program prints it; the sources are the programs' own printf/format strings)::

    Device 0: "Tesla K80"                                          deviceQuery (cuda-samples deviceQuery.cpp):
      CUDA Driver Version / Runtime Version          11.4 / 11.2    the driver's CUDA, the runtime's
      CUDA Capability Major/Minor version number:    3.7            (of the device named above)
    deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = 11.4, CUDA Runtime Version = 11.2, NumDevs = 1

    ggml_cuda_init: found 1 CUDA devices:                           ggml-cuda.cu (ggml_init_cublas: before 2024)
      Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes

    Ultralytics YOLOv8.0.20 🚀 Python-3.10.9 torch-2.0.0+cpu CPU            ultralytics' select_device
    Ultralytics 8.3.2 🚀 Python-3.11.9 torch-2.4.1+cu121 CUDA:0 (NVIDIA GeForce RTX 3070, 8192MiB)
    YOLOv5 🚀 v7.0-72-g064365d Python-3.10.6 torch-1.13.1+cu116 CUDA:0 (Tesla T4, 15110MiB)

    CuPy Version                 : 14.0.1                           cupyx/_runtime.py (cupy.show_config())
    CUDA Build Version           : 12090                            the CUDA CuPy was built with (12.9)
    CUDA Driver Version          : 12070                            the CUDA the driver serves (12.7)
    CUDA Runtime Version         : 12090 (linked to CuPy) / 12080 (locally installed)
    Device 0 Name                : NVIDIA GeForce RTX 3090
    Device 0 Compute Capability  : 86

    CUDA specs: CUDASpecs(highest_compute_capability=(8, 6), cuda_version_string='124', cuda_version_tuple=(12, 4))
    PyTorch settings found: CUDA_VERSION=124, Highest Compute Capability: (8, 6).        python -m bitsandbytes
    CUDA SETUP: Highest compute capability among GPUs detected: 7.5                      (bitsandbytes before 0.43)

A line that does not parse gives no fact. bitsandbytes' capability is the highest among the GPUs (a GPU of its own,
unnamed); where its CUDA version is not CUDA's (a ROCm build prints HIP's: "CUDA_VERSION=60", and a gfx number as
the capability) it is not read, nor is that version (torch's CUDA in some releases, the runtime's in others). ggml's device lines are read only under its "found N CUDA devices" line
(its ROCm build prints the same words with "ROCm", and an AMD GPU's gfx number is no compute capability); CuPy's
rows only after its "CuPy Version" row, and not from a ROCm build ("CuPy Platform : AMD ROCm"). Ultralytics'
"CPU" says which device was chosen, not that no GPU exists: it gives no fact of its own.
"""

from __future__ import annotations

import re

from ...values import Capability
from .collect import Collector
from .lines import Line
from .model import REPORT, Dist, ExtBuild, Gpu
from .tokens import cuda_of_number, key_value, version_token

__all__ = ["GpuReportsReader"]

_DQ_DEVICE_RE = re.compile(r'^\s*Device (?P<idx>\d{1,2}): "(?P<name>[^"]+)"\s*$')
_DQ_VERSIONS_RE = re.compile(r"^\s*CUDA Driver Version / Runtime Version\s+(?P<d>\d{1,2}\.\d{1,2}) / "
                             r"(?P<r>\d{1,2}\.\d{1,2})\s*$")
_DQ_CC_RE = re.compile(r"^\s*CUDA Capability Major/Minor version number:\s+(?P<cc>\d{1,2}\.\d)\s*$")
_DQ_SUMMARY_RE = re.compile(r"deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = (?P<d>\d{1,2}\.\d{1,2}), "
                            r"CUDA Runtime Version = (?P<r>\d{1,2}\.\d{1,2})")
_GGML_FOUND_RE = re.compile(r"\bggml_(?:cuda_init|init_cublas): found (?P<n>\d+) (?P<kind>CUDA|ROCm|MUSA) devices:")
_GGML_DEVICE_RE = re.compile(r"^\s*Device (?P<idx>\d{1,2}): (?P<name>[^,]+), compute capability (?P<cc>\d{1,2}\.\d)"
                             r"(?:,|\s*$)")
_ULTRA_RE = re.compile(r"\b(?:Ultralytics\b|YOLOv5\b)[^\n]*?\bPython-(?P<py>3\.\d{1,2}\.\d{1,2}) "
                       r"torch-(?P<torch>\S+)(?: (?P<device>CUDA:\d+ \((?P<name>[^,()]+), \d+MiB\)|CPU|MPS))?")
_ULTRA_MORE_RE = re.compile(r"^\s+CUDA:(?P<idx>\d+) \((?P<name>[^,()]+), \d+MiB\)\s*$")
_BNB_RE = re.compile(r"(?:\bhighest_compute_capability=\((?P<a>\d{1,2}), (?P<b>\d)\), cuda_version_string='(?P<v>\d+)'"
                     r"|\bCUDA_VERSION=(?P<v2>\d+), Highest Compute Capability: \((?P<a2>\d{1,2}), ?(?P<b2>\d)\)"
                     r"|^CUDA SETUP: Highest compute capability among GPUs detected: (?P<cc>\d{1,2}\.\d)\s*$)")
_CUPY_INT_RE = re.compile(r"^(?P<n>\d{4,5})(?:\s|$)")
_CUPY_DEVICE_RE = re.compile(r"^device (?P<idx>\d{1,2}) (?P<what>name|compute capability)$")


def _cupy_cuda(value: str) -> str | None:
    """CuPy's CUDA versions are the API's integers (``12090``: 12.9); anything else (an error's repr) is none."""
    m = _CUPY_INT_RE.match(value.strip())
    return cuda_of_number(int(m["n"])) if m and 9000 <= int(m["n"]) < 20000 else None


class GpuReportsReader:
    """The reports above (see the module's docstring)."""

    def __init__(self) -> None:
        self._dq_device: tuple[int, str] | None = None  # deviceQuery: the device whose block is being read
        self._ggml_left = 0  # ggml: device lines still expected under its "found N CUDA devices"
        self._cupy = False  # CuPy's show_config seen (its CUDA platform)
        self._cupy_names: dict[int, str] = {}
        self._ultra_at = -1

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if "Device " in body or "CUDA " in body or "deviceQuery" in body:
            if self._device_query(body, line, out):
                return True
        if "ggml_" in body or self._ggml_left:
            if self._ggml(body, line, out):
                return True
        if "torch-" in body or (self._ultra_at >= 0 and line.no - self._ultra_at <= 8 and "CUDA:" in body):
            if self._ultralytics(body, line, out):
                return True
        if "ighest" in body and (m := _BNB_RE.search(body)):
            return self._bitsandbytes(m, line, out)
        if "CuPy" in body or self._cupy:
            return self._cupy_row(body, line, out)
        return False

    def _device_query(self, body: str, line: Line, out: Collector) -> bool:
        how = "deviceQuery"
        body = body.strip().strip("*").rstrip()  # (pasted as Markdown bold: "**Device 0: "GeForce GTX 1050"**")
        if m := _DQ_DEVICE_RE.match(body):
            self._dq_device = (int(m["idx"]), m["name"].strip())
            return True
        if m := _DQ_VERSIONS_RE.match(body) or _DQ_SUMMARY_RE.search(body):
            out.kinds.add("device_query")
            out.add("cuda_driver", m["d"], line, REPORT, how)
            out.add("cuda_runtime", m["r"], line, REPORT, how)
            return True
        if (m := _DQ_CC_RE.match(body)) and self._dq_device is not None:
            idx, name = self._dq_device
            out.add("gpus", Gpu(name=name, index=idx, compute_capability=Capability.parse(m["cc"])), line, REPORT, how)
            self._dq_device = None
            return True
        return False

    def _ggml(self, body: str, line: Line, out: Collector) -> bool:
        if m := _GGML_FOUND_RE.search(body):
            if m["kind"] != "CUDA":  # its devices' "compute capability" is an AMD gfx (or MUSA) number: no fact
                out.mark("ggml-not-cuda", line)
            self._ggml_left = min(int(m["n"]), 64) if m["kind"] == "CUDA" else 0
            return True
        if not self._ggml_left:
            return False
        m = _GGML_DEVICE_RE.match(body)
        if m is None:
            self._ggml_left = 0  # the device list ended (or was cut): nothing further is read as one
            return False
        self._ggml_left -= 1
        out.add("gpus", Gpu(name=m["name"].strip(), index=int(m["idx"]), compute_capability=Capability.parse(m["cc"])),
                line, REPORT, "ggml")
        return True

    def _ultralytics(self, body: str, line: Line, out: Collector) -> bool:
        how = "ultralytics"
        if (m := _ULTRA_MORE_RE.match(body)) and self._ultra_at >= 0:
            out.add("gpus", Gpu(name=m["name"].strip(), index=int(m["idx"])), line, REPORT, how)
            out.add("cuda_available", True, line, REPORT, how)
            return True
        m = _ULTRA_RE.search(body)
        if m is None or not (torch := version_token(m["torch"])):
            return False
        self._ultra_at = line.no
        out.add_dist(Dist(name="torch", version=torch), line, REPORT, how)
        out.add("python", m["py"], line, REPORT, how)
        if m["name"]:  # torch saw this GPU (select_device prints it from torch.cuda.get_device_properties)
            out.add("gpus", Gpu(name=m["name"].strip(), index=int(m["device"][5:].split(" ")[0])), line, REPORT, how)
            out.add("cuda_available", True, line, REPORT, how)
        return True

    @staticmethod
    def _bitsandbytes(m: re.Match[str], line: Line, out: Collector) -> bool:
        cuda = m["v"] or m["v2"]
        if cuda is not None and not re.fullmatch(r"1\d{2}", cuda):  # ROCm's HIP version ("60"): no CUDA capability
            return True
        cc = m["cc"] or f"{m['a'] or m['a2']}.{m['b'] or m['b2']}"
        out.add("gpus", Gpu(compute_capability=Capability.parse(cc)), line, REPORT, "bitsandbytes", m.span())
        return True

    def _cupy_row(self, body: str, line: Line, out: Collector) -> bool:
        kv = key_value(body)
        if kv is None:
            return False
        key, value = kv
        how = "cupy.show_config()"
        if key == "cupy version" and (version := version_token(value)):
            self._cupy = True
            out.add_dist(Dist(name="cupy", version=version), line, REPORT, how)
            return True
        if not self._cupy:
            return False
        if key == "cupy platform":
            self._cupy = "cuda" in value.lower()  # a ROCm build's rows say nothing of CUDA
            return True
        if key == "cuda build version" and (cuda := _cupy_cuda(value)):
            out.add("ext_reports", ExtBuild(package="cupy", cuda=cuda), line, REPORT, how)
        elif key == "cuda driver version" and (cuda := _cupy_cuda(value)):
            out.add("cuda_driver", cuda, line, REPORT, how)
        elif m := _CUPY_DEVICE_RE.match(key):
            self._cupy_device(int(m["idx"]), m["what"], value, line, out)
        else:
            return key.startswith(("cuda ", "cudnn ", "nccl ", "cublas ", "cufft ", "curand ", "cusolver ",
                                   "cusparse ", "nvrtc ", "thrust ", "cub ", "jitify ", "cutensor ", "cython "))
        return True

    def _cupy_device(self, idx: int, what: str, value: str, line: Line, out: Collector) -> None:
        if what == "name":
            self._cupy_names[idx] = value.strip()
            return
        if re.fullmatch(r"\d{2,3}", value.strip()):  # Device.compute_capability: "86", "120"
            out.add("gpus", Gpu(name=self._cupy_names.get(idx), index=idx,
                                compute_capability=Capability.parse(value.strip())), line, REPORT, "cupy.show_config()")
