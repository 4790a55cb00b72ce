"""Other tools' environment reports, read as reports: Hugging Face's ``transformers-cli env`` / ``diffusers-cli env``
(``huggingface-cli env``), SGLang's ``python3 -m sglang.check_env``, and Ollama's GPU discovery lines.

Input::

    - PyTorch version (GPU?): 2.2.1+cu121 (True)              transformers-cli / diffusers-cli env: torch, CUDA seen
    CUDA available: True                                       sglang.check_env
    GPU 0,1,2,3: NVIDIA A100-SXM4-80GB                         (the GPUs of one model, by index)
    GPU 0,1,2,3 Compute Capability: 8.0
    CUDA Driver Version: 550.90.07                             (the driver: read by .smi)
    PyTorch: 2.3.1+cu121
    msg="inference compute" id=GPU-433d... library=cuda compute=8.9 driver=12.3 name="NVIDIA GeForce RTX 4080"
    [GPU-433dad3d-...] Compute Capability 8.9                 (Ollama's discovery, after its "[GPU-...] CUDA" lines)
    msg="detected GPUs" count=1 library=/usr/lib/x86_64-linux-gnu/libcuda.so.545.23.08

    PyTorch built with:                                        torch.__config__.show() (OpenMMLab's and detectron2's
      - CUDA Runtime 11.0                                      collect_env print it as "PyTorch compiling details"):
      - NVCC architecture flags: -gencode;arch=compute_37,code=sm_37;...   torch's CUDA and its arch list

The "(True)" after Hugging Face's torch is ``torch.cuda.is_available()``; SGLang's "PyTorch:" line is read only after
one of check_env's own lines ("CUDA available:", "GPU N Compute Capability:") was seen.
"""

from __future__ import annotations

import re

from ...values import Capability, DriverVersion
from .collect import Collector
from .lines import Line
from .model import MESSAGE, REPORT, Dist, Gpu
from .tokens import version_token

__all__ = ["EnvToolsReader"]

_HF_TORCH_RE = re.compile(r"^(?:[-*]\s+)?PyTorch version \(GPU\?\):\s*(?P<v>\S+)\s+\((?P<gpu>True|False)\)\s*$")
_SGL_AVAILABLE_RE = re.compile(r"^CUDA available:\s*(?P<v>True|False)\s*$")
_SGL_GPUS_RE = re.compile(r"^GPU (?P<idx>\d+(?:,\d+)*):\s*(?P<name>\S.*?)\s*$")
_SGL_CC_RE = re.compile(r"^GPU (?P<idx>\d+(?:,\d+)*) Compute Capability:\s*(?P<cc>\d{1,2}\.\d)\s*$")
_SGL_TORCH_RE = re.compile(r"^PyTorch:\s*(?P<v>\S+)\s*$")
_OLLAMA_COMPUTE_RE = re.compile(r'msg="inference compute".*?\bcompute=(?P<cc>\d{1,2}\.\d)\b.*?\bname="(?P<name>[^"]+)"')
_OLLAMA_CC_RE = re.compile(r"\[GPU-[0-9a-f-]+\] Compute Capability (?P<cc>\d{1,2}\.\d)\s*$")
_CONFIG_CUDA_RE = re.compile(r"^-\s+CUDA Runtime (?P<v>\d+\.\d+)\s*$")
_CONFIG_ARCH_RE = re.compile(r"^-\s+NVCC architecture flags:\s*(?P<flags>\S+)\s*$")
_GENCODE_RE = re.compile(r"code=\[?(?P<codes>(?:(?:sm|compute)_\d+[af]?,?)+)\]?")
_LIBCUDA_RE = re.compile(r"\blibcuda\.so\.(?P<v>\d{3}\.\d{1,3}(?:\.\d{1,3})?)\b")


class EnvToolsReader:
    """The lines above (see the module's docstring)."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}  # sglang: the GPU model by index, for its capability line

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body.strip()
        if body.endswith("PyTorch built with:"):  # (OpenMMLab: "PyTorch compiling details: PyTorch built with:")
            out.markers.add("torch-config")
            return True
        if body.startswith("- ") and "torch-config" in out.markers and ("CUDA Runtime" in body or "NVCC" in body):
            return self._torch_config(body, line, out)
        if "PyTorch version (GPU?)" in body:
            return self._hf_torch(body, line, out)
        if body.startswith(("CUDA available:", "GPU ", "PyTorch:")):
            return self._sglang(body, line, out)
        if "libcuda.so." in body:
            m = _LIBCUDA_RE.search(body)
            if m:  # the driver's own library, named by its version (what loaded it: ollama, a loader's message)
                out.add("driver", DriverVersion.parse(m["v"]), line, MESSAGE, "libcuda", m.span())
            return False
        if "Compute Capability" in body or "inference compute" in body:
            return self._ollama(body, line, out)
        return False

    @staticmethod
    def _torch_config(body: str, line: Line, out: Collector) -> bool:
        """torch's build configuration (``torch.__config__.show()``, ATen's CUDA hooks' lines): the CUDA runtime torch
        was built with, and the SASS/PTX its kernels carry (``code=sm_80`` / ``code=compute_80``), as
        ``torch.cuda.get_arch_list()`` names them."""
        how = "torch.__config__.show()"
        if m := _CONFIG_CUDA_RE.match(body):
            out.add("torch_cuda", m["v"], line, REPORT, how)
            return True
        if m := _CONFIG_ARCH_RE.match(body):
            archs = [c for g in _GENCODE_RE.finditer(m["flags"]) for c in g["codes"].split(",") if c]
            if archs:
                out.add("torch_arch_list", tuple(dict.fromkeys(archs)), line, REPORT, how)
                return True
        return False

    @staticmethod
    def _hf_torch(body: str, line: Line, out: Collector) -> bool:
        m = _HF_TORCH_RE.match(body)
        if not m or not (version := version_token(m["v"])):
            return False
        out.kinds.add("collect_env")
        out.add_dist(Dist(name="torch", version=version), line, REPORT, "transformers-cli env")
        out.add("cuda_available", m["gpu"] == "True", line, REPORT, "transformers-cli env")
        return True

    def _sglang(self, body: str, line: Line, out: Collector) -> bool:
        how = "sglang.check_env"
        if m := _SGL_AVAILABLE_RE.match(body):
            out.markers.add("sglang-check-env")
            out.add("cuda_available", m["v"] == "True", line, REPORT, how)
            return True
        if m := _SGL_CC_RE.match(body):
            out.markers.add("sglang-check-env")
            cc = Capability.parse(m["cc"])
            for idx in m["idx"].split(","):
                out.add("gpus", Gpu(name=self._names.get(int(idx)), index=int(idx), compute_capability=cc), line,
                        REPORT, how)
            return True
        if "sglang-check-env" not in out.markers:
            return False
        if m := _SGL_GPUS_RE.match(body):
            indices = [int(i) for i in m["idx"].split(",")]
            self._names.update(dict.fromkeys(indices, m["name"]))
            for idx in indices if len(indices) > 1 else ():  # "GPU 0: NAME" alone is nvidia-smi -L's form (.smi)
                out.add("gpus", Gpu(name=m["name"], index=idx), line, REPORT, how)
            return len(indices) > 1
        if (m := _SGL_TORCH_RE.match(body)) and (version := version_token(m["v"])):
            out.add_dist(Dist(name="torch", version=version), line, REPORT, how)
            return True
        return False

    @staticmethod
    def _ollama(body: str, line: Line, out: Collector) -> bool:
        if m := _OLLAMA_COMPUTE_RE.search(body):
            out.add("gpus", Gpu(name=m["name"], compute_capability=Capability.parse(m["cc"])), line, REPORT, "ollama",
                    m.span())
            return True
        if m := _OLLAMA_CC_RE.search(body):
            out.add("gpus", Gpu(compute_capability=Capability.parse(m["cc"])), line, REPORT, "ollama", m.span())
            return True
        return False
