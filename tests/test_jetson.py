"""Jetson: detection of the L4T release on captured trees, and what a Jetson is planned (the real resolver).

The trees under data/probes/jetson/ are verbatim from public sources (their README says which); the
fake ``dpkg-query`` and ``nvidia-smi`` are real processes on PATH, as in test_detect.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vresolve.cli import main
from vresolve.detect import (
    detect_host,
    detect_interpreter,
    parse_device_tree_model,
    parse_l4t_core_version,
    parse_nv_tegra_release,
)
from vresolve.host import Host, HostGpu, PlatformInfo
from vresolve.matrix import Matrix, load_matrix
from vresolve.plan.source import plan_source_build
from vresolve.resolve import NoCompatibleStack, Request, resolve
from vresolve.resolve.jetson import jetson_of, with_board_gpu

from .conftest import DATA, SHIPPED
from .test_detect import _script, overrides

TREES = DATA / "probes" / "jetson"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


# --------------------------------------------------------------------------- parsers on real files


@pytest.mark.parametrize(("tree", "l4t"), [
    ("orin-nano-r36.4.7", "36.4.7"), ("orin-r36.4.3", "36.4.3"), ("xavier-r35.4.1", "35.4.1"),
    ("orin-nx-r35.2.1", "35.2.1"), ("thor-r38.2.2", "38.2.2"), ("thor-r38.2.0", "38.2.0"),
])
def test_parse_nv_tegra_release(tree: str, l4t: str) -> None:
    assert parse_nv_tegra_release((TREES / tree / "etc" / "nv_tegra_release").read_text()) == Version(l4t)


@pytest.mark.parametrize("text", ["", "not a tegra release file\n", "# R36 (release)\n", "R36 (release), REVISION: 4.3",
                                  "# R3600000 (release), REVISION: 4.3", "# R36 (release), REVISION: x.y"])
def test_parse_nv_tegra_release_refuses_other_text(text: str) -> None:
    assert parse_nv_tegra_release(text) is None


@pytest.mark.parametrize(("text", "l4t"), [
    ("36.4.3-20250107174145", "36.4.3"), ("36.4.4-20250616085344\n", "36.4.4"), ("36.4.7-20250918154033", "36.4.7"),
    ("6.2.1+b38", None), ("", None), ("36.4.3", None), ("36.4.3-2025$(id)", None),
])
def test_parse_l4t_core_version(text: str, l4t: str | None) -> None:
    # real dpkg versions of nvidia-l4t-core, quoted in public Jetson notes (README of data/probes/jetson)
    assert parse_l4t_core_version(text) == (Version(l4t) if l4t else None)


def test_parse_device_tree_model_strips_nul_and_controls() -> None:
    raw = (TREES / "thor-r38.2.2" / "proc" / "device-tree" / "model").read_text()
    assert raw.endswith("\x00")
    assert parse_device_tree_model(raw) == "NVIDIA Jetson AGX Thor Developer Kit"
    assert parse_device_tree_model("\x00") is None
    assert parse_device_tree_model("Jetson\x1b[2J\nrm -rf") == "Jetson [2J rm -rf"


# --------------------------------------------------------------------------- probes on captured trees


@pytest.mark.parametrize(("tree", "board", "l4t"), [
    ("orin-nano-r36.4.7", "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super", "36.4.7"),
    ("thor-r38.2.2", "NVIDIA Jetson AGX Thor Developer Kit", "38.2.2"),
    ("xavier-r35.4.1", "Jetson (model unknown)", "35.4.1"),
])
def test_detect_reads_the_l4t_release(tmp_path: Path, tree: str, board: str, l4t: str) -> None:
    h = detect_interpreter(overrides(tmp_path, root=TREES / tree))
    assert (h.platform.jetson, h.platform.l4t, h.platform.l4t_source) == (board, Version(l4t), "/etc/nv_tegra_release")
    assert Host.from_dict(json.loads(json.dumps(h.to_dict()))).platform == h.platform


def test_detect_no_jetson_on_a_plain_tree(tmp_path: Path) -> None:
    h = detect_interpreter(overrides(tmp_path))
    assert (h.platform.jetson, h.platform.l4t) == (None, None)


def test_detect_falls_back_to_dpkg_in_an_l4t_container(tmp_path: Path) -> None:
    """A Tegra device tree without /etc/nv_tegra_release: the L4T release from dpkg's nvidia-l4t-core."""
    root = tmp_path / "tree"
    (root / "proc" / "device-tree").mkdir(parents=True)
    shutil.copy(TREES / "orin-nano-r36.4.7" / "proc" / "device-tree" / "model", root / "proc" / "device-tree" / "model")
    (root / "proc" / "device-tree" / "compatible").write_bytes(
        b"nvidia,p3768-0000+p3767-0003-super\x00nvidia,p3767-0003\x00nvidia,tegra234\x00")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _script(bindir / "dpkg-query", 'case "$*" in *nvidia-l4t-core*) printf %s 36.4.3-20250107174145; exit 0;; esac\n'
                                   "exit 1")
    h = detect_interpreter(overrides(tmp_path, bindir, root=root))
    assert (h.platform.l4t, h.platform.l4t_source) == (Version("36.4.3"), "dpkg nvidia-l4t-core")
    assert h.platform.jetson == "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super"


def test_a_jetsons_nvidia_smi_driver_is_marked_as_l4ts(tmp_path: Path) -> None:
    """JetPack 6's nvidia-smi names the GPU 'Orin (nvgpu)' and prints L4T's driver: not a desktop branch."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    row = "0, Orin (nvgpu), GPU-00000000-0000-0000-0000-000000000000, 8.7, 540.4.0, [N/A], 00000000:00:00.0"
    _script(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) echo "{row}"; exit 0;; esac\nexit 0')
    h = detect_host(overrides(tmp_path, bindir, root=TREES / "orin-r36.4.3"), installed=False)
    assert [g.name for g in h.gpus] == ["Orin (nvgpu)"]
    assert h.driver.source is not None and "Jetson: L4T's driver" in h.driver.source


# --------------------------------------------------------------------------- planning


def _jetson(matrix: Matrix, tree: str, gpu: str | None, python: str = "3.10") -> Host:
    plat = detect_interpreter(overrides_for(tree)).platform
    plat = PlatformInfo(os="linux", machine="aarch64", jetson=plat.jetson, l4t=plat.l4t, l4t_source=plat.l4t_source)
    gpus = ()
    if gpu is not None:
        row = matrix.find_gpu(gpu)
        assert row is not None
        gpus = (HostGpu(index=0, name=gpu, compute_capability=row.compute_capability, source="nvidia-smi"),)
    return with_board_gpu(Host(gpus=gpus, python=Version(python), platform=plat), matrix)


def overrides_for(tree: str) -> object:
    from vresolve.detect import Overrides

    return Overrides(use_nvml=False, root=str(TREES / tree), environ={"PATH": "/usr/bin:/bin"})


def test_orin_jp62_detected_gets_nvidia_torch_and_a_source_build(matrix: Matrix) -> None:
    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    j = jetson_of(host, matrix)
    assert j is not None and j.module.name == "Orin" and j.jetpack is not None and str(j.jetpack.version) == "6.2"
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request(jetson_index="https://jetson.example/jp6/cu126"))
    e = info.value
    assert "jetson" in e.cause_kinds and not ({"gpu", "platform"} & e.cause_kinds)  # no generic source build
    assert any("L4T 36.4.3 from /etc/nv_tegra_release" in c for c in e.causes)
    assert any("'torch==2.10.0' --index-url https://jetson.example/jp6/cu126" in h for h in e.hints)
    assert any("vLLM 0.19.1" in h and "--keep-torch" in h and "TORCH_CUDA_ARCH_LIST=8.7" in h for h in e.hints)


def test_orin_without_nvml_is_named_by_its_board(matrix: Matrix) -> None:
    """JetPack 5 has no nvidia-smi: the board's model names the module, so it is no CPU plan."""
    host = _jetson(matrix, "orin-nano-r36.4.7", None)
    assert [g.name for g in host.gpus] == ["Orin"]
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request())
    # 36.4.7 is newer than any L4T in the matrix: read as the newest JetPack of L4T 36.4, and said so
    assert any("L4T 36.4.7 is not in the matrix; read as JetPack 6.2.1" in c for c in info.value.causes)


def test_orin_jp5_is_told_to_upgrade(matrix: Matrix) -> None:
    host = _jetson(matrix, "orin-nx-r35.2.1", "Orin", python="3.8")
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request())
    assert any("2.1.0a0+41361538.nv23.06" in c for c in info.value.causes)
    # the newest JetPack of Orin with the Jetson index's wheels (jetson.yaml index_wheels), before any build
    assert any(h.startswith("upgrade JetPack to 6.2.1") and "vLLM 0.14.0+cu126 with torch 2.9.1" in h
               for h in info.value.hints)
    # asked for an older vLLM than any wheel set allows: the build way, as before
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request(vllm=SpecifierSet("<0.8")))
    assert any(h.startswith("upgrade JetPack to 6.2.1") and "vLLM 0.7.3" in h for h in info.value.hints)


def test_xavier_is_refused_with_no_way(matrix: Matrix) -> None:
    host = _jetson(matrix, "xavier-r35.4.1", "Xavier", python="3.8")
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request())
    assert info.value.hints[0].startswith("none: no JetPack for Xavier")


def test_thor_detected_gets_unified_arm_wheels_covering_sm110(matrix: Matrix) -> None:
    host = _jetson(matrix, "thor-r38.2.0", "NVIDIA Thor", python="3.12")
    res = resolve(host, matrix, Request())
    assert res.cuda is not None and res.cuda.major == 13
    assert res.vllm.cuda is not None and res.vllm.cuda.major == 13 and res.torch.cuda is not None
    # the iff: every planned build's arch list covers sm_110 (SASS of 11.x, or PTX of an older capability)
    from vresolve.resolve.candidates import coverage

    assert res.vllm.kernels is not None
    for archs in (res.vllm.kernels.archs, res.torch.archs):
        missing, ptx_only = coverage(archs, res.host.gpus)
        assert not missing and not ptx_only, archs
    assert any("JetPack 7.0" in r and "sm_110" in r for r in res.reasons)
    # vLLM's aarch64 CUDA 13 wheels carry sm_110 from 0.20 (vllm.yaml): below that, Thor gets no wheel
    assert str(resolve(host, matrix, Request(vllm=SpecifierSet("<0.21"))).vllm.version).startswith("0.20.")
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, Request(vllm=SpecifierSet("<0.20")))
    assert "gpu" in info.value.cause_kinds  # so --source-build auto builds it (TORCH_CUDA_ARCH_LIST=11.0)


def test_source_build_on_orin_needs_the_jetpack_torch_first(matrix: Matrix) -> None:
    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    with pytest.raises(NoCompatibleStack) as info:
        plan_source_build(host, matrix, Request())
    assert "jetson" in info.value.cause_kinds


def test_non_jetson_aarch64_is_unchanged(matrix: Matrix) -> None:
    row = matrix.find_gpu("GH200")
    assert row is not None
    host = Host(gpus=(HostGpu(index=0, name=row.name, compute_capability=row.compute_capability),),
                platform=PlatformInfo(os="linux", machine="aarch64"))
    assert jetson_of(host, matrix) is None


# --------------------------------------------------------------------------- the command line


def test_cli_orin_named_with_jetpack(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "--gpu", "Jetson AGX Orin", "--driver", "540.4.0", "--platform", "linux-aarch64", "--python",
               "3.10", "--jetpack", "6.2", "--jetson-index", "https://jetson.example/jp6/cu126/", "--vllm", "==0.7.3",
               "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["error"]["code"] == "no-compatible-stack"  # no wheel set is 0.7.3: the build way
    # the JetPack's torch that vLLM 0.7.3 builds against is NVIDIA's 2.5.0 (it pins 2.5.1), not the newest
    assert any(h.endswith("'torch==2.5.0' --index-url https://jetson.example/jp6/cu126") for h in out["error"]["hints"])


@pytest.mark.parametrize(("flags", "message"), [
    (["--jetpack", "6.2;id"], "--jetpack: invalid JetPack version"),
    (["--jetpack", "9.9"], "--jetpack: JetPack '9.9' is not in the matrix"),
    (["--jetson-index", "file:///etc/passwd"], "--jetson-index: invalid URL"),
    (["--jetson-index", "https://x y"], "--jetson-index: invalid URL"),
])
def test_cli_bad_jetson_flags_are_usage_errors(capsys: pytest.CaptureFixture[str], flags: list[str],
                                               message: str) -> None:
    rc = main(["plan", "--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64", *flags])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_source_build_against_nvidias_torch_uses_l4ts_nvcc(matrix: Matrix) -> None:
    """The way the refusal names: NVIDIA's torch installed, --keep-torch: vLLM built with L4T's nvcc for sm_87."""
    from vresolve.host import InstalledDist, Toolkit

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    from msgspec.structs import replace

    host = replace(host, toolkits=(Toolkit(version=Version("12.6.68"), path="/usr/local/cuda", source="/usr/local/cuda",
                                           nvcc="/usr/local/cuda/bin/nvcc"),),
                   installed=(InstalledDist(name="torch", version="2.5.0", cuda="12.6"),), cpu_count=12,
                   memory_mib=62000)
    sp = plan_source_build(host, matrix, Request(vllm=SpecifierSet("==0.7.3")), keep_torch=True)
    env = dict(sp.env)
    assert (str(sp.stack.vllm), sp.stack.torch, sp.stack.torch_source) == ("0.7.3", "2.5.0", "kept")
    assert env["CUDA_HOME"] == "/usr/local/cuda" and env["TORCH_CUDA_ARCH_LIST"] == "8.7"


def test_source_build_on_thor_is_the_generic_one(matrix: Matrix) -> None:
    """Thor runs the unified ARM CUDA: a source build there is planned like any aarch64 machine's."""
    row = matrix.find_gpu("Jetson AGX Thor")
    assert row is not None
    host = Host(gpus=(HostGpu(index=0, name=row.name, compute_capability=row.compute_capability),),
                python=Version("3.12"), platform=PlatformInfo(os="linux", machine="aarch64"))
    sp = plan_source_build(host, matrix, Request())
    assert dict(sp.env)["TORCH_CUDA_ARCH_LIST"] == "11.0"


# --------------------------------------------------------------------------- the Jetson index's wheels (JetPack 6)


def test_orin_jp62_gets_the_jetson_index_wheels(matrix: Matrix) -> None:
    """The newest set of jetson.yaml's index_wheels for JetPack 6.2, from the path under the index's root."""
    from vresolve.plan.wheels import plan_index_wheels as build_jetson_plan
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    request = Request(jetson_index="https://jetson.example/root")
    choice = jetson_wheel_choice(host, matrix, request)
    assert choice is not None and choice.index == "https://jetson.example/root/jp6/cu126"
    w = choice.wheels
    assert (str(w.vllm), str(w.torch), w.requires_torch) == ("0.14.0+cu126", "2.9.1", False)
    assert w.provenance.verified == "secondary" and any("uv.lock" in x for x in w.provenance.source)
    plan = build_jetson_plan(host, request, choice)
    fresh, install = plan.steps
    assert fresh.argv == ("uv", "venv", "--python", "3.10", "--seed", ".venv-vllm")
    assert install.argv[install.argv.index("--index-url") + 1] == "https://jetson.example/root/jp6/cu126"
    assert install.argv[-4:] == ("vllm==0.14.0+cu126", "torch==2.9.1", "torchvision==0.24.1", "triton==3.5.1")
    assert [c.expect for c in plan.checks] == ["release 12.6", "libcudss.so.0"]
    assert [c.expect for c in plan.verify][:2] == ["vllm 0.14.0+cu126", "torch 2.9.1 CUDA 12.6"]
    assert dict(plan.env)["TRITON_PTXAS_PATH"] == "/usr/local/cuda/bin/ptxas"
    assert dict(plan.env)["TORCH_CUDA_ARCH_LIST"] == "8.7"
    stack = plan.stack
    assert (stack.install_kind, stack.torch_source, stack.vllm_source) == ("wheel", "jetson-index",
                                                                         "jetson-index jp6/cu126")
    assert any("known from files that name them" in x for x in plan.warnings)


def test_the_older_set_holds_numpy_below_2_and_says_the_file_was_replaced(matrix: Matrix) -> None:
    from vresolve.plan.wheels import plan_index_wheels as build_jetson_plan
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    request = Request(vllm=SpecifierSet("==0.10.2"), jetson_index="https://jetson.example/jp6/cu126/+simple/")
    choice = jetson_wheel_choice(host, matrix, request)
    assert choice is not None and choice.index == "https://jetson.example/jp6/cu126/+simple"  # the path, as given
    plan = build_jetson_plan(host, request, choice, installer="pip", env_dir="env")
    assert plan.steps[1].argv[:3] == ("env/bin/python", "-m", "pip")
    assert plan.steps[1].argv[-5:] == ("vllm==0.10.2+cu126", "torch==2.8.0", "torchvision==0.23.0", "triton==3.4.0",
                                       "numpy<2")
    assert any("replaced on the index under the same name (2 sha256 seen)" in x for x in plan.warnings)


def test_an_index_path_of_another_jetpack_is_refused(matrix: Matrix) -> None:
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    with pytest.raises(NoCompatibleStack) as info:
        jetson_wheel_choice(host, matrix, Request(jetson_index="https://jetson.example/jp5/cu114"))
    assert "names the Jetson index's jp5/cu114 path; this JetPack's wheels are on jp6/cu126" in info.value.headline


def test_without_an_index_the_wheels_are_named_and_the_index_asked_for(matrix: Matrix) -> None:
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    with pytest.raises(NoCompatibleStack) as info:
        jetson_wheel_choice(host, matrix, Request())
    e = info.value
    assert e.headline.endswith("name it with --jetson-index")
    assert any("jp6/cu126 path has vLLM 0.14.0+cu126 with torch 2.9.1 for JetPack 6.2" in c for c in e.causes)
    assert e.hints[0].startswith("vresolve plan --gpu auto --jetson-index URL")
    assert any("build vLLM 0.19.1" in h for h in e.hints)  # the build way is still said
    assert not any("upgrade JetPack" in h for h in e.hints)  # 6.2.1 has the same wheels: no upgrade is offered


def test_a_vllm_no_set_has_falls_back_to_the_build_way_and_names_the_sets(matrix: Matrix) -> None:
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    request = Request(vllm=SpecifierSet("==0.20.0"), jetson_index="https://jetson.example")
    assert jetson_wheel_choice(host, matrix, request) is None
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, request)
    assert any("has vLLM 0.14.0+cu126, 0.10.2+cu126 for JetPack 6.2: not what --vllm/--torch ask for" in c
               for c in info.value.causes)
    assert "ask for the vLLM it has: --vllm ==0.14.0 (with --jetson-index URL)" in info.value.hints


def test_jetpack_60_has_no_cu126_wheels_and_is_told_to_upgrade(matrix: Matrix) -> None:
    """JetPack 6.0 puts CUDA 12.2 on the board: the jp6/cu126 wheels are not for it."""
    from vresolve.resolve.jetson import jetson_wheel_choice

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    request = Request(jetpack="6.0", jetson_index="https://jetson.example")
    assert jetson_wheel_choice(host, matrix, request) is None
    with pytest.raises(NoCompatibleStack) as info:
        resolve(host, matrix, request)
    assert any(h.startswith("upgrade JetPack to 6.2.1") and "vLLM 0.14.0+cu126" in h for h in info.value.hints)


def test_thor_and_the_generic_machines_never_get_the_jetson_index(matrix: Matrix) -> None:
    from vresolve.resolve.jetson import jetson_wheel_choice

    thor = _jetson(matrix, "thor-r38.2.0", "NVIDIA Thor", python="3.12")
    assert jetson_wheel_choice(thor, matrix, Request(jetson_index="https://jetson.example")) is None
    row = matrix.find_gpu("GH200")
    assert row is not None
    gh200 = Host(gpus=(HostGpu(index=0, name=row.name, compute_capability=row.compute_capability),),
                 platform=PlatformInfo(os="linux", machine="aarch64"))
    assert jetson_wheel_choice(gh200, matrix, Request(jetson_index="https://jetson.example")) is None


def test_cli_orin_plan_with_the_jetson_index(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import subprocess

    base = ["plan", "--gpu", "Jetson AGX Orin", "--driver", "540.4.0", "--platform", "linux-aarch64", "--python",
            "3.10", "--jetpack", "6.2"]
    rc = main([*base, "--jetson-index", "https://jetson.example/", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["schema"] == "vresolve.plan/1"
    assert out["stack"]["vllm"] == "0.14.0" and out["stack"]["vllm_variant"] == "cu126"
    assert out["jetson"]["index"] == "https://jetson.example/jp6/cu126" and out["jetson"]["verified"] == "secondary"
    assert out["steps"][1]["argv"][-4:] == ["vllm==0.14.0+cu126", "torch==2.9.1", "torchvision==0.24.1",
                                            "triton==3.5.1"]
    script = tmp_path / "plan.sh"
    script.write_text(out["script"])
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    assert main([*base, "--jetson-index", "https://jetson.example/", "--shell", "fish"]) == 0
    assert "set -gx TRITON_PTXAS_PATH /usr/local/cuda/bin/ptxas" in capsys.readouterr().out
    rc = main([*base, "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 1 and err["message"].endswith("name it with --jetson-index")
    rc = main(["lock", *base[1:], "--jetson-index", "https://jetson.example/", "--out", str(tmp_path / "lock")])
    assert rc == 2 and "no lock for a Jetson's wheels" in capsys.readouterr().err
    assert not (tmp_path / "lock").exists()


def test_the_plans_install_step_resolves_with_uv_against_a_loopback_jetson_path(tmp_path: Path) -> None:
    """The plan's own requirements, resolved by the real uv for the board (aarch64, CPython 3.10) against a loopback
    index laid out like the Jetson index's path (wheels tagged linux_aarch64, as its builds are), beside a newer
    torch and an untagged vLLM of the same number: uv takes exactly the set's files, from that path only."""
    import subprocess

    from vresolve._proc import uv_bin
    from vresolve.plan.wheels import plan_index_wheels as build_jetson_plan
    from vresolve.resolve.jetson import jetson_wheel_choice

    from .test_index import _Server, make_wheel

    m = load_matrix(SHIPPED)
    server = _Server()
    try:
        wheels = {"torch": [("2.9.1", ""), ("2.10.0", "")], "torchvision": [("0.24.1", "Requires-Dist: torch==2.9.1\n")],
                  "triton": [("3.5.1", "")], "vllm": [("0.14.0+cu126", "Requires-Dist: flashinfer-python==0.5.3\n"),
                                                      ("0.14.0", "Requires-Dist: torch==2.9.1\n")],
                  "flashinfer-python": [("0.5.3", "")]}
        for name, versions in wheels.items():
            links = []
            for version, requires in versions:
                dist = name.replace("-", "_")
                fn = f"{dist}-{version}-cp310-cp310-linux_aarch64.whl"
                meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}"
                server.files[f"/files/{fn}"] = make_wheel(meta, name=dist, version=version, padding=1000)
                links.append(f'<a href="/files/{fn}">{fn}</a>')
            server.pages[f"/root/jp6/cu126/{name}/"] = ("text/html", "<html><body>{}</body></html>".format(
                "<br/>".join(links)).encode())
        host = _jetson(m, "orin-r36.4.3", "Orin (nvgpu)")
        request = Request(jetson_index=server.url + "/root")
        choice = jetson_wheel_choice(host, m, request)
        assert choice is not None
        install = build_jetson_plan(host, request, choice).steps[1].argv
        i = install.index("--index-url")
        reqs = tmp_path / "requirements.in"
        reqs.write_text("\n".join(install[i + 2:]) + "\n")
        env = {"PATH": "/usr/bin:/bin", "UV_CACHE_DIR": str(tmp_path / "cache"), "UV_NO_CONFIG": "1",
               "HOME": str(tmp_path)}
        ran = subprocess.run([uv_bin(), "pip", "compile", "--quiet", "--index-url", install[i + 1], "--python-platform",
                              "aarch64-unknown-linux-gnu", "--python-version", "3.10", "--no-header", str(reqs)],
                             capture_output=True, text=True, env=env, timeout=120, check=False)
        assert ran.returncode == 0, ran.stderr
        pins = sorted(line for line in ran.stdout.splitlines() if line and not line.startswith(" "))
        assert pins == ["flashinfer-python==0.5.3", "torch==2.9.1", "torchvision==0.24.1", "triton==3.5.1",
                        "vllm==0.14.0+cu126"]
        assert all(r.startswith(("/root/jp6/cu126/", "/files/")) for r in server.requests)
    finally:
        server.close()


def test_apply_of_a_jetson_plan_stops_at_l4ts_toolkit_on_a_machine_without_it(tmp_path: Path, matrix: Matrix
                                                                              ) -> None:
    """The job apply runs: its first check (L4T's ptxas) runs before any step, and fails here, so nothing is made."""
    import subprocess

    from vresolve.apply import run_steps
    from vresolve.apply import wheel_job as jetson_job
    from vresolve.plan.wheels import L4T_CUDA_HOME as CUDA_HOME
    from vresolve.plan.wheels import plan_index_wheels as build_jetson_plan
    from vresolve.resolve.jetson import jetson_wheel_choice

    from .test_apply import _Recorder

    ptxas = Path(CUDA_HOME, "bin", "ptxas")
    if ptxas.exists() and "release 12.6" in subprocess.run([ptxas, "--version"], capture_output=True, text=True,
                                                           check=False).stdout:
        pytest.skip("this machine has L4T's toolkit version (CUDA 12.6) at /usr/local/cuda")
    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    request = Request(jetson_index="https://jetson.example")
    choice = jetson_wheel_choice(host, matrix, request)
    assert choice is not None
    job = jetson_job(build_jetson_plan(host, request, choice, env_dir="env"), tmp_path)
    steps = run_steps(job, _Recorder(), cwd=tmp_path, has_gpu=False)
    assert [(s.status, s.step.tool) for s in steps] == [("failed", "check")]
    assert "L4T's CUDA 12.6 toolkit is installed" in steps[0].why and not (tmp_path / "env").exists()


def test_matrix_refuses_wrong_index_wheel_rows(tmp_path: Path) -> None:
    """Every field of an index_wheels row is checked, and every row against the JetPacks it names (all at once)."""
    import yaml

    from vresolve.errors import MatrixError

    root = tmp_path / "m"
    shutil.copytree(SHIPPED, root)
    doc = yaml.safe_load((root / "jetson.yaml").read_text())
    good = doc["index_wheels"][0]
    doc["index_wheels"] = [
        {**good, "path": "jp6/../cu126"},
        {**good, "vllm": "0.14.0+cu128"},
        {**good, "jetpacks": ["6.0", "9.9"]},
        {**good, "modules": ["NVIDIA Thor"], "jetpacks": ["7.0"], "python": "3.12", "path": "sbsa/cu130",
         "vllm": "0.14.0+cu130"},
        {**good, "sha256": ["xyz"], "constraints": ["numpy<2; python_version<'3.9'"], "system_libs": ["cudss.dll"]},
        {**good, "vllm": "0.14.1+cu126", "archs": ["9.0"]},
    ]
    jp62 = next(j for j in doc["jetpacks"] if j["jetpack"] == "6.2")
    jp62["index_path"] = "jp5/cu126"
    next(j for j in doc["jetpacks"] if j["jetpack"] == "6.0")["index_path"] = "jp6/../x"
    (root / "jetson.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(MatrixError) as info:
        load_matrix(root, cache=False)
    text = str(info.value)
    for want in ("invalid index path 'jp6/../cu126'", "'0.14.0+cu128': its local tag is not the path's CUDA",
                 "JetPack 6.0 puts CUDA 12.2 on the board, not the path's 12.6", "JetPack 9.9 is not a row of jetpacks",
                 "JetPack 7.0 does not run 'NVIDIA Thor' on L4T's own CUDA", "invalid sha256 digest 'xyz'",
                 "invalid requirement", "invalid shared library name 'cudss.dll'",
                 "'Orin' (sm_87) is not in the builds' archs", "'jp5/cu126' is not jp6/cu126, the path of its JetPack",
                 "JetPack 6.2's index path is jp5/cu126, not jp6/cu126", "invalid index path 'jp6/../x'"):
        assert want in text, text


def test_doctor_does_not_hold_a_jetsons_vllm_to_the_release_wheels_kernels(matrix: Matrix) -> None:
    """After the plan ran on the board: the Jetson index's vLLM 0.14.0+cu126 is its own build (sm_87 only, fewer
    compiled modules than the release's PyPI wheel), beside its torch 2.9.1 for L4T's CUDA 12.6: healthy. The same
    install on a machine that is no Jetson is missing the release wheel's modules."""
    from msgspec.structs import replace

    from vresolve.doctor.checks import diagnose
    from vresolve.host import DriverInfo, EnvReport, ModuleReport, TorchRuntime
    from vresolve.values import DriverVersion

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    host = replace(host, driver=DriverInfo(version=DriverVersion.parse("540.4.0"), cuda=Version("12.6"),
                                           source="nvidia-smi"))
    site = "/home/u/.venv-vllm/lib/python3.10/site-packages"
    env = EnvReport(python="3.10.12",
                    modules=(ModuleReport(name="torch", origin=f"{site}/torch/__init__.py", version="2.9.1"),
                             ModuleReport(name="vllm", origin=f"{site}/vllm/__init__.py", version="0.14.0+cu126")),
                    torch=TorchRuntime(version="2.9.1", cuda="12.6", available=True, arch_list=("sm_87",),
                                       device_capabilities=("8.7",)),
                    vllm_extensions=("vllm._C", "vllm._moe_C"))
    assert diagnose(host, matrix, env) == []
    elsewhere = replace(host, platform=replace(host.platform, jetson=None, l4t=None, l4t_source=None))
    assert "optional-kernel-missing" in [f.cause for f in diagnose(elsewhere, matrix, env)]


@pytest.mark.parametrize(("version", "cuda", "cause", "title"), [
    ("2.9.1+cpu", None, "cpu-only-build", "torch 2.9.1+cpu is a CPU build, not for this Jetson's CUDA 12.6"),
    ("2.9.1", "12.8", "cuda-variant-mismatch", "torch 2.9.1 is built for CUDA 12.8, not for this Jetson's CUDA 12.6"),
])
def test_doctor_names_a_generic_aarch64_torch_on_a_jetson(matrix: Matrix, version: str, cuda: str | None,
                                                          cause: str, title: str) -> None:
    """`pip install torch` on an Orin (JetPack 6.2, L4T 36.4.3 read from the captured tree): PyPI's aarch64 torch, a
    CPU build or a server-ARM CUDA 12.8 one that does not see the GPU. One finding, with the Jetson's way, instead of
    the advice for a container started without GPUs."""
    from msgspec.structs import replace

    from vresolve.doctor.checks import diagnose
    from vresolve.host import DriverInfo, EnvReport, ModuleReport, TorchRuntime
    from vresolve.values import DriverVersion

    host = _jetson(matrix, "orin-r36.4.3", "Orin (nvgpu)")
    host = replace(host, driver=DriverInfo(version=DriverVersion.parse("540.4.0"), cuda=Version("12.6"),
                                           source="nvidia-smi"))
    env = EnvReport(python="3.10.12", modules=(ModuleReport(name="torch", origin="/v/torch/__init__.py",
                                                            version=version),),
                    torch=TorchRuntime(version=version, cuda=cuda, available=False))
    findings = diagnose(host, matrix, env)
    assert [(f.cause, f.title) for f in findings] == [(cause, title)]
    assert "vresolve plan --gpu auto --jetson-index URL" in findings[0].fix
    assert "jp6/cu126 path has vLLM 0.14.0+cu126 with torch 2.9.1" in findings[0].fix
    assert "L4T 36.4.3 from /etc/nv_tegra_release: JetPack 6.2, CUDA 12.6" in findings[0].evidence


def test_matrix_show_jetson_lists_the_index_wheels_per_jetpack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "show", "jetson", "--json"]) == 0
    rows = {r["jetpack"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert [w["vllm"] for w in rows["6.2"]["index_wheels"]] == ["0.14.0+cu126", "0.10.2+cu126"]
    assert rows["6.0"]["index_wheels"] == [] and rows["5.1.2"]["index_wheels"] == []
    assert main(["matrix", "validate"]) == 0
    assert "jetson 11 (+2 index wheel sets)" in capsys.readouterr().out


# --------------------------------------------------------------------------- pasted text from a Jetson


@pytest.mark.parametrize(("text", "l4t"), [
    # /etc/nv_tegra_release (vanttec/vanttec_documentation, see probes/jetson/README.md)
    ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC "
     "2025", "36.4.3"),
    # jtop (dusty-nv/jetson-inference#1872), jetson_release (vllm-project/vllm#5640), a Jetson Nano's report
    # (Lmy0217/PyTorch-aarch64#3), an issue's environment list (pinokiocomputer/pinokio#1027)
    ("L4T: 36.3.0 Jetpack: 6.0", "36.3.0"),
    ("Model: NVIDIA Jetson AGX Orin Developer Kit - Jetpack 6.0 [L4T 36.3.0]", "36.3.0"),
    ("I successfully install the torch on my jetson nano(Jetpack 4.4 [L4T 32.4.3]),but cuda.is_available() returns "
     "false", "32.4.3"),
    ("* **L4T Release:** R35.4.1 (Check via `cat /etc/nv_tegra_release`)", "35.4.1"),
    # apt list --installed (insight-platform/Savant#898), dpkg -l
    ("nvidia-l4t-core/stable,now 36.3.0-20240719161631 arm64 [installed]", "36.3.0"),
    ("ii  nvidia-l4t-core                            36.4.3-20250107174145                       arm64        NVIDIA "
     "Core Package", "36.4.3"),
])
def test_pasted_l4t_releases_are_read(text: str, l4t: str) -> None:
    from vresolve.doctor.evidence import read_evidence

    assert [s.value for s in read_evidence(text).l4t] == [l4t]


def test_pasted_generic_torch_on_a_jetson_is_named_and_the_fixed_one_is_healthy(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two notes from one Orin Nano Super (L4T 36.4.7): PyPI's aarch64 torch 2.11.0+cu130, which does not see the GPU,
    then a torch for the JetPack's CUDA 12.6, which does."""
    pastes = TREES / "pastes"
    rc = main(["doctor", "--no-env", "--log", str(pastes / "orin-nano-jp621-torch-cu130.txt"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and [f["cause"] for f in out["findings"]] == ["cuda-variant-mismatch"]
    f = out["findings"][0]
    assert f["title"] == "torch 2.11.0+cu130 is built for CUDA 13.0, not for this Jetson's CUDA 12.6"
    assert "L4T 36.4.7 from pasted line 9: JetPack 6.2.1, CUDA 12.6" in f["evidence"]
    assert "--jetson-index" in f["fix"]
    rc = main(["doctor", "--no-env", "--log", str(pastes / "orin-nano-jp621-torch-2.10.0.txt")])
    text = capsys.readouterr().out
    assert rc == 0 and "Jetson Linux (L4T) 36.4.7, from pasted line 10" in text and "no problems found" in text


# --------------------------------------------------------------------------- a fleet with Jetsons


def _detect_file(tmp_path: Path, name: str, tree: str | None, gpu_row: str | None, platform: str, python: str) -> Path:
    """What ``vresolve detect --json`` writes on the board: its captured tree, and its nvidia-smi when it has one."""
    bindir = tmp_path / name / "bin"
    bindir.mkdir(parents=True)
    if gpu_row is not None:
        _script(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) echo "{gpu_row}"; exit 0;; esac\nexit 0')
    o = overrides(tmp_path / name, bindir, root=TREES / tree if tree else None, platform=platform, python=python)
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps({"schema": "vresolve.detect/1", "host": detect_host(o, installed=False).to_dict()}))
    return f


ORIN_SMI = "0, Orin (nvgpu), GPU-00000000-0000-0000-0000-000000000000, 8.7, 540.4.0, [N/A], 00000000:00:00.0"


@pytest.fixture
def fleet(tmp_path: Path) -> dict[str, Path]:
    return {
        "orin-a": _detect_file(tmp_path, "orin-a", "orin-r36.4.3", ORIN_SMI, "linux-aarch64", "3.10"),
        "orin-b": _detect_file(tmp_path, "orin-b", "orin-r36.4.3", ORIN_SMI, "linux-aarch64", "3.10"),
        # JetPack 5: no nvidia-smi, and this capture has no device-tree model: its module is not known
        "jp5": _detect_file(tmp_path, "jp5", "orin-nx-r35.2.1", None, "linux-aarch64", "3.8"),
        "thor": _detect_file(tmp_path, "thor", "thor-r38.2.2",
                             "0, NVIDIA Thor, GPU-1, 11.0, 580.00, [N/A], 00000000:01:00.0", "linux-aarch64", "3.12"),
        "gh200": _detect_file(tmp_path, "gh200", None, "0, NVIDIA GH200 480GB, GPU-2, 9.0, 580.65.06, 97871, "
                              "00000009:01:00.0", "linux-aarch64", "3.12"),
        "h100": _detect_file(tmp_path, "h100", None, "0, NVIDIA H100 80GB HBM3, GPU-3, 9.0, 570.86.15, 81559, "
                             "00000000:18:00.0", "linux-x86_64", "3.12"),
    }


def _fleet_plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc = main(["fleet", "plan", *argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_a_fleets_jetsons_are_planned_apart(fleet: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Orins, a board on JetPack 5 and a Thor beside a GH200 and an H100: each Jetson group gets its JetPack's
    answer; the common stack is the others', with their Python, and no Jetson GPU in its aarch64 host."""
    rc, p = _fleet_plan(capsys, *map(str, fleet.values()))
    assert rc == 1  # the Orins' wheels need --jetson-index; the JetPack 5 board's module is not known
    assert p["apart"] == ["orin-a", "orin-b", "jp5", "thor"]
    groups = {tuple(g["hosts"]): g for g in p["groups"]}
    assert set(groups) == {("orin-a", "orin-b"), ("jp5",), ("thor",), ("gh200",), ("h100",)}
    assert "--jetson-index" in groups[("orin-a", "orin-b")]["why_not"]
    assert groups[("jp5",)]["stack"] is None  # not planned as a CPU machine
    assert groups[("jp5",)]["why_not"] == "this is a Jetson (Jetson (model unknown)) whose module the matrix does not know"
    thor = groups[("thor",)]["stack"]
    assert thor is not None and thor["cuda"].startswith("13.")  # the unified ARM build of JetPack 7's CUDA 13
    per = p["common"]["per_platform"]
    assert p["common"]["python"] == "3.12" and set(per) == {"linux-x86_64", "linux-aarch64"}
    assert [g["compute_capability"] for g in per["linux-aarch64"]["host"]["gpus"]] == ["9.0"]  # the GH200 alone
    assert not [h for b in p["blocking"] for h in b["hosts"] if h in p["apart"]]
    # the same facts, one Orin alone: vresolve plan on the board refuses for the same reason
    rc = main(["plan", "--gpu", "Jetson AGX Orin", "--jetpack", "6.2", "--platform", "linux-aarch64", "--python", "3.10"])
    assert rc == 1 and "--jetson-index" in capsys.readouterr().err


def test_a_fleets_orins_get_their_jetpacks_wheels(fleet: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    rc, p = _fleet_plan(capsys, str(fleet["orin-a"]), str(fleet["orin-b"]), str(fleet["h100"]),
                        "--jetson-index", "https://jetson.example/")
    assert rc == 0 and p["apart"] == ["orin-a", "orin-b"]
    (orins,) = [g for g in p["groups"] if g["apart"]]
    assert (orins["stack"]["vllm"], orins["stack"]["torch"], orins["stack"]["python"]) == ("0.14.0", "2.9.1", "3.10")
    assert orins["jetson"]["index"] == "https://jetson.example/jp6/cu126" and orins["jetson"]["jetpack"] == "6.2"
    assert p["common"]["python"] == "3.12" and set(p["common"]["per_platform"]) == {"linux-x86_64"}
    rc = main(["fleet", "plan", str(fleet["orin-a"]), str(fleet["h100"]), "--jetson-index", "https://jetson.example/"])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0 and "Planned apart (Jetson" in text and "orin-a" in text and "jp6/cu126" in text


def test_a_fleet_of_jetsons_alone(fleet: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No common stack to share, each group its JetPack's: planned (exit 0); nothing to lock (exit 2, one line)."""
    orins = [str(fleet["orin-a"]), str(fleet["orin-b"])]
    rc, p = _fleet_plan(capsys, *orins, "--jetson-index", "https://jetson.example/jp6/cu126")
    assert rc == 0 and p["common"] is None and p["common_error"].startswith("every node is a Jetson")
    rc = main(["fleet", "lock", *orins, "--jetson-index", "https://jetson.example/", "-o", str(tmp_path / "lock")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "every node is a Jetson" in err
    assert not (tmp_path / "lock").exists()


# --------------------------------------------------------------------------- a Jetson named by its capability


def _plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc = main(["plan", *argv, "--python", "3.10", "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("cap", "name", "flags"), [
    ("sm_87", "Jetson AGX Orin", []),  # no JetPack: the module's JetPacks, the way of the newest, a warning
    ("sm_87", "Jetson AGX Orin", ["--jetpack", "6.2"]),  # the refusal that asks for --jetson-index
    ("8.7", "Jetson AGX Orin", ["--jetpack", "6.2", "--jetson-index", "https://jetson.example/"]),  # the index's wheels
    ("sm_87", "Jetson AGX Orin", ["--jetpack", "5.1.2"]),  # JetPack 5: told to upgrade
    ("sm_72", "Jetson AGX Xavier", []),  # JetPack 5 its last: no way
    ("sm_53", "Jetson Nano", []),  # no JetPack in the matrix for it
    ("sm_110", "Jetson AGX Thor", ["--jetpack", "7.0"]),  # the unified ARM wheels
])
def test_a_jetson_named_by_its_capability_is_planned_as_that_jetson(
        capsys: pytest.CaptureFixture[str], cap: str, name: str, flags: list[str]) -> None:
    """Only a Jetson module has sm_87 (Orin), sm_72 (Xavier), sm_53/sm_62 (Tegra X1/X2), sm_110 (Thor): on aarch64
    the capability gets that Jetson's answer, the same JSON as its name, never the server-ARM (SBSA) plan."""
    args = ["--platform", "linux-aarch64", *flags]
    by_cap, by_name = _plan_json(capsys, "--gpu", cap, *args), _plan_json(capsys, "--gpu", name, *args)
    assert by_cap == by_name
    rc, p = by_cap
    if rc == 0:  # the stack of a Thor (the unified ARM build of its JetPack) or of the Orin's index path
        assert any("JetPack" in r for r in p["reasons"])
    else:
        assert rc == 1 and "Jetson" in p["error"]["message"]


def test_the_capability_of_an_orin_plans_the_orin_not_the_server_arm_stack(capsys: pytest.CaptureFixture[str]) -> None:
    """The case of the issue: sm_87 on aarch64 was planned as a server-ARM GPU (a generic aarch64 stack, exit 0)."""
    rc = main(["plan", "--gpu", "sm_87", "--platform", "linux-aarch64", "--python", "3.10"])
    out = capsys.readouterr()
    assert rc == 1 and "this Jetson (Orin, sm_87)" in out.err and "vLLM stack for" not in out.out


@pytest.mark.parametrize(("cap", "module"), [("sm_87", "Orin"), ("2xsm_72", "Xavier"), ("sm_62", "NVIDIA Tegra X2"),
                                             ("sm_90,sm_87", "Orin")])
def test_a_jetsons_capability_on_x86_64_is_no_gpu(capsys: pytest.CaptureFixture[str], cap: str, module: str) -> None:
    """No x86_64 GPU has a Jetson's capability: a usage error (exit 2, one line) naming the module and the platform
    that has it, not a plan for a GPU that does not exist."""
    rc = main(["plan", "--gpu", cap, "--platform", "linux-x86_64", "--driver", "580.95.05"])
    out = capsys.readouterr()
    assert rc == 2 and out.out == "" and out.err.count("\n") == 1
    assert out.err.startswith("vresolve: error: --gpu: no linux-x86_64 GPU has compute capability sm_")
    assert f"only a Jetson module's ({module}:" in out.err and "--platform linux-aarch64" in out.err


def test_without_platform_a_jetsons_capability_is_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --platform the capability names the board as its name does (a Jetson is aarch64 whatever this
    machine is): the same answer as --gpu "Jetson AGX Orin"."""
    assert _plan_json(capsys, "--gpu", "sm_87", "--jetpack", "6.2") == \
        _plan_json(capsys, "--gpu", "Jetson AGX Orin", "--jetpack", "6.2")


def test_sm90_on_aarch64_is_still_the_server_arm_stack(capsys: pytest.CaptureFixture[str]) -> None:
    """sm_90 is not only a Jetson's (GH200, H100, ...): on aarch64 it keeps the generic (SBSA) stack of a GH200."""
    args = ["--platform", "linux-aarch64", "--driver", "580.95.05", "--python", "3.12", "--json"]
    rc = main(["plan", "--gpu", "sm_90", *args])
    by_cap = json.loads(capsys.readouterr().out)
    rc2 = main(["plan", "--gpu", "GH200", *args])
    by_name = json.loads(capsys.readouterr().out)
    assert rc == rc2 == 0 and by_cap["stack"] == by_name["stack"]
    assert not any("Jetson" in r or "JetPack" in r for r in by_cap["reasons"])


def test_a_fleet_node_given_only_a_capability(fleet: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    """A node whose GPU the inventory gives only by its capability (a name the matrix does not know): on aarch64,
    planned apart as that Jetson (the same answer as a node whose GPU is named Orin); on x86_64, a failed node
    saying why."""
    def node(name: str, gpu: str, machine: str = "aarch64") -> str:
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps({"schema": "vresolve.detect/1", "host": {
            "gpus": [{"index": 0, "name": gpu, "compute_capability": "8.7"}], "driver": {"version": "540.4.0"},
            "platform": {"os": "linux", "machine": machine}, "python": "3.10.12"}}))
        return str(f)

    rc, p = _fleet_plan(capsys, node("board", "sm_87"), str(fleet["h100"]))
    rc2, q = _fleet_plan(capsys, node("board", "Orin"), str(fleet["h100"]))
    assert rc == rc2 == 1 and p["apart"] == q["apart"] == ["board"] and not p["failed"]
    (by_cap,) = [g for g in p["groups"] if g["apart"]]
    (by_name,) = [g for g in q["groups"] if g["apart"]]
    assert by_cap["why_not"] == by_name["why_not"] and "this Jetson (Orin, sm_87)" in by_cap["why_not"]
    assert p["common"] == q["common"] and set(p["common"]["per_platform"]) == {"linux-x86_64"}
    rc, p = _fleet_plan(capsys, node("x86", "sm_87", "x86_64"), str(fleet["h100"]))
    assert rc == 0 and [f["host"] for f in p["failed"]] == ["x86"]
    assert "only a Jetson module (Orin), an aarch64 board, has it" in p["failed"][0]["why"]
