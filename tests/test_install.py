"""Executed truth: a plan's own steps, run for real, give an environment whose checks pass.

Opt-in (``VRESOLVE_INSTALL_TESTS=1 python -m pytest -m install -s``): each test downloads several GB
from the configured package index into a throwaway environment, and deletes it afterwards.

For a plan it runs, in order: the plan's steps (uv or pip against the configured index); its verify
steps (on a machine without an NVIDIA GPU the ones about the GPU cannot pass and are reported as
skipped, and an extension whose only fault is the missing libcuda.so.1 counts as present, as the
check itself says); ``import flashinfer`` where the plan installs it; ``uv pip check``;
``vresolve doctor --python`` on the result (no error findings); then a second, fresh environment
from ``vresolve lock``'s requirements.txt with ``--require-hashes --no-build``, and the extension
check again there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.install,
    pytest.mark.skipif(os.environ.get("VRESOLVE_INSTALL_TESTS") != "1",
                       reason="opt-in: VRESOLVE_INSTALL_TESTS=1 (downloads several GB per plan)"),
]

HAS_GPU = shutil.which("nvidia-smi") is not None and os.path.exists("/proc/driver/nvidia")
GLIBC = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]  # this machine's: the plans and locks are for it
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
GPU_CHECKS = ("torch sees the GPUs", "torch's arch list covers every GPU")


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)  # vresolve's own environment holds uv
    env.update(PATH=bindir + os.pathsep + env.get("PATH", ""), UV_CACHE_DIR=str(tmp / "uv-cache"),
               PIP_NO_CACHE_DIR="1", UV_PYTHON_DOWNLOADS="never", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("VIRTUAL_ENV", None)
    return env


def _run(argv: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    t0 = time.perf_counter()
    p = subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    print(f"  $ {' '.join(argv)[:160]}  -> exit {p.returncode} in {time.perf_counter() - t0:.1f} s")
    return p


def _vresolve(args: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "vresolve", *args], env, cwd)


def _size(path: Path) -> float:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) / 2**30 if out.returncode == 0 else float("nan")


def _verify(checks: Sequence[dict[str, object]], env: dict[str, str], cwd: Path, only: str = "") -> None:
    for c in checks:
        name = str(c["name"])
        if only and not name.startswith(only):
            continue
        if name in GPU_CHECKS and not HAS_GPU:
            print(f"  skipped (no NVIDIA GPU on this machine): {name}")
            continue
        p = _run([str(a) for a in c["argv"]], env, cwd, timeout=600)  # type: ignore[union-attr]
        for line in (p.stdout + p.stderr).splitlines():
            if line.startswith(("needs libcuda", "MISSING", "FAILS", "vllm ", "torch ", "cuda ", "arch ", "vLLM ")):
                print(f"    {line[:200]}")
        assert p.returncode == 0 and str(c["expect"]) in p.stdout, f"{name}: {p.stdout[-2000:]}{p.stderr[-2000:]}"


def _execute(plan_args: Sequence[str], tmp_path: Path) -> None:
    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    t_all = time.perf_counter()
    try:
        p = _vresolve(["plan", *plan_args, "--python", PY, "--glibc", GLIBC, "--venv", str(work / "env"), "--json"],
                      env, work)
        assert p.returncode == 0, p.stderr
        plan = json.loads(p.stdout)
        stack = plan["stack"]
        print(f"\nplan: vLLM {stack['vllm']} ({stack['vllm_variant']}) + torch {stack['torch']}+{stack['variant']}, "
              f"installer {plan['steps'][0]['tool']}")
        t0 = time.perf_counter()
        for step in plan["steps"]:
            argv = [str(a) for a in step["argv"]]
            if argv[-1] == "download-kernels":
                # FlashInfer's own index is out of reach here, and vLLM's CLI infers the device at start:
                # the step is checked to exist in the installed vLLM; it runs on the GPU machine
                q = _run([str(work / "env" / "bin" / "python"), "-c",
                          "import vllm.entrypoints.cli.download_kernels as m; print('download-kernels', m.__name__)"],
                         env, work)
                assert q.returncode == 0, q.stderr[-2000:]
                print("  `vllm download-kernels` exists in this vLLM; not run here (needs the GPU machine and "
                      "FlashInfer's index)")
                continue
            q = _run(argv, env, work)
            assert q.returncode == 0, f"step failed: {argv}\n{q.stdout[-3000:]}\n{q.stderr[-3000:]}"
        install_s = time.perf_counter() - t0
        print(f"  installed in {install_s:.0f} s, {_size(work / 'env'):.2f} GiB")
        _verify(plan["verify"], env, work)
        py = str(work / "env" / "bin" / "python")
        if "flashinfer-python" in json.dumps(plan["stack"]) or any("flashinfer" in " ".join(map(str, s["argv"]))
                                                                    for s in plan["steps"]):
            q = _run([py, "-c", "import flashinfer; print('flashinfer', flashinfer.__version__)"], env, work)
            assert q.returncode == 0, q.stderr[-3000:]
        q = _run(["uv", "pip", "check", "--python", py], env, work)
        assert q.returncode == 0, q.stdout + q.stderr
        q = _run(["uv", "pip", "list", "--python", py], env, work)
        print("  " + ", ".join(" ".join(line.split()[:2]) for line in q.stdout.splitlines()
                                if line.startswith(("cuda-python ", "cuda-bindings ", "torch ", "vllm ", "flashinfer"))))
        q = _vresolve(["doctor", "--python", py, "--json"], env, work)
        findings = json.loads(q.stdout)["findings"]
        for f in findings:
            print(f"  doctor: {f['severity']}: {f['title']} [{f['cause']}]")
        assert not [f for f in findings if f["severity"] == "error"], findings
        shutil.rmtree(work / "env")

        # the lock of the same plan, for this machine's glibc, installs with hashes and no source build
        lock_args = [a for a in plan_args if a not in ("--installer", "pip", "uv")]
        q = _vresolve(["lock", *lock_args, "--python", PY, "--glibc", GLIBC, "-o", str(work / "lock"),
                       "--format", "requirements"], env, work)
        assert q.returncode == 0, q.stderr[-3000:]
        q = _run(["uv", "venv", "--python", sys.executable, str(work / "locked")], env, work)
        assert q.returncode == 0, q.stderr
        t0 = time.perf_counter()
        q = _run(["uv", "pip", "install", "--python", str(work / "locked" / "bin" / "python"), "--require-hashes",
                  "--no-build", "-r", str(work / "lock" / "requirements.txt")], env, work)
        assert q.returncode == 0, q.stdout[-3000:] + q.stderr[-3000:]
        print(f"  lock installed (--require-hashes --no-build) in {time.perf_counter() - t0:.0f} s, "
              f"{_size(work / 'locked'):.2f} GiB")
        locked = [dict(c, argv=[str(work / "locked" / "bin" / "python"), *c["argv"][1:]]) for c in plan["verify"]]
        _verify(locked, env, work, only="vLLM imports")
        print(f"  total {time.perf_counter() - t_all:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


def test_h200_plan_vllm_0_33_0_with_uv(tmp_path: Path) -> None:
    _execute(["--gpu", "NVIDIA H200", "--driver", "580.159.04"], tmp_path)


def test_v100_plan_vllm_0_19_1_with_uv(tmp_path: Path) -> None:
    _execute(["--gpu", "Tesla V100-SXM2-32GB", "--driver", "580.95.05"], tmp_path)


def test_l4_plan_with_pip(tmp_path: Path) -> None:
    _execute(["--gpu", "NVIDIA L4", "--driver", "535.104.05", "--installer", "pip"], tmp_path)


def test_keep_torch_installs_the_wheel_that_pins_it_and_keeps_it(tmp_path: Path) -> None:
    """An environment holding torch 2.11.0 (PyPI's CUDA 13.0 build), on an H200: vLLM 0.26.0's wheel pins
    exactly that torch and is built for CUDA 13.0, so --keep-torch plans it into that environment (no
    source build), and the installer leaves the torch's files as they were."""
    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    try:
        assert _run(["uv", "venv", "--python", sys.executable, "--seed", str(work / "env")], env, work).returncode == 0
        py = str(work / "env" / "bin" / "python")
        q = _run(["uv", "pip", "install", "--python", py, "torch==2.11.0"], env, work)
        assert q.returncode == 0, q.stderr[-3000:]
        root = Path(__file__).resolve().parents[1]
        q = _run(["uv", "pip", "install", "--python", py, str(root)], env, work)  # vresolve into that environment
        assert q.returncode == 0, q.stderr[-3000:]
        record = next((work / "env").glob("lib/python*/site-packages/torch-2.11.0.dist-info/RECORD"))
        before = record.read_bytes()
        genv = dict(env, VRESOLVE_GPUS="NVIDIA H200", VRESOLVE_DRIVER="580.159.04")
        q = _run([py, "-m", "vresolve", "plan", "--gpu", "auto", "--keep-torch", "--vllm", "0.26.0", "--json"],
                 genv, work)
        assert q.returncode == 0, q.stderr
        plan = json.loads(q.stdout)
        assert plan["stack"]["install_kind"] == "wheel" and plan["stack"]["vllm"] == "0.26.0"
        assert not any(s["argv"][:2] == ["uv", "venv"] for s in plan["steps"])  # into the existing environment
        for step in plan["steps"]:
            argv = [str(a) for a in step["argv"]]
            if argv[-1] == "download-kernels":
                continue
            q = _run(argv, env, work)
            assert q.returncode == 0, q.stdout[-3000:] + q.stderr[-3000:]
        assert record.read_bytes() == before  # the same torch files, untouched
        kept = [c for c in plan["verify"] if c["name"] == "the installer kept your torch"]
        assert kept and kept[0]["expect"].startswith("torch 2.11.0")
        _verify(plan["verify"], env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)
