"""Running one command line: the parser built with the flags of the command at hand only, the command run, and
its VresolveError (or interrupt) mapped to an exit code. :mod:`.dispatch` names the commands (:func:`.dispatch.main`);
the grid runs its plans through :func:`run_cli` with the plan command alone (:mod:`.grid`).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import EXIT_USAGE, UsageError, VresolveError
from .args import _opt, build_parser, command_of
from .common import print_json
from .shared import shared

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    Command = Callable[[argparse.Namespace], int]

__all__ = ["run_cli", "json_name"]


def json_name(args: argparse.Namespace) -> str:
    """The name in the ``schema`` of this command's --json (``vresolve.NAME/1``), one per shape: a command's, or
    for matrix and fleet its action's (fleet detect's inventory and fleet plan share DESIGN.md's vresolve.fleet/1;
    matrix grid keeps vresolve.grid/1)."""
    command = _opt(args, "command") or "cli"
    action = _opt(args, f"{command}_command")
    if command == "matrix" and action == "show":
        return f"matrix.{_opt(args, 'table') or 'summary'}"
    if command == "matrix" and action == "grid":
        return "grid"
    if action and (command, action) not in (("fleet", "detect"), ("fleet", "plan")):
        return f"{command}.{action}"
    return command


def _setup_logging(args: argparse.Namespace) -> None:
    verbose, quiet = _opt(args, "verbose", 0) or 0, _opt(args, "quiet", 0) or 0
    if not verbose and not quiet:
        return  # the default: warnings only, and nothing logs below that by default
    import logging

    level = logging.WARNING - 10 * verbose + 10 * quiet
    logging.basicConfig(level=max(logging.DEBUG, level), format="vresolve: %(message)s", stream=sys.stderr)


def run_cli(argv: Sequence[str] | None, commands: Mapping[str, Command], matrix_actions: Mapping[str, Command]
            ) -> int:
    """``vresolve ARGV`` with these commands and ``matrix`` actions (name -> function): parsed with the flags of the
    command at hand only, run; a VresolveError is printed (one line, or --json's error envelope) and mapped to its exit
    code, KeyboardInterrupt (SIGINT; SIGTERM and SIGHUP too, under the entry point) to 130 (143, 129). Anything else is
    a bug and propagates."""
    argv = list(sys.argv[1:] if argv is None else argv)
    only = command_of(argv)
    parser = shared(("parser", only), lambda: build_parser(only))  # only the flags of the command at hand
    command = "cli"
    try:
        args = parser.parse_args(argv)
        args.argv = tuple(argv)  # as given: the plan's next-step line repeats its flags
        _setup_logging(args)
        command = json_name(args)
        run = commands.get(args.command)
        if run is not None:
            if args.command != "completion":  # the machine's overrides, checked as their flags are
                from .targets import check_env_overrides

                check_env_overrides(os.environ)
            return run(args)
        if args.command == "matrix":
            action = matrix_actions.get(args.matrix_command)
            if action is None:
                raise UsageError("vresolve matrix: expected an action: validate, show, refresh or grid")
            return action(args)
        parser.print_help()
        return EXIT_USAGE
    except VresolveError as e:
        from ..render.shell import escape_controls

        if "--json" in argv:
            from ..render import error_envelope

            print_json(error_envelope(command, e))
        else:
            print(f"vresolve: error: {escape_controls(str(e), lines=True)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # SIGINT; SIGTERM and SIGHUP too, under the entry point (vresolve._entry)
        from .._signals import HungUp, Terminated

        word, code = ("hung up", 129) if isinstance(e, HungUp) else ("terminated", 143) if isinstance(
            e, Terminated) else ("interrupted", 130)
        try:  # after SIGHUP the terminal is gone: nothing to say it on
            print(f"vresolve: {word}", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return code
