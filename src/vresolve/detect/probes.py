"""The machine's facts, each from the first source that answers: overrides, NVML, /sys and /proc,
libcuda, nvidia-smi (with a timeout); never raises on an odd machine, and records what it could not
learn as a problem.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from .._record import dataclass
from ..errors import UsageError
from ..host import (
    DriverInfo,
    Host,
    HostGpu,
    InstalledDist,
    PlatformInfo,
    Toolkit,
)
from ..values import Capability
from .parsers import (
    NVML_MISMATCH,
    SMI_FIELDS,
    driver_or_none,
    machine_text,
    parse_device_tree_model,
    parse_l4t_core_version,
    parse_nv_tegra_release,
    parse_nvcc_version,
    parse_nvml_library_version,
    parse_proc_driver_version,
    parse_proc_gpu_information,
    parse_smi_banner,
    parse_smi_query,
    version_or_none,
)

if TYPE_CHECKING:
    import subprocess

    from ..matrix import Matrix


STACK_DISTS = ("torch", "torchvision", "torchaudio", "vllm", "flashinfer-python", "flashinfer", "xformers",
               "triton", "flash-attn")


ENV_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
            "TORCH_CUDA_ARCH_LIST")


@dataclass(frozen=True, kw_only=True, slots=True)
class Overrides:
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
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

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


@dataclass
class _Found:
    driver: DriverInfo = field(default_factory=DriverInfo)
    gpus: list[HostGpu] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # a driver probe that failed or hung: the driver is broken
    evidence: list[str] = field(default_factory=list)  # what shows an NVIDIA driver is installed
    answered: bool = False  # NVML or nvidia-smi answered
    library_version: str | None = None


def _path(o: Overrides, p: str) -> Path:
    return Path(o.root) / p.lstrip("/")


def _read(o: Overrides, p: str) -> str | None:
    try:
        return _path(o, p).read_text(errors="replace")
    except OSError:
        return None


def _probe_nvml(o: Overrides, found: _Found) -> bool:
    """Driver, CUDA and GPUs through NVML. False when NVML is not usable here."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        found.problems.append("NVML: nvidia-ml-py is not installed")
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        text = str(e)
        if isinstance(e, getattr(pynvml, "NVMLError_LibRmVersionMismatch", ())) or "mismatch" in text.lower():
            found.driver = replace(found.driver, nvml_library_mismatch=True)
            found.problems.append(f"NVML: {NVML_MISMATCH} (the loaded kernel module and the user-space "
                                  "library differ: reboot, or reload the nvidia module)")
            found.failures.append(f"NVML: {NVML_MISMATCH}")
        elif isinstance(e, getattr(pynvml, "NVMLError_LibraryNotFound", ())):
            found.problems.append("NVML: libnvidia-ml.so.1 not found (no NVIDIA driver user-space library)")
            return False
        else:  # Driver Not Loaded, Insufficient Permissions, ...: the library is there, the driver does not answer
            found.problems.append(f"NVML: {text}")
            found.failures.append(f"NVML: {text}")
        found.evidence.append("libnvidia-ml.so.1: loads (NVML)")
        return False
    try:
        version = driver_or_none(_text(pynvml.nvmlSystemGetDriverVersion()))
        cuda = None
        try:
            raw = pynvml.nvmlSystemGetCudaDriverVersion_v2()
            cuda = Version(f"{raw // 1000}.{raw % 1000 // 10}")
        except pynvml.NVMLError as e:
            found.problems.append(f"NVML: no CUDA driver version ({e})")
        found.driver = replace(found.driver, version=version, cuda=cuda, source="nvml",
                               cuda_source="nvml" if cuda else None)
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                name = _text(pynvml.nvmlDeviceGetName(h))
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
                mem = pynvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024)
                uuid = _text(pynvml.nvmlDeviceGetUUID(h))
                bus = _text(pynvml.nvmlDeviceGetPciInfo(h).busId)
            except pynvml.NVMLError as e:
                found.problems.append(f"NVML: GPU {i}: {e}")
                continue
            found.gpus.append(HostGpu(index=i, name=name, compute_capability=Capability(int(major), int(minor)),
                                      memory_mib=int(mem), uuid=uuid, pci_bus_id=bus, source="nvml",
                                      cc_source="nvml"))
        return True
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _probe_proc(o: Overrides, found: _Found) -> None:
    """Driver from /sys and /proc; GPU names from /proc (no compute capability there)."""
    if found.driver.version is None:
        sys_version = driver_or_none(_read(o, "/sys/module/nvidia/version"))
        if sys_version is not None:
            found.driver = replace(found.driver, version=sys_version, source="/sys/module/nvidia/version")
    proc = _read(o, "/proc/driver/nvidia/version")
    if proc is not None:
        parsed = parse_proc_driver_version(proc)
        if parsed is None:
            found.problems.append("/proc/driver/nvidia/version: not in the expected format")
        else:
            version, kind = parsed
            found.driver = replace(found.driver, kernel_module=kind)
            if found.driver.version is None:
                found.driver = replace(found.driver, version=version, source="/proc/driver/nvidia/version")
    if not found.gpus:
        found.gpus += _proc_gpus(o)


def _proc_gpus(o: Overrides) -> list[HostGpu]:
    """The GPUs /proc/driver/nvidia/gpus lists, by device minor (names only: no compute capability there)."""
    gpu_dir = _path(o, "/proc/driver/nvidia/gpus")
    try:
        entries = sorted(gpu_dir.iterdir())
    except OSError:
        return []
    gpus: list[tuple[int, dict[str, str]]] = []
    for entry in entries:
        try:
            info = parse_proc_gpu_information((entry / "information").read_text(errors="replace"))
        except OSError:
            continue
        if not info.get("Model"):
            continue
        minor = info.get("Device Minor", "")
        gpus.append((int(minor) if minor.isdigit() else len(gpus), info))
    return [HostGpu(index=n, name=info["Model"], uuid=info.get("GPU UUID"), pci_bus_id=info.get("Bus Location"),
                    source="/proc/driver/nvidia/gpus") for n, (_, info) in enumerate(sorted(gpus, key=lambda x: x[0]))]


def _probe_libcuda(o: Overrides, found: _Found) -> None:
    """The driver's CUDA version from ``cuDriverGetVersion`` (needs no GPU context)."""
    if o.root != "/":
        return  # a captured tree has no library to load
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        found.problems.append("libcuda.so.1: not found (no CUDA driver library)")
        return
    value = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(value)) == 0 and value.value > 0:
        found.driver = replace(found.driver, cuda=Version(f"{value.value // 1000}.{value.value % 1000 // 10}"),
                               cuda_source="libcuda cuDriverGetVersion")


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


def _probe_smi(o: Overrides, found: _Found, need_gpus: bool) -> None:
    """GPUs (with compute capability) and the driver from ``nvidia-smi --query-gpu``; CUDA from its banner."""
    if need_gpus or found.driver.version is None:
        rows = _smi_query(o, found)
        for row in rows or ():
            if found.driver.version is None:
                v = driver_or_none(row.get("driver_version"))
                if v:
                    found.driver = replace(found.driver, version=v, source="nvidia-smi")
        if rows is None:
            return
        if need_gpus:
            found.gpus += [_smi_gpu(row) for row in rows]
    if found.driver.cuda is None and found.driver.version is not None:
        _smi_banner(o, found)


def _smi_banner(o: Overrides, found: _Found) -> None:
    """The CUDA version the driver serves, from nvidia-smi's banner."""
    res = _run(o, [o.nvidia_smi])
    if isinstance(res, tuple):
        driver, cuda = parse_smi_banner(res[1])
        if cuda is not None:
            found.driver = replace(found.driver, cuda=cuda, cuda_source="nvidia-smi banner")
        if found.driver.version is None and driver is not None:
            found.driver = replace(found.driver, version=driver, source="nvidia-smi banner")


def _smi_query(o: Overrides, found: _Found) -> list[dict[str, str]] | None:
    """``nvidia-smi --query-gpu`` rows; None (and a problem recorded) when it does not answer usefully."""
    smi = o.nvidia_smi
    fields: tuple[str, ...] = SMI_FIELDS
    res = _run(o, [smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if isinstance(res, tuple) and res[0] != 0 and "compute_cap" in res[1]:
        # drivers before ~510 do not know the compute_cap field: ask without it
        fields = tuple(f for f in SMI_FIELDS if f != "compute_cap")
        res = _run(o, [smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if isinstance(res, str):
        found.problems.append(res)
        if _TIMED_OUT in res:  # a driver that hangs its tools: installed, not working
            found.failures.append(res)
        return None
    code, out = res
    if NVML_MISMATCH in out:
        found.driver = replace(found.driver, nvml_library_mismatch=True)
        found.problems.append(f"nvidia-smi: {NVML_MISMATCH} (the loaded kernel module and the user-space "
                              "library differ: reboot, or reload the nvidia module)")
        found.failures.append(f"nvidia-smi: {_said(out)}")
        found.library_version = parse_nvml_library_version(out)
        return None
    if code != 0:
        found.problems.append(f"nvidia-smi: exit code {code}: {_first_line(out)}")
        found.failures.append(f"nvidia-smi: exit code {code}: {_said(out)}")
        return None
    found.answered = True
    try:
        return parse_smi_query(out, fields)
    except ValueError as e:
        found.problems.append(f"nvidia-smi: unexpected output ({e})")
        return None


def _smi_gpu(row: dict[str, str]) -> HostGpu:
    cc = row.get("compute_cap")
    try:
        cap = Capability.parse(cc) if cc and cc not in ("[N/A]", "N/A") else None
    except ValueError:
        cap = None
    mem = row.get("memory.total", "")
    return HostGpu(index=int(row["index"]), name=row["name"], compute_capability=cap,
                   memory_mib=int(mem) if mem.isdigit() else None, uuid=row.get("uuid"),
                   pci_bus_id=row.get("pci.bus_id"), source="nvidia-smi", cc_source="nvidia-smi" if cap else None)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "(no output)")[:200]


def _said(text: str) -> str:
    """A failing probe's words: its first two lines, as one ("... mismatch NVML library version: 570.124")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()][:2]
    return " ".join(lines)[:400] or "(no output)"


def _probe_platform(o: Overrides, problems: list[str]) -> PlatformInfo:
    # platform.machine(): os.uname()'s where there is one (importing platform costs a millisecond), else platform's
    machine = (os.uname() if hasattr(os, "uname") else __import__("platform").uname()).machine.lower()
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


def _probe_gpus(o: Overrides, found: _Found) -> None:
    """The driver and the GPUs, each from the first source that answers: NVML, /sys and /proc, libcuda,
    nvidia-smi."""
    nvml_ok = o.use_nvml and o.root == "/" and _probe_nvml(o, found)
    _probe_proc(o, found)
    if not nvml_ok:
        if found.driver.cuda is None and found.driver.version is not None:
            _probe_libcuda(o, found)
        need_gpus = not found.gpus or any(g.compute_capability is None for g in found.gpus)
        if need_gpus or found.driver.version is None:
            proc_gpus = list(found.gpus)
            if need_gpus:
                found.gpus = []
            _probe_smi(o, found, need_gpus)
            if not found.gpus:
                found.gpus = proc_gpus
    if found.driver.version is None and not found.gpus and not found.failures:
        found.problems.append("no NVIDIA driver found (no NVML, no /proc/driver/nvidia, no nvidia-smi)")
    found.answered = found.answered or nvml_ok
    _driver_state(o, found)


def _driver_state(o: Overrides, found: _Found) -> None:
    """Working, broken, not installed, or none at all: from what answered, what failed, and the evidence (module
    files, device nodes, driver libraries, NVIDIA display devices on the PCI bus)."""
    kernel = _kernel_evidence(o)
    pci = _pci_gpus(o)
    failure = "; ".join(found.failures) or None
    probed = found.driver.version is not None and found.driver.source not in (None, "override")
    if failure is None and (found.answered or found.gpus or (probed and not pci)):
        state = "working"
    elif failure is None and not pci:
        state = "none"
    else:
        libs = _library_evidence(o)
        if failure is None:  # GPUs on the bus that no probe lists
            if not (kernel or libs or found.evidence):
                state, failure = "not-installed", "no NVIDIA driver is installed for the NVIDIA GPUs on the PCI bus"
            else:
                state, failure = "broken", ("the NVIDIA driver is installed but no probe lists the GPUs on the PCI "
                                            "bus (NVML and nvidia-smi gave no answer)")
        else:
            state = "broken"
        found.evidence += libs
    found.driver = replace(found.driver, state=state, failure=failure, library_version=found.library_version,
                           evidence=tuple(dict.fromkeys([*kernel, *found.evidence, *pci])))


def _kernel_evidence(o: Overrides) -> list[str]:
    """The kernel side of an NVIDIA driver: its modules in /proc/modules, its /proc and /sys files, /dev nodes."""
    out = []
    loaded = [fields[0] for fields in (line.split() for line in (_read(o, "/proc/modules") or "").splitlines())
              if fields and fields[0] in ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm")]
    if loaded:
        out.append(f"/proc/modules: {', '.join(loaded)}")
    out += [f"{p}: present" for p in ("/proc/driver/nvidia", "/sys/module/nvidia") if _path(o, p).is_dir()]
    try:
        nodes = sorted(n.name for n in _path(o, "/dev").glob("nvidia*"))
    except OSError:
        nodes = []
    if nodes:
        out.append("/dev: " + ", ".join(nodes[:8]) + (", ..." if len(nodes) > 8 else ""))
    return out


def _library_evidence(o: Overrides) -> list[str]:
    """The driver's user-space libraries, when they load here (not on a captured tree)."""
    if o.root != "/":
        return []
    import ctypes

    out = []
    for lib in ("libcuda.so.1", "libnvidia-ml.so.1"):
        try:
            ctypes.CDLL(lib)
        except OSError:
            continue
        out.append(f"{lib}: loads")
    return out


_PCI_DISPLAY = {"0x0300": "VGA controller", "0x0302": "3D controller"}


def _pci_gpus(o: Overrides) -> list[str]:
    """NVIDIA display devices (vendor 0x10de, PCI class 0x03) on the PCI bus, whether or not a driver is loaded;
    devices bound to vfio-pci (given to virtual machines) are not this machine's."""
    try:
        devices = sorted(_path(o, "/sys/bus/pci/devices").iterdir())
    except OSError:
        return []
    out = []
    for d in devices:
        try:
            vendor, cls = ((d / f).read_text(errors="replace").strip().lower() for f in ("vendor", "class"))
            device = (d / "device").read_text(errors="replace").strip().lower()
        except OSError:
            continue
        try:
            bound: str | None = os.path.basename(os.readlink(d / "driver"))
        except OSError:  # no driver bound
            bound = None
        if vendor != "0x10de" or not cls.startswith("0x03") or bound == "vfio-pci":
            continue
        kind = _PCI_DISPLAY.get(cls[:6], "display controller")
        out.append(f"PCI {d.name}: NVIDIA {kind} {device}, " + (f"kernel driver {bound}" if bound else "no kernel driver"))
    return out[:16]


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
