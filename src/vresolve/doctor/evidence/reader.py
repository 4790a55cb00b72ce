"""Any pasted text -> :class:`~.model.Evidence`: each line read once, in bounded memory, by every reader.

The report readers (collect_env, nvidia-smi, package lists, installers) say whether a line was theirs; a line no
report reader took, and that carries no program's log prefix, is also read as a user's words (:mod:`.prose`).
The message readers (signals, messages, builds, environment, Python's answers) read every line.
"""

from __future__ import annotations

from typing import Protocol

from .builds import BuildReader
from .collect import Collector
from .collect_env import CollectEnvReader
from .conda_plan import CondaPlanReader
from .dsreport import DsReportReader
from .environment import EnvironmentReader
from .envtools import EnvToolsReader
from .extreports import ExtReportsReader
from .failures import FailureReader
from .families import FamilyReader
from .gpureports import GpuReportsReader
from .installer import InstallerReader
from .isolation import retype_isolation
from .lines import LINE_LIMIT, Line, Relayed, Source, iter_lines
from .lists import ListReader
from .messages import MessageReader
from .model import Evidence
from .prose import ProseReader
from .repl import ReplReader
from .said import SaidReader, retype_said
from .shm import ShmReader, retype_shm
from .signals import SignalReader
from .smi import SmiReader
from .tensorflow import retype_tensorflow

__all__ = ["read_evidence"]

class _Reader(Protocol):
    def feed(self, line: Line, out: Collector) -> bool: ...


def _program_output(line: Line, out: Collector) -> bool:
    """Whether the line is a program's own output that no report or user wrote: a logger's line, a traceback's
    frame or the source line under it. (Such lines are read by the message readers only.)"""
    body = line.body
    if body.lstrip().startswith('File "') and ", line " in body:
        out.kinds.add("traceback")
        out.mark("frame", line)
        return True
    if "Traceback (most recent call last)" in body:
        out.kinds.add("traceback")
        return True
    if "vllm" in line.prefixes:  # (a report or the user's words relayed through vLLM's logger are read as such)
        out.kinds.add("log")
    return "uvicorn" in line.prefixes or (out.near("frame", line, 1) and body.startswith("    "))


def read_evidence(source: Source, *, line_limit: int = LINE_LIMIT) -> Evidence:
    """The facts in ``source`` (a str, bytes, or a text or binary stream), each with the line that shows it.

    Reads line by line: memory stays bounded whatever the size (a line keeps its first ``line_limit``
    characters; each kind of fact keeps a bounded number of distinct sightings).
    """
    out = Collector()
    reports: tuple[_Reader, ...] = (CollectEnvReader(), SmiReader(), ListReader(), InstallerReader(), ReplReader(),
                                    DsReportReader(), EnvToolsReader(), CondaPlanReader(), GpuReportsReader(),
                                    ExtReportsReader())
    failures = FailureReader()
    messages: tuple[_Reader, ...] = (SignalReader(), FamilyReader(), MessageReader(), BuildReader(), EnvironmentReader(),
                                     failures, ShmReader())
    prose = ProseReader()
    said = SaidReader()
    count = cut_lines = 0
    relayed = Relayed()
    for count, (text, cut) in enumerate(iter_lines(source, line_limit), start=1):
        cut_lines += cut
        prefixes, body = relayed.read(text)
        if not body.strip():
            continue
        line = Line(no=count, text=text, body=body, lower=body.lower(), prefixes=prefixes)
        for reader in messages:
            reader.feed(line, out)
        if _program_output(line, out):
            continue
        taken = False
        for reader in reports:
            taken = reader.feed(line, out) or taken
        if not taken and not out.near("build-line", line, 0):
            prose.feed(line, out)
            said.feed(line, out)
    failures.end(out)
    out.keep_deferred()
    if out.has("signals") and not out.kinds:
        out.kinds.add("log")
    return retype_said(retype_tensorflow(retype_shm(retype_isolation(out.freeze(count, cut_lines)))))
