"""What the user states instead of letting vresolve probe it (:class:`Overrides`), and how every probe reads the
machine under it: files below its root, programs with its environment and a timeout (their process group killed
past it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import subprocess


class Overrides(msgspec.Struct, frozen=True, kw_only=True):
    """Facts the user states instead of letting vresolve probe them."""

    driver: str | None = None
    cuda_driver: str | None = None
    gpus: tuple[str, ...] | None = None  # names or sm_XY, resolved against the matrix by the caller
    python: str | None = None
    platform: str | None = None
    nvidia_smi: str = "nvidia-smi"
    smi_timeout: float = 10.0
    use_nvml: bool = True
    root: str = "/"  # where /proc, /sys, /dev, /usr/local/cuda live (tests point it at a captured tree)
    environ: Mapping[str, str] = msgspec.field(default_factory=lambda: dict(os.environ))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **flags: object) -> Overrides:
        """Flags first (those not None), then the ``VRESOLVE_*`` variables."""
        env = dict(os.environ if environ is None else environ)
        gpus = flags.get("gpus")
        if gpus is None and env.get("VRESOLVE_GPUS"):
            gpus = tuple(g.strip() for g in env["VRESOLVE_GPUS"].split(",") if g.strip())
        values = {
            "driver": flags.get("driver") or env.get("VRESOLVE_DRIVER") or None,
            "cuda_driver": flags.get("cuda_driver") or env.get("VRESOLVE_CUDA_DRIVER") or None,
            "python": flags.get("python") or env.get("VRESOLVE_PYTHON") or None,
            "platform": flags.get("platform") or env.get("VRESOLVE_PLATFORM") or None,
            "nvidia_smi": env.get("VRESOLVE_NVIDIA_SMI") or "nvidia-smi",
            "use_nvml": env.get("VRESOLVE_NO_NVML", "") in ("", "0"),
            "root": env.get("VRESOLVE_PROBE_ROOT") or "/",
        }
        return cls(gpus=gpus, environ=env, **values)  # type: ignore[arg-type]


def _path(o: Overrides, p: str) -> Path:
    return Path(o.root) / p.lstrip("/")


def _read(o: Overrides, p: str) -> str | None:
    try:
        return _path(o, p).read_text(errors="replace")
    except OSError:
        return None


_TIMED_OUT = "timed out after"


def _run(o: Overrides, argv: list[str]) -> tuple[int, str] | str:
    """Run a probe; (exit code, output) or a one-line reason it could not run.

    The probe runs in a process group of its own; past ``o.smi_timeout`` the whole group is killed and not
    waited for beyond a second (an nvidia-smi stuck in the driver may not die at once).
    """
    import subprocess

    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace", env={**o.environ, "LC_ALL": "C"}, start_new_session=True)
    except FileNotFoundError:
        return f"{argv[0]}: not found on PATH"
    except OSError as e:
        return f"{argv[0]}: could not run ({e.strerror or e})"
    try:
        out, err = p.communicate(timeout=o.smi_timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        return f"{argv[0]}: {_TIMED_OUT} {o.smi_timeout:g} s"
    return p.returncode, out + err


def _kill_group(p: subprocess.Popen[str]) -> None:
    """SIGKILL to the probe's process group; reaped when it dies within a second, else left (stuck in the kernel)."""
    import signal
    import subprocess

    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        p.wait(timeout=1)
    except subprocess.TimeoutExpired:
        p.returncode = -signal.SIGKILL  # given up on: no ResourceWarning for a child we cannot reap
    for pipe in (p.stdout, p.stderr):
        if pipe is not None:
            pipe.close()
