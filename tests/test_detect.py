"""Detection on captured output and against real fake-``nvidia-smi`` processes (no mocks).

Each fault gets a script placed first on PATH (or named by ``--nvidia-smi``), and a
captured ``/proc`` tree under a temporary root.
"""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest
from packaging.version import Version

from vresolve.cli import main
from vresolve.detect import (
    Overrides,
    detect_host,
    fill_capabilities,
    parse_nvcc_version,
    parse_proc_driver_version,
    parse_proc_gpu_information,
    parse_smi_banner,
    parse_smi_query,
)
from vresolve.host import Host
from vresolve.matrix import load_matrix
from vresolve.values import Capability, DriverVersion

from .conftest import DATA, TINY

PROBES = DATA / "probes"
H200 = PROBES / "nvidia-h200"


# --------------------------------------------------------------------------- parsers


def test_parse_proc_driver_version_open_and_proprietary() -> None:
    assert parse_proc_driver_version((H200 / "proc-driver-version.txt").read_text()) == (DriverVersion.parse("580.159.04"), "open")
    assert parse_proc_driver_version((PROBES / "proprietary-proc-version.txt").read_text()) == (
        DriverVersion.parse("515.76"), "proprietary")
    assert parse_proc_driver_version(
        "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build") == (
        DriverVersion.parse("580.65.06"), "open")
    assert parse_proc_driver_version("garbage") is None


def test_parse_proc_gpu_information() -> None:
    info = parse_proc_gpu_information((H200 / "proc-gpus-information.txt").read_text())
    assert info["Model"] == "NVIDIA H200"
    assert info["Bus Location"] == "0000:00:06.0"
    assert info["Device Minor"] == "0"


@pytest.mark.parametrize(("file", "driver", "cuda"), [
    (H200 / "nvidia-smi.txt", "580.159.04", "13.0"),
    (H200 / "nvidia-smi-version.txt", "580.159.04", "13.0"),
    (PROBES / "r610-b200" / "nvidia-smi.txt", "610.43.02", "13.3"),  # KMD / CUDA UMD Version
])
def test_parse_smi_banner(file: Path, driver: str, cuda: str) -> None:
    assert parse_smi_banner(file.read_text()) == (DriverVersion.parse(driver), Version(cuda))


def test_parse_smi_query_real_h200() -> None:
    rows = parse_smi_query((H200 / "query-gpu.csv").read_text().split("\n", 1)[1])
    assert rows == [{"index": "0", "name": "NVIDIA H200", "uuid": "GPU-283bb333-7717-fb40-df5e-3812f333d4f7",
                     "compute_cap": "9.0", "driver_version": "580.159.04", "memory.total": "143771 MiB",
                     "pci.bus_id": "00000000:00:06.0"}]


@pytest.mark.parametrize("text", ["Failed to initialize NVML: Unknown Error", "\x00\x01garbage, 1, 2",
                                  "a, b, c, d, e, f, g"])
def test_parse_smi_query_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_smi_query(text)


def test_parse_nvcc_version() -> None:
    assert parse_nvcc_version((H200 / "nvcc.txt").read_text()) == Version("13.0.88")
    assert parse_nvcc_version("nothing") is None


# --------------------------------------------------------------------------- fake machines


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_smi(tmp_path: Path, *, query: str | None = None, banner: str | None = None, exit_code: int = 0,
             sleep: float = 0, no_compute_cap: bool = False) -> Path:
    """A real executable ``nvidia-smi`` in its own bin directory; answers from captured files."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    lines = []
    if sleep:
        lines.append(f"sleep {sleep}")
    if no_compute_cap:  # what drivers before ~510 answer
        lines.append('case "$1" in *compute_cap*) echo \'Field "compute_cap" is not a valid field to query.\'; exit 2;; esac')
    if query is not None:
        lines.append(f'case "$1" in --query-gpu=*) cat {shlex.quote(query)}; exit {exit_code};; esac')
    if banner is not None:
        lines.append(f"cat {shlex.quote(banner)}")
    lines.append(f"exit {exit_code}")
    _script(bindir / "nvidia-smi", "\n".join(lines))
    return bindir


def overrides(tmp_path: Path, bindir: Path | None = None, root: Path | None = None, **kw: object) -> Overrides:
    """No NVML (a GPU-less CI has none anyway), an empty root unless given, PATH led by ``bindir``."""
    empty = tmp_path / "root"
    empty.mkdir(exist_ok=True)
    path = f"{bindir}:/usr/bin:/bin" if bindir else "/usr/bin:/bin"
    env = {"PATH": path, "HOME": str(tmp_path)}
    return Overrides(use_nvml=False, root=str(root or empty), environ=env, **kw)  # type: ignore[arg-type]


def h200_query(tmp_path: Path) -> Path:
    f = tmp_path / "query.csv"
    f.write_text((H200 / "query-gpu.csv").read_text().split("\n", 1)[1])
    return f


def test_nvidia_smi_answers(tmp_path: Path) -> None:
    bindir = fake_smi(tmp_path, query=str(h200_query(tmp_path)), banner=str(H200 / "nvidia-smi.txt"))
    h = detect_host(overrides(tmp_path, bindir), installed=False)
    assert (str(h.driver.version), h.driver.cuda, h.driver.source) == ("580.159.04", Version("13.0"), "nvidia-smi")
    assert h.driver.cuda_source == "nvidia-smi banner"
    (g,) = h.gpus
    assert (g.name, g.compute_capability, g.memory_mib, g.cc_source) == ("NVIDIA H200", Capability(9, 0), None,
                                                                         "nvidia-smi")


def test_r610_banner(tmp_path: Path) -> None:
    q = tmp_path / "q.csv"
    q.write_text("0, NVIDIA B200, GPU-1, 10.0, 610.43.02, 183359, 00000000:63:00.0\n"
                 "1, NVIDIA B200, GPU-2, 10.0, 610.43.02, 183359, 00000000:68:00.0\n")
    bindir = fake_smi(tmp_path, query=str(q), banner=str(PROBES / "r610-b200" / "nvidia-smi.txt"))
    h = detect_host(overrides(tmp_path, bindir), installed=False)
    assert (str(h.driver.version), str(h.driver.cuda)) == ("610.43.02", "13.3")
    assert [g.compute_capability for g in h.gpus] == [Capability(10, 0)] * 2


def test_nvidia_smi_missing_means_no_gpu_and_a_valid_host(tmp_path: Path) -> None:
    h = detect_host(overrides(tmp_path), installed=False)
    assert h.gpus == () and h.driver.version is None
    assert "nvidia-smi: not found on PATH" in h.problems
    assert "no NVIDIA driver found (no NVML, no /proc/driver/nvidia, no nvidia-smi)" in h.problems
    assert h.platform.tag in ("linux-x86_64", "linux-aarch64")
    assert Host.from_dict(json.loads(json.dumps(h.to_dict()))) == h


def test_nvidia_smi_hanging_times_out(tmp_path: Path) -> None:
    bindir = fake_smi(tmp_path, query=str(h200_query(tmp_path)), sleep=30)
    o = overrides(tmp_path, bindir, smi_timeout=0.5)
    h = detect_host(o, installed=False)
    assert "nvidia-smi: timed out after 0.5 s" in h.problems
    assert h.gpus == ()


def test_nvidia_smi_printing_garbage(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x1b[31mSegmentation fault\x00\xff\n")
    bindir = fake_smi(tmp_path, query=str(garbage))
    h = detect_host(overrides(tmp_path, bindir), installed=False)
    assert h.gpus == ()
    assert any(p.startswith("nvidia-smi: unexpected output (") for p in h.problems), h.problems


def test_nvml_driver_library_mismatch_is_a_fact(tmp_path: Path) -> None:
    bindir = fake_smi(tmp_path, query=str(PROBES / "nvml-mismatch.txt"), banner=str(PROBES / "nvml-mismatch.txt"),
                      exit_code=18)
    root = tmp_path / "proc-root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text((H200 / "proc-driver-version.txt").read_text())
    h = detect_host(overrides(tmp_path, bindir, root=root), installed=False)
    assert h.driver.nvml_library_mismatch is True
    assert str(h.driver.version) == "580.159.04"  # the loaded kernel module still answers
    assert any("Failed to initialize NVML: Driver/library version mismatch" in p for p in h.problems)


def test_old_driver_without_compute_cap_field(tmp_path: Path) -> None:
    q = tmp_path / "q.csv"
    q.write_text("0, Tesla V100-SXM2-32GB, GPU-1, 470.82.01, 32510, 00000000:00:1E.0\n")
    bindir = fake_smi(tmp_path, query=str(q), no_compute_cap=True)
    h = detect_host(overrides(tmp_path, bindir), installed=False)
    (g,) = h.gpus
    assert (g.name, g.compute_capability, str(h.driver.version)) == ("Tesla V100-SXM2-32GB", None, "470.82.01")
    m = load_matrix(TINY)
    filled = fill_capabilities(h, m)
    assert filled.gpus[0].compute_capability is None  # the tiny matrix has no V100
    assert "GPU 0 'Tesla V100-SXM2-32GB': compute capability unknown (not in the matrix)" in filled.problems


def test_mixed_gpus(tmp_path: Path) -> None:
    bindir = fake_smi(tmp_path, query=str(PROBES / "mixed-query.csv"))
    h = detect_host(overrides(tmp_path, bindir), installed=False)
    assert [(g.index, g.name, str(g.compute_capability), g.memory_mib) for g in h.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", "9.0", 81559), (1, "NVIDIA A100-SXM4-80GB", "8.0", 81920)]


def test_proc_tree_names_and_matrix_capability(tmp_path: Path) -> None:
    """Without NVML and nvidia-smi: the driver from /sys and /proc, GPU names from /proc, CC from the matrix."""
    root = tmp_path / "proc-root"
    (root / "proc/driver/nvidia/gpus/0000:00:06.0").mkdir(parents=True)
    (root / "sys/module/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text((H200 / "proc-driver-version.txt").read_text())
    (root / "sys/module/nvidia/version").write_text((H200 / "sys-module-version.txt").read_text())
    (root / "proc/driver/nvidia/gpus/0000:00:06.0/information").write_text(
        (H200 / "proc-gpus-information.txt").read_text())
    h = detect_host(overrides(tmp_path, root=root), installed=False)
    assert (str(h.driver.version), h.driver.source, h.driver.kernel_module) == (
        "580.159.04", "/sys/module/nvidia/version", "open")
    (g,) = h.gpus
    assert (g.name, g.compute_capability, g.source) == ("NVIDIA H200", None, "/proc/driver/nvidia/gpus")
    (g,) = fill_capabilities(h, load_matrix(TINY)).gpus
    assert (g.compute_capability, g.cc_source) == (Capability(9, 0), "matrix")


def test_overrides_skip_probes(tmp_path: Path) -> None:
    bindir = fake_smi(tmp_path, query=str(h200_query(tmp_path)), sleep=30)  # would hang if called
    o = Overrides.from_env({"PATH": f"{bindir}:/usr/bin:/bin", "VRESOLVE_DRIVER": "550.54.15",
                            "VRESOLVE_GPUS": "H200, A100", "VRESOLVE_PYTHON": "3.10"})
    o = Overrides(**{**{f: getattr(o, f) for f in o.__struct_fields__}, "use_nvml": False,
                     "root": str(tmp_path)})
    h = fill_capabilities(detect_host(o, installed=False), load_matrix(TINY))
    assert str(h.driver.version) == "550.54.15" and h.driver.source == "override"
    assert [(g.name, str(g.compute_capability)) for g in h.gpus] == [("H200", "9.0"), ("A100", "8.0")]
    assert h.python == Version("3.10")


def test_no_libnvidia_ml(tmp_path: Path) -> None:
    """Where libnvidia-ml does not load (every machine without an NVIDIA driver), NVML says so and detection goes on."""
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pass
    else:
        pytest.skip("this machine has libnvidia-ml")
    o = overrides(tmp_path)
    o = Overrides(**{**{f: getattr(o, f) for f in o.__struct_fields__}, "use_nvml": True, "root": "/"})
    h = detect_host(o, installed=False)
    assert "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver user-space library)" in h.problems


def test_installed_torch_found_without_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dist-info and torch/version.py on sys.path are enough; torch is never imported."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('torch must not be imported')\n")
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    # as PyPI's wheel installs it: no local tag in the metadata, "+cu130" in torch/version.py
    (site / "torch-2.11.0.dist-info").mkdir()
    (site / "torch-2.11.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n")
    monkeypatch.syspath_prepend(str(site))
    import importlib

    importlib.invalidate_caches()
    h = detect_host(overrides(tmp_path), installed=True)
    torch = h.installed_dist("torch")
    assert torch is not None and (torch.version, torch.local, torch.cuda) == ("2.11.0+cu130", "cu130", "13.0")


def test_cli_detect_without_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("VRESOLVE_NO_NVML", "1")
    assert main(["detect", "--json", "--matrix", str(TINY)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "vresolve.detect/1"
    if not out["host"]["gpus"]:  # a machine with a GPU and its /proc answers otherwise
        assert "nvidia-smi: not found on PATH" in out["host"]["problems"]
        assert main(["detect", "--require-gpu", "--matrix", str(TINY)]) == 3
