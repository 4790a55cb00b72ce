"""``vresolve apply``: a plan (or a lock) run for real on this machine, into a new environment.

- :mod:`.run`: one command run to its end, no shell, in its own process group, its output streamed;
- :mod:`.job`: a plan as a :class:`Job`, the paths it makes (claimed first, removed on failure), its steps and
  checks run in order.

The CLI (:mod:`vresolve.cli.apply`) adds the question before anything changes, ``doctor`` on the result and
the lock of what was installed; the render layer draws the progress.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .guard import MARKER, Guard, recover
from .job import (
    ACTIVATE,
    CheckOutcome,
    Claim,
    Job,
    Reporter,
    StepOutcome,
    check_targets,
    check_unsafe,
    claim,
    environ,
    installed_versions,
    lock_job,
    run_checks,
    run_steps,
    source_job,
    wheel_job,
)
from .run import Downloads, Ran, run_command

if TYPE_CHECKING:
    from ..doctor import Finding
    from ..host import Host
    from ..matrix import Matrix

__all__ = ["ACTIVATE", "MARKER", "Guard", "recover", "CheckOutcome", "Claim", "Downloads", "Job", "Ran", "Reporter", "StepOutcome", "check_targets", "check_unsafe", "claim",
           "environ", "failure_causes", "installed_versions", "lock_differences", "lock_job", "run_checks", "run_command",
           "run_steps", "source_job", "wheel_job"]

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def lock_differences(requirements: str, installed: Mapping[str, str]) -> list[str]:
    """Where a lock's ``requirements.txt`` and an environment's distributions (normalized name -> version)
    disagree, one line each: a locked package missing, or at another version. Packages the lock does not name
    (pip, setuptools seeded into the environment) are not differences."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    out = []
    for line in requirements.splitlines():
        m = _PIN.match(line)
        if not m:
            continue
        name, version = canonicalize_name(m[1]), m[2]
        have = installed.get(name)
        if have is None:
            out.append(f"{name}=={version} is locked, not installed")
            continue
        try:
            same = Version(have) == Version(version)
        except InvalidVersion:
            same = have == version
        if not same:
            out.append(f"{name}=={version} is locked, {have} is installed")
    return out


def failure_causes(job: Job, failed: StepOutcome, host: Host, matrix: Matrix) -> list[Finding]:
    """What doctor can name of a failed step: its output (a source build's whole log, read from its end) judged as
    ``doctor --log`` judges a paste (``build-oom`` when the compiler was killed, an unreachable index, ...)."""
    from ..doctor import diagnose
    from ..doctor.evidence import read_evidence
    from ..doctor.pasted import judge_pasted, merge_log_findings

    text = _tail_of(job.log) if job.log is not None else "\n".join(failed.ran.tail if failed.ran else ())
    if not text.strip():
        return []
    signed = [f for f in diagnose(host, matrix, None, log=text) if f.source == "log"]
    typed, _ = judge_pasted(read_evidence(text), matrix)  # the same judgement as `doctor --log` of that output
    return merge_log_findings(signed, typed)


def _tail_of(log: Path, limit: int = 16 << 20) -> str:
    """The last ``limit`` bytes of a log (where the compiler's death is)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
