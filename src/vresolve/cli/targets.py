"""The machine to plan for, from the flags (``--gpu NAME``, ``--driver``, ``--python``, ``--glibc``,
``--platform``): each value parsed, a bad one a one-line UsageError naming its flag.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from ..errors import UsageError
from ..host import DriverInfo, Host, HostGpu, PlatformInfo
from ..matrix import Matrix
from ..values import Capability, DriverVersion


def parse_gpus(matrix: Matrix, text: str) -> tuple[HostGpu, ...]:
    """``--gpu NAME[,NAME...]`` or ``sm_XY`` -> GPUs; UsageError naming an unknown one, with close names.

    ``2xH100`` or ``H100*2`` count several of one kind.
    """
    gpus: list[HostGpu] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise UsageError(f"--gpu: empty GPU name in {text!r}")
        count = 1
        for sep in ("x", "*"):
            head, s, tail = part.partition(sep)
            if s and sep == "x" and head.isdigit():
                count, part = int(head), tail.strip()
                break
            if s and sep == "*" and tail.strip().isdigit():
                part, count = head.strip(), int(tail)
                break
        try:
            cc = Capability.parse(part) if part.lower().startswith(("sm_", "compute_")) or part[:1].isdigit() else None
        except ValueError:
            cc = None
        if cc is not None:
            name = f"sm_{cc.major}{cc.minor}"
        else:
            gpu = matrix.find_gpu(part)
            if gpu is None:
                names = [n for g in matrix.gpus for n in (g.name, *g.names, *g.aliases)]
                import difflib  # only for a name the matrix does not know

                close = difflib.get_close_matches(part, names, n=3, cutoff=0.5)
                lower = {n.lower(): n for n in names}
                close += [lower[k] for k in difflib.get_close_matches(part.lower(), list(lower), n=3, cutoff=0.5)
                          if lower[k] not in close]
                hint = f" (did you mean {', '.join(repr(c) for c in close[:3])}?)" if close else \
                    " (expected a GPU name such as 'H100' or 'NVIDIA GeForce RTX 4090', or sm_XY)"
                raise UsageError(f"--gpu: unknown GPU {part!r}{hint}")
            name, cc = gpu.name, gpu.compute_capability
        for _ in range(count):
            gpus.append(HostGpu(index=len(gpus), name=name, compute_capability=cc, source="--gpu",
                                cc_source="matrix" if not name.startswith("sm_") else "--gpu"))
    return tuple(gpus)


def parse_driver(text: str) -> DriverVersion:
    try:
        return DriverVersion.parse(text)
    except ValueError:
        raise UsageError(f"--driver: invalid driver version {text!r} (expected a version such as '580.65.06')") from None


def parse_python(text: str) -> Version:
    try:
        v = Version(text)
    except InvalidVersion:
        v = None
    if v is None or len(v.release) < 2 or v.major != 3:
        raise UsageError(f"--python: invalid Python version {text!r} (expected X.Y such as '3.12')")
    return v


def parse_glibc(text: str) -> Version:
    try:
        v = Version(text)
    except InvalidVersion:
        v = None
    if v is None or len(v.release) != 2 or v.major != 2 or v.pre or v.post or v.dev or v.local:
        raise UsageError(f"--glibc: invalid glibc version {text!r} (expected X.Y such as '2.28')")
    return v


def target_host(matrix: Matrix, *, gpus: str, driver: str | None, python: str | None, platform: str | None,
                base: Host, glibc: Version | None = None) -> Host:
    """The machine to plan for when it is not this one (``--gpu NAME`` or ``--gpu none``).

    ``base`` supplies what the flags leave out (this interpreter's Python and platform); another
    machine's glibc is not this one's: unknown unless ``glibc`` (``--glibc``) gives it.
    """
    gpu_list = () if gpus == "none" else parse_gpus(matrix, gpus)
    drv = DriverInfo(version=parse_driver(driver), source="--driver") if driver else DriverInfo()
    plat = base.platform
    if platform:
        plat = parse_platform(platform)
    return Host(driver=drv, gpus=gpu_list, python=parse_python(python) if python else base.python,
                platform=PlatformInfo(os=plat.os, machine=plat.machine, glibc=glibc))


def parse_platform(text: str) -> PlatformInfo:
    if text not in ("linux-x86_64", "linux-aarch64"):
        raise UsageError(f"--platform: invalid platform {text!r} (expected linux-x86_64 or linux-aarch64)")
    return PlatformInfo(os="linux", machine=text.split("-", 1)[1])
