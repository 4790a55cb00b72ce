"""A driver older than the GPU (or past a legacy GPU's last branch) gets no stack: plan, grid, doctor, fleet.

gpus.yaml's ``driver:`` facts (NVIDIA's architecture matrix and driver source): Hopper and Ada are first driven by
R520, Blackwell by R570, an H200 by R550; Kepler is driven up to R470 only. CUDA minor-version compatibility never
lets an older branch run a newer GPU.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from vresolve.cli import main
from vresolve.cli.grid import columns, plan_answer, rows
from vresolve.matrix import load_matrix

from .conftest import SHIPPED

NVIDIA_SMI_H100_470 = """\
$ nvidia-smi
Tue Dec  1 10:00:00 2026
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  NVIDIA H100 80G...  On   | 00000000:18:00.0 Off |                    0 |
| N/A   32C    P0    70W / 700W |      0MiB / 81559MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
$ nvidia-smi -L
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-4b5f3c1e-0d3a-4c55-9d3c-1f2e3a4b5c6d)
"""


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("gpu", "driver", "needs"), [
    ("H100", "470.57.02", "NVIDIA H100 80GB HBM3 (Hopper) needs driver >= 520.56.06 (R520)"),
    ("B200", "535.104.05", "NVIDIA B200 (Blackwell) needs driver >= 570.26 (R570)"),
    ("RTX 5090", "550.54.15", "NVIDIA GeForce RTX 5090 (Blackwell) needs driver >= 570.26 (R570)"),
    ("RTX 4090", "515.65.01", "NVIDIA GeForce RTX 4090 (Ada Lovelace) needs driver >= 520.56.06 (R520)"),
    ("NVIDIA H200", "535.183.06", "NVIDIA H200 (Hopper) needs driver >= 550.40.65 (R550)"),
])
def test_a_driver_older_than_the_gpu_gets_no_stack(capsys: pytest.CaptureFixture[str], gpu: str, driver: str,
                                                  needs: str) -> None:
    code, doc = _plan(capsys, "--gpu", gpu, "--driver", driver)
    assert code == 1
    err = doc["error"]
    assert err["code"] == "no-compatible-stack" and f"driver {driver} cannot drive" in err["message"]
    branch = needs.rsplit("(", 1)[1].rstrip(")")
    assert any(c.startswith(needs) and c.endswith(f"this machine has {driver}: install {branch} or newer")
               for c in err["causes"]), err["causes"]
    assert any(h.startswith(f"install NVIDIA driver {branch} or newer") for h in err["hints"]), err["hints"]


def test_a_legacy_gpu_past_its_last_branch_gets_no_stack(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _plan(capsys, "--gpu", "K80", "--driver", "535.104.05")
    assert code == 1
    assert doc["error"]["causes"][0] == ("Tesla K80 (Kepler) is supported up to driver branch R470 only; this machine "
                                         "has 535.104.05: install an R470 driver (470.x)")
    # Pascal is driven up to R580: R580 itself is no refusal of that kind
    code, doc = _plan(capsys, "--gpu", "P100", "--driver", "580.95.05")
    assert "supported up to driver branch" not in json.dumps(doc)


@pytest.mark.parametrize("driver", ["520.61.05", "525.60.13", "535.104.05", "550.54.15"])
def test_hopper_from_its_first_branch_on_is_planned(capsys: pytest.CaptureFixture[str], driver: str) -> None:
    code, doc = _plan(capsys, "--gpu", "H100", "--driver", driver)
    assert code == 0, doc
    assert not any("needs driver >=" in w for w in doc["warnings"])


def test_a_source_build_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _plan(capsys, "--gpu", "H100", "--driver", "470.57.02", "--source-build", "always")
    assert code == 1 and "cannot drive NVIDIA H100 80GB HBM3" in doc["error"]["message"]


def test_an_unverified_fact_plans_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = tmp_path / "matrix"
    shutil.copytree(SHIPPED, matrix)
    gpus = matrix / "gpus.yaml"
    text = gpus.read_text()
    hopper = text.index("  - family: hopper")
    at = text.index("      verified: primary", hopper)
    gpus.write_text(text[:at] + "      verified: unverified" + text[at + len("      verified: primary"):])
    code = main(["--matrix", str(matrix), "plan", "--gpu", "H100", "--driver", "470.57.02", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert any(w.startswith("NVIDIA H100 80GB HBM3 (Hopper) needs driver >= 520.56.06 (R520)")
               and "unverified" in w for w in doc["warnings"]), doc["warnings"]


def test_the_grid_cell_below_the_first_driver_has_no_stack() -> None:
    m = load_matrix(SHIPPED)
    hopper = next(r for r in rows(m, "linux-x86_64") if r.capability == "9.0")
    assert m.find_gpu(hopper.names[0]).driver is None  # the family's own first driver, not a later part's
    col = {c.branch: c for c in columns(m)}
    below, at = col[470], col[520]
    argv = ["plan", "--gpu", hopper.names[0], "--python", "3.11", "--platform", "linux-x86_64"]
    assert plan_answer([*argv, "--driver", below.driver]).code == 1
    assert plan_answer([*argv, "--driver", at.driver]).code == 0


def test_doctor_judges_a_pasted_driver_against_the_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "nvidia-smi.txt"
    log.write_text(NVIDIA_SMI_H100_470)
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    found = [f for f in doc["findings"] if f["cause"] == "driver-too-old"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    f = found[0]
    assert "needs driver >= 520.56.06 (R520)" in f["explanation"]
    assert f["fix"].startswith("Install NVIDIA driver R520 or newer (>= 520.56.06)")
    assert "GPU 0: NVIDIA H100 80GB HBM3 (sm_90)" in f["evidence"]


def test_doctor_finds_nothing_of_the_kind_on_a_driver_new_enough(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "nvidia-smi.txt"
    log.write_text(NVIDIA_SMI_H100_470.replace("470.57.02", "535.104.05").replace("CUDA Version: 11.4",
                                                                                  "CUDA Version: 12.2"))
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert not [f for f in doc["findings"] if f["cause"] == "driver-too-old"], doc["findings"]


def _inventory(path: Path, nodes: list[tuple[str, str, str]]) -> Path:
    def host(gpu: str, driver: str) -> dict[str, Any]:
        return {"driver": {"version": driver}, "gpus": [{"index": 0, "name": gpu}], "python": "3.12",
                "platform": {"os": "linux", "machine": "x86_64", "glibc": "2.35"}}

    path.write_text(json.dumps({"schema": "vresolve.fleet/1", "hosts": len(nodes), "failed": [],
                                "inventory": [{"name": n, "source": "file", "host": host(g, d)} for n, g, d in nodes]}))
    return path


def test_fleet_nodes_whose_driver_cannot_drive_their_gpu_block_it(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inventory(tmp_path / "inv.json", [("h100-new", "NVIDIA H100 80GB HBM3", "580.95.05"),
                                             ("h100-old", "NVIDIA H100 80GB HBM3", "470.57.02"),
                                             ("a100-old", "NVIDIA A100-SXM4-80GB", "470.57.02")])
    assert main(["fleet", "plan", str(inv), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["common"] is None and doc["common_error"].startswith("no stack runs on h100-old")
    assert doc["blocking"] == [{
        "hosts": ["h100-old"], "upgrade": "driver R520 or newer (>= 520.56.06)", "unlocks": {"vllm": "0.8.5.post1"},
        "why": "NVIDIA H100 80GB HBM3 (Hopper) needs driver >= 520.56.06 (R520), the first branch that supports it; "
               "these nodes have driver 470.57.02"}]
    old = next(g for g in doc["groups"] if g["hosts"] == ["h100-old"])
    assert old["stack"] is None and "cannot drive" in old["why_not"]


def test_fleet_judges_the_driver_per_node_not_on_the_combined_host(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The combined host has the oldest driver (an A100's 470) beside every GPU kind (an H100 on 580): no node
    has an H100 on 470, so nothing is refused for it."""
    inv = _inventory(tmp_path / "inv.json", [("h100-new", "NVIDIA H100 80GB HBM3", "580.95.05"),
                                             ("a100-old", "NVIDIA A100-SXM4-80GB", "470.57.02")])
    assert main(["fleet", "plan", str(inv), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["common"]["stack"]["vllm"] == "0.8.5.post1"
    assert all("cannot drive" not in b["why"] for b in doc["blocking"])


def _problems(path: Path) -> list[str]:
    from vresolve.errors import MatrixError

    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    return [str(p) for p in info.value.problems]


_SRC = {"source": "https://docs.nvidia.com/datacenter/tesla/drivers/", "verified": "primary"}


def test_validate_reads_and_checks_the_driver_facts(tiny_copy: Any) -> None:
    def good(doc: dict[str, Any]) -> None:
        doc["architectures"][0]["driver"] = {"first": "520.56.06", **_SRC}
        doc["gpus"][0]["driver"] = {"first": "550.40.65", **_SRC}

    m = load_matrix(tiny_copy({"gpus.yaml": good}))
    h200 = m.find_gpu("NVIDIA H200")
    assert h200 is not None and h200.driver is not None and str(h200.driver.first) == "550.40.65"
    support = m.driver_support(h200)
    assert support is not None and str(support.first) == "550.40.65" and support.last_branch is None


def test_validate_refuses_bad_driver_facts(tiny_copy: Any) -> None:
    def bad(doc: dict[str, Any]) -> None:
        doc["architectures"][0]["driver"] = {"first": "580.65.06", "last_branch": "470", **_SRC}
        doc["architectures"][1]["driver"] = {"last_branch": "R4x", "frist": "450.80.02", **_SRC}
        doc["gpus"][1]["driver"] = {**_SRC}

    assert _problems(tiny_copy({"gpus.yaml": bad})) == [
        "gpus.yaml: architectures[0] 'hopper': driver.last_branch: branch 470 is older than the first driver 580.65.06",
        "gpus.yaml: architectures[1] 'ampere': driver.frist: unknown field (expected one of: first, last_branch, "
        "source, verified, note)",
        "gpus.yaml: architectures[1] 'ampere': driver.last_branch: invalid driver branch 'R4x' (expected a branch "
        "such as '470')",
        "gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': driver: expected 'first' or 'last_branch' (or both)",
    ]


def test_validate_refuses_a_later_part_older_than_its_family(tiny_copy: Any) -> None:
    def bad(doc: dict[str, Any]) -> None:
        doc["architectures"][0]["driver"] = {"first": "520.56.06", **_SRC}
        doc["gpus"][0]["driver"] = {"first": "515.65.01", **_SRC}

    assert _problems(tiny_copy({"gpus.yaml": bad})) == [
        "gpus.yaml: gpus[0] 'NVIDIA H200': driver.first: 515.65.01 is older than the hopper family's first driver "
        "520.56.06"]


@pytest.mark.parametrize(("gpu", "driver", "warned"), [
    ("NVIDIA GeForce RTX 3090", "450.80.02", True),   # sm_86: first targeted by CUDA 11.1 (driver >= 455.23)
    ("NVIDIA GeForce RTX 3090", "535.104.05", False),
    ("NVIDIA A100-SXM4-80GB", "450.80.02", False),    # sm_80: CUDA 11.0's own floor is met
])
def test_an_unrecorded_first_driver_is_said_not_guessed(gpu: str, driver: str, warned: bool,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """No first driver recorded for the GPU: never refused on a guess, but below the driver of the first toolkit
    that targets it the plan says what to check."""
    code = main(["plan", "--gpu", gpu, "--driver", driver, "--python", "3.12", "--json"])
    d = json.loads(capsys.readouterr().out)
    said = [w for w in d.get("warnings", []) if "is not recorded in the matrix" in w]
    assert code == 0 and bool(said) == warned, d.get("warnings")
    if warned:
        assert "455.23" in said[0] and driver in said[0] and gpu in said[0]
