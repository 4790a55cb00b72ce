"""The machine to plan for, from the flags (``--gpu NAME``, ``--driver``, ``--python``, ``--glibc``,
``--platform``): each value parsed, a bad one a one-line UsageError naming its flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from packaging.version import InvalidVersion, Version

from ..errors import UsageError
from ..host import DriverInfo, Host, HostGpu, PlatformInfo
from ..values import Capability, DriverVersion
from .common import shown

TYPE_CHECKING = False  # the matrix's classes only for the annotations: checking the flags needs no matrix
if TYPE_CHECKING:
    from ..matrix import Matrix

MAX_GPUS = 1024
"""The most GPUs one ``--gpu`` may name. The largest single machines hold 8 to 16 GPUs and the largest
NVLink domain (a GB200 NVL72 rack) 72; a plan covers one machine, so 1024 leaves ample room while
keeping the plan's cost bounded (a count of 3000000 made a list of three million GPUs). A count of 0 is
refused rather than read as no GPU: the CPU backend is ``--gpu none``."""
MAX_NAME = 128  # longer than any GPU name (the matrix's longest is under 60 characters)
MAX_VERSION = 32  # longer than any real version; Python refuses int() of 4300 digits and more


def _count(part: str, text: str) -> tuple[int, str]:
    """``2xH100`` or ``H100*2`` -> (2, 'H100'); a part without a count -> (1, part)."""
    head, x, tail = part.partition("x")
    if x and head.isascii() and head.isdigit():
        n, part = head, tail.strip()
    else:
        head, star, tail = part.rpartition("*")
        if not (star and tail.strip().isascii() and tail.strip().isdigit()):
            return 1, part
        n, part = tail.strip(), head.strip()
    count = int(n) if len(n) <= 5 else MAX_GPUS + 1
    if not 1 <= count <= MAX_GPUS:
        raise UsageError(f"--gpu: invalid count {shown(n)} in {shown(text)} (expected 1 to {MAX_GPUS} GPUs of a kind; "
                         "for vLLM's CPU backend: --gpu none)")
    return count, part


def _gpu(matrix: Matrix, part: str) -> tuple[str, Capability]:
    """(name, compute capability) of one ``--gpu`` name or ``sm_XY``; UsageError naming an unknown one."""
    if len(part) > MAX_NAME:
        raise UsageError(f"--gpu: GPU name {shown(part)} is too long (expected a GPU name such as 'H100', or sm_XY)")
    try:
        cc = Capability.parse(part) if part.lower().startswith(("sm_", "compute_")) or part[:1].isdigit() else None
    except ValueError:
        cc = None
    if cc is not None:
        return f"sm_{cc.major}{cc.minor}", cc
    gpu = matrix.find_gpu(part)
    if gpu is not None:
        return gpu.name, gpu.compute_capability
    names = [n for g in matrix.gpus for n in (g.name, *g.names, *g.aliases)]
    import difflib  # only for a name the matrix does not know

    close = difflib.get_close_matches(part, names, n=3, cutoff=0.5)
    lower = {n.lower(): n for n in names}
    close += [lower[k] for k in difflib.get_close_matches(part.lower(), list(lower), n=3, cutoff=0.5)
              if lower[k] not in close]
    hint = f" (did you mean {', '.join(repr(c) for c in close[:3])}?)" if close else \
        " (expected a GPU name such as 'H100' or 'NVIDIA GeForce RTX 4090', or sm_XY)"
    raise UsageError(f"--gpu: unknown GPU {shown(part)}{hint}")


def parse_gpus(matrix: Matrix, text: str) -> tuple[HostGpu, ...]:
    """``--gpu NAME[,NAME...]`` or ``sm_XY`` -> GPUs; UsageError naming an unknown one, with close names.

    ``2xH100`` or ``H100*2`` count several of one kind; 1 to :data:`MAX_GPUS` GPUs in all.
    """
    gpus: list[HostGpu] = []
    for part in (p.strip() for p in text.split(",", MAX_GPUS)):
        if not part:
            raise UsageError(f"--gpu: empty GPU name in {shown(text)}")
        count, part = _count(part, text)
        if len(gpus) + count > MAX_GPUS:
            raise UsageError(f"--gpu: more than {MAX_GPUS} GPUs in {shown(text)} (a plan is for one machine)")
        name, cc = _gpu(matrix, part)
        for _ in range(count):
            gpus.append(HostGpu(index=len(gpus), name=name, compute_capability=cc, source="--gpu",
                                cc_source="matrix" if not name.startswith("sm_") else "--gpu"))
    return tuple(gpus)


def _bounded(flag: str, text: str, what: str, example: str) -> None:
    if len(text) > MAX_VERSION:
        raise UsageError(f"{flag}: invalid {what} {shown(text)} (expected {example}, at most {MAX_VERSION} characters)")


def parse_driver(text: str, flag: str = "--driver") -> DriverVersion:
    _bounded(flag, text, "driver version", "a version such as '580.65.06'")
    try:
        return DriverVersion.parse(text)
    except ValueError:
        raise UsageError(f"{flag}: invalid driver version {shown(text)} (expected a version such as '580.65.06')") \
            from None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past Python's int() digit limit
        return None


def parse_python(text: str, flag: str = "--python") -> Version:
    _bounded(flag, text, "Python version", "X.Y such as '3.12'")
    v = _version(text)
    if v is None or len(v.release) < 2 or v.major != 3:
        raise UsageError(f"{flag}: invalid Python version {shown(text)} (expected X.Y such as '3.12')")
    return v


def parse_glibc(text: str) -> Version:
    _bounded("--glibc", text, "glibc version", "X.Y such as '2.28'")
    v = _version(text)
    if v is None or len(v.release) != 2 or v.major != 2 or v.pre or v.post or v.dev or v.local:
        raise UsageError(f"--glibc: invalid glibc version {shown(text)} (expected X.Y such as '2.28')")
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
    host = Host(driver=drv, gpus=gpu_list, python=parse_python(python) if python else base.python,
                platform=PlatformInfo(os=plat.os, machine=plat.machine, glibc=glibc))
    return _jetson_by_capability(matrix, host, given=platform is not None)


def _jetson_by_capability(matrix: Matrix, host: Host, *, given: bool) -> Host:
    """``--gpu sm_87`` is a Jetson Orin, planned as ``--gpu "Jetson AGX Orin"`` is (likewise sm_72 Xavier,
    sm_53/sm_62 the Tegra X1/X2 boards, sm_110 Thor): only a Jetson module has that capability. With
    ``--platform linux-x86_64`` it is no GPU that exists: a usage error naming the module and its platform."""
    from msgspec.structs import replace

    if all(g.compute_capability is None or matrix.find_gpu(g.name) is not None for g in host.gpus):
        return replace(host, gpus=tuple(host.gpus))  # every GPU known by name: none is a Jetson by capability alone
    from ..resolve.jetson import capability_only_jetson

    gpus = []
    for g in host.gpus:
        row = capability_only_jetson(g, matrix)
        if row is not None and given and host.platform.machine != "aarch64":
            raise UsageError(f"--gpu: no {host.platform.tag} GPU has compute capability {g.name}: only a Jetson "
                             f"module's ({row.name}: {', '.join(row.aliases[:3]) or row.name}), an aarch64 board "
                             "(plan it with --platform linux-aarch64, or name the GPU)")
        gpus.append(g if row is None else
                    replace(g, name=row.name, compute_capability=row.compute_capability, cc_source="matrix"))
    return replace(host, gpus=tuple(gpus))


def parse_platform(text: str, flag: str = "--platform") -> PlatformInfo:
    if text not in ("linux-x86_64", "linux-aarch64"):
        raise UsageError(f"{flag}: invalid platform {shown(text)} (expected linux-x86_64 or linux-aarch64)")
    return PlatformInfo(os="linux", machine=text.split("-", 1)[1])


def check_env_overrides(environ: Mapping[str, str]) -> None:
    """The ``VRESOLVE_*`` overrides of the machine's facts, each checked as its flag is (a one-line UsageError
    naming the variable): ``VRESOLVE_DRIVER``, ``VRESOLVE_CUDA_DRIVER``, ``VRESOLVE_PYTHON``, ``VRESOLVE_PLATFORM``
    and ``VRESOLVE_GPUS`` (detected names: any name, as a probe may report, but plain lines, bounded in number)."""
    checks: tuple[tuple[str, Callable[[str, str], object]], ...] = (
        ("VRESOLVE_DRIVER", parse_driver), ("VRESOLVE_CUDA_DRIVER", _parse_cuda), ("VRESOLVE_PYTHON", parse_python),
        ("VRESOLVE_PLATFORM", parse_platform))
    for var, parse in checks:
        if environ.get(var):
            parse(environ[var], var)
    gpus = environ.get("VRESOLVE_GPUS") or ""
    names = [g.strip() for g in gpus.split(",", MAX_GPUS) if g.strip()]
    if len(names) > MAX_GPUS:
        raise UsageError(f"VRESOLVE_GPUS: more than {MAX_GPUS} GPUs in {shown(gpus)} (a machine's GPUs)")
    for g in names:
        if len(g) > MAX_NAME or not g.isprintable():
            raise UsageError(f"VRESOLVE_GPUS: GPU name {shown(g)} is not one (a plain name of at most {MAX_NAME} "
                             "characters)")


def _parse_cuda(text: str, flag: str) -> Version:
    """The CUDA version a driver serves: ``X.Y`` such as ``12.8``."""
    _bounded(flag, text, "CUDA version", "X.Y such as '12.8'")
    v = _version(text)
    if v is None or len(v.release) != 2 or v.pre or v.post or v.dev or v.local:
        raise UsageError(f"{flag}: invalid CUDA version {shown(text)} (expected X.Y such as '12.8')")
    return v
