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
    from vresolve.plan.wheels import plan_index_wheels as build_jetson_plan
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


# ------------------------------------------------------------------ kernel modules reached only through PTX (FA2)


def test_vllm_0112_fa2_reaches_hopper_only_through_ptx(matrix: Matrix) -> None:
    """vllm#31700: an H100 at driver 550 runs vLLM 0.11.2's FlashAttention-2 (_vllm_fa2_C: sm_80 SASS and
    compute_80 PTX, read off the wheel) only by JIT-compiling PTX that CUDA 12.8 made, which driver 550 cannot:
    the release is refused there with the PTX reason, not planned with a silent gap."""
    (fa2,) = next(r for r in matrix.vllm if r.version == Version("0.11.2")).kernel_modules
    assert fa2.module == "vllm_flash_attn/_vllm_fa2_C" and str(fa2.archs.ptx[0]) == "8.0"
    request = Request(vllm=SpecifierSet("==0.11.2"))
    with pytest.raises(NoCompatibleStack) as e:
        resolve(_host(matrix, {"gpus": "H100", "driver": "550.144.03"}), matrix, request)
    text = str(e.value) + " ".join(str(c) for c in e.value.causes)
    assert "vLLM 0.11.2 (cu128, PyPI wheel) needs driver >= 570.26" in text and "only through PTX" in text
    # at the toolkit's own floor it is planned, and the warning names the module
    res = resolve(_host(matrix, {"gpus": "H100", "driver": "570.86.15"}), matrix, request)
    assert str(res.vllm.version) == "0.11.2" and [g.name for g in res.ptx_gpus] == ["NVIDIA H100 80GB HBM3"]
    assert any("_vllm_fa2_C has no SASS" in w for w in res.warnings)
    # the module is optional and its SASS covers Ampere: an A100 (sm_80) at 550 keeps 0.11.2 under minor-compat
    res = resolve(_host(matrix, {"gpus": "A100", "driver": "550.144.03"}), matrix, request)
    assert str(res.vllm.version) == "0.11.2" and not res.ptx_gpus
    # a GPU the module does not cover at all (V100: FA2 is Ampere+) does not use it: no PTX, not refused
    res = resolve(_host(matrix, {"gpus": "V100", "driver": "570.86.15"}), matrix, request)
    assert str(res.vllm.version) == "0.11.2" and not res.ptx_gpus


def test_kernel_modules_are_checked_when_the_matrix_is_read(tmp_path: Path) -> None:
    import shutil

    from vresolve.errors import MatrixError

    root = tmp_path / "m"
    shutil.copytree(SHIPPED, root)
    p = root / "vllm.yaml"
    p.write_text(p.read_text().replace('        platforms: [linux-x86_64]\n        sass: ["8.0"]\n        ptx: ["8.0"]',
                                       '        platforms: [linux-ppc64]\n        sass: ["9.0", "8.0"]\n        ptx: ["8.0"]',
                                       1))
    with pytest.raises(MatrixError) as e:
        load_matrix(root)
    text = str(e.value)
    assert "kernel_modules[0].platforms" in text and "unknown platform 'linux-ppc64'" in text
    assert "kernel_modules[0].sass" in text and "ascending" in text


# ------------------------------------------------------------------ a known issue a plan can avoid (H20, cuBLAS 12.1)


def test_an_h20_is_planned_a_torch_whose_cublas_runs_there(matrix: Matrix) -> None:
    """torch's cu121 builds (cuBLAS 12.1.3.1) crash with SIGFPE on an H20 (known_issues.yaml
    h20-cublas-12-1-sigfpe): a vLLM that pins torch 2.4.0 gets its cu124 build there, and says why; an H100
    keeps PyPI's cu121; where nothing else fits (--pypi-only), the plan warns with the fix."""
    request = Request(vllm=SpecifierSet("==0.6.3"))
    h20 = resolve(_host(matrix, {"gpus": "H20", "driver": "550.144.03", "python": "3.10"}), matrix, request)
    assert (str(h20.torch.version), h20.torch.variant.variant) == ("2.4.0", "cu124")
    assert any("torch 2.4.0+cu121 is passed over on NVIDIA H20" in r for r in h20.reasons)
    h100 = resolve(_host(matrix, {"gpus": "H100", "driver": "550.144.03", "python": "3.10"}), matrix, request)
    assert h100.torch.variant.variant == "cu121" and not any("passed over" in r for r in h100.reasons)
    pypi = Request(vllm=SpecifierSet("==0.6.3"), pypi_only=True)
    forced = resolve(_host(matrix, {"gpus": "H20", "driver": "550.144.03", "python": "3.10"}), matrix, pypi)
    assert forced.torch.variant.variant == "cu121"
    (w,) = [w for w in forced.warnings if "h20-cublas-12-1-sigfpe" in w]
    assert w.startswith("NVIDIA H20 with torch 2.4.0+cu121") and "12.4.5.8" in w


def test_applies_to_names_gpus_of_the_matrix(tmp_path: Path) -> None:
    import shutil

    from vresolve.errors import MatrixError

    root = tmp_path / "m"
    shutil.copytree(SHIPPED, root)
    p = root / "known_issues.yaml"
    p.write_text(p.read_text().replace('applies_to: {gpus: ["NVIDIA H20"], torch_variants: ["cu121"]}',
                                       'applies_to: {gpus: ["NVIDIA H21"], torch_variants: ["cuda121"]}', 1))
    with pytest.raises(MatrixError) as e:
        load_matrix(root)
    assert "'NVIDIA H21' is not a GPU of gpus.yaml" in str(e.value)
    assert "invalid variant 'cuda121'" in str(e.value)
