"""A machine judged against the assumptions a lock recorded (``vresolve doctor --lock FILE``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..host import EnvReport, Host
from ..values import public_version
from .facts import Finding

_MACHINE_TEXT = ("min_driver", "driver_policy", "cuda", "python", "platform", "glibc")
_STACK_TEXT = ("vllm", "torch", "variant")
_MAX_TEXT = 128  # longer than any value a lock records; a version of thousands of digits is refused


def _text_problem(where: str, d: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = d.get(k)
        if v is not None and (not isinstance(v, str) or len(v) > _MAX_TEXT):
            return f"{where}.{k} is not a short string"
    return None


def lock_header_problem(header: object) -> str | None:
    """What is wrong with the shape of a lock's recorded assumptions (``# vresolve-lock: {...}``), or None.

    Checked before :func:`check_against_lock` reads them: a header is the user's file, and any JSON can be
    written into one.
    """
    from ..values import DriverVersion

    if not isinstance(header, dict):
        return "record is not a JSON object"
    machine, stack = header.get("machine"), header.get("stack")
    if not isinstance(machine, dict) or not isinstance(stack, dict):
        return "'machine' and 'stack' are not both JSON objects"
    problem = _text_problem("machine", machine, _MACHINE_TEXT) or _text_problem("stack", stack, _STACK_TEXT)
    if problem:
        return problem
    gpus = machine.get("gpus")
    if gpus is not None and not (isinstance(gpus, dict) and len(gpus) <= 1024 and all(
            isinstance(v, str) and len(k) <= _MAX_TEXT and len(v) <= _MAX_TEXT for k, v in gpus.items())):
        return "machine.gpus is not an object of GPU name to compute capability"
    if machine.get("min_driver"):
        try:
            DriverVersion.parse(machine["min_driver"])
        except ValueError:
            return f"machine.min_driver {machine['min_driver']!r} is not a driver version"
    return None


def check_against_lock(header: dict[str, object], host: Host, env: EnvReport | None = None,
               name: str = "the lock") -> list[Finding]:
    """Does this machine meet the assumptions a lock recorded (``doctor --lock FILE``)?

    ``header`` has the shape :func:`lock_header_problem` checks.
    """
    out: list[Finding] = []
    machine = header.get("machine") or {}
    stack = header.get("stack") or {}
    if not isinstance(machine, dict) or not isinstance(stack, dict):
        raise ValueError(f"{name}: malformed vresolve-lock header ({lock_header_problem(header)})")
    ev = f"{name}: vLLM {stack.get('vllm')} + torch {stack.get('torch')}+{stack.get('variant')}"

    def add(cause: str, severity: str, title: str, explanation: str, fix: str, *evidence: str) -> None:
        out.append(Finding(cause=cause, severity=severity, title=title, explanation=explanation, fix=fix,
                           evidence=(ev, *evidence), source="lock"))

    _driver(host, machine, name, add)
    _gpus(host, machine, name, add)
    _platform(host, machine, name, add)
    if env is not None and env.torch is not None and stack.get("torch"):
        have = public_version(env.torch.version)
        if have is not None and str(have) != str(stack["torch"]):
            add("installer-replaced-torch", "warning",
                f"the environment's torch is {env.torch.version}, the lock's {stack['torch']}",
                "The environment does not match the lock: something installed another torch after it.",
                "Reinstall from the lock into a fresh environment: pip install --require-hashes -r requirements.txt")
    return out


Add = Callable[..., None]


def _driver(host: Host, machine: dict[str, Any], name: str, add: Add) -> None:
    from ..values import DriverVersion

    floor = machine.get("min_driver")
    if floor and host.gpus:
        need = DriverVersion.parse(str(floor))
        if host.driver.version is None:
            add("driver-too-old", "error", "the lock needs an NVIDIA driver; none found here",
                f"{name} needs NVIDIA driver >= {need}.", f"Install NVIDIA driver >= {need}.")
        elif host.driver.version < need:
            add("driver-too-old", "error", f"driver {host.driver.version} is older than the lock needs ({need})",
                f"The locked stack is CUDA {machine.get('cuda')}; under the {machine.get('driver_policy')} policy it "
                f"needs driver >= {need}.", f"Install NVIDIA driver >= {need}, or make a lock for this machine: "
                "vresolve lock --gpu auto -o DIR", f"this machine: driver {host.driver.version}")


def _gpus(host: Host, machine: dict[str, Any], name: str, add: Add) -> None:
    locked = {str(c) for c in (machine.get("gpus") or {}).values()}
    here = {str(g.compute_capability) for g in host.gpus if g.compute_capability is not None}
    if here - locked:
        add("arch-not-in-build", "error" if locked else "warning",
            f"this machine has GPUs the lock was not made for ({', '.join(sorted(here - locked))})",
            f"{name} was resolved for compute capability {', '.join(sorted(locked)) or 'none (CPU)'}; the "
            "locked torch and vLLM builds may not carry kernels for the others.",
            "Make a lock for this machine: vresolve lock --gpu auto -o DIR",
            f"this machine: {', '.join(sorted(here))}")
    if locked and not here:
        add("library-not-found", "warning", "the lock was made for NVIDIA GPUs; this machine shows none",
            f"{name} is a CUDA stack for compute capability {', '.join(sorted(locked))}; without a GPU and driver it "
            "installs but cannot run.", "Run it on the machine it was made for, or: vresolve lock --gpu none -o DIR")


def _platform(host: Host, machine: dict[str, Any], name: str, add: Add) -> None:
    py = machine.get("python")
    if py and str(host.python_minor) != str(py):
        add("python-unsupported", "error", f"the lock is for Python {py}, this is Python {host.python_minor}",
            "Hashes and wheels in the lock are for one Python version; another cannot install them.",
            f"Use Python {py} (uv venv --python {py}), or make a lock for this Python.")
    plat = machine.get("platform")
    if plat and plat != host.platform.tag:
        add("glibc-too-old", "error", f"the lock is for {plat}, this machine is {host.platform.tag}",
            "The locked wheels are built for another platform.", "Make a lock for this platform.")
    want = machine.get("glibc")
    if want and host.platform.glibc is not None and plat == host.platform.tag:
        glibc = public_version(str(want))
        if glibc is not None and host.platform.glibc < glibc:
            add("glibc-too-old", "error", f"the lock's wheels need glibc >= {glibc}, this machine has "
                f"{host.platform.glibc}",
                f"{name} was locked for manylinux_{glibc.major}_{glibc.minor}: some of its wheels do not install on an "
                "older glibc (the installer finds no wheel, or builds from source).",
                "Make a lock for this machine: vresolve lock --gpu auto -o DIR (it targets this machine's glibc)",
                f"this machine: glibc {host.platform.glibc}")
