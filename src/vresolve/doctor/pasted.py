"""Findings from what only a pasted text shows: error lines the reader typed (signals), undefined
symbols by their owner, compilers killed in a build, libraries not found, and installer messages.

The machine's facts in a paste (GPUs, driver, torch, its CUDA) go through the live checks
(:func:`.checks.diagnose`); these are the facts a live probe has no counterpart for. Each finding
names the pasted lines it used, and takes its explanation and fix from the known-issues table.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..matrix import Matrix
from .evidence import Evidence, Seen
from .facts import Finding
from .logs import issue_for

# a typed error line whose cause is plain from the line alone
_SIGNAL_CAUSES = {
    "forward-compat": "driver-too-old",  # CUDA error 804: the compat package cannot stand in for this driver
    "glibc-too-old": "glibc-too-old",
    "libcuda-missing": "library-not-found",
    "flash-attn-not-found": "optional-kernel-missing",
    "vllm-circular-import": "source-tree-shadowing",
    "ptx-toolchain": "ptx-toolchain-too-new",
    "toolkit-mismatch": "toolkit-mismatch",
}

# whose C++ ABI a torch-owned undefined symbol in this library breaks: a companion's, else the ABI's
_COMPANIONS = ("flash_attn", "flashinfer", "xformers", "torchvision", "torchaudio")

_MISSING_LIBRARIES = ("cudnn", "nccl", "cublas", "cublasLt", "cusparse", "cufft", "curand", "cusolver", "cuda")


def _line(seen: Seen[Any]) -> str:
    return f"pasted line {seen.line}: {seen.text}"


def _symbol_causes(e: Evidence) -> Iterator[tuple[str, Seen[Any]]]:
    for s in e.symbols:
        if s.value.owner != "torch":
            continue
        where = (s.value.library or "") + " " + s.text
        companion = any(c in where for c in _COMPANIONS)
        yield ("companion-mismatch" if companion else "torch-abi-mismatch"), s


def _causes(e: Evidence) -> Iterator[tuple[str, Seen[Any]]]:
    for sig in e.signals:
        cause = _SIGNAL_CAUSES.get(sig.value.code)
        if cause is not None:
            yield cause, sig
    yield from _symbol_causes(e)
    for k in e.killed:
        if k.value.in_build:
            yield "build-oom", k
    for lib in e.libraries:
        if lib.value.missing and lib.value.name in _MISSING_LIBRARIES:
            yield "library-not-found", lib
    for ev in e.installer:
        if ev.value.action == "requires-python":
            yield "python-unsupported", ev
        elif ev.value.action == "uninstalled" and ev.value.name == "torch":
            yield "installer-replaced-torch", ev


def judge_pasted(e: Evidence, matrix: Matrix, already: Sequence[Finding] = ()) -> list[Finding]:
    """Findings for the causes the paste's typed lines show, one per cause (with every line that shows
    it, up to five), leaving out causes ``already`` found."""
    lines: dict[str, list[str]] = {}
    for cause, seen in _causes(e):
        lines.setdefault(cause, [])
        if len(lines[cause]) < 5 and _line(seen) not in lines[cause]:
            lines[cause].append(_line(seen))
    found = {f.cause for f in already}
    out = []
    for cause, evidence in lines.items():
        if cause in found:
            continue
        k = issue_for(matrix, cause)
        out.append(Finding(cause=cause, severity=k.severity, title=k.title, explanation=k.explanation,
                           fix=k.fix, evidence=tuple(evidence), source="log"))
    return out
