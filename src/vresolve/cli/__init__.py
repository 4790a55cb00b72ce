"""The command line: parse arguments, call the pure layers, print once (through :mod:`vresolve.render`).

- :mod:`.args`: the parser, every flag's name, and turning flags into a Host and a Request;
- :mod:`.targets`: the machine to plan for when it is not this one, from its flags;
- :mod:`.commands`: one function per command (plan, lock, detect, matrix, completion; doctor, apply, fleet and
  the grid have modules of their own); :mod:`.common`: what they share (the console, the JSON printer, ...);
- :mod:`.dispatch`: :func:`main`, every command by name; :mod:`.run`: one command line run, which catches only
  VresolveError (printed, mapped to its exit code) and KeyboardInterrupt; anything else is a bug and propagates.
"""

from __future__ import annotations

from .args import build_parser
from .dispatch import main

__all__ = ["main", "build_parser"]
