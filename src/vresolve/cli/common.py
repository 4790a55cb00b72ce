"""What the commands of the CLI share: a one-line quoting of inputs in messages, the console (rich) that human
output goes through, the ``--json`` printer, the ``-o DIR`` check, reading a lock's header (``--lock FILE``), and
the words of a progress line (whether to show one; a Ray cluster named).

Light on purpose (every command imports it): rich, the renderers and the lock reader are imported when used.
"""

from __future__ import annotations

import os
import sys

from ..errors import UsageError

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

__all__ = ["shown", "new_console", "print_json", "check_output_dir", "lock_header_of", "no_progress",
           "ray_cluster"]


def shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a one-line message, cut to ``limit`` characters (a 5000-digit input stays readable)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def new_console(stderr: bool = False) -> Any:
    from rich.console import Console

    no_color = bool(os.environ.get("NO_COLOR"))
    console = Console(stderr=stderr, no_color=no_color, highlight=False, soft_wrap=not stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        # piped or redirected (stdout or stderr, to a file or a CI log): no terminal to fit, so tables keep their
        # whole cells and lines are not broken (rich would cut or wrap them at 80 columns); a table is as wide as its
        # widest row, never padded out to this width
        console.width = _PIPE_WIDTH
    console.on_broken_pipe = _broken_pipe  # type: ignore[method-assign]  # rich's own exits 1, a no-stack's code
    return console


def _broken_pipe() -> None:
    """The reader of stdout left (``| head``): the entry point exits quietly, as for any other write."""
    raise BrokenPipeError


_PIPE_WIDTH = 100_000


def print_json(obj: dict[str, Any]) -> None:
    from ..render import to_json

    sys.stdout.write(to_json(obj) + "\n")


def check_output_dir(path: Path, writing: bool = True) -> None:
    """``-o DIR`` must be a directory that can be written, or one that can be made: checked before uv runs."""
    import stat

    here = path
    while True:  # the directory itself, else the nearest existing one above it, which must take the new one
        try:
            mode = os.stat(here).st_mode
            break
        except FileNotFoundError:
            if here.parent == here or not writing:
                return
            here = here.parent
        except OSError as e:  # not a directory on the way, a name too long, a loop of links
            raise UsageError(f"-o: {shown(str(path), 200)} cannot be used ({e.strerror or e})") from None
    if not stat.S_ISDIR(mode):
        what = "is not a directory" if here == path else f"cannot be made: {shown(str(here), 200)} is not a directory"
        raise UsageError(f"-o: {shown(str(path), 200)} {what}")
    if writing and not os.access(here, os.W_OK | os.X_OK):
        raise UsageError(f"-o: {shown(str(path), 200)} cannot be written: {shown(str(here), 200)} is not writable")


def lock_header_of(path: str) -> dict[str, Any]:
    """The recorded assumptions of the lock at ``path`` (``--lock FILE``), checked for shape; UsageError
    naming the file when it is not a readable vresolve lock."""
    from ..doctor.lock import lock_header_problem
    from ..lock import read_lock_header

    name = shown(path, 200)
    try:
        with open(path, "rb") as fh:  # the header is in the first lines: never more than 1 MiB
            text = fh.read(1 << 20).decode("utf-8", errors="replace")
        header = read_lock_header(text, strict=True)
    except OSError as e:
        raise UsageError(f"--lock: cannot read {name} ({e.strerror or e})") from None
    except ValueError as e:
        raise UsageError(f"--lock: {name} is not a valid vresolve lock: {e}") from None
    if header is None:
        raise UsageError(f"--lock: {name} is not a vresolve lock (no '# vresolve-lock:' line)")
    problem = lock_header_problem(header)
    if problem:
        raise UsageError(f"--lock: {name} is not a valid vresolve lock: its header's {problem}")
    return header


def ray_cluster(address: str) -> str:
    """``--ray [ADDRESS]`` in words, for a progress line."""
    return f"the Ray cluster at {shown(address, 120)}" if address not in ("", "auto") else \
        "the Ray cluster (RAY_ADDRESS, else a local one)"


def no_progress(args: argparse.Namespace) -> bool:
    """No progress on stderr: ``-q``, or ``--json`` (the JSON is the whole answer)."""
    return bool(getattr(args, "json", None) or getattr(args, "quiet", None))
