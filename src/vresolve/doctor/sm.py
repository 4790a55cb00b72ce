"""Streaming-multiprocessor versions (compute capabilities) however a message writes them, and the GPU's own one
where a message states it.

Notations read (each the same :class:`~vresolve.values.Capability`)::

    sm_89  sm89  SM 89  SM 8.9  8.9  compute_89  (8, 9)  89 (capability x 10)  0x809 (TensorRT's hex: major << 8 | minor)

A message that refuses a GPU may say the GPU's own SM ("Your Tesla T4 GPU has compute capability 7.5", "Current
capability: 86", "your GPU has capability (7, 0)", "RTX 5090 with CUDA capability sm_120", TensorRT's "Unsupported
SM: 0x809" and "Target GPU SM 120 is not supported"), or only the floor it asks for ("FlashAttention only supports
Ampere GPUs or newer"): :func:`gpu_sm_in` reads the first kind only, so that a refusal is judged against the GPU it
was raised for.
"""

from __future__ import annotations

import re

from ..values import Capability

__all__ = ["parse_sm", "gpu_sm_in", "floor_in"]

_HEX_RE = re.compile(r"0x(?P<hex>[0-9a-fA-F]{3,4})")
_TUPLE_RE = re.compile(r"\(\s*(?P<maj>\d{1,2})\s*,\s*(?P<min>\d)\s*\)")
_DOTTED_RE = re.compile(r"(?:sm|SM|compute)?[_ ]?(?P<maj>\d{1,2})\.(?P<min>\d)(?P<suffix>[af]?)")
_PACKED_RE = re.compile(r"(?:sm|SM|compute)?[_ ]?(?P<packed>\d{2,3})(?P<suffix>[af]?)")


def parse_sm(token: str) -> Capability | None:
    """The capability a token writes (see the module's notations); None where it writes none."""
    text = token.strip().strip("'\"`.,;:")
    if m := _HEX_RE.fullmatch(text):
        value = int(m["hex"], 16)
        major, minor = value >> 8, value & 0xFF
        return Capability(major, minor) if 1 <= major <= 15 and minor <= 9 else None
    if m := _TUPLE_RE.fullmatch(text):
        return Capability(int(m["maj"]), int(m["min"]))
    if m := _DOTTED_RE.fullmatch(text):
        return Capability(int(m["maj"]), int(m["min"]), m["suffix"])
    if m := _PACKED_RE.fullmatch(text):
        packed = m["packed"]
        major = int(packed[:-1])
        return Capability(major, int(packed[-1]), m["suffix"]) if 1 <= major <= 15 else None
    return None


#: an SM token: hex, a tuple, dotted or packed, with an optional sm_/SM/compute_ prefix
_SM = r"(?P<sm>0x[0-9a-fA-F]{3,4}|\(\s*\d{1,2}\s*,\s*\d\s*\)|(?:sm_?|SM ?|compute_)?\d{1,2}\.\d[af]?|(?:sm_?|SM ?)?\d{2,3}[af]?)"

#: messages that state the GPU's own SM (not the floor they ask for), in the words of the programs that print them
_GPU_SM_RES = tuple(re.compile(p, re.IGNORECASE) for p in (
    # vLLM's bf16 refusal; "Your GPU's capability is 8.6"; "your GPU has capability (7, 0)" (xFormers)
    r"\byour\b[^.;]{0,60}?\bGPU(?:'s)?\b[^.;]{0,20}?\b(?:has |is of )?(?:compute |cuda )?capability(?: of)?(?: is)?:? " + _SM,
    r"\bcurrent (?:GPU |device )?(?:compute )?capability(?: is)?:? " + _SM,  # vLLM's "Current capability: 86"
    r"\bcompute capability detected:? " + _SM,  # ollama's "Compute Capability detected: 5.2"
    r"\byour device is of (?:CUDA |compute )?capability " + _SM,  # torch Inductor's Triton floor
    r"\bwith CUDA capability " + _SM + r" is not compatible",  # torch's arch list check
    r"\bwhich is of cuda capability " + _SM,  # torch's "too old" check
    r"\bUnsupported SM:? " + _SM,  # TensorRT's "Unsupported SM: 0x809"
    r"\bTarget GPU SM " + _SM + r" is not supported",  # TensorRT 8.6 and later
    # ggml's check of the device's arch against its build (ggml's arch numbers are capability x 100: 750 is 7.5)
    r"\bnot compiled with any CUDA arch <= ?(?P<sm>\d{2,3})0\b",
    r"\b(?:device|GPU) (?:with )?(?:compute )?capability (?:is )?" + _SM + r"\b(?! or (?:higher|newer|above))"
    r"(?= (?:is|are) not supported| not supported)",
))


def gpu_sm_in(text: str) -> Capability | None:
    """The GPU's own SM a message states (see :data:`_GPU_SM_RES`); None where it states only a floor or no SM."""
    for pattern in _GPU_SM_RES:
        m = pattern.search(text)
        if m is not None and (cc := parse_sm(m["sm"])) is not None:
            return cc
    return None


_ONE = r"(?:sm_?|SM ?)?\d{1,3}(?:\.\d)?"
#: a floor a message states after "capability": ">= 90", ">= 9.0 or 8.9", "of at least 8.0"
_FLOOR_RE = re.compile(r"\bcapability\b[^.;:,()]{0,12}?(?:>=|≥|\bof at least|\bat least)\s*(?P<list>" + _ONE
                       + r"(?:\s*(?:or|,)\s*" + _ONE + r")*)", re.IGNORECASE)


def floor_in(text: str) -> Capability | None:
    """The lowest compute capability a message says it accepts ("compute capability >= 9.0 or 8.9": 8.9; ">= 90": 9.0),
    None where it states none."""
    m = _FLOOR_RE.search(text)
    found = [cc for n in re.findall(_ONE, m["list"]) if (cc := _major_or_sm(n)) is not None] if m is not None else []
    return min(found, default=None)


def _major_or_sm(token: str) -> Capability | None:
    """An SM, or a bare major ("compute capability >= 8": 8.0)."""
    return Capability(int(token), 0) if token.isdigit() and len(token) == 1 else parse_sm(token)
