"""Diagnose a broken environment or an error log: Host + Matrix + reports -> Findings. Pure.

The inputs come from detection (:func:`vresolve.detect.detect_host`, ``probe_environment``,
``library_shadows``) and from the user (a log); this package only compares them with the matrix.

- :mod:`.facts`: a Finding (cause code, severity, what happened, evidence, fix), what doctor observed;
- :mod:`.logs`: log lines matched against the known-issues table;
- :mod:`.checks`: the environment and the machine judged (:func:`diagnose`);
- :mod:`.lock`: a machine judged against the assumptions a lock recorded;
- :mod:`.evidence`: pasted text (logs, collect_env reports, nvidia-smi, pip/conda lists) read into typed facts,
  each with its line, and into the probe's own objects (not yet judged by :mod:`.checks`).
"""

from __future__ import annotations

from .checks import diagnose
from .facts import SEVERITIES, Finding, observations, worst_exit_code
from .lock import check_against_lock
from .logs import match_log

__all__ = ["Finding", "SEVERITIES", "diagnose", "check_against_lock", "match_log", "observations", "worst_exit_code"]
