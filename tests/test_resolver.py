"""Resolver behaviour as case files (data/cases/*.yaml): host + request -> stack or conflict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vresolve.cli.targets import target_host
from vresolve.host import Host, PlatformInfo
from vresolve.matrix import Matrix, load_matrix
from vresolve.plan import build_plan
from vresolve.render import stack_view
from vresolve.resolve import NoCompatibleStack, Request, alternatives, driver_floor, driver_serves, resolve
from vresolve.values import DriverVersion

from .conftest import DATA, SHIPPED

CASES = sorted((DATA / "cases").glob("*.yaml"))


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


def _host(m: Matrix, spec: dict[str, Any]) -> Host:
    base = Host(python=Version("3.12"), platform=PlatformInfo(os="linux", machine="x86_64"))
    return target_host(m, gpus=spec.get("gpus", "none"), driver=spec.get("driver"), python=spec.get("python"),
                       platform=spec.get("platform"), base=base)


def _request(spec: dict[str, Any], host: Host) -> Request:
    vllm = str(spec.get("vllm", ""))
    return Request(vllm=SpecifierSet(f"=={vllm}" if vllm[:1].isdigit() else vllm),
                   torch=SpecifierSet(str(spec.get("torch", ""))), variant=spec.get("variant"),
                   driver_policy=spec.get("driver_policy", "minor-compat"), cpu=not host.gpus,
                   jetpack=spec.get("jetpack"), jetson_index=spec.get("jetson_index"))


def _contains_all(texts: list[str], wanted: list[str], what: str) -> None:
    for w in wanted:
        assert any(w in t for t in texts), f"no {what} contains {w!r}:\n  " + "\n  ".join(texts)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path, matrix: Matrix) -> None:
    case = yaml.safe_load(path.read_text())
    assert case.get("#"), "every case says what it shows"
    host = _host(matrix, case["host"])
    request = _request(case.get("request") or {}, host)
    if "jetson_wheels" in case:  # a Jetson on L4T's own CUDA: the Jetson index's wheels for its JetPack
        _jetson_case(case["jetson_wheels"], host, matrix, request)
        return
    if "conflicted" in case:
        with pytest.raises(NoCompatibleStack) as info:
            resolve(host, matrix, request)
        _contains_all(list(info.value.causes), case["conflicted"].get("causes_contain", []), "cause")
        _contains_all(list(info.value.hints), case["conflicted"].get("hints_contain", []), "hint")
        return
    res = resolve(host, matrix, request)
    got = {**stack_view(res.stack), "min_driver": str(res.min_driver) if res.min_driver else None}
    want = case["resolved"]
    assert {k: got[k] for k in want} == want
    _contains_all(list(res.warnings), case.get("warnings_contain", []), "warning")
    alts = [why for _, why in alternatives(host, matrix, request, res)]
    _contains_all(alts, case.get("alternatives_contain", []), "alternative")
    if "env" in case:
        plan = build_plan(matrix, res)
        assert {k: v for k, v in plan.env if k in case["env"]} == case["env"]


def _jetson_case(want: dict[str, Any], host: Host, matrix: Matrix, request: Request) -> None:
    from vresolve.plan.jetson import build_jetson_plan
    from vresolve.resolve.jetson import jetson_wheel_choice

    choice = jetson_wheel_choice(host, matrix, request)
    assert choice is not None
    plan = build_jetson_plan(host, request, choice)
    got = stack_view(plan.stack)
    assert {k: got[k] for k in want["stack"]} == want["stack"]
    assert choice.index == want["index"]
    assert list(plan.steps[-1].argv[-len(want["pins"]):]) == want["pins"]
    assert [c.expect for c in plan.checks] == want["checks"]


def test_driver_rules(matrix: Matrix) -> None:
    d = DriverVersion.parse
    assert str(driver_floor(matrix, Version("12.8"), "minor-compat", ptx_only=False)) == "525.60.13"
    assert str(driver_floor(matrix, Version("12.8"), "minor-compat", ptx_only=True)) == "570.26"
    assert str(driver_floor(matrix, Version("12.8"), "toolkit", ptx_only=False)) == "570.26"
    assert str(driver_floor(matrix, Version("13.0"), "minor-compat", ptx_only=False)) == "580.65.06"
    assert str(driver_floor(matrix, Version("11.8"), "minor-compat", ptx_only=False)) == "450.80.02"
    assert str(driver_serves(matrix, d("470.82.01"), "toolkit")) == "11.4"
    assert str(driver_serves(matrix, d("470.82.01"), "minor-compat")) == "11.8"
    assert str(driver_serves(matrix, d("550.54.15"), "toolkit")) == "12.4"
    assert str(driver_serves(matrix, d("580.159.04"), "toolkit")) == "13.0"


def test_preference_is_vllm_first(matrix: Matrix) -> None:
    """vLLM is decided first and torch follows its pin: the newest vLLM wins over the newest torch."""
    host = _host(matrix, {"gpus": "H100", "driver": "580.95.05"})
    res = resolve(host, matrix, Request())
    newest_vllm = max(r.version for r in matrix.vllm)
    newest_torch = max(t.version for t in matrix.torch)
    assert res.vllm.version == newest_vllm
    assert res.torch.version == res.vllm.torch_pin() and res.torch.version < newest_torch


def test_causes_are_data_with_kinds(matrix: Matrix) -> None:
    """The command line decides on a source build by the kinds of the causes, not by their wording."""
    host = _host(matrix, {"gpus": "P100", "driver": "580.95.05"})
    with pytest.raises(NoCompatibleStack) as e:
        resolve(host, matrix, Request())
    assert "gpu" in e.value.cause_kinds
    assert all(c.text for c in e.value.cause_list) and e.value.causes == tuple(c.text for c in e.value.cause_list)
    host = _host(matrix, {"gpus": "H100", "driver": "470.82.01"})
    with pytest.raises(NoCompatibleStack) as e:
        resolve(host, matrix, Request(pypi_only=True))
    assert "driver" in e.value.cause_kinds and "gpu" not in e.value.cause_kinds
