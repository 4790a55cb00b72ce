"""The edge where results become text: the only layer that prints or quotes for a shell.

- :mod:`.json`: the ``--json`` objects (``vresolve.<name>/1``, a name per shape, sorted keys);
- :mod:`.text`: the human output (rich renderables);
- :mod:`.shell`: every shell artefact (command lines, exports for bash / fish / dotenv, the build
  script), written by one quoting layer.
"""

from __future__ import annotations

from .json import (
    envelope,
    error_envelope,
    matrix_summary_view,
    matrix_table_view,
    plan_error_view,
    plan_view,
    source_plan_view,
    stack_view,
    to_json,
)
from .shell import SHELLS, exports_text, render_script, sh_value, shell_line
from .text import (
    detect_human,
    doctor_human,
    error_human,
    matrix_table_human,
    plan_human,
    source_plan_human,
)

__all__ = ["envelope", "error_envelope", "to_json", "matrix_summary_view", "matrix_table_view",
           "matrix_table_human", "detect_human", "plan_view", "plan_error_view", "plan_human", "stack_view",
           "error_human", "source_plan_view", "source_plan_human", "doctor_human", "SHELLS", "exports_text",
           "render_script", "sh_value", "shell_line"]
