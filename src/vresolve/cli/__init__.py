"""The command line: parse arguments, call the pure layers, print once (through :mod:`vresolve.render`).

- :mod:`.args`: the parser, every flag's name, and turning flags into a Host and a Request;
- :mod:`.targets`: the machine to plan for when it is not this one, from its flags;
- :mod:`.commands`: one function per command, and :func:`main`, which catches only VresolveError
  (printed, mapped to its exit code) and KeyboardInterrupt; anything else is a bug and propagates.
"""

from __future__ import annotations

from .args import build_parser
from .commands import main

__all__ = ["main", "build_parser"]
