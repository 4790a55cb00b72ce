"""Plans that run: glibc floors, release-asset URLs, the kept torch, companions an installer could get wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vresolve.cli import main
from vresolve.host import DriverInfo, Host, HostGpu, InstalledDist, PlatformInfo
from vresolve.matrix import Matrix, load_matrix
from vresolve.plan import build_plan
from vresolve.resolve import NoCompatibleStack, Request, resolve, resolve_kept_torch
from vresolve.values import Capability, DriverVersion

from .conftest import SHIPPED


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


def _host(gpu: str, cc: Capability, driver: str, python: str = "3.12", glibc: str | None = None,
          installed: tuple[InstalledDist, ...] = ()) -> Host:
    return Host(driver=DriverInfo(version=DriverVersion.parse(driver)),
                gpus=(HostGpu(index=0, name=gpu, compute_capability=cc),), python=Version(python),
                platform=PlatformInfo(os="linux", machine="x86_64", glibc=Version(glibc) if glibc else None),
                installed=installed, python_executable="/env/bin/python")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_v100_on_glibc_2_28_is_not_offered_a_manylinux_2_31_wheel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "Tesla V100-SXM2-32GB", "--driver", "580.95.05", "--glibc", "2.28",
                        "--python", "3.12", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    newest = load_matrix(SHIPPED).vllm_release(Version(d["stack"]["vllm"]))
    assert newest is not None
    floors = {w.manylinux for w in newest.wheels_for("linux-x86_64")}
    assert all(Version(f) <= Version("2.28") for f in floors), floors
    assert Version(d["requires"]["glibc"]) <= Version("2.28") and d["host"]["glibc"] == "2.28"
    rejected = [r for r in d["rejected"] if r["kind"] == "glibc"]
    assert any("vLLM 0.19.1's cu129 wheel needs glibc >= 2.31 (manylinux_2_31); this host has 2.28" == r["reason"]
               for r in rejected), rejected
    # without --glibc the same machine gets 0.19.1 (manylinux_2_31), and the plan says what it needs
    code, out, _ = run(["plan", "--gpu", "Tesla V100-SXM2-32GB", "--driver", "580.95.05", "--python", "3.12",
                        "--json"], capsys)
    d = json.loads(out)
    assert d["stack"]["vllm"] == "0.19.1" and d["requires"]["glibc"] == "2.31"
    assert any("glibc not known: the wheels need glibc >= 2.31" in w for w in d["warnings"])


def test_glibc_too_old_for_every_wheel_explains_itself(matrix: Matrix) -> None:
    host = _host("NVIDIA H200", Capability(9, 0), "580.159.04", glibc="2.17")
    with pytest.raises(NoCompatibleStack) as e:
        resolve(host, matrix, Request(vllm=SpecifierSet(">=0.22"), pypi_only=True))
    text = e.value.format()
    assert "glibc 2.17" in text and "needs glibc >= 2.28 (manylinux_2_28); this host has 2.17" in text, text
    assert "newer Linux distribution (glibc)" in text
    # builds from other indexes (whose floor the matrix does not record) come only in the second pass, with a warning
    res = resolve(host, matrix, Request(vllm=SpecifierSet(">=0.22")))
    assert res.vllm.where != "pypi" and any("is not recorded" in w and "glibc 2.17" in w for w in res.warnings)


def test_bad_glibc_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["plan", "--gpu", "H100", "--glibc", "two"], capsys)
    assert code == 2 and err.strip().count("\n") == 0 and "--glibc" in err and "expected X.Y" in err


def test_release_asset_builds_are_installed_from_their_url(matrix: Matrix) -> None:
    res = resolve(_host("NVIDIA A100-SXM4-80GB", Capability(8, 0), "470.82.01", python="3.10"), matrix, Request())
    assert (str(res.vllm.version), res.vllm.variant, res.vllm.where) == ("0.8.5.post1", "cu118", "release-assets")
    plan = build_plan(matrix, res)
    step = plan.steps[-1].argv
    assert ("vllm @ https://github.com/vllm-project/vllm/releases/download/v0.8.5.post1/"
            "vllm-0.8.5.post1+cu118-cp38-abi3-manylinux1_x86_64.whl") in step
    assert not any(a.startswith("vllm==") for a in step)
    # one asset per CPython in 0.4-0.6.1: the URL names this Python's
    res = resolve(_host("NVIDIA A100-SXM4-80GB", Capability(8, 0), "470.82.01", python="3.10"), matrix,
                  Request(vllm=SpecifierSet("==0.5.4")))
    assert res.vllm.asset is not None and res.vllm.asset.url_for(Version("3.10")).endswith(
        "/v0.5.4/vllm-0.5.4+cu118-cp310-cp310-manylinux1_x86_64.whl")


def test_releases_without_a_cu118_asset_are_not_planned(matrix: Matrix) -> None:
    for v in ("0.6.2", "0.6.3", "0.6.3.post1"):
        r = matrix.vllm_release(Version(v))
        assert r is not None and not [x for x in r.variants if x.variant == "cu118"]
    with pytest.raises(NoCompatibleStack):
        resolve(_host("NVIDIA A100-SXM4-80GB", Capability(8, 0), "470.82.01", python="3.10"), matrix,
                Request(vllm=SpecifierSet("==0.6.3")))


def test_every_release_asset_has_a_url_and_unverified_ones_come_second(matrix: Matrix) -> None:
    for r in matrix.vllm:
        for v in r.variants:
            if v.where == "release-assets":
                assert v.asset is not None and f"/v{r.version}/vllm-{r.version}+{v.variant}-" in v.asset.url
    # 0.8.5's cu118 file name is not verified (nor is 0.7.3's build): the cautious pass prefers 0.7.2 ...
    res = resolve(_host("NVIDIA A100-SXM4-80GB", Capability(8, 0), "470.82.01", python="3.10"), matrix,
                  Request(vllm=SpecifierSet("<0.8.5.post1")))
    assert str(res.vllm.version) == "0.7.2"
    # ... and uses it, with a warning, only when asked for it
    res = resolve(_host("NVIDIA A100-SXM4-80GB", Capability(8, 0), "470.82.01", python="3.10"), matrix,
                  Request(vllm=SpecifierSet("==0.8.5")))
    assert any("unverified" in w for w in res.warnings)


def test_flashinfer_stacks_hold_cuda_python_on_the_cuda_major(matrix: Matrix) -> None:
    res = resolve(_host("NVIDIA H200", Capability(9, 0), "580.159.04"), matrix, Request())
    assert res.companions.get("flashinfer-python") == "0.7.2.post1"
    assert "cuda-python>=13.0,<14" in build_plan(matrix, res).steps[-2].argv
    # a flashinfer release that does not ask for cuda-python gets no constraint
    res = resolve(_host("Tesla V100-SXM2-32GB", Capability(7, 0), "580.95.05"), matrix, Request())
    assert not any(a.startswith("cuda-python") for s in build_plan(matrix, res).steps for a in s.argv)


def test_download_kernels_only_where_the_wheel_has_the_command(matrix: Matrix) -> None:
    host = _host("NVIDIA H200", Capability(9, 0), "580.159.04")
    for version, has in (("0.33.0", True), ("0.32.0", True), ("0.31.0", False)):
        res = resolve(host, matrix, Request(vllm=SpecifierSet(f"=={version}")))
        steps = build_plan(matrix, res).steps
        assert (steps[-1].argv == (".venv-vllm/bin/vllm", "download-kernels")) is has, version


def test_kept_torch_that_a_wheel_pins_gets_that_wheel(matrix: Matrix) -> None:
    kept = InstalledDist(name="torch", version="2.11.0+cu130", cuda="13.0")
    host = _host("NVIDIA H200", Capability(9, 0), "580.159.04", installed=(kept,))
    res = resolve_kept_torch(host, matrix, Request())
    assert str(res.vllm.version) == "0.26.0" and str(res.torch.version) == "2.11.0"
    assert res.vllm.cuda is not None and res.vllm.cuda.major == 13
    plan = build_plan(matrix, res, into="/env/bin/python")
    assert [s.argv[:5] for s in plan.steps] == [("uv", "pip", "install", "--python", "/env/bin/python")]
    assert "torch==2.11.0" in plan.steps[0].argv
    assert plan.verify[-1].expect == "torch 2.11.0+cu130"


def test_kept_torch_cuda_12_build_pairs_with_vllms_cuda_12_variant(matrix: Matrix) -> None:
    """The seed's user: torch 2.11.0+cu128 on an RTX 4090. vLLM 0.20.x-0.26.0 pin torch 2.11.0; their PyPI
    wheels are CUDA 13, their cu129 builds (vLLM's index) CUDA 12: the same major as the kept torch."""
    kept = InstalledDist(name="torch", version="2.11.0+cu128", cuda="12.8")
    host = _host("NVIDIA GeForce RTX 4090", Capability(8, 9), "570.86.10", installed=(kept,))
    res = resolve_kept_torch(host, matrix, Request(vllm=SpecifierSet("==0.20.2")))
    assert (str(res.vllm.version), res.vllm.variant, res.vllm.where) == ("0.20.2", "cu129", "vllm-index")
    assert res.torch.variant.variant == "cu128"
    plan = build_plan(matrix, res, into="/env/bin/python")
    argv = plan.steps[-1].argv
    assert "--extra-index-url" in argv and "torch==2.11.0+cu128" in argv and "vllm==0.20.2+cu129" in argv


def test_kept_torch_no_wheel_pins_falls_back_to_a_source_build(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import vresolve.detect as detect

    real = detect.probes._probe_installed
    monkeypatch.setattr(detect.probes, "_probe_installed",
                        lambda: (InstalledDist(name="torch", version="2.12.1+cu130", cuda="13.0"),))
    monkeypatch.setenv("VRESOLVE_GPUS", "NVIDIA H200")
    monkeypatch.setenv("VRESOLVE_DRIVER", "580.159.04")
    code, out, _ = run(["plan", "--gpu", "auto", "--keep-torch", "--json"], capsys)
    monkeypatch.setattr(detect.probes, "_probe_installed", real)
    assert code == 0
    d = json.loads(out)
    assert d["stack"]["install_kind"] == "source"
    assert any("no vLLM wheel pins your torch 2.12.1+cu130" in r for r in d["reasons"]), d["reasons"]


def test_lock_header_records_the_target_glibc(tmp_path: Path) -> None:
    from vresolve.lock import lock_header

    m = load_matrix(SHIPPED)
    res = resolve(_host("NVIDIA H200", Capability(9, 0), "580.159.04", glibc="2.36"), m, Request())
    assert lock_header(build_plan(m, res), m)["machine"]["glibc"] == "2.36"
    res = resolve(_host("NVIDIA H200", Capability(9, 0), "580.159.04"), m, Request())
    assert lock_header(build_plan(m, res), m)["machine"]["glibc"] == "2.31"  # the plan's floor: llguidance 1.7 (vLLM 0.33.0 requires it) ships manylinux_2_31 only
