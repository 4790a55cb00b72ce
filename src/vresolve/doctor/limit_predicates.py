"""A failure that is the program's own limit, not a fault of the GPU stack (issue 25, stop 35): the stack ran.

- PyTorch's "CUDA out of memory" where its own message shows PyTorch holding at least half of the GPU's memory: the
  model and its batch do not fit the card (its memory budget), not a driver, a build or a process elsewhere.
- vLLM's configuration check "Total number of attention heads (64) must be divisible by tensor parallel size (6)",
  where the numbers it names do not divide: a tensor-parallel size the model cannot take.

Said as ``program-limit`` (info): the paste's failure is explained, the stack is not at fault. Held only where every
failure the paste shows is such a limit: any other failure is judged by itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .evidence import Evidence, Seen
from .evidence.signals import CONTEXT_SIGNALS
from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, predicate

_SIZE = r"(\d+(?:\.\d+)?) ?([KMGT]i?B)"
#: PyTorch up to 2.0: "(GPU 0; 11.17 GiB total capacity; 10.36 GiB already allocated; ..."
_OOM_OLD_RE = re.compile(rf"\b{_SIZE} total capacity; {_SIZE} already allocated\b")
#: PyTorch 2.1 on: "GPU 0 has a total capacity of 23.69 GiB of which ... Of the allocated memory 22.93 GiB is allocated
#: by PyTorch"
_OOM_TOTAL_RE = re.compile(rf"\bhas a total capacity of {_SIZE}\b")
_OOM_TORCH_RE = re.compile(rf"\bOf the allocated memory {_SIZE} is allocated by PyTorch\b")
#: vLLM's ModelConfig.verify_with_parallel_config
_DIVISIBLE_RE = re.compile(r"\((\d+)\) must be divisible by (?:tensor|pipeline) parallel size \((\d+)\)")
_UNIT = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(number: str, unit: str) -> float:
    return float(number) * _UNIT[unit[0]]


def _limit(text: str) -> str | None:
    """What limit a failure line states, or None."""
    if (m := _OOM_OLD_RE.search(text)) is not None:
        total, used = _bytes(m[1], m[2]), _bytes(m[3], m[4])
    elif (t := _OOM_TOTAL_RE.search(text)) is not None and (a := _OOM_TORCH_RE.search(text)) is not None:
        total, used = _bytes(t[1], t[2]), _bytes(a[1], a[2])
    elif (d := _DIVISIBLE_RE.search(text)) is not None and int(d[2]) > 0 and int(d[1]) % int(d[2]):
        return f"a parallel size ({d[2]}) that does not divide the model's {d[1]} attention heads"
    else:
        return None
    if total <= 0 or used * 2 < total:
        return None  # (most of the card held elsewhere: another process, a MIG slice; not the program's budget)
    return f"the GPU's memory: PyTorch holds {used / total:.0%} of it"


def _failing(e: Evidence) -> list[Seen[Any]]:
    """Every line that shows a failure: typed failure lines, signals that are not context, exceptions."""
    return [*e.failures, *(s for s in e.signals if s.value.code not in CONTEXT_SIGNALS), *e.exceptions]


@predicate("program-own-limit", (), ("limit",))
def _program_limit(f: Facts) -> Iterator[Hit]:
    """Every failure the paste shows is the program's own limit (its memory budget, a parallel size its model cannot
    take): the GPU stack ran."""
    e = f.log
    if e is None or e.installer:
        return
    failing = _failing(e)
    limits = [(s, _limit(s.text)) for s in failing]
    if not limits or any(limit is None for _, limit in limits):
        return
    first = min((s for s, _ in limits), key=lambda s: s.line)
    yield Hit(evidence=tuple(dict.fromkeys(pasted_line(s) for s, _ in limits)),
              fill={"limit": next(limit for s, limit in limits if s is first) or ""})
