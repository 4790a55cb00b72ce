"""The NVIDIA driver and the GPUs, each from the first source that answers: NVML, /sys and /proc, libcuda,
nvidia-smi (with a timeout); then the driver's state (working, broken, not installed, none) from what answered,
what failed, and the evidence (kernel modules, device nodes, libraries, NVIDIA devices on the PCI bus).
"""

from __future__ import annotations

import os

import msgspec
from msgspec.structs import replace
from packaging.version import Version

from ..host import (
    DriverInfo,
    HostGpu,
)
from ..parsers import (
    NVML_MISMATCH,
    SMI_FIELDS,
    driver_or_none,
    parse_nvml_library_version,
    parse_proc_driver_version,
    parse_proc_gpu_information,
    parse_smi_banner,
    parse_smi_query,
)
from ..values import Capability
from .overrides import _TIMED_OUT, Overrides, _path, _read, _run


class _Found(msgspec.Struct):
    driver: DriverInfo = msgspec.field(default_factory=DriverInfo)
    gpus: list[HostGpu] = msgspec.field(default_factory=list)
    problems: list[str] = msgspec.field(default_factory=list)
    failures: list[str] = msgspec.field(default_factory=list)  # a driver probe that failed or hung: the driver is broken
    evidence: list[str] = msgspec.field(default_factory=list)  # what shows an NVIDIA driver is installed
    answered: bool = False  # NVML or nvidia-smi answered
    library_version: str | None = None


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
