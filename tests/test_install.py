"""Executed truth: a plan's own steps, run for real, give an environment whose checks pass.

Opt-in (``VRESOLVE_INSTALL_TESTS=1 python -m pytest -m install -s``): each test downloads several GB
from the configured package index into a throwaway environment, and deletes it afterwards.

For a plan it runs, in order: the plan's steps (uv or pip against the configured index); its verify
steps (on a machine without an NVIDIA GPU the ones about the GPU cannot pass and are reported as
skipped, and an extension whose only fault is the missing libcuda.so.1 counts as present, as the
check itself says); ``import flashinfer`` where the plan installs it; ``uv pip check``;
``vresolve doctor --interpreter`` on the result (no error findings); then a second, fresh environment
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
from typing import Any

import pytest

from vresolve.apply import Job, Ran, run_command, run_steps
from vresolve.plan.steps import Step

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


def _run(argv: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 1800) -> Ran:
    """One command through apply's own runner (own process group, output merged, stopped on an interrupt)."""
    p = run_command(argv, cwd=cwd, env=env, keep_output=True, timeout=timeout)
    print(f"  $ {' '.join(argv)[:160]}  -> exit {p.returncode} in {p.seconds:.1f} s")
    return p


def _vresolve(args: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """vresolve itself, its stdout (JSON) apart from its stderr."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "vresolve", *args], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=3600)
    print(f"  $ vresolve {' '.join(args)[:150]}  -> exit {p.returncode} in {time.perf_counter() - t0:.1f} s")
    return p


class _Printer:
    """apply's reporter, printing: each step as it starts and ends."""

    def step_started(self, index: int, total: int, step: Step) -> None:
        self.t0 = time.perf_counter()

    def line(self, text: str) -> None:
        pass

    def step_finished(self, o: Any) -> None:
        print(f"  $ {' '.join(o.step.argv)[:160]}  -> {o.status} {o.why} in {time.perf_counter() - self.t0:.1f} s")

    def check_finished(self, o: Any) -> None:
        pass


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
        for line in p.output.splitlines():
            if line.startswith(("needs libcuda", "MISSING", "FAILS", "vllm ", "torch ", "cuda ", "arch ", "vLLM ")):
                print(f"    {line[:200]}")
        assert p.returncode == 0 and str(c["expect"]) in p.output, f"{name}: {p.output[-4000:]}"


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
        # the plan's steps through apply's own runner; `vllm download-kernels` needs the GPU (vLLM's CLI infers
        # the device at start) and FlashInfer's own index: skipped here without a GPU, checked to exist instead
        steps = tuple(Step(tool=s["tool"], argv=tuple(map(str, s["argv"])), why=s["why"], needs_gpu=s["needs_gpu"])
                      for s in plan["steps"])
        job = Job(what="plan", kind="wheel", env_dir=work / "env", python=str(work / "env" / "bin" / "python"),
                  steps=steps, verify=(), exports=(), creates=(work / "env",))
        outcomes = run_steps(job, _Printer(), cwd=work, has_gpu=HAS_GPU)
        assert [o.status for o in outcomes if o.status != "skipped"] == ["ok"] * len(
            [s for s in steps if HAS_GPU or not s.needs_gpu]), [(o.status, o.ran.tail if o.ran else o.why)
                                                                for o in outcomes]
        if any(s.argv[-1] == "download-kernels" for s in steps) and not HAS_GPU:
            q = _run([str(work / "env" / "bin" / "python"), "-c",
                      "import vllm.entrypoints.cli.download_kernels as m; print('download-kernels', m.__name__)"],
                     env, work)
            assert q.returncode == 0, q.output[-2000:]
            print("  `vllm download-kernels` exists in this vLLM; not run here (needs the GPU machine and "
                  "FlashInfer's index)")
        install_s = time.perf_counter() - t0
        print(f"  installed in {install_s:.0f} s, {_size(work / 'env'):.2f} GiB")
        _verify(plan["verify"], env, work)
        py = str(work / "env" / "bin" / "python")
        if "flashinfer-python" in json.dumps(plan["stack"]) or any("flashinfer" in " ".join(map(str, s["argv"]))
                                                                    for s in plan["steps"]):
            q = _run([py, "-c", "import flashinfer; print('flashinfer', flashinfer.__version__)"], env, work)
            assert q.returncode == 0, q.output[-3000:]
        q = _run(["uv", "pip", "check", "--python", py], env, work)
        assert q.returncode == 0, q.output
        q = _run(["uv", "pip", "list", "--python", py], env, work)
        print("  " + ", ".join(" ".join(line.split()[:2]) for line in q.output.splitlines()
                                if line.startswith(("cuda-python ", "cuda-bindings ", "torch ", "vllm ", "flashinfer"))))
        q = _vresolve(["doctor", "--interpreter", py, "--json"], env, work)
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
        assert q.returncode == 0, q.output
        t0 = time.perf_counter()
        q = _run(["uv", "pip", "install", "--python", str(work / "locked" / "bin" / "python"), "--require-hashes",
                  "--no-build", "-r", str(work / "lock" / "requirements.txt")], env, work)
        assert q.returncode == 0, q.output[-6000:]
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
        assert q.returncode == 0, q.output[-3000:]
        root = Path(__file__).resolve().parents[1]
        q = _run(["uv", "pip", "install", "--python", py, str(root)], env, work)  # vresolve into that environment
        assert q.returncode == 0, q.output[-3000:]
        record = next((work / "env").glob("lib/python*/site-packages/torch-2.11.0.dist-info/RECORD"))
        before = record.read_bytes()
        genv = dict(env, VRESOLVE_GPUS="NVIDIA H200", VRESOLVE_DRIVER="580.159.04")
        p = subprocess.run([py, "-m", "vresolve", "plan", "--gpu", "auto", "--keep-torch", "--vllm", "0.26.0",
                            "--json"], env=genv, cwd=work, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        plan = json.loads(p.stdout)
        assert plan["stack"]["install_kind"] == "wheel" and plan["stack"]["vllm"] == "0.26.0"
        assert not any(s["argv"][:2] == ["uv", "venv"] for s in plan["steps"])  # into the existing environment
        for step in plan["steps"]:
            argv = [str(a) for a in step["argv"]]
            if argv[-1] == "download-kernels":
                continue
            q = _run(argv, env, work)
            assert q.returncode == 0, q.output[-6000:]
        assert record.read_bytes() == before  # the same torch files, untouched
        kept = [c for c in plan["verify"] if c["name"] == "the installer kept your torch"]
        assert kept and kept[0]["expect"].startswith("torch 2.11.0")
        _verify(plan["verify"], env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


# `vresolve apply` itself, on this machine (with or without a GPU): the plan for an H200 made into an environment,
# checked, doctored and locked; the lock reinstalled identically; a failure and an interrupt leaving nothing.


def _apply_json(args: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[int, dict[str, Any], str]:
    p = _vresolve(["apply", *args, "--yes", "--json"], env, cwd)
    print("\n".join(f"    {line}" for line in p.stderr.splitlines() if not line.startswith(" ")))
    return p.returncode, json.loads(p.stdout), p.stderr


def _freeze(py: Path, env: dict[str, str], cwd: Path) -> list[str]:
    out = _run(["uv", "pip", "freeze", "--python", str(py)], env, cwd).output  # (with uv's "Using Python ..." line)
    return sorted(line for line in out.splitlines() if "==" in line)


def test_apply_h200_plan_then_reinstall_it_from_its_lock(tmp_path: Path) -> None:
    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    try:
        t0 = time.perf_counter()
        code, out, err = _apply_json(["--gpu", "NVIDIA H200", "--driver", "580.159.04", "--venv", "env"], env, work)
        print(f"  apply: {time.perf_counter() - t0:.0f} s, {_size(work / 'env'):.2f} GiB")
        assert code == 0 and out["ready"], err[-4000:]
        gpu_checks = {"torch sees the GPUs", "torch's arch list covers every GPU"}
        assert {c["name"]: c["status"] for c in out["checks"]} == {
            c["name"]: ("skipped" if c["name"] in gpu_checks and not HAS_GPU else "passed") for c in out["checks"]}
        assert [s["status"] for s in out["steps"]] == ["ok", "ok", "ok" if HAS_GPU else "skipped"]
        assert not [f for f in out["findings"] if f["severity"] == "error"]
        lock = work / "env.lock" / "requirements.txt"
        assert out["lock"]["dir"] == str(work / "env.lock") and lock.exists()
        assert (work / "env" / "vresolve-env.sh").read_text().endswith("export TORCH_CUDA_ARCH_LIST=9.0\n")
        t0 = time.perf_counter()
        code, again, err = _apply_json(["--lock", str(lock), "--venv", "env2"], env, work)
        print(f"  apply --lock: {time.perf_counter() - t0:.0f} s")
        assert code == 0 and again["ready"], err[-4000:]
        assert again["steps"][1]["argv"][5:] == ["--require-hashes", "--no-build", "-r", str(lock)]
        installed = _freeze(work / "env" / "bin" / "python", env, work)
        assert len(installed) > 150 and installed == _freeze(work / "env2" / "bin" / "python", env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


def test_apply_with_an_unreachable_index_names_the_step_and_leaves_nothing(tmp_path: Path) -> None:
    env = dict(_env(tmp_path), UV_DEFAULT_INDEX="http://127.0.0.1:9/simple/", UV_HTTP_RETRIES="0")
    work = tmp_path / "work"
    work.mkdir()
    try:
        code, out, err = _apply_json(["--gpu", "NVIDIA H200", "--driver", "580.159.04", "--venv", "env"], env, work)
        assert code == 1 and out["failed"]["step"] == 1 and out["failed"]["shell"].startswith("uv venv"), err
        assert any("Connection refused" in line for line in out["steps"][0]["tail"])
        assert list(work.iterdir()) == []
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


def test_ctrl_c_during_the_install_leaves_nothing(tmp_path: Path) -> None:
    import signal

    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "vresolve", "apply", "--gpu", "NVIDIA H200", "--driver",
                             "580.159.04", "--venv", "env", "--yes"], env=env, cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the install step has started: wait until uv has downloaded something
            if line.startswith("vresolve: [2/3]"):
                break
        deadline = time.monotonic() + 120
        while _size(tmp_path / "uv-cache") < 0.2 and time.monotonic() < deadline:
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 130, rest
        assert f"vresolve: removed {work / 'env'}" in rest
        assert list(work.iterdir()) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs the NVIDIA GPU machine the lock is made for")
def test_apply_lock_on_this_gpu_machine_is_checked_by_doctor_lock(tmp_path: Path) -> None:
    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    try:
        q = _vresolve(["lock", "--gpu", "auto", "-o", str(work / "lock"), "--format", "requirements"], env, work)
        assert q.returncode == 0, q.stderr[-3000:]
        code, out, err = _apply_json(["--lock", str(work / "lock" / "requirements.txt"), "--venv", "env"], env, work)
        assert out["lock_check"] == [], out["lock_check"]  # doctor --lock: this machine is the lock's machine
        assert code == 0 and out["ready"], err[-4000:]
        assert all(c["status"] == "passed" for c in out["checks"]), out["checks"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)
