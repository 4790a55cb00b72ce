"""The commands README.md shows, as written: every line of its ```sh blocks (a comment-only line is not a command).

Standard library only: .ci/run runs it with the system's python3 before any environment exists, to take the
Quickstart's two commands (install and run; install and test) from the README itself:

    python3 tests/readme.py quickstart      # each command, NUL-terminated
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w*)\s*$")
_HEADING = re.compile(r"^(#+)\s+(.*\S)\s*$")


def commands(text: str | None = None) -> list[tuple[str, str]]:
    """(section heading, command) for every command line of every ```sh block, in the README's order."""
    out: list[tuple[str, str]] = []
    section, fence = "", None
    for line in (README.read_text() if text is None else text).splitlines():
        m = _FENCE.match(line)
        if m:
            fence = None if fence is not None else m[1]
            continue
        if fence is None:
            h = _HEADING.match(line)
            section = h[2] if h else section
        elif fence == "sh" and line.strip() and not line.lstrip().startswith("#"):
            out.append((section, line.rstrip()))
    return out


def quickstart() -> list[str]:
    found = [c for s, c in commands() if s == "Quickstart"]
    if len(found) != 2:
        raise SystemExit(f"README.md: expected 2 commands under Quickstart (install and run; install and test), "
                         f"found {len(found)}")
    return found


if __name__ == "__main__":
    if sys.argv[1:] != ["quickstart"]:
        raise SystemExit("usage: python3 tests/readme.py quickstart")
    sys.stdout.write("".join(c + "\0" for c in quickstart()))
