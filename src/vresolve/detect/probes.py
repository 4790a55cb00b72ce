"""The machine's facts, each from the first source that answers: overrides, NVML, /sys and /proc,
libcuda, nvidia-smi (with a timeout); never raises on an odd machine, and records what it could not
learn as a problem. The driver and the GPUs are :mod:`.driver`'s probes; the overrides and reading the
machine under them, :mod:`.overrides`'; the platform, toolkits, build tools and installed packages are here.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace
from packaging.version import InvalidVersion, Version

from ..errors import UsageError
from ..host import (
    DriverInfo,
    Host,
    HostGpu,
    InstalledDist,
    PlatformInfo,
    Toolkit,
)
from ..parsers import (
    driver_or_none,
    machine_text,
    parse_device_tree_model,
    parse_l4t_core_version,
    parse_nv_tegra_release,
    parse_nvcc_version,
    version_or_none,
)
from .driver import _Found, _probe_gpus
from .overrides import Overrides, _path, _read, _run

if TYPE_CHECKING:
    from ..matrix import Matrix


STACK_DISTS = ("torch", "torchvision", "torchaudio", "vllm", "flashinfer-python", "flashinfer", "xformers",
               "triton", "flash-attn")


ENV_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
            "TORCH_CUDA_ARCH_LIST")


def _probe_platform(o: Overrides, problems: list[str]) -> PlatformInfo:
    # platform.machine() is os.uname()'s where there is one (importing platform costs a millisecond)
    if hasattr(os, "uname"):
        machine = os.uname().machine.lower()
    else:  # Windows
        import platform

        machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    osname = {"linux": "linux", "win32": "windows", "darwin": "darwin"}.get(sys.platform, sys.platform)
    glibc = None
    if osname == "linux":
        try:
            glibc = version_or_none((os.confstr("CS_GNU_LIBC_VERSION") or "").split()[-1])  # "glibc 2.39"
        except (ValueError, OSError, AttributeError, IndexError):
            problems.append("glibc: version unknown (not glibc, or confstr unavailable)")
    osrelease = (_read(o, "/proc/sys/kernel/osrelease") or "").lower()
    wsl = "microsoft" in osrelease or _path(o, "/dev/dxg").exists()
    container = None
    if _path(o, "/.dockerenv").exists():
        container = "docker"
    elif _path(o, "/run/.containerenv").exists():
        container = "podman"
    elif o.environ.get("KUBERNETES_SERVICE_HOST"):
        container = "kubernetes"
    else:
        cgroup = _read(o, "/proc/1/cgroup") or ""
        for marker in ("kubepods", "docker", "containerd", "lxc"):
            if marker in cgroup:
                container = "kubernetes" if marker == "kubepods" else marker
                break
    jetson, l4t, l4t_source = _probe_jetson(o)
    info = PlatformInfo(os=osname, machine=machine, glibc=glibc, wsl=wsl, container=container, jetson=jetson,
                        l4t=l4t, l4t_source=l4t_source)
    if o.platform:
        plat_os, _, plat_machine = o.platform.partition("-")
        info = replace(info, os=plat_os, machine=plat_machine)
    return info


def _probe_jetson(o: Overrides) -> tuple[str | None, Version | None, str | None]:
    """(the board, its L4T release, where that came from) when this is a Jetson; (None, None, None) otherwise.

    A Jetson is known by ``/etc/nv_tegra_release`` (Jetson Linux writes it), else by a device tree naming a
    Tegra SoC; the L4T release comes from that file, else from dpkg's ``nvidia-l4t-core`` (containers built
    on L4T images carry the package but may lack the file).
    """
    release = _read(o, "/etc/nv_tegra_release")
    model = parse_device_tree_model(_read(o, "/proc/device-tree/model") or "")
    compatible = _read(o, "/proc/device-tree/compatible") or ""
    tegra = release is not None or "nvidia,tegra" in compatible
    if not tegra:
        return None, None, None
    l4t = parse_nv_tegra_release(release) if release is not None else None
    source = "/etc/nv_tegra_release" if l4t is not None else None
    if l4t is None:  # a Tegra device tree without the file (an L4T container): ask dpkg
        out = _run(o, ["dpkg-query", "-W", "-f=${Version}", "nvidia-l4t-core"])
        if isinstance(out, tuple) and out[0] == 0:
            l4t = parse_l4t_core_version(out[1])
            source = "dpkg nvidia-l4t-core" if l4t is not None else None
    return model or "Jetson (model unknown)", l4t, source


def _probe_memory(o: Overrides) -> int | None:
    """Physical memory in MiB, or the cgroup's memory limit when that is lower."""
    total = None
    for line in (_read(o, "/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            total = int(line.split()[1]) // 1024
    limit_text = (_read(o, "/sys/fs/cgroup/memory.max") or _read(o, "/sys/fs/cgroup/memory/memory.limit_in_bytes")
                  or "").strip()
    if limit_text.isdigit():
        limit = int(limit_text) // (1024 * 1024)
        if total is None or limit < total:
            return limit
    return total


def _probe_toolkits(o: Overrides, problems: list[str]) -> tuple[Toolkit, ...]:
    """CUDA toolkits: nvcc on PATH, $CUDA_HOME / $CUDA_PATH, /usr/local/cuda*.

    The version comes from the toolkit's ``version.json`` (no process), else ``nvcc --version``.
    """
    seen: set[Path] = set()
    out = []
    for root, source in _toolkit_candidates(o):
        try:
            real = root.resolve()
        except OSError:
            continue
        if real in seen or not real.is_dir():
            continue
        seen.add(real)
        nvcc_path = real / "bin" / "nvcc"
        version = _toolkit_version(o, real, nvcc_path)
        if version is None:
            if nvcc_path.exists():
                problems.append(f"{nvcc_path}: version unknown")
            continue
        display = str(root) if source != "PATH" else str(real)
        out.append(Toolkit(version=version, path=display, source=source,
                           nvcc=str(nvcc_path) if nvcc_path.exists() else None))
    return tuple(out)


def _toolkit_candidates(o: Overrides) -> list[tuple[Path, str]]:
    """Where toolkits may be, each with what pointed there."""
    import shutil

    candidates: list[tuple[Path, str]] = []
    nvcc = shutil.which("nvcc", path=o.environ.get("PATH")) if o.root == "/" else None
    if nvcc:
        root = Path(nvcc).resolve().parent.parent
        if not (root / "version.json").exists() and not (root / "include" / "cuda.h").exists():
            # a wrapper script (``exec /usr/local/cuda-13.0/bin/nvcc "$@"``): ask nvcc where it lives
            res = _run(o, [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
            top = re.search(r"^#\$ TOP=(.+)$", res[1], re.MULTILINE) if isinstance(res, tuple) else None
            if top:
                root = Path(top[1].strip())
        candidates.append((root, "PATH"))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if o.environ.get(var):
            candidates.append((Path(o.environ[var]), var))
    try:
        candidates += [(d, "/usr/local/cuda*") for d in sorted(_path(o, "/usr/local").glob("cuda*"))]
    except OSError:
        pass
    return candidates


def _toolkit_version(o: Overrides, real: Path, nvcc_path: Path) -> Version | None:
    import json

    try:
        doc = json.loads((real / "version.json").read_text())
        version = version_or_none(doc.get("cuda", {}).get("version") or doc.get("cuda_nvcc", {}).get("version"))
    except (OSError, ValueError, AttributeError):
        version = None
    if version is None and nvcc_path.exists():
        res = _run(o, [str(nvcc_path), "--version"])
        if isinstance(res, tuple):
            version = parse_nvcc_version(res[1])
    return version


def _probe_tools(o: Overrides) -> tuple[tuple[str, str], ...]:
    """Build tools a source build uses: gcc (its version), ccache, conda, git, uv (their paths)."""
    import shutil

    if o.root != "/":
        return ()
    path = o.environ.get("PATH")
    out = []
    gcc = shutil.which("gcc", path=path)
    if gcc:
        res = _run(o, [gcc, "-dumpfullversion", "-dumpversion"])
        if isinstance(res, tuple) and res[0] == 0 and version_or_none(res[1].strip().splitlines()[0]):
            out.append(("gcc", res[1].strip().splitlines()[0]))
    for name in ("ccache", "conda", "git", "uv"):
        found = shutil.which(name, path=path)
        if found:
            out.append((name, found))
    return tuple(out)


_TORCH_VERSION_RE = {
    key: re.compile(rf"^{key}\s*(?::\s*[^=]+)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.MULTILINE)
    for key in ("cuda", "__version__")
}


def _probe_installed() -> tuple[InstalledDist, ...]:
    """The stack's distributions in this interpreter's environment, without importing them."""
    from importlib import metadata

    out = []
    for name in STACK_DISTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        location = None
        cuda = None
        try:
            location = str(dist.locate_file(""))
        except (AttributeError, NotImplementedError):
            pass
        if name == "torch" and location:
            text = ""
            try:
                text = (Path(location) / "torch" / "version.py").read_text()
            except OSError:
                pass
            m = _TORCH_VERSION_RE["cuda"].search(text)
            if m:
                cuda = m[1] or m[2]
            m = _TORCH_VERSION_RE["__version__"].search(text)
            if m and (m[1] or m[2] or "").split("+")[0] == dist.version.split("+")[0]:
                # PyPI's torch wheels carry no local tag in their metadata; torch.__version__ does ("+cu130")
                version = m[1] or m[2]
                out.append(InstalledDist(name=name, version=version, location=location, cuda=cuda))
                continue
        out.append(InstalledDist(name=name, version=dist.version, location=location, cuda=cuda))
    return tuple(out)


def detect_host(o: Overrides | None = None, *, probe_gpus: bool = True, installed: bool = True) -> Host:
    """Everything this machine can tell, overrides first. Never raises on an odd machine."""
    o = o or Overrides.from_env()
    found = _Found()
    if o.driver:
        found.driver = DriverInfo(version=driver_or_none(o.driver), source="override")
    if o.cuda_driver:
        found.driver = replace(found.driver, cuda=version_or_none(o.cuda_driver), cuda_source="override")
    if o.gpus is not None:
        # named by the user: the caller resolves names against the matrix
        found.gpus = [HostGpu(index=i, name=g, source="override") for i, g in enumerate(o.gpus)]
        probe_gpus = False
    if probe_gpus:
        _probe_gpus(o, found)
    problems = found.problems
    plat = _probe_platform(o, problems)
    if plat.jetson and found.driver.version is not None and found.driver.source != "override":
        # a Jetson's nvidia-smi (JetPack 6 on) prints L4T's driver: not a desktop branch, its CUDA is the JetPack's
        found.driver = replace(found.driver, source=f"{found.driver.source} (Jetson: L4T's driver)")
    python = _python(o)
    env = tuple((k, o.environ[k]) for k in ENV_VARS if k in o.environ)
    return Host(
        driver=_plain_driver(found.driver), gpus=tuple(_plain_gpu(g) for g in found.gpus), python=python,
        python_executable=sys.executable, platform=plat, cpu_count=os.cpu_count(), memory_mib=_probe_memory(o),
        toolkits=_probe_toolkits(o, problems), installed=_probe_installed() if installed else (),
        env=env, tools=tuple((k, machine_text(v)) for k, v in _probe_tools(o)),
        problems=tuple(machine_text(p, 1024) for p in problems),
    )


def _plain_driver(d: DriverInfo) -> DriverInfo:
    """The driver's probe messages and evidence as plain lines (they hold what the machine printed)."""
    return replace(d, failure=machine_text(d.failure, 1024) if d.failure is not None else None,
                   evidence=tuple(machine_text(e, 300) for e in d.evidence))


def _plain_gpu(g: HostGpu) -> HostGpu:
    """A GPU's names as plain lines (nvidia-smi, NVML and /proc print what the driver and VBIOS say)."""
    return replace(g, name=machine_text(g.name) or f"GPU {g.index}",
                   uuid=machine_text(g.uuid) if g.uuid is not None else None,
                   pci_bus_id=machine_text(g.pci_bus_id) if g.pci_bus_id is not None else None)


def detect_interpreter(o: Overrides | None = None) -> Host:
    """Only this interpreter's Python and platform (no GPU, driver, toolkit or package probes).

    For planning another machine, where the flags give the rest.
    """
    o = o or Overrides.from_env()
    problems: list[str] = []
    python = _python(o)
    return Host(python=python, python_executable=sys.executable, platform=_probe_platform(o, problems),
                problems=tuple(problems))


def _python(o: Overrides) -> Version:
    """The Python to plan for: the override (``--python``, ``VRESOLVE_PYTHON``), else this interpreter's."""
    if not o.python:
        return Version(sys.version.split()[0])  # platform.python_version(): the head of sys.version, as it reads it
    try:
        if len(o.python) > 32:
            raise ValueError
        return Version(o.python)
    except (InvalidVersion, ValueError):
        raise UsageError(f"VRESOLVE_PYTHON: expected a Python version such as '3.12', got {o.python[:40]!r}"
                         + ("..." if len(o.python) > 40 else "")) from None


def fill_capabilities(host: Host, matrix: Matrix) -> Host:
    """Give GPUs whose probe reported only a name the compute capability the matrix knows.

    Pure: takes the Host and the Matrix, returns a new Host. GPUs the matrix does not know
    keep ``compute_capability=None`` and a problem names them.
    """
    gpus = []
    problems = list(host.problems)
    for g in host.gpus:
        if g.compute_capability is None:
            known = matrix.find_gpu(g.name)
            if known is not None:
                g = replace(g, compute_capability=known.compute_capability, cc_source="matrix")
            else:
                problems.append(f"GPU {g.index} {g.name!r}: compute capability unknown (not in the matrix)")
        gpus.append(g)
    return replace(host, gpus=tuple(gpus), problems=tuple(problems))
