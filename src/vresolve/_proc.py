"""Children that never outlive vresolve: their own process group, stopped as a whole, and (Linux) sent
SIGTERM by the kernel when vresolve dies, even by SIGKILL. Used by ``lock`` (uv pip compile) and ``apply``
(every step of a plan).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # subprocess (3 ms) only where a child is stopped: a human plan names uv without it
if TYPE_CHECKING:
    import subprocess

__all__ = ["dies_with_us", "stop_group", "uv_bin", "uv_command"]


def uv_bin() -> str:
    """The uv that vresolve depends on (the ``uv`` package), else the one on PATH; UsageError when none."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        import shutil

        from .errors import UsageError

        found = shutil.which("uv")
        if not found:
            raise UsageError("uv is not installed (pip install uv)") from None
        return found


def uv_command() -> str:
    """How a command line for this machine names uv: ``uv`` when one is on PATH, else the path of the uv that
    vresolve depends on (installed beside it, not on PATH after ``pip install``); ``uv`` when there is none."""
    import shutil

    if shutil.which("uv"):
        return "uv"
    from .errors import UsageError

    try:
        return uv_bin()
    except UsageError:
        return "uv"


def stop_group(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """Stop a child and whatever it started (its own process group): SIGTERM, up to 5 s, then SIGKILL; reaped."""
    import signal
    import subprocess

    try:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    finally:  # also when a second interrupt comes during the wait
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def dies_with_us() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has Linux send the child SIGTERM when vresolve dies, even by SIGKILL (which no
    handler sees): prctl(PR_SET_PDEATHSIG). None where there is no such call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded here: the child must not import after fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # vresolve died before the call: nobody would send it
            os._exit(143)

    return hook
