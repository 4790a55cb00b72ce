"""The facts gathered while a paste is read: each kept once per value and rank, up to a limit per field.

:class:`Collector` is the one mutable object of a read: the readers add to it, and :meth:`Collector.freeze`
makes the :class:`~.model.Evidence`. It also holds the little context that readers share (whether a build
is going on, the line of the last driver version, ...).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import msgspec

from ...parsers import machine_text
from .lines import Line
from .model import Dist, Evidence, Seen

__all__ = ["Collector", "LIMITS", "DEFAULT_LIMIT", "TEXT_LIMIT", "VALUE_LIMIT", "bounded"]

#: distinct sightings kept per field (a 200 MB log repeats itself; what is past the limit is counted)
DEFAULT_LIMIT = 32
LIMITS = {"dists": 2048, "gpus": 256, "libraries": 256, "symbols": 128, "signals": 256, "installer": 512,
          "import_failures": 128, "env": 128, "killed": 64, "build_env": 64}
#: the longest line text kept with a fact
TEXT_LIMIT = 300


#: the longest string kept in a fact's value (a GPU name, an error, an environment variable's value)
VALUE_LIMIT = 256


def bounded(value: Any) -> Any:
    """``value`` with every string in it (itself, or a record's fields) at most :data:`VALUE_LIMIT` long."""
    if isinstance(value, str):
        return value if len(value) <= VALUE_LIMIT else value[:VALUE_LIMIT - 1] + "…"
    if isinstance(value, tuple):
        return tuple(bounded(v) for v in value)
    if isinstance(value, msgspec.Struct):
        long = {name: bounded(getattr(value, name)) for name in value.__struct_fields__
                if isinstance(getattr(value, name), (str, tuple))}
        return msgspec.structs.replace(value, **long) if long else value
    return value


def excerpt(text: str, span: tuple[int, int] | None = None) -> str:
    """The line as one plain line of at most :data:`TEXT_LIMIT` characters, around ``span`` when that is far in."""
    if len(text) <= TEXT_LIMIT or span is None or span[1] <= TEXT_LIMIT - 20:
        return machine_text(text, TEXT_LIMIT)
    start = max(0, span[0] - 80)
    return machine_text("…" + text[start:start + TEXT_LIMIT], TEXT_LIMIT)


class Collector:
    """Facts as they are read (mutable; one per read)."""

    def __init__(self) -> None:
        self._facts: dict[str, dict[tuple[Any, int], Seen[Any]]] = {}
        self.kinds: set[str] = set()
        self.markers: set[str] = set()  # what tells a report's origin apart: "vllm-collect-env", "torch-collect-env"
        self.dropped: Counter[str] = Counter()
        self.marks: dict[str, int] = {}  # the line of the last ...: "driver", "build-env", "command"
        self.in_build = False
        self.last_command = ""  # the last line that ran a program (for "Killed" on a line of its own)
        #: facts a warning shows (Python's ``file.py:8: RuntimeWarning: ...`` and the lines of its message): kept
        #: only when the paste also shows a failure (:meth:`keep_deferred`), since a warning alone is not one
        self.deferred: list[tuple[str, Any, Line, int, str, tuple[int, int] | None]] = []

    def add(self, name: str, value: Any, line: Line, rank: int, how: str, span: tuple[int, int] | None = None) -> None:
        """Keep ``value`` as a sighting of field ``name`` on ``line`` (once per value and rank)."""
        bucket = self._facts.setdefault(name, {})
        value = bounded(value)
        key = (value, rank)
        if key in bucket:
            return
        if len(bucket) >= LIMITS.get(name, DEFAULT_LIMIT):
            self.dropped[name] += 1
            return
        # the line as written, without a relay's prefix (a line read in other words, IPython's frame as Python's, whole)
        shown = line.body if line.text.endswith(line.body) else line.text.strip()
        bucket[key] = Seen(value=value, line=line.no, text=excerpt(shown, span if shown is line.body else None),
                           rank=rank, how=how)

    def add_dist(self, dist: Dist, line: Line, rank: int, how: str, field: str = "dists") -> None:
        """Keep a distribution; a torch's local tag ``+rocm6.2`` / ``+xpu`` also says its accelerator (its
        ``+cu121`` is read when the best torch is known: :meth:`Evidence.torch_cuda_seen`)."""
        self.add(field, dist, line, rank, how)
        if dist.name != "torch" or not dist.version or field != "dists":
            return
        local = dist.version.partition("+")[2].lower()
        if local.startswith("rocm"):
            self.add("rocm", local[4:], line, rank + 5, how)
            self.add("accelerator", "ROCm", line, rank + 5, how)
        elif local.startswith("xpu"):
            self.add("accelerator", "XPU", line, rank + 5, how)

    def defer(self, name: str, value: Any, line: Line, rank: int, how: str, span: tuple[int, int] | None = None) -> None:
        """A fact a warning shows: :meth:`add` ed by :meth:`keep_deferred` if the paste shows a failure too."""
        if len(self.deferred) < DEFAULT_LIMIT:
            self.deferred.append((name, value, line, rank, how, span))

    def keep_deferred(self) -> None:
        """Keep the facts warnings showed when the paste shows a failure (a traceback, a failure line)."""
        if "traceback" in self.kinds or self.has("failures"):
            for name, value, line, rank, how, span in self.deferred:
                self.add(name, value, line, rank, how, span)
        self.deferred.clear()

    def has(self, name: str) -> bool:
        return bool(self._facts.get(name))

    def mark(self, name: str, line: Line) -> None:
        self.marks[name] = line.no

    def near(self, name: str, line: Line, within: int) -> bool:
        """Whether mark ``name`` was set on one of the ``within`` lines before ``line`` (or on it)."""
        at = self.marks.get(name)
        return at is not None and 0 <= line.no - at <= within

    def freeze(self, lines: int, cut_lines: int) -> Evidence:
        kinds = set(self.kinds)
        if "collect_env" in kinds:
            kinds.discard("collect_env")
            if "vllm-collect-env" in self.markers or "torch-collect-env" not in self.markers:
                kinds.add("collect_env_vllm" if "vllm-collect-env" in self.markers else "collect_env_torch")
            if "torch-collect-env" in self.markers:
                kinds.add("collect_env_torch")
        facts = {name: tuple(sorted(bucket.values(), key=lambda s: s.line)) for name, bucket in self._facts.items()}
        if not kinds and facts:
            kinds.add("log")
        return Evidence(**facts, kinds=frozenset(kinds), lines=lines, cut_lines=cut_lines,
                        dropped=tuple(sorted(self.dropped.items())))


Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str], Line, Collector], "bool | None"]]


def apply_rules(rules: tuple[Rule, ...], line: Line, out: Collector) -> bool:
    """Run every rule whose needle is in the line (a substring test first: this runs for every line of
    a big log) and whose pattern then matches; True when one took the line (its handler did not
    return False)."""
    body = line.body
    took = False
    for needle, pattern, handler in rules:
        if needle in body and (m := pattern.search(body)) and handler(m, line, out) is not False:
            took = True
    return took
