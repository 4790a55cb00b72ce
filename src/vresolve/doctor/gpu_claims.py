"""A message's claim about the GPU -- "too old for this feature" (gpu-too-old-for-feature), "this build has no kernels
for SM X" (arch-not-in-build) -- judged against the GPU the paste shows and the facts the matrix holds (features.yaml's
floors and libraries' SMs, gpus.yaml's compute capabilities), one judgement for every phrasing.

- A GPU the paste shows (a report's, else the user's words; never one named on the message's own line, an example
  such as "e.g. H100") that meets the floor the message asks for, or that is not of the SM the message names: the
  message is not about this GPU (another process, device or machine): cause not named, with what to paste.
- A library release the paste shows whose supported SMs (features.yaml) hold the SM the message names: the same.
- No GPU shown: the cause is named where a message states the GPU's own SM (:func:`.sm.gpu_sm_in`) or its floor as a
  number (a floor check of the device it ran on); a message that says what it needs only in words ("FlashAttention
  only supports Ampere GPUs or newer", whose check is a window: 8.x or 9.0) is not settled by itself.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from packaging.version import InvalidVersion, Version

from ..matrix import Matrix
from ..matrix.model import LibrarySms
from ..values import Capability
from .evidence import Evidence, Seen
from .sm import floor_in, gpu_sm_in

__all__ = ["ARCH_CLAIMS", "CAPABILITY_CLAIMS", "Unsettled", "unsettled", "gpu_capability", "shown_gpus", "floor_of"]

#: the codes of capability refusals (gpu-too-old-for-feature's signals)
CAPABILITY_CLAIMS = frozenset({"bf16-unsupported", "flash-attn-needs-ampere", "fp8-unsupported-arch", "gpu-too-old",
                               "capability-too-low", "capability-below-required", "fp8-capability"})
#: the codes of a build's refusal that names the GPU's SM (arch-not-in-build's signals that say which SM)
ARCH_CLAIMS = frozenset({"arch-not-in-build", "trt-unsupported-sm", "ggml-arch-missing"})
#: what settles a GPU claim
ASK_FOR_GPU = ("the output of `nvidia-smi --query-gpu=name,compute_cap --format=csv` run where the program failed, its "
               "`CUDA_VISIBLE_DEVICES`, and the whole error")


class Unsettled(msgspec.Struct, frozen=True):
    """Why a claim is not this paste's cause: what is missing, the lines that show it, and what to paste."""

    missing: str
    evidence: tuple[Seen[Any], ...]
    paste: str = ASK_FOR_GPU


def gpu_capability(matrix: Matrix, seen: Seen[Any]) -> Capability | None:
    """A pasted GPU's compute capability: as shown, else its row's in gpus.yaml (by name, alias, or the name before a
    parenthesis); None where neither is known."""
    known = seen.value.compute_capability
    if known is not None:
        return known
    name = str(seen.value.name or "")
    found = matrix.find_gpu(name) or matrix.find_gpu(name.split("(")[0].strip()) if name else None
    return found.compute_capability if found is not None else None


def shown_gpus(e: Evidence, line: int = 0) -> list[Seen[Any]]:
    """The user's GPUs: a tool's report's (nvidia-smi, collect_env), else the ones the user names; never one named on
    ``line`` (the message's own line: an example, a requirement)."""
    from .evidence.model import REPORT

    named = [g for g in e.gpus if (g.value.name or g.value.compute_capability) and g.line != line]
    best = min((g.rank for g in named), default=REPORT)
    return [g for g in named if g.rank == best]


def shown_families(e: Evidence, matrix: Matrix, line: int = 0) -> list[tuple[Seen[Any], tuple[Capability, ...]]]:
    """The GPU architectures the user says they have ("an Ampere GPU"), with the family's compute capabilities
    (gpus.yaml), never one named on ``line``."""
    out = []
    for seen in e.gpu_families:
        arch = next((a for a in matrix.architectures if a.family == seen.value), None)
        if seen.line != line and arch is not None:
            out.append((seen, arch.compute_capabilities))
    return out


def floor_of(matrix: Matrix, code: str) -> Capability | None:
    """The compute capability features.yaml says the feature a refusal's code is about needs (None: not known)."""
    feature = next((f for f in matrix.features if code in f.signals), None)
    return feature.min_compute_capability if feature is not None else None


def _names(shown: list[Seen[Any]], ccs: list[Capability | None]) -> str:
    return ", ".join(dict.fromkeys(f"{g.value.name or 'GPU'} ({cc})" for g, cc in zip(shown, ccs, strict=True)))


def _stated(e: Evidence, codes: frozenset[str]) -> list[tuple[Seen[Any], Capability]]:
    """The GPU's own SM where a line of these codes states it."""
    out = []
    for s in e.signals:
        if s.value.code in codes and (cc := gpu_sm_in(s.text)) is not None:
            out.append((s, cc))
    return out


def _floor_stated(sig: Seen[Any]) -> bool:
    """Whether a refusal states its floor as a number ("compute capability of at least 8.0", ">= 9.0 or 8.9",
    "Minimum capability: 80", "requires 5.0 capability"): such words come from a check of the device the program ran
    on against that floor (vLLM's, Triton's, torch's, Transformer Engine's), so the device is below it. FlashAttention's
    "Ampere GPUs or newer" states none: its check is major 8 or 9.0 exactly (features.yaml), so a Blackwell GPU its
    build predates gets the same words, and without the GPU shown the refusal is not settled."""
    detail = str(sig.value.detail or "")
    return floor_in(sig.text) is not None or bool(re.fullmatch(r"\d+(?:\.\d+)?", detail))


def _capability_claim(sig: Seen[Any], e: Evidence, matrix: Matrix, asked: Capability | None) -> Unsettled | None:
    shown = shown_gpus(e, sig.line)
    if shown:
        ccs = [gpu_capability(matrix, g) for g in shown]
        if asked is not None and all(cc is not None and cc >= asked for cc in ccs):
            names = _names(shown, ccs)
            return Unsettled(missing=f"the GPU the failing process ran on: the GPUs shown ({names}) meet the compute "
                                     f"capability this line asks for ({asked}) (a program built before a GPU may "
                                     "refuse it in the same words; a tensor on the CPU or another device may reach the "
                                     "same check)", evidence=(sig, shown[0]))
        return None
    families = shown_families(e, matrix, sig.line)
    if families:
        if asked is not None and all(min(ccs) >= asked for _, ccs in families):
            names = ", ".join(f"{seen.value} ({min(ccs)} and up)" for seen, ccs in families)
            return Unsettled(missing=f"the GPU the failing process ran on: the architectures named ({names}) meet the "
                                     f"compute capability this line asks for ({asked})", evidence=(sig, families[0][0]))
        return None
    if _stated(e, CAPABILITY_CLAIMS):
        return None  # the message itself says the GPU's SM
    if _floor_stated(sig):
        return None  # a floor check of the device it ran on, whose number the message states
    need = f" (it asks for compute capability {asked} or newer)" if asked is not None else ""
    return Unsettled(missing=f"which GPU the failing process ran on and its compute capability{need}: the paste shows "
                             "no GPU, and the message does not say the GPU's own", evidence=(sig,))


def _release_sms(matrix: Matrix, library: str, version: str) -> LibrarySms | None:
    """The row of features.yaml that says which SMs a library release supports; None: not known."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    lib = next((x for x in matrix.library_sms if x.name == library), None)
    for row in reversed(lib.rows if lib is not None else ()):
        if any(s.contains(Version(v.public), prereleases=True) for s in row.releases):
            return row
    return None


def _named_sm(sig: Seen[Any], e: Evidence) -> Capability | None:
    """The SM a build's refusal names: on its own line, else on a line of the same message just above it (torch's
    "Found GPU0 ... which is of cuda capability 2.1." before "PyTorch no longer supports this GPU")."""
    near = [s for s in e.signals if sig.line - 3 <= s.line <= sig.line]
    return next((cc for s in sorted(near, key=lambda s: -s.line) if (cc := gpu_sm_in(s.text)) is not None), None)


def _arch_claim(sig: Seen[Any], e: Evidence, matrix: Matrix) -> Unsettled | None:
    named = _named_sm(sig, e)
    shown = shown_gpus(e, sig.line)
    ccs = [gpu_capability(matrix, g) for g in shown]
    if named is not None and shown and all(cc is not None and cc.base != named.base for cc in ccs):
        names = _names(shown, ccs)
        return Unsettled(missing=f"the GPU the failing process ran on: this line names SM {named}, and the GPUs shown "
                                 f"({names}) are of another", evidence=(sig, shown[0]))
    trt = e.dist("tensorrt") if sig.value.code == "trt-unsupported-sm" else None
    sms = _release_sms(matrix, "tensorrt", trt.value.version or "") if trt is not None else None
    wanted = named or next((cc for cc in ccs if cc is not None), None)
    if trt is not None and sms is not None and wanted is not None and sms.supports(wanted):
        return Unsettled(missing=f"why TensorRT refuses SM {wanted}: TensorRT {trt.value.version}'s support matrix "
                                 "lists it (another TensorRT found first on the library path, an engine or plugin "
                                 "built elsewhere)",
                         evidence=(sig, trt), paste="the output of `ldconfig -p | grep -i nvinfer` (and `pip list | "
                                                    "grep -i tensorrt`), " + ASK_FOR_GPU)
    if named is None and not shown and not shown_families(e, matrix, sig.line):
        return Unsettled(missing="which GPU the failing process ran on: the paste shows no GPU, and the message does "
                                 "not say which SM it refuses", evidence=(sig,))
    return None


def unsettled(sig: Seen[Any], e: Evidence, matrix: Matrix, asked: Capability | None) -> Unsettled | None:
    """Why this claim about the GPU is not the paste's cause (see the module), or None where the facts name it.
    ``asked``: the floor a capability refusal asks for (its own number, else features.yaml's)."""
    code = sig.value.code
    if code in CAPABILITY_CLAIMS:
        return _capability_claim(sig, e, matrix, asked or floor_of(matrix, code))
    if code in ARCH_CLAIMS:
        return _arch_claim(sig, e, matrix)
    return None
