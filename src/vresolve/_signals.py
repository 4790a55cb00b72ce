"""The signals that end a run, as exceptions: raised by the entry point's handler (:mod:`vresolve._entry`) where
the program is, and told apart by the CLI when it says why it stopped. Imports nothing: the entry point
loads it before the output cache has answered.
"""

from __future__ import annotations

__all__ = ["Terminated", "HungUp"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that ``finally`` blocks and context managers clean up
    (temporary directories, a running uv) as for Ctrl-C; the process then exits 143 (128 + SIGTERM)."""


class HungUp(Terminated):
    """SIGHUP (the terminal or the ssh connection went away): cleaned up as for SIGTERM, then exit 129."""
