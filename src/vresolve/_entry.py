"""The ``vresolve`` command's entry point: the plan output cache first, then the CLI.

Imports nothing heavy before the cache has answered (see :mod:`vresolve._cache`).
"""

from __future__ import annotations

import sys

from ._signals import HungUp, Terminated

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


def _on_sigterm(signum: int, frame: object) -> None:
    import _signal  # type: ignore[import-not-found]  # built in: ``signal`` would import enum (ms)

    for sig in (_signal.SIGTERM, _signal.SIGHUP):  # once: the cleanup itself is not interrupted again
        _signal.signal(sig, _signal.SIG_IGN)
    raise HungUp if signum == _signal.SIGHUP else Terminated


def _say(text: str) -> None:
    """The last line on stderr, when there still is one to write to (after SIGHUP the terminal is gone)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail on the closed pipe again (the way
    Python's documentation of SIGPIPE recommends)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout (a test's capture): nothing to flush
        pass


def main(argv: list[str] | None = None) -> int:
    """``vresolve ARGV``; exit 130 on SIGINT, 143 on SIGTERM, 129 on SIGHUP, after cleaning up."""
    import _signal  # type: ignore[import-not-found]

    previous: dict[int, object] = {}
    try:
        for sig in (_signal.SIGTERM, _signal.SIGHUP):
            if sig == _signal.SIGHUP and _signal.getsignal(sig) == _signal.SIG_IGN:
                continue  # nohup: hangups stay ignored
            previous[sig] = _signal.signal(sig, _on_sigterm)
    except ValueError:  # not the main thread (vresolve called as a library): no handler
        pass
    try:
        return _main(argv)
    except BrokenPipeError:  # `vresolve ... | head`: the reader left; say nothing more, as a killed writer would
        _quiet_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a writer the pipe ended
    except HungUp:
        _say("vresolve: hung up\n")
        return 129
    except Terminated:
        _say("vresolve: terminated\n")
        return 143
    except KeyboardInterrupt:
        _say("vresolve: interrupted\n")
        return 130
    finally:
        for sig, handler in previous.items():
            _signal.signal(sig, handler)
        if argv is None:  # the console script (or python -m vresolve): the process ends with this command
            _leave_to_exit()


def _leave_to_exit() -> None:
    """Freeze every object the run made (``gc.freeze``), so that the garbage collector's passes at interpreter exit
    skip them: they walk every object of the matrix and of each imported module, about a sixth of a cold plan's CPU.
    atexit handlers still run and objects outside reference cycles are still freed; Python never promised to
    finalize the rest at exit. Not for a library caller's main(argv): its process goes on."""
    import gc

    gc.freeze()


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ._cache import expect_late_key, forget_late_key, new_run, plan_output_key, read_plan_output, write_plan_output

    new_run()  # one warning about an untrusted cache per run (a library caller runs many in one process)
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

    # a plan that probes the machine: keyed by the CLI once the machine is known (vresolve._cache.LatePlanKey)
    late = expect_late_key(argv, lambda: (len(out_tee.parts), len(err_tee.parts))) if key is None else None
    if key is None and late is None:
        return cli_main(argv)
    out_tee, err_tee = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out_tee, err_tee  # type: ignore[assignment]
    try:
        code = cli_main(argv)
    except SystemExit as e:  # argparse, after printing --help
        code = -1 if e.code not in (0, None) else 0
        sys.stdout, sys.stderr = out_tee._real, err_tee._real
        if code == 0 and key is not None:
            write_plan_output(key, code, "".join(out_tee.parts).encode(), "".join(err_tee.parts).encode())
        raise
    finally:
        sys.stdout, sys.stderr = out_tee._real, err_tee._real
        forget_late_key()
    if late is not None:  # kept only when the CLI keyed it: a machine known without the matrix, no --keep-torch
        key, (out_since, err_since) = late.key, late.since
        out_tee.parts, err_tee.parts = out_tee.parts[out_since:], err_tee.parts[err_since:]
    if key is not None and code in (0, 1):  # a plan or a no-stack answer; usage errors are not kept
        write_plan_output(key, code, "".join(out_tee.parts).encode(), "".join(err_tee.parts).encode())
    return code
