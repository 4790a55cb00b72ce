"""The likely cause of an error the paste's facts do not settle: an observed base rate, said as one.

Where a paste shows a failure and no cause's predicate holds, doctor says "cause not named" with what to paste.
Where the failure's typed lines are of a kind that went with one cause in most of the labelled excerpts of public
threads (``compat_matrix/likely_causes.yaml``, counted by ``bench/likely_causes.py``), that entry also says which
cause that was and how often: a lead to check first, not a finding (the error stays not settled, exit 1, and no
finding names the cause).

A paste's features are its typed lines, never its words: the signals read (``sig:sigbus``), the kinds of failure
line (``fail:nccl``), what an installer could not do (``pip:no-matching-distribution:none``: pip's "from versions:
none"), a process killed (``killed:build``), a library not found (``lib:cudart``), the type of the exception raised (``exc:OSError``), the
module whose import failed (``import:torch``); each also paired with where it happened (``&ctx:container``,
``&ctx:build``, ``&ctx:windows``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from ..matrix import Matrix
from ..matrix.likely import Likely, likely_table
from .evidence.model import Evidence, Seen
from .evidence.signals import CONTEXT_SIGNALS
from .paste_predicates import pasted_line

__all__ = ["Lead", "features", "likely_lead"]

#: what an installer could not do (its other events say what it did)
_INSTALLER_FAILED = frozenset({"no-matching-distribution", "requires-python", "resolution-failed", "build-failed",
                               "no-wheel-for-python", "conflict", "index-unreachable"})
#: signals that say what was in use or asked for, not what failed
_IN_USE = frozenset({*CONTEXT_SIGNALS, "nccl-in-use"})
_EXCEPTION_RE = re.compile(r"(?:[\w.]*\.)?([A-Za-z_]\w{2,40}?)(?::|$)")
_WORDS = {"sig": "the typed error `{}`", "fail": "a failure line of kind `{}`", "pip": "the installer's `{}`",
          "killed": "a {} process killed", "lib": "the library `{}` not found", "exc": "a Python `{}`",
          "import": "an import of `{}` failing"}
_WHERE = {"container": " in a container", "build": " during a build", "windows": " on Windows"}


def _exception(text: str) -> str | None:
    m = _EXCEPTION_RE.match(text.strip())
    return m[1] if m else None


def _typed(e: Evidence) -> Iterable[tuple[str, Seen[Any]]]:
    yield from ((f"sig:{s.value.code}", s) for s in e.signals if s.value.code not in _IN_USE)
    yield from ((f"fail:{f.value}", f) for f in e.failures)
    failed = [i for i in e.installer if i.value.action in _INSTALLER_FAILED]
    # pip's "(from versions: none)" and a list of others are told apart (the paste's "No matching distribution" too)
    offered = {i.value.offered for i in failed if i.value.offered is not None}
    told = ":others" if any(offered) else ":none" if offered else ""
    yield from ((f"pip:{i.value.action}{told if i.value.action == 'no-matching-distribution' else ''}", i)
                for i in failed)
    yield from ((f"killed:{'build' if k.value.in_build else 'run'}", k) for k in e.killed)
    yield from ((f"lib:{lib.value.name.lower()}", lib) for lib in e.libraries if lib.value.missing)
    for x in e.exceptions:
        kind = _exception(str(x.value))
        if kind:
            yield f"exc:{kind}", x
    yield from ((f"import:{i.value.module.split('.')[0]}", i) for i in e.import_failures)


def features(e: Evidence) -> dict[str, list[Seen[Any]]]:
    """The paste's features (see the module's text), each with the lines that show it, in line order."""
    where = {name for name, shown in (("container", e.container), ("build", e.build_env_paths or e.gencode or e.nvcc),
                                       ("windows", [s for s in e.system if s.value == "windows"])) if shown}
    out: dict[str, list[Seen[Any]]] = {}
    for name, seen in _typed(e):
        for key in (name, *(f"{name}&ctx:{w}" for w in sorted(where))):
            out.setdefault(key, []).append(seen)
    return {k: sorted(v, key=lambda s: s.line) for k, v in out.items()}


_SAID = {"pip:no-matching-distribution:none": "pip's \"No matching distribution\" with \"(from versions: none)\"",
         "pip:no-matching-distribution:others": "pip's \"No matching distribution\" with other versions listed",
         "pip:no-matching-distribution": "pip's \"No matching distribution\""}


def _words(feature: str) -> str:
    base, _, where = feature.partition("&ctx:")
    if base in _SAID:
        return _SAID[base] + _WHERE.get(where, "")
    kind, _, value = base.partition(":")
    return _WORDS.get(kind, "`{}`").format(value) + _WHERE.get(where, "")


def _runner_up(said: str) -> str:
    """``"unclear 10"`` -> "10 had a cause no code of doctor's describes"."""
    label, _, n = said.rpartition(" ")
    were = "was" if n == "1" else "were"
    return f"{n} " + {"unclear": "had a cause no code of doctor's describes", "unknown": "had no cause the thread settled",
                      "healthy": f"{were} no fault"}.get(label, f"{were} {label}")


class Lead(msgspec.Struct, frozen=True, kw_only=True):
    """The cause a failure's kind of line most often had in labelled public reports: a base rate, not a finding."""

    cause: str
    were: int
    of: int
    lines: str  # the kind of line, in words: "the installer's `no-matching-distribution:none`"
    others: str | None = None  # the next most frequent label, in words
    evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "were": self.were, "of": self.of, "lines": self.lines, "others": self.others,
                "evidence": list(self.evidence)}


def likely_lead(e: Evidence, matrix: Matrix) -> Lead | None:
    """The cause the paste's kind of failure line most often had in the labelled public reports (the feature of the
    paste whose base rate has the highest lower bound); None where no feature of the paste has one."""
    table = likely_table(matrix.path).by_feature()
    if not table:
        return None
    shown = features(e)
    ranked: list[tuple[Likely, str]] = sorted(((table[f], f) for f in shown if f in table),
                                              key=lambda rf: (-rf[0].lower, -rf[0].of, rf[1]))
    if not ranked:
        return None
    best, feature = ranked[0]
    return Lead(cause=best.cause, were=best.were, of=best.of, lines=_words(feature),
                others=_runner_up(best.runner_up) if best.runner_up else None,
                evidence=tuple(dict.fromkeys(pasted_line(s) for s in shown[feature]))[:3])
