"""The facts that rule a small /dev/shm out, and the shared-memory signal they stop.

A container shares the host's /dev/shm when started with the host's IPC namespace (``docker run --ipc=host``, Compose's
``ipc: host``, a pod's ``hostIPC: true``), and a /dev/shm of 16 GB or more is already what the fix of
``shared-memory-too-small`` asks for (``--shm-size=16g``). When the paste shows either (as the user's setup, not as a
fix they were told to try), a shared-memory message (``insufficient shared memory (shm)``, which torch's DataLoader
prints for any bus error in a worker) does not name that cause: its line is kept as a failure whose cause is not named.

Input::

    docker run --gpus all --ipc=host ...                               --ipc=host
    I am using pytorch 1.1.0 in a docker container with --ipc=host,
    so I have /dev/shm space of 254GB.                                 --ipc=host; /dev/shm 254 GB
    shm             254G  1.0G  253G   1% /dev/shm                     /dev/shm 253 GB free (df)
    docker run --shm-size=32g ...                                      --shm-size 32 GB
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from .collect import Collector
from .lines import Line
from .model import MESSAGE, Evidence, Seen, Signal

__all__ = ["ShmReader", "retype_shm", "AMPLE_GB"]

#: the /dev/shm the known-issues row's fix asks for (``--shm-size=16g``): a paste showing this much already has it
AMPLE_GB = 16.0
_IPC_HOST_RE = re.compile(r"--ipc[= ]host\b|\bipc:\s*[\"']?host\b|\bhostIPC:\s*true\b", re.IGNORECASE)
_SIZE = r"(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[GT])(?:i?B)?\b"
_SIZE_RES = (
    re.compile(r"/dev/shm\b[^\n]{0,40}?\b" + _SIZE, re.IGNORECASE),  # "/dev/shm space of 254GB"
    re.compile(r"^\s*\S+\s+\S+\s+\S+\s+" + _SIZE + r"\s+\d+%\s+/dev/shm\s*$"),  # df: the Avail column
    re.compile(r"--shm-size[= ]" + _SIZE + r"|\bshm_size:\s*[\"']?" + _SIZE.replace("?P<n>", "?P<n2>")
               .replace("?P<u>", "?P<u2>"), re.IGNORECASE),
)
# words that make a line advice or a fix rather than the user's setup
_ADVICE_RE = re.compile(r"\b(?:fix\w*|solv\w*|tr(?:y|ied|ying)|add(?:ed|ing)?|should|suggest\w*|recommend\w*|without|"
                        r"instead|increas\w*|workaround|resolv\w*|help\w*)\b", re.IGNORECASE)
_SHM = "shm-exhausted"
#: a /dev/shm below this is Docker's default (64 MB) or near it: small for DataLoader workers passing batches
SMALL_SHM_MB = 512.0
_SMALL_RE = re.compile(r"/dev/shm\b[^\n]{0,40}?\b(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[MK])(?:i?B)?\b")


def _gigabytes(m: re.Match[str]) -> float:
    n, unit = (m["n"], m["u"]) if m["n"] is not None else (m.group("n2"), m.group("u2"))
    return float(n) * (1024.0 if unit.upper() == "T" else 1.0)


class ShmReader:
    """The user's setup that gives /dev/shm room: the host's IPC namespace, or a /dev/shm of 16 GB or more."""

    def feed(self, line: Line, out: Collector) -> bool:
        lower = line.lower
        if "/dev/shm" in lower and (small := _SMALL_RE.search(line.body)) is not None:
            mb = float(small["n"]) / (1024.0 if small["u"].upper() == "K" else 1.0)
            if mb < SMALL_SHM_MB:  # "/dev/shm is at only 64M" (a fact, whatever advice the line gives beside it)
                out.add("signals", Signal(code="shm-small", detail=f"{mb:g} MB"), line, MESSAGE, "shm", small.span())
        if ("ipc" not in lower and "shm" not in lower) or _ADVICE_RE.search(line.body):
            return False
        found = False
        if (m := _IPC_HOST_RE.search(line.body)) is not None:
            out.add("shm_ample", "the host's IPC namespace (--ipc=host)", line, MESSAGE, "shm", m.span())
            found = True
        for pattern in _SIZE_RES:
            if (s := pattern.search(line.body)) is not None and _gigabytes(s) >= AMPLE_GB:
                out.add("shm_ample", f"/dev/shm of {_gigabytes(s):g} GB", line, MESSAGE, "shm", s.span())
                found = True
        return found


def retype_shm(e: Evidence) -> Evidence:
    """``e`` with its shared-memory signals kept as failures whose cause is not named where the paste shows /dev/shm
    has room (an NCCL line an ``nccl`` failure, any other a ``crash``: the worker's bus error)."""
    if not e.shm_ample or not any(s.value.code == _SHM for s in e.signals):
        return e
    stopped = [s for s in e.signals if s.value.code == _SHM]
    failures: list[Seen[str]] = list(e.failures)
    for s in stopped:
        if not any(f.line == s.line for f in failures):
            failures.append(replace(s, value="nccl" if "nccl" in s.text.lower() else "crash", how="failure"))  # type: ignore[arg-type]
    return replace(e, signals=tuple(s for s in e.signals if s.value.code != _SHM),
                   failures=tuple(sorted(failures, key=lambda f: f.line)))
