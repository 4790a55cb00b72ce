"""``doctor --log`` without ``--no-env``: the pasted log is judged beside the live machine.

- A pasted report's own facts (collect_env of another machine) are judged as ``--no-env`` judges them, beside the
  live checks: a CPU torch beside the report's GPU is not "no problems found" because this machine has no GPU.
- A pasted "no kernel image" on a machine whose live torch has kernels for its GPU says that torch is not the one
  missing the image (another package's, or the log came from another environment).

Each machine is a real fake: ``nvidia-smi`` first on PATH answering from the H200 capture (or none), /proc and
/sys from ``VRESOLVE_PROBE_ROOT``, and an interpreter whose ``torch`` is a stand-in package that answers what a
CUDA torch answers (its version, CUDA, arch list, the device's capability).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vresolve.cli import main

from .test_broken_driver import Machine, machine, tree  # noqa: F401 - machine is a fixture
from .test_detect import H200, _script, fake_smi, h200_query

CORPUS = Path(__file__).parent / "data" / "corpus"
CPU_TORCH_2080TI = CORPUS / "084-collect-env-torch-131-no-cuda-rtx2080ti.txt"  # torch 1.3.1, no CUDA, RTX 2080 Ti
HEALTHY_V100 = CORPUS / "046-collect-env-torch-healthy-v100-cu121.txt"
NO_KERNEL_IMAGE = CORPUS / "013-no-kernel-image-docker-v023.txt"  # only the error, relayed by docker compose


def _doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["doctor", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _interpreter(tmp_path: Path, arch_list: list[str]) -> Path:
    """An interpreter whose torch answers as torch 2.9.0+cu128 does on an H200 (capability 9.0), with this
    arch list."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("__version__ = '2.9.0+cu128'\nfrom . import cuda, version\n")
    (site / "torch" / "version.py").write_text("cuda = '12.8'\n")
    (site / "torch" / "cuda.py").write_text(
        "def is_available():\n    return True\ndef device_count():\n    return 1\n"
        f"def get_arch_list():\n    return {arch_list!r}\ndef get_device_capability(i=0):\n    return (9, 0)\n")
    return _script(tmp_path / "python", f"PYTHONPATH='{site}' exec '{sys.executable}' \"$@\"")


def test_pasted_report_of_another_machine_is_judged_here(tmp_path: Path, machine: Machine,  # noqa: F811
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    machine(None, tree(tmp_path, module=False, pci=None))  # no driver, no GPU, vresolve's own environment
    code, out = _doctor(capsys, "--log", str(CPU_TORCH_2080TI))
    assert code == 1
    (f,) = [f for f in out["findings"] if f["cause"] == "cpu-only-build"]
    assert f["severity"] == "error"
    assert "pasted line 5: CUDA used to build PyTorch: Could not collect" in f["evidence"]
    assert any("GeForce RTX 2080 Ti" in line for line in f["evidence"])
    # the same paste with --no-env names the same cause
    code, alone = _doctor(capsys, "--no-env", "--log", str(CPU_TORCH_2080TI))
    assert code == 1 and "cpu-only-build" in {f["cause"] for f in alone["findings"]}


def test_healthy_pasted_report_stays_silent_here(tmp_path: Path, machine: Machine,  # noqa: F811
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    machine(None, tree(tmp_path, module=False, pci=None))
    code, out = _doctor(capsys, "--log", str(HEALTHY_V100))
    assert code == 0
    assert not [f for f in out["findings"] if f["severity"] != "info"]


def _h200(tmp_path: Path, machine: Machine) -> None:  # noqa: F811
    bindir = fake_smi(tmp_path, query=str(h200_query(tmp_path)), banner=str(H200 / "nvidia-smi.txt"))
    machine(bindir, tree(tmp_path, proc_version=True))


def test_no_kernel_image_where_the_live_torch_covers_the_gpu(tmp_path: Path, machine: Machine,  # noqa: F811
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _h200(tmp_path, machine)
    python = _interpreter(tmp_path, ["sm_80", "sm_90", "sm_100", "sm_120"])
    code, out = _doctor(capsys, "--interpreter", str(python), "--log", str(NO_KERNEL_IMAGE))
    assert code == 1
    (f,) = [f for f in out["findings"] if f["cause"] == "arch-not-in-build"]
    assert f["source"] == "log"
    assert "This environment's torch 2.9.0+cu128 has kernels for this machine's GPUs (NVIDIA H200 (sm_90))" \
        in f["explanation"]
    assert "The kernel image missing is not torch's here" in f["explanation"]
    assert "this environment: torch 2.9.0+cu128, get_arch_list() = ['sm_80', 'sm_90', 'sm_100', 'sm_120']" \
        in f["evidence"]


def test_no_kernel_image_where_the_live_torch_lacks_the_gpu(tmp_path: Path, machine: Machine,  # noqa: F811
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The live torch has no kernels for the H200 (sm_80 SASS only): the live check names it, and nothing says
    torch is not the culprit."""
    _h200(tmp_path, machine)
    python = _interpreter(tmp_path, ["sm_80"])
    code, out = _doctor(capsys, "--interpreter", str(python), "--log", str(NO_KERNEL_IMAGE))
    assert code == 1
    arch = [f for f in out["findings"] if f["cause"] == "arch-not-in-build"]
    assert any(f["source"] == "environment" and "sm_90" in f["explanation"] + " ".join(f["evidence"])
               for f in arch)
    assert not any("not torch's here" in f["explanation"] for f in arch)
