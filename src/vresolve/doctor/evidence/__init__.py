"""Pasted text read into typed facts: tracebacks and logs, collect_env reports, nvidia-smi, pip/uv/conda lists, build
logs, or several mixed in one paste. Pure: text in, facts out.

- :func:`read_evidence`: text (str, bytes or a stream of any size) -> :class:`Evidence`, each fact with its line;
- :func:`to_host_facts`: the facts the live probe also produces, as its objects (``Host``, ``EnvReport``), so that
  the same checks judge pasted and live evidence.
"""

from __future__ import annotations

from .convert import HostFacts, to_host_facts
from .model import (
    DERIVED,
    DOWNLOAD,
    KINDS,
    MESSAGE,
    PROSE,
    REPORT,
    BuiltFor,
    Dist,
    Evidence,
    Gpu,
    ImportFailure,
    InstallerEvent,
    Killed,
    Library,
    Nvcc,
    Seen,
    Signal,
    Symbol,
)
from .reader import read_evidence
from .summary import listed_gpus, summary

__all__ = ["read_evidence", "to_host_facts", "HostFacts", "summary", "listed_gpus", "Evidence", "Seen", "Gpu", "Dist", "Nvcc", "Library", "Symbol", "Killed",
           "InstallerEvent", "ImportFailure", "BuiltFor", "Signal", "KINDS", "REPORT", "MESSAGE", "DERIVED", "PROSE",
           "DOWNLOAD"]
