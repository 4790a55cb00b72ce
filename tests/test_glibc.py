"""glibc from the whole closure and builds whose floor is not recorded: the plan's stated floor names the package
that sets it (llguidance for vLLM 0.33.0); a known glibc sets a build aside only with a visible reason and the
flag that admits it; ``plan``, ``plan --gpu auto`` and ``fleet plan`` give one stack for the same facts.
Real CLI runs on the packaged matrix."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from packaging.version import Version

from vresolve.cli import main
from vresolve.matrix import load_matrix
from vresolve.resolve.candidates import vllm_builds

H100_550 = ["--gpu", "H100", "--driver", "550.54.15", "--python", "3.12"]


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def plan(*argv: str) -> dict:
    code, out, err = run(["plan", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def test_h100_at_550_with_and_without_glibc_same_stack_or_a_visible_reason() -> None:
    """Without glibc the plan reaches vLLM's cu129 index build; with glibc 2.36 a build whose floor is not recorded
    is set aside only with a warning naming the releases, why, and --allow-unknown-glibc, and the stack it would
    have been is an alternative; with the flag the stacks agree."""
    free = plan(*H100_550)
    known = plan(*H100_550, "--glibc", "2.36")
    if known["stack"] != free["stack"]:
        said = [w for w in known["warnings"] if "set aside" in w]
        assert said, known["warnings"]
        assert "--allow-unknown-glibc" in said[0] and "glibc" in said[0] and "not recorded" in said[0]
        assert f"vLLM {known['stack']['vllm']}" not in said[0].split(" set aside")[0]
        assert f"to {free['stack']['vllm']} set aside" in said[0] or f"vLLM {free['stack']['vllm']} set aside" in said[0]
        alts = [a for a in known["alternatives"] if "--allow-unknown-glibc" in a["why_not_chosen"]]
        assert [a["stack"] for a in alts] == [free["stack"]]
    admitted = plan(*H100_550, "--glibc", "2.36", "--allow-unknown-glibc")
    assert admitted["stack"] == free["stack"]
    assert not [w for w in admitted["warnings"] if "set aside" in w]


def test_plan_floor_for_vllm_0_33_includes_llguidance(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.33.0's own wheel is manylinux_2_28; llguidance 1.7 (which it requires, unpinned) ships
    manylinux_2_31 only: the plan states 2.31 and names llguidance; a glibc 2.30 machine cannot have 0.33.0."""
    args = ["--gpu", "H100", "--driver", "580.95.05", "--python", "3.12"]
    p = plan(*args)
    assert p["stack"]["vllm"] == "0.33.0"
    assert p["requires"]["glibc"] == "2.31"
    assert any("set by llguidance" in w for w in p["warnings"])
    code, out, _ = run(["plan", *args])
    assert code == 0
    needs = [line for line in out.splitlines() if "glibc >= 2.31" in line]
    assert needs and "llguidance" in needs[0]
    old = plan(*args, "--glibc", "2.30")
    assert Version(old["stack"]["vllm"]) < Version("0.25.0")  # every release that requires llguidance 1.7
    why = [r["reason"] for r in old["rejected"] if r["kind"] == "glibc" and "0.33.0" in r["candidate"]]
    assert why and "llguidance" in why[0] and "2.31" in why[0]


def test_a_wheel_labelled_2_31_that_needs_2_34_is_held_to_2_34() -> None:
    """vllm#41103: 0.20.0's cu129 wheel is tagged manylinux_2_31 but its extensions need GLIBC_2.34."""
    m = load_matrix()
    (b,) = [b for b in vllm_builds(m, "linux-x86_64") if str(b.version) == "0.20.0" and b.variant == "cu129"]
    assert b.manylinux == Version("2.34")
    (r,) = [r for r in m.vllm if str(r.version) == "0.20.0"]
    (v,) = [v for v in r.variants if v.variant == "cu129" and "linux-x86_64" in v.platforms]
    assert v.glibc is not None and any("manylinux_2_31" in w for w in v.glibc.wheels)
    assert "41103" in " ".join(v.glibc.provenance.source)


def test_fleet_plan_and_plan_on_the_machine_equal_plan_by_name(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """One H100 node at driver 550 with glibc 2.36: plan by name (--glibc), plan --gpu auto on the machine itself
    (detection simulated, --glibc) and fleet plan of a one-node inventory give one stack."""
    by_name = plan(*H100_550, "--glibc", "2.36")
    for k, v in {"VRESOLVE_GPUS": "H100", "VRESOLVE_DRIVER": "550.54.15", "VRESOLVE_PLATFORM": "linux-x86_64",
                 "VRESOLVE_PYTHON": "3.12", "VRESOLVE_NO_NVML": "1"}.items():
        monkeypatch.setenv(k, v)
    on_machine = plan("--gpu", "auto", "--glibc", "2.36")
    code, out, err = run(["detect", "--json"])
    assert code == 0, err
    d = json.loads(out)
    d["host"]["platform"]["glibc"] = "2.36"
    f = tmp_path / "h100.json"
    f.write_text(json.dumps(d))
    code, out, err = run(["fleet", "plan", str(f), "--json"])
    assert code == 0, err
    fleet = json.loads(out)
    assert on_machine["stack"] == by_name["stack"]
    assert fleet["common"]["stack"] == by_name["stack"]
    code, out, err = run(["fleet", "plan", str(f), "--allow-unknown-glibc", "--json"])
    assert code == 0, err
    assert json.loads(out)["common"]["stack"] == plan(*H100_550, "--glibc", "2.36", "--allow-unknown-glibc")["stack"]
