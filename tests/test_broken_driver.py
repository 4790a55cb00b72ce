"""A driver installed but not working is neither "no GPU" nor "working": detection says so from evidence, and
``plan``/``lock``/``apply --gpu auto`` stop with exit 3 and what to do; never the CPU backend on a GPU machine.

Each machine is a real fake: an ``nvidia-smi`` script first on PATH that prints what real ones print (verbatim from
public reports), and a /proc, /sys, /dev tree under ``VRESOLVE_PROBE_ROOT`` built from the H200 capture
(tests/data/probes/nvidia-h200/: its /proc files, and the PCI facts of its ``nvidia-smi -q``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vresolve.cli import main
from vresolve.detect import Overrides, detect_host
from vresolve.parsers import parse_nvml_library_version

from .test_detect import H200, PROBES, _script, fake_smi, h200_query

# nvidia-smi's words when the kernel module is not loaded (exit code 9, "NVIDIA driver is not loaded"), and after a
# driver update without a reboot: verbatim from public reports (tests/data/probes/README.md names them)
COULD_NOT_COMMUNICATE = (PROBES / "smi-couldnt-communicate.txt").read_text().strip()
MISMATCH = (PROBES / "nvml-mismatch-library-version.txt").read_text().strip()

# the H200's PCI function, from its nvidia-smi -q: Bus Id 00000000:00:06.0, Device Id 0x233510DE (device 0x2335,
# vendor 0x10de), Base Classcode 0x3, Sub Classcode 0x2 (a 3D controller: sysfs's class 0x030200)
H200_PCI = ("0000:00:06.0", "0x10de", "0x2335", "0x030200")
VIRTIO_DISK = ("0000:00:04.0", "0x1af4", "0x1001", "0x010000")  # not NVIDIA, not a display device


def tree(tmp_path: Path, *, module: bool = True, proc_version: bool = False, pci: tuple[str, ...] | None = H200_PCI,
         bound: str | None = "nvidia") -> Path:
    """A machine's /proc, /sys and /dev: the nvidia module loaded (or not), an NVIDIA GPU on the PCI bus (or not)."""
    root = tmp_path / "root"
    for d in ("proc", "sys/bus/pci/devices", "dev"):
        (root / d).mkdir(parents=True, exist_ok=True)
    modules = "virtio_blk 28672 2 - Live 0x0000000000000000\n"
    if module:
        modules += ("nvidia_uvm 1982464 0 - Live 0x0000000000000000 (POE)\n"
                    "nvidia 54206464 1 nvidia_uvm, Live 0x0000000000000000 (POE)\n")
        (root / "proc/driver/nvidia").mkdir(parents=True)
        (root / "sys/module/nvidia").mkdir(parents=True)
        (root / "dev/nvidiactl").write_text("")
        (root / "dev/nvidia0").write_text("")
        if proc_version:
            (root / "proc/driver/nvidia/version").write_text((H200 / "proc-driver-version.txt").read_text())
            (root / "sys/module/nvidia/version").write_text((H200 / "sys-module-version.txt").read_text())
    (root / "proc/modules").write_text(modules)
    for dev, drv in ((VIRTIO_DISK, "virtio-pci"), *(((pci, bound),) if pci else ())):
        d = root / "sys/bus/pci/devices" / dev[0]
        d.mkdir()
        for name, value in zip(("vendor", "device", "class"), dev[1:], strict=True):
            (d / name).write_text(value + "\n")
        if drv:
            (d / "driver").symlink_to(f"../../../bus/pci/drivers/{drv}")
    return root


def smi_saying(tmp_path: Path, text: str, code: int) -> Path:
    """An nvidia-smi that prints ``text`` and exits ``code`` whatever it is asked."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (tmp_path / "said.txt").write_text(text + "\n")
    _script(bindir / "nvidia-smi", f"cat '{tmp_path / 'said.txt'}'\nexit {code}")
    return bindir


Machine = Callable[[Path | None, Path], None]
Capsys = pytest.CaptureFixture[str]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    """Sets up this process as the given machine: PATH led by ``bindir``, no NVML, /proc and /sys from ``root``."""

    def make(bindir: Path | None, root: Path) -> None:
        monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin" if bindir else "/usr/bin:/bin")
        monkeypatch.setenv("VRESOLVE_NO_NVML", "1")
        monkeypatch.setenv("VRESOLVE_PROBE_ROOT", str(root))
        monkeypatch.setenv("VRESOLVE_PYTHON", "3.12")
        monkeypatch.setenv("VRESOLVE_PLAN_CACHE", "0")
        monkeypatch.chdir(tmp_path)

    return make


def _detected(capsys: Capsys) -> dict[str, Any]:
    assert main(["detect", "--json"]) == 0  # detect reports the state; --require-gpu makes it an error
    driver: dict[str, Any] = json.loads(capsys.readouterr().out)["host"]["driver"]
    return driver


def test_couldnt_communicate_with_the_module_loaded_exits_3(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(smi_saying(tmp_path, COULD_NOT_COMMUNICATE, 9), tree(tmp_path))
    assert main(["plan", "--gpu", "auto"]) == 3
    out, err = capsys.readouterr()
    assert out == ""  # no plan, no CPU plan
    assert "the NVIDIA driver is installed but not working: nvidia-smi: exit code 9: " + COULD_NOT_COMMUNICATE in err
    assert "sudo modprobe nvidia" in err and "--gpu NAME --driver VER" in err and "--gpu none" in err
    assert "/proc/modules: nvidia_uvm, nvidia" in err and "PCI 0000:00:06.0: NVIDIA 3D controller 0x2335" in err

    assert main(["plan", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "vresolve.plan/1" and doc["error"]["code"] == "detection-failed"
    assert COULD_NOT_COMMUNICATE in doc["error"]["message"]

    assert main(["lock", "-o", str(tmp_path / "out"), "--offline"]) == 3  # lock plans the same way
    assert not (tmp_path / "out").exists()

    d = _detected(capsys)
    assert (d["state"], d["failure"]) == ("broken", f"nvidia-smi: exit code 9: {COULD_NOT_COMMUNICATE}")
    assert d["evidence"] == ["/proc/modules: nvidia_uvm, nvidia", "/proc/driver/nvidia: present",
                             "/sys/module/nvidia: present", "/dev: nvidia0, nvidiactl",
                             "PCI 0000:00:06.0: NVIDIA 3D controller 0x2335, kernel driver nvidia"]
    assert main(["detect", "--require-gpu"]) == 3
    assert "the NVIDIA driver is installed but not working (--require-gpu)" in capsys.readouterr().err


def test_doctor_names_the_broken_driver(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(smi_saying(tmp_path, COULD_NOT_COMMUNICATE, 9), tree(tmp_path))
    assert main(["doctor", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    (f,) = [f for f in findings if f["title"] == "The NVIDIA driver is installed but not working"]
    assert f["cause"] == "library-not-found" and f["severity"] == "error"
    assert f"nvidia-smi: exit code 9: {COULD_NOT_COMMUNICATE}" in f["evidence"]
    assert "sudo modprobe nvidia" in f["fix"]
    assert not any("pip install" in x["fix"] or "uv pip" in x["fix"] for x in findings)  # no CPU reinstall plan


def test_a_hanging_nvidia_smi_is_bounded_and_its_group_killed(tmp_path: Path) -> None:
    """nvidia-smi that never answers (a stuck driver): --timeout 2 bounds it; the whole process group dies."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pidfile = tmp_path / "sleep.pid"
    _script(bindir / "nvidia-smi", f"sleep 300 &\necho $! > '{pidfile}'\nwait")
    root = tree(tmp_path)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "VRESOLVE_NO_NVML": "1",
           "VRESOLVE_PROBE_ROOT": str(root), "VRESOLVE_PYTHON": "3.12", "VRESOLVE_PLAN_CACHE": "0",
           "VRESOLVE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(sys.path)}
    # the child's own limit is far below the 300 s sleep: a timeout that did not work fails here
    p = subprocess.run([sys.executable, "-m", "vresolve", "plan", "--gpu", "auto", "--timeout", "2"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr
    assert "the NVIDIA driver is installed but not working: nvidia-smi: timed out after 2 s" in p.stderr
    assert "nvidia-smi hangs" in p.stderr and "reboot" in p.stderr
    assert p.stdout == ""
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 30  # the kill is sent before vresolve exits; its delivery is the kernel's
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the sleep nvidia-smi started outlived the timeout"


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_driver_library_mismatch_names_both_versions(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(smi_saying(tmp_path, MISMATCH, 18), tree(tmp_path, proc_version=True))
    assert main(["plan", "--gpu", "auto"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert ("the NVIDIA driver is installed but not working: driver/library version mismatch (kernel module "
            "580.159.04, library 550.144): nvidia-smi: Failed to initialize NVML: Driver/library version mismatch "
            "NVML library version: 550.144") in err
    assert "reboot after a driver update" in err
    d = _detected(capsys)
    assert (d["state"], d["nvml_library_mismatch"], d["library_version"], d["version"]) == (
        "broken", True, "550.144", "580.159.04")
    assert main(["doctor", "--json"]) == 1
    causes = [f["cause"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "nvml-driver-mismatch" in causes and "library-not-found" not in causes  # named once, by its own code


def test_a_cpu_machine_still_gets_the_cpu_plan(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    """No nvidia-smi, no module, no NVIDIA PCI device (a virtio disk only): the CPU backend, exit 0, as before."""
    machine(None, tree(tmp_path, module=False, pci=None))
    assert main(["plan", "--gpu", "auto", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stack"]["variant"] == "cpu" and doc["host"]["gpus"] == []
    assert doc["host"]["detected_by"].startswith("no NVIDIA GPU found: planning the CPU backend")
    d = _detected(capsys)
    assert (d["state"], d["failure"], d["evidence"]) == ("none", None, [])


def test_a_gpu_given_to_virtual_machines_is_not_this_machines(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(None, tree(tmp_path, module=False, bound="vfio-pci"))
    assert main(["plan", "--gpu", "auto", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stack"]["variant"] == "cpu"


def test_an_nvidia_gpu_without_a_driver_exits_3(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(None, tree(tmp_path, module=False, bound=None))
    assert main(["plan", "--gpu", "auto"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert "NVIDIA GPUs are present but no NVIDIA driver is installed" in err
    assert "install the NVIDIA driver" in err
    assert "PCI 0000:00:06.0: NVIDIA 3D controller 0x2335, no kernel driver" in err
    d = _detected(capsys)
    assert d["state"] == "not-installed"
    assert d["evidence"] == ["PCI 0000:00:06.0: NVIDIA 3D controller 0x2335, no kernel driver"]


def test_apply_stops_before_changing_anything(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    machine(smi_saying(tmp_path, COULD_NOT_COMMUNICATE, 9), tree(tmp_path))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["apply", "--gpu", "auto", "--yes", "--venv", str(tmp_path / "venv")]) == 3
    out, err = capsys.readouterr()
    assert "the NVIDIA driver is installed but not working" in err
    assert "vllm" not in out.lower()  # no plan shown
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no environment, no lock, nothing


def test_the_healthy_h200_is_working(tmp_path: Path, machine: Machine, capsys: Capsys) -> None:
    """The real H200's answers (query, banner, /proc and /sys): working, planned for its GPU."""
    bindir = fake_smi(tmp_path, query=str(h200_query(tmp_path)), banner=str(H200 / "nvidia-smi.txt"))
    root = tree(tmp_path, proc_version=True)
    (root / "proc/driver/nvidia/gpus/0000:00:06.0").mkdir(parents=True)
    (root / "proc/driver/nvidia/gpus/0000:00:06.0/information").write_text(
        (H200 / "proc-gpus-information.txt").read_text())
    machine(bindir, root)
    d = _detected(capsys)
    assert (d["state"], d["failure"], d["version"]) == ("working", None, "580.159.04")
    assert main(["plan", "--gpu", "auto", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stack"]["variant"] != "cpu" and [g["name"] for g in doc["host"]["gpus"]] == ["NVIDIA H200"]
    assert main(["detect", "--require-gpu"]) == 0


def test_what_the_failing_probe_said_is_one_plain_line(tmp_path: Path) -> None:
    """The probe's words are the machine's: controls and escapes never reach the report or the terminal."""
    bindir = smi_saying(tmp_path, "NVIDIA-SMI has failed\x1b[2J\x1b]0;owned\x07\n$(touch MARK) \u202e", 9)
    o = Overrides(use_nvml=False, root=str(tree(tmp_path)), environ={"PATH": f"{bindir}:/usr/bin:/bin"})
    d = detect_host(o, installed=False).driver
    assert d.state == "broken" and d.failure is not None
    assert not any(c in d.failure for c in "\x1b\x07\n\u202e")
    assert d.failure.startswith("nvidia-smi: exit code 9: NVIDIA-SMI has failed [2J ]0;owned $(touch MARK)")
    assert not (tmp_path / "MARK").exists()


def test_parse_nvml_library_version() -> None:
    assert parse_nvml_library_version(MISMATCH) == "550.144"
    assert parse_nvml_library_version(COULD_NOT_COMMUNICATE) is None


def test_the_driver_state_round_trips(tmp_path: Path) -> None:
    from vresolve.host import Host

    bindir = smi_saying(tmp_path, MISMATCH, 18)
    o = Overrides(use_nvml=False, root=str(tree(tmp_path, proc_version=True)), environ={"PATH": f"{bindir}:/bin"})
    h = detect_host(o, installed=False)
    assert Host.from_dict(json.loads(json.dumps(h.to_dict()))).driver == h.driver
