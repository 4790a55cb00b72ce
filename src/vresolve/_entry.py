"""The ``vresolve`` command's entry point: the plan output cache first, then the CLI.

Imports nothing heavy before the cache has answered (see :mod:`vresolve._cache`).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


class _Tee:
    """A text stream that writes through to the real one and remembers what was written."""

    def __init__(self, real: object) -> None:
        self._real = real
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return self._real.write(s)  # type: ignore[attr-defined, no-any-return]

    def __getattr__(self, name: str) -> object:  # isatty, fileno, flush, encoding, ...
        return getattr(self._real, name)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ._cache import plan_output_key, read_plan_output, write_plan_output

    key = plan_output_key(argv)
    if key is not None:
        hit = read_plan_output(key)
        if hit is not None:
            code, out, err = hit
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            sys.stderr.buffer.write(err)
            return code
    from .cli import main as cli_main

    if key is None:
        return cli_main(argv)
    out_tee, err_tee = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out_tee, err_tee  # type: ignore[assignment]
    try:
        code = cli_main(argv)
    finally:
        sys.stdout, sys.stderr = out_tee._real, err_tee._real
    if code in (0, 1):  # a plan or a no-stack answer; usage errors are not kept
        write_plan_output(key, code, "".join(out_tee.parts).encode(), "".join(err_tee.parts).encode())
    return code
