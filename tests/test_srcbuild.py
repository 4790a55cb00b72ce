"""Source-build plans: each decision, and scripts that bash accepts whatever the names hold."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from msgspec.structs import replace
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vresolve.cli import main
from vresolve.host import DriverInfo, Host, HostGpu, InstalledDist, PlatformInfo, Toolkit
from vresolve.matrix import Matrix, load_matrix
from vresolve.plan import build_parallelism, plan_source_build
from vresolve.render import render_script
from vresolve.resolve import NoCompatibleStack, Request
from vresolve.values import Capability, DriverVersion

from .conftest import SHIPPED


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


def h200_device(**kw: object) -> Host:
    """The H200 device machine as detect reports it (driver 580.159.04, nvcc 13.0, torch 2.11.0+cu130)."""
    host = Host(driver=DriverInfo(version=DriverVersion.parse("580.159.04"), cuda=Version("13.0")),
                gpus=(HostGpu(index=0, name="NVIDIA H200", compute_capability=Capability(9, 0)),),
                python=Version("3.12.3"), python_executable="/opt/torch/.venv/bin/python3",
                platform=PlatformInfo(os="linux", machine="x86_64", glibc=Version("2.39")), cpu_count=16,
                memory_mib=128887,
                toolkits=(Toolkit(version=Version("13.0.88"), path="/usr/local/cuda-13.0", source="PATH",
                                  nvcc="/usr/local/cuda-13.0/bin/nvcc"),),
                installed=(InstalledDist(name="torch", version="2.11.0+cu130", cuda="13.0"),))
    return replace(host, **kw)  # type: ignore[arg-type]


def test_parallelism_rule() -> None:
    assert build_parallelism(16, 128 * 1024) == (8, 2)  # core-bound: 16 cores / 2 nvcc threads
    assert build_parallelism(2, 24 * 1024) == (2, 1)
    assert build_parallelism(64, 32 * 1024) == (3, 2)  # memory-bound: 25.6 GiB / 8 GiB per job
    assert build_parallelism(None, None) == (None, 1)


def test_keep_torch_on_the_h200(matrix: Matrix) -> None:
    p = plan_source_build(h200_device(), matrix, Request(), keep_torch=True)
    env = dict(p.env)
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert env["CUDA_HOME"] == "/usr/local/cuda-13.0" and env["PATH"] == "$CUDA_HOME/bin:$PATH"
    assert env["VLLM_TARGET_DEVICE"] == "cuda" and (env["MAX_JOBS"], env["NVCC_THREADS"]) == ("8", "2")
    assert "CMAKE_CUDA_ARCHITECTURES" not in env
    assert p.torch_version == "2.11.0+cu130" and str(p.torch_cuda) == "13.0"
    assert [c.expect for c in p.checks][:2] == ["release 13.0,", "torch CUDA 13.0"]
    argvs = [s.argv for s in p.steps]
    assert ("/opt/torch/.venv/bin/python3", p.vllm.build.use_existing_torch) in argvs
    assert argvs[-1][-3:] == ("--no-build-isolation", "-v", "./vllm-src")
    assert p.vllm.build is not None and p.vllm.build.use_existing_torch
    pin = p.vllm.pins("linux-x86_64")["torch"]
    assert Version(list(pin)[0].version).release[:2] <= (2, 11)  # not made for a newer torch than the one kept


def test_rtx5090_source_build_always(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--gpu", "NVIDIA GeForce RTX 5090", "--driver", "580.95.05", "--python", "3.12",
                 "--source-build", "always", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["stack"]["install_kind"] == "source"
    assert d["env"]["TORCH_CUDA_ARCH_LIST"] == "12.0"
    toolkit = Version(d["build"]["toolkit"])
    assert toolkit >= Version("12.8") and d["stack"]["cuda"] == str(toolkit)  # nvcc == torch's CUDA
    assert any("--no-build-isolation" in s["argv"] for s in d["steps"])
    assert "MemAvailable" in d["script"] and "export MAX_JOBS=" in d["script"]  # from the build machine's memory
    assert "CMAKE_CUDA_ARCHITECTURES" in d["script"]  # only to unset it
    assert "export CMAKE_CUDA_ARCHITECTURES" not in d["script"]


def test_pascal_has_no_source_build(matrix: Matrix) -> None:
    host = h200_device(gpus=(HostGpu(index=0, name="Tesla P100-PCIE-16GB", compute_capability=Capability(6, 0)),),
                       installed=())
    with pytest.raises(NoCompatibleStack) as info:
        plan_source_build(host, matrix, Request(), keep_torch=False)
    assert any("CUDA_SUPPORTED_ARCHS" in c and "sm_60" in c for c in info.value.causes), info.value.causes


def test_volta_needs_a_cuda12_toolkit(matrix: Matrix) -> None:
    host = h200_device(gpus=(HostGpu(index=0, name="Tesla V100-SXM2-32GB", compute_capability=Capability(7, 0)),))
    with pytest.raises(NoCompatibleStack) as info:  # the torch kept is CUDA 13, whose nvcc cannot target sm_70
        plan_source_build(host, matrix, Request(), keep_torch=True)
    assert any("nvcc 13.0 (torch's CUDA) cannot target sm_70" in c for c in info.value.causes)
    p = plan_source_build(host, matrix, Request(), keep_torch=False)
    assert p.torch_cuda is not None and p.torch_cuda.major == 12
    assert p.toolkit is not None and p.toolkit.can_target(Capability(7, 0))


def test_cpu_source_build(matrix: Matrix) -> None:
    host = h200_device(gpus=(), driver=DriverInfo())
    p = plan_source_build(host, matrix, Request(cpu=True, vllm=SpecifierSet("<0.12")), keep_torch=False)
    env = dict(p.env)
    assert env["VLLM_TARGET_DEVICE"] == "cpu" and p.toolkit is None and p.torch_cuda is None
    assert not {"CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "NVCC_THREADS"} & set(env)
    assert p.torch_build is not None and p.torch_build.variant.variant == "cpu"


WEIRD = "/tmp/it's a \"dir\" $HOME `x`/bin/python"


@pytest.mark.parametrize("installer", ["uv", "pip", "conda"])
def test_scripts_pass_bash_n_with_hostile_names(matrix: Matrix, installer: str) -> None:
    host = h200_device(python_executable=WEIRD,
                       gpus=(HostGpu(index=0, name="GPU 'quoted' $NAME", compute_capability=Capability(9, 0)),),
                       toolkits=(Toolkit(version=Version("13.0.88"), path="/opt/cuda 13 $x 'y'", source="PATH"),))
    for keep in (True, False):
        p = plan_source_build(host, matrix, Request(), keep_torch=keep, installer=installer,
                              env_dir="env with 'quote' $dollar", src_dir="src dir;rm -rf ~")
        script = render_script(p)
        r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr + script
        # the shell reads every hostile value as (part of) one word: none of its pieces stands alone
        lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        assert not {"rm", "-rf", "~", "$dollar", "$x", "'y'", "$HOME", "`x`/bin/python"} & set(words)
        assert any("src dir;rm -rf ~" in w for w in words)
        # conda's interpreter is plain argv (conda run -n ENV python), never a command substitution
        assert "$(conda" not in script
        assert (installer == "conda" and not keep) == ("conda run -n 'env with '\"'\"'quote'\"'\"' $dollar' python" in script)


def test_precompiled_recipe(matrix: Matrix) -> None:
    host = h200_device(installed=())
    p = plan_source_build(host, matrix, Request(), precompiled=True)
    assert dict(p.env) == {"VLLM_USE_PRECOMPILED": "1", "VLLM_TARGET_DEVICE": "cuda"}
    assert p.steps[-1].argv[-2:] == ("-e", "./vllm-src") and p.toolkit is None and p.checks == ()
    assert p.vllm.build is not None and p.vllm.build.precompiled
    with pytest.raises(NoCompatibleStack, match="--precompiled reuses"):
        plan_source_build(h200_device(), matrix, Request(), precompiled=True, keep_torch=True)
