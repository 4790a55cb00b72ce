"""Lines that show a failure, typed by their form (not by one message's words), so that a paste that shows one is
never judged healthy. Warnings, info and deprecation lines are not failures.

Input (kind of each)::

    RuntimeError: CUDA error: an illegal memory access was encountered             cuda
    CUDA error at kernel.cu:596 code=700(cudaErrorIllegalAddress)                   cuda
    ggml_cuda_init: failed to initialize CUDA: initialization error                 cuda
    RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)     nccl
    ValueError: The checkpoint you are trying to load has model type ...            exception
    Killed                                                                          killed
    error: subprocess-exited-with-error / ERROR: Could not build wheels for vllm    tool
    ... returned non-zero exit status 1.                                            exit
    FAILED: CMakeFiles/_C.dir/csrc/cache_kernels.cu.o                               failed
    Segmentation fault (core dumped)                                                crash
"""

from __future__ import annotations

import re

from .collect import Collector
from .lines import Line
from .model import MESSAGE

__all__ = ["FAILURE_KINDS", "FailureReader"]

#: (kind, a literal the lower-cased line must hold, the pattern), the most telling kind first
_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, needle, re.compile(pattern)) for kind, needle, pattern in (
        ("cuda", "cuda", r"\bCUDA error\b|\bcudaError[A-Z]\w*|\bCUDA_ERROR_[A-Z_]+|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+"
                         r"|CUDNN_STATUS_(?!SUCCESS)[A-Z_]+|\b[Ff]ailed to initiali[sz]e CUDA\b"),
        ("nccl", "nccl", r"\bNCCL error\b|\bnccl(?:UnhandledCuda|System|Internal|InvalidUsage|InvalidArgument|Remote)"
                         r"Error\b"),
        ("exception", "error", r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Error: \S"),
        ("exception", "exception", r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Exception: \S"),
        ("crash", "", r"\bSegmentation fault\b|\(core dumped\)|^\s*terminate called after throwing"),
        ("killed", "killed", r"^\s*(?:#\d+ [\d.]+\s+)?Killed\s*$"),
        ("exit", "exit", r"non-zero exit (?:status|code)|exit(?:ed)? with (?:exit )?(?:code|status) [1-9]"
                         r"|\bexit (?:code|status):? [1-9]"),
        ("failed", "failed", r"^\s*(?:#\d+ [\d.]+\s+)?FAILED\b"),
        ("tool", "error", r"^\s*(?:#\d+ [\d.]+\s+)?(?:ERROR|[Ee]rror|fatal error|FATAL)(?: \[[^\]]*\])?:\s*\S"
                          r"|^[\w./+-]+\(\d+\): (?:catastrophic )?error\b|^[\w./+-]+:\d+(?::\d+)?: (?:fatal )?error:"),
    )
)

#: the kinds, the most telling first (the one a "cause not named" leads with)
FAILURE_KINDS = tuple(dict.fromkeys(kind for kind, _, _ in _RULES))


class FailureReader:
    """The first kind of failure a line shows, if any."""

    def feed(self, line: Line, out: Collector) -> bool:
        lower = line.lower
        if lower.lstrip().startswith(("warning", "[warning]", "info")) or "warning:" in lower[:40]:
            return False
        for kind, needle, pattern in _RULES:
            if needle in lower and (m := pattern.search(line.body)):
                out.add("failures", kind, line, MESSAGE, "failure", m.span())
                return True
        return False
