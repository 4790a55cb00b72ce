"""DeepSpeed's ``ds_report``: its op table and its general environment section, read as a report.

    DeepSpeed C++/CUDA extension op report
    op name ................ installed .. compatible
    fused_adam ............. [NO] ....... [OKAY]
    DeepSpeed general environment info:
    torch version .................... 2.3.0+cu121
    torch cuda version ............... 12.1
    nvcc version ..................... 12.0
    deepspeed wheel compiled w. ...... torch 0.0, cuda 0.0

Each row is ``name``, a run of dots, then its value. The torch and CUDA that ``deepspeed wheel compiled w.`` names
are the ones DeepSpeed's prebuilt ops were built against (``0.0``: none prebuilt, built on first use): not the
installed torch, so that row is taken and not read as a version.
"""

from __future__ import annotations

import re

from .collect import Collector
from .lines import Line
from .model import REPORT, Dist, Nvcc
from .tokens import version_token

HOW = "ds_report"

_ROW_RE = re.compile(r"^\s*(?P<name>[A-Za-z][\w ./()-]*?)\s*\.{3,}\s*(?P<value>\S.*?)\s*$")
_HEADERS = ("deepspeed c++/cuda extension op report", "deepspeed general environment info")


class DsReportReader:
    """The rows of a ds_report, once one of its headers was seen."""

    def __init__(self) -> None:
        self._seen = False

    def feed(self, line: Line, out: Collector) -> bool:
        if line.lower.startswith(_HEADERS):
            self._seen = True
            out.kinds.add("ds_report")
            return True
        if not self._seen or "..." not in line.body or not (m := _ROW_RE.match(line.body)):
            return False
        name, value = m["name"].lower(), m["value"]
        version = version_token(value.split(",")[0])
        if name == "torch version" and version:
            out.add_dist(Dist(name="torch", version=version), line, REPORT, HOW)
        elif name == "torch cuda version":
            if value.strip().lower() == "none":
                out.add("torch_cuda", None, line, REPORT, HOW)
            elif version:
                out.add("torch_cuda", version, line, REPORT, HOW)
        elif name == "nvcc version" and version:
            out.add("nvcc", Nvcc(release=".".join(version.split(".")[:2])), line, REPORT, HOW)
        elif name == "deepspeed info" and version:
            out.add_dist(Dist(name="deepspeed", version=version), line, REPORT, HOW)
        return True  # an op's row, a path, the prebuilt ops' torch: taken, not prose
