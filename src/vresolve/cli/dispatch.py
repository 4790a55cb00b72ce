"""Every command's function, by name: :func:`main` runs ``vresolve ARGV`` (through :func:`.run.run_cli`). The
commands that are not plans (doctor, apply, fleet, the grid and the page) are imported when they run.
"""

from __future__ import annotations

import argparse

from .commands import (
    cmd_completion,
    cmd_detect,
    cmd_lock,
    cmd_matrix_refresh,
    cmd_matrix_show,
    cmd_matrix_validate,
    cmd_plan,
)
from .run import run_cli

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``vresolve ARGV``: catches only VresolveError (printed, mapped to its exit code) and KeyboardInterrupt."""
    return run_cli(argv, {"plan": cmd_plan, "lock": cmd_lock, "apply": _cmd_apply, "doctor": _cmd_doctor,
                          "detect": cmd_detect, "fleet": _cmd_fleet, "site": _cmd_site, "completion": cmd_completion},
                   {"validate": cmd_matrix_validate, "show": cmd_matrix_show, "refresh": cmd_matrix_refresh,
                    "grid": _cmd_matrix_grid})


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import cmd_doctor

    return cmd_doctor(args)


def _cmd_fleet(args: argparse.Namespace) -> int:
    from .fleet import cmd_fleet

    return cmd_fleet(args)


def _cmd_apply(args: argparse.Namespace) -> int:
    from .apply import cmd_apply

    return cmd_apply(args)


def _cmd_matrix_grid(args: argparse.Namespace) -> int:
    from .grid import cmd_grid
    from .shared import sharing

    with sharing():  # the matrix read once, for every plan (and every worker) too
        return cmd_grid(args)


def _cmd_site(args: argparse.Namespace) -> int:
    from .grid import cmd_site
    from .shared import sharing

    with sharing():  # the matrix read once, for every plan (and every worker) too
        return cmd_site(args)
