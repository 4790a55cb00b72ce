"""``vresolve apply`` as a whole process: real uv against a real index on loopback (tiny wheels made here).

The wheels are small stand-ins: plain packages fail the plan's checks and say so (not ready); ``stack_index``'s
pass them and doctor (a torch that reports CUDA 13.0, a vLLM holding a real compiled module), so the ready path
runs too: the lock next to the environment, the activation file, ``apply --lock`` reinstalling it. Also pinned
down: the same argv as the plan, a failing step named with its output and nothing left behind, Ctrl-C and SIGTERM
stopping uv and leaving nothing, an existing environment never replaced without ``--force``, the question
without ``--yes``, a lock checked against this machine before it is installed with its hashes. The real stack
(GBs) is in tests/test_install.py (opt-in).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vresolve.apply import Downloads, Job, failure_causes, installed_versions, lock_differences, run_steps
from vresolve.host import Host
from vresolve.matrix import load_matrix
from vresolve.plan.steps import Check, Step
from vresolve.render.lockfiles import header_text

from .conftest import ROOT, TINY
from .test_index import _Server

H200 = ["--gpu", "NVIDIA H200", "--driver", "580.159.04"]
HAS_GPU = shutil.which("nvidia-smi") is not None and os.path.exists("/proc/driver/nvidia")


def _meta(name: str, version: str, requires: list[str]) -> str:
    return "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                      *(f"Requires-Dist: {r}" for r in requires)]) + "\n"


def _wheel(name: str, version: str, requires: list[str], members: dict[str, bytes] | None = None) -> bytes:
    """An installable wheel: ``name/__init__.py`` with its ``__version__`` (or ``members``), METADATA, WHEEL,
    RECORD."""
    import base64
    import hashlib
    import io
    import zipfile

    files = {**(members or {f"{name}/__init__.py": f"__version__ = {version!r}\n".encode()}),
             f"{name}-{version}.dist-info/METADATA": _meta(name, version, requires).encode(),
             f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                  b"Tag: py3-none-any\n"}
    record = "".join(f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},"
                     f"{len(v)}\n" for k, v in files.items()) + f"{name}-{version}.dist-info/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in [*files.items(), (f"{name}-{version}.dist-info/RECORD", record.encode())]:
            zf.writestr(k, v)
    return buf.getvalue()


def _add(s: _Server, name: str, version: str, requires: list[str], members: dict[str, bytes] | None = None) -> str:
    fn = f"{name}-{version}-py3-none-any.whl"
    s.add_project_json(name, {fn: _wheel(name, version, requires, members)})
    return f"/files/{fn}"


@pytest.fixture
def index() -> Iterator[_Server]:
    """vllm 0.33.0 -> torch 2.14.0, torchvision 0.29.0 -> tinydep; and the seed packages uv venv --seed takes."""
    s = _Server()
    for name, version, requires in (("vllm", "0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
                                    ("torch", "2.14.0", ["tinydep"]), ("torchvision", "0.29.0", ["torch==2.14.0"]),
                                    ("tinydep", "1.0", []), ("pip", "25.0", []), ("setuptools", "75.0", []),
                                    ("wheel", "0.45.0", [])):
        _add(s, name, version, requires)
    yield s
    s.close()


def _extension_module() -> Path | None:
    """A compiled module of this Python's standard library (a real ``.so``, loadable under another package)."""
    import importlib

    for name in ("_json", "math", "_bisect", "_random"):
        f = getattr(importlib.import_module(name), "__file__", None)
        if f and f.endswith(".so"):
            return Path(f)
    return None


@pytest.fixture
def stack_index() -> Iterator[_Server]:
    """The same closure as ``index``, with stand-ins that pass the plan's checks and doctor on a machine without a
    GPU: a torch that reports CUDA 13.0 and no device; a vLLM with a real compiled module (one of the standard
    library's, loaded under vllm/) and an importable ``vllm._C``."""
    so = _extension_module()
    if so is None:
        pytest.skip("this Python has no standard-library extension module on disk")
    s = _Server()
    for name, version, requires in (("tinydep", "1.0", []), ("pip", "25.0", []), ("setuptools", "75.0", []),
                                    ("wheel", "0.45.0", []), ("torchvision", "0.29.0", ["torch==2.14.0"])):
        _add(s, name, version, requires)
    _add(s, "torch", "2.14.0", ["tinydep"], {
        "torch/__init__.py": b"__version__ = '2.14.0'\nfrom . import cuda, version\n",
        "torch/version.py": b"cuda = '13.0'\n",
        "torch/cuda.py": b"def is_available():\n    return False\ndef device_count():\n    return 0\n"
                         b"def get_arch_list():\n    return ['sm_90']\n"})
    _add(s, "vllm", "0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"], {
        "vllm/__init__.py": b"__version__ = '0.33.0'\n", "vllm/_C.py": b"", f"vllm/{so.name}": so.read_bytes()})
    yield s
    s.close()


def _env(tmp: Path, index_url: str) -> dict[str, str]:
    env = dict(os.environ, UV_DEFAULT_INDEX=index_url, UV_CACHE_DIR=str(tmp / "uv-cache"), UV_HTTP_RETRIES="0",
               UV_PYTHON_DOWNLOADS="never", NO_COLOR="1", VRESOLVE_CACHE_DIR="")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # uv finds this Python
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("VIRTUAL_ENV", "UV_INDEX_URL", "UV_INDEX", "UV_EXTRA_INDEX_URL"):
        env.pop(k, None)
    return env


def _apply(args: list[str], tmp: Path, index_url: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *args], cwd=tmp,
                          env=_env(tmp, index_url), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _left(tmp: Path) -> list[str]:
    """What is in the working directory besides uv's cache."""
    return sorted(p.name for p in tmp.iterdir() if p.name != "uv-cache")


def _dead_url() -> str:
    dead = _Server()
    url = dead.url + "/simple/"
    dead.close()  # nothing listens there any more
    return url


def test_a_failing_step_is_named_with_its_output_and_leaves_nothing_behind(tmp_path: Path) -> None:
    # uv venv --seed reads the index for pip: unreachable, it fails after making half an environment
    p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 1, p.stderr
    assert "step 1 failed (exit code 2): uv venv --python" in p.stderr
    assert "its last lines of output:" in p.stderr and "Connection refused" in p.stderr
    assert f"removed {tmp_path / 'env'}" in p.stderr
    assert _left(tmp_path) == []


def test_json_failure_names_the_step_and_its_tail(tmp_path: Path) -> None:
    p = _apply([*H200, "--yes", "--venv", "env", "--json"], tmp_path, _dead_url())
    assert p.returncode == 1
    out = json.loads(p.stdout)
    assert out["schema"] == "vresolve.apply/1" and out["ready"] is False
    assert out["failed"]["step"] == 1 and out["failed"]["shell"].startswith("uv venv --python")
    assert [s["status"] for s in out["steps"]] == ["failed"]
    assert any("Connection refused" in line for line in out["steps"][0]["tail"])
    assert out["cleanup"] == [f"removed {tmp_path / 'env'}"] and _left(tmp_path) == []


def test_install_step_fails_on_a_package_the_index_lacks_and_the_new_environment_goes(tmp_path: Path) -> None:
    s = _Server()
    try:
        for name in ("pip", "setuptools", "wheel"):
            _add(s, name, "1.0", [])
        p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, s.url + "/simple/")
    finally:
        s.close()
    assert p.returncode == 1, p.stderr
    assert "vresolve: [1/2] uv venv" in p.stderr and "[1/2] uv venv --python" in p.stderr
    assert "step 2 failed (exit code 1): uv pip install --python env/bin/python vllm==0.33.0" in p.stderr
    assert "vllm" in p.stderr.split("its last lines of output:")[1]
    assert _left(tmp_path) == []


def test_install_runs_the_plans_steps_then_its_checks(index: _Server, tmp_path: Path) -> None:
    """The stand-in wheels install; the checks run against them and fail (no torch CUDA, no vLLM kernels):
    not ready, exit 1; --keep-failed keeps the environment, which holds exactly the planned pins."""
    p = _apply([*H200, "--yes", "--venv", "env", "--keep-failed", "--json"], tmp_path, index.url + "/simple/")
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    assert [(s["status"], s["argv"][:3]) for s in out["steps"]] == [("ok", ["uv", "venv", "--python"]),
                                                                    ("ok", ["uv", "pip", "install"])]
    status = {c["name"]: c["status"] for c in out["checks"]}
    gpu = "failed" if HAS_GPU else "skipped"
    assert status == {"vLLM imports, with its compiled extensions": "failed",
                      "torch is the planned CUDA build": "failed",
                      "torch sees the GPUs": gpu, "torch's arch list covers every GPU": gpu}
    assert out["ready"] is False and out["lock"] is None and out["cleanup"] == [f"kept {tmp_path / 'env'} (--keep-failed)"]
    assert (out["findings"], out["doctor_skipped"]) == ([], "not run: a check failed")  # not "no problems"
    have = installed_versions(str(tmp_path / "env" / "bin" / "python"), tmp_path)
    assert {k: have[k] for k in ("vllm", "torch", "torchvision", "tinydep")} == {
        "vllm": "0.33.0", "torch": "2.14.0", "torchvision": "0.29.0", "tinydep": "1.0"}
    # and without --keep-failed the environment that is not ready goes
    q = _apply([*H200, "--yes", "--venv", "env2"], tmp_path, index.url + "/simple/")
    assert q.returncode == 1 and "NOT ready: vLLM 0.33.0 + torch 2.14.0+cu130 in" in q.stdout
    assert q.stdout.rstrip().endswith("FAILED; doctor: not run: a check failed"), q.stdout
    assert "no problems" not in q.stdout
    assert f"removed {tmp_path / 'env2'}" in q.stderr and not (tmp_path / "env2").exists()


def test_an_existing_environment_is_never_replaced_without_force(index: _Server, tmp_path: Path) -> None:
    from vresolve.apply.guard import write_marker

    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "env" / "mine").write_text("keep me")
    write_marker(tmp_path / "env", what="an earlier apply", kind="wheel", state="ready", pid=1)
    p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, index.url + "/simple/")
    assert p.returncode == 2 and "exists; apply never replaces it" in p.stderr and "--force" in p.stderr
    assert p.stdout == "" and index.requests == []
    # --force (an environment vresolve made): the new one fails, the previous one is put back as it was
    q = _apply([*H200, "--yes", "--venv", "env", "--force"], tmp_path, _dead_url())
    assert q.returncode == 1 and f"put back the previous {tmp_path / 'env'}" in q.stderr
    assert (tmp_path / "env" / "mine").read_text() == "keep me" and _left(tmp_path) == ["env"]


def test_without_yes_and_without_a_terminal_it_fails_before_anything(index: _Server, tmp_path: Path) -> None:
    p = _apply([*H200, "--venv", "env"], tmp_path, index.url + "/simple/")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == ("vresolve: error: apply: asks before changing anything, and there is no terminal to ask on: "
                        "pass --yes\n")
    assert _left(tmp_path) == [] and index.requests == []


def test_on_a_terminal_it_asks_and_a_no_changes_nothing(index: _Server, tmp_path: Path) -> None:
    import pty

    main, sub = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *H200, "--venv",
                                 "env"], cwd=tmp_path, env=_env(tmp_path, index.url + "/simple/"), stdin=sub,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.write(main, b"n\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(main)
        os.close(sub)
    assert proc.returncode == 1, err
    assert "apply will run, into" in out and "1. uv venv --python" in out and "then check:" in out
    lines = out.splitlines()
    at = lines.index("then check:") + 1
    checks = lines[at:next(i for i in range(at, len(lines)) if not lines[i].startswith("  "))]
    assert checks and all(x.startswith("  - ") and x.endswith("'") for x in checks), checks  # one line each
    assert "  - torch is the planned CUDA build: 'torch CUDA 13.0'" in checks
    assert "nothing changed (not confirmed)" in err
    assert _left(tmp_path) == [] and index.requests == []


def _processes_naming(text: str) -> list[str]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                found.append(cmd)
    return found


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_an_interrupt_during_the_install_stops_uv_and_leaves_nothing(index: _Server, tmp_path: Path, sig: int,
                                                                    code: int, word: str) -> None:
    index.delay["/files/torch-2.14.0-py3-none-any.whl"] = [60.0]  # the install hangs on torch's download
    proc = subprocess.Popen([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *H200, "--yes",
                             "--venv", "env"], cwd=tmp_path, env=_env(tmp_path, index.url + "/simple/"),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "/files/torch-2.14.0-py3-none-any.whl" not in index.requests:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert (tmp_path / "env" / "bin" / "python").exists()  # step 1 made it; step 2 is downloading
        t0 = time.monotonic()
        os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C does: the foreground group (uv has its own)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert time.monotonic() - t0 < 10
    assert f"vresolve: removed {tmp_path / 'env'}" in err and f"vresolve: {word}" in err
    assert _left(tmp_path) == []
    assert _processes_naming(str(tmp_path)) == []  # uv is gone too


def _lock_text(header_python: str) -> str:
    header = {"vresolve": "0.1.0", "matrix_revision": "x",
              "stack": {"vllm": "0.33.0", "torch": "2.14.0", "variant": "cu130", "vllm_variant": "cu130",
                        "vllm_source": "pypi", "torch_source": "pypi"},
              "machine": {"gpus": {"NVIDIA H200": "9.0"}, "min_driver": "580.65.06", "driver_policy": "minor-compat",
                          "cuda": "13.0", "python": header_python, "platform": "linux-x86_64", "glibc": "2.28"}}
    return header_text(header) + "tinydep==1.0 --hash=sha256:00\n"


def test_a_lock_for_another_machine_is_refused_by_doctor_lock(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(_lock_text("3.9"))
    p = _apply(["--lock", "requirements.txt", "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 1, p.stderr
    assert "this machine is not the one 'requirements.txt' was made for (doctor --lock)" in p.stderr
    assert "the lock is for Python 3.9" in p.stderr and "[python-unsupported]" in p.stderr
    assert _left(tmp_path) == ["requirements.txt"]


def test_lock_flag_takes_no_plan_flags_and_only_a_vresolve_requirements_file(tmp_path: Path) -> None:
    (tmp_path / "r.txt").write_text("torch==2.14.0\n")
    p = _apply(["--lock", "r.txt", "--yes", "--vllm", "0.33.0"], tmp_path, _dead_url())
    assert p.returncode == 2 and "--lock: installs the stack the lock records; --vllm would plan another" in p.stderr
    p = _apply(["--lock", "r.txt", "--yes"], tmp_path, _dead_url())
    assert p.returncode == 2 and "is not a vresolve lock (no '# vresolve-lock:' line)" in p.stderr
    p = _apply(["--lock", "pylock.toml", "--yes"], tmp_path, _dead_url())
    assert p.returncode == 2 and "--lock: cannot read 'pylock.toml'" in p.stderr
    p = _apply([*H200, "--installer", "conda", "--yes"], tmp_path, _dead_url())
    assert p.returncode == 2 and "--installer conda: apply makes virtual environments with uv or pip" in p.stderr
    assert _left(tmp_path) == ["r.txt"]


def test_apply_lock_installs_the_lock_with_its_hashes(index: _Server, tmp_path: Path) -> None:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    env = _env(tmp_path, index.url + "/simple/")
    q = subprocess.run([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "lock", *H200, "--python", py,
                        "-o", "lk", "--format", "requirements"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    p = _apply(["--lock", "lk/requirements.txt", "--yes", "--venv", "env", "--keep-failed", "--json"], tmp_path,
               index.url + "/simple/")
    out = json.loads(p.stdout)
    assert [s["argv"][:3] for s in out["steps"]] == [["uv", "venv", "--python"], ["uv", "pip", "install"]]
    assert out["steps"][1]["argv"][5:] == ["--require-hashes", "--no-build", "-r",
                                           str(tmp_path / "lk" / "requirements.txt")]
    assert [s["status"] for s in out["steps"]] == ["ok", "ok"], out["steps"]
    assert out["kind"] == "lock" and out["what"].endswith("from requirements.txt")
    have = installed_versions(str(tmp_path / "env" / "bin" / "python"), tmp_path)
    assert lock_differences((tmp_path / "lk" / "requirements.txt").read_text(), have) == []
    assert p.returncode == 1 and out["ready"] is False  # the stand-in wheels hold no vLLM kernels


def test_downloads_are_tallied_from_the_installers_own_lines() -> None:
    d = Downloads()
    lines = ["Using Python 3.11.7 environment at: e", "Resolved 2 packages in 195ms", "Downloading scipy (33.7MiB)",
             "Downloading numpy (16.1MiB)", " Downloaded numpy"]  # uv's output without a terminal
    assert [d.feed(line) for line in lines] == [False, False, True, True, True]
    assert d.active == ["scipy"] and d.done_bytes == pytest.approx(16.1 * 2**20)
    assert d.total_bytes == pytest.approx(49.8 * 2**20)
    assert d.feed(" Downloaded scipy") and d.active == []
    pip = Downloads()  # pip: one at a time, each line ends the download before it
    pip.feed("  Downloading torch-2.14.0-cp312-cp312-manylinux_2_28_x86_64.whl (846.8 MB)")
    pip.feed("  Downloading numpy-2.4.6-cp312-cp312-manylinux_2_28_x86_64.whl (16.1 MB)")
    assert pip.active == ["numpy"] and pip.done_bytes == pytest.approx(846.8e6)
    pip.feed("Installing collected packages: numpy, torch")
    assert pip.active == [] and pip.total_bytes == pytest.approx(862.9e6)


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def step_started(self, index: int, total: int, step: Step) -> None:
        self.lines.append(f"start {index}/{total}")

    def line(self, text: str) -> None:
        self.lines.append(text)

    def step_finished(self, outcome: object) -> None:
        self.lines.append(f"end {outcome.status}")  # type: ignore[attr-defined]

    def check_finished(self, outcome: object) -> None:
        pass


def test_a_killed_compiler_in_a_source_builds_log_is_build_oom(tmp_path: Path) -> None:
    """A build step whose compiler the kernel killed: the output goes to the log (kept), and doctor names
    build-oom from it, as from a pasted log."""
    build = ("import sys\nfor i in range(3000): print('[%d/9000] Building CUDA object csrc/x.cu.o' % i)\n"
             "print('Killed signal terminated program cc1plus')\nprint('ninja: build stopped: subcommand failed.')\n"
             "sys.exit(1)\n")
    log = tmp_path / "env.build.log"
    job = Job(what="vLLM from source", kind="source", env_dir=tmp_path / "env", python=sys.executable,
              steps=(Step(tool="git", argv=(sys.executable, "-c", "print('cloned')"), why="the clone"),
                     Step(tool="uv", argv=(sys.executable, "-c", build), why="the build")),
              verify=(), exports=(), creates=(tmp_path / "env",), build_from=1,
              build_env=(("MAX_JOBS", "64"),),
              pre_checks=(Check(name="the build sees MAX_JOBS", expect="64",
                                argv=(sys.executable, "-c", "import os; print(os.environ['MAX_JOBS'])")),),
              log=log)
    rec = _Recorder()
    steps = run_steps(job, rec, cwd=tmp_path, has_gpu=False)
    assert [s.status for s in steps] == ["ok", "failed"] and steps[1].ran is not None
    assert steps[1].ran.tail[-1] == "ninja: build stopped: subcommand failed." and len(steps[1].ran.tail) == 30
    text = log.read_text()
    assert text.startswith("cloned\n64\n[0/9000]") and text.count("\n") == 3004
    causes = failure_causes(job, steps[1], Host(), load_matrix())
    assert [c.cause for c in causes] == ["build-oom"]
    assert rec.lines[:3] == ["start 1/2", "cloned", "end ok"]


def test_a_failing_check_before_the_build_stops_it(tmp_path: Path) -> None:
    job = Job(what="x", kind="source", env_dir=tmp_path / "env", python=sys.executable,
              steps=(Step(tool="git", argv=(sys.executable, "-c", "pass"), why="clone"),
                     Step(tool="uv", argv=(sys.executable, "-c", "open('built', 'w')"), why="build")),
              verify=(), exports=(), creates=(), build_from=1,
              pre_checks=(Check(name="nvcc is torch's CUDA", argv=(sys.executable, "-c", "print('release 12.8,')"),
                                expect="release 13.0,"),))
    steps = run_steps(job, _Recorder(), cwd=tmp_path, has_gpu=False)
    assert [(s.status, s.step.tool) for s in steps] == [("ok", "git"), ("failed", "check")]
    assert steps[-1].why == "nvcc is torch's CUDA: expected 'release 13.0,' in its output"
    assert not (tmp_path / "built").exists()


def test_a_step_that_needs_the_gpu_is_skipped_without_one(tmp_path: Path) -> None:
    job = Job(what="x", kind="wheel", env_dir=tmp_path / "env", python=sys.executable,
              steps=(Step(tool="vllm", argv=("/nonexistent/vllm", "download-kernels"), why="k", needs_gpu=True),),
              verify=(), exports=(), creates=())
    steps = run_steps(job, _Recorder(), cwd=tmp_path, has_gpu=False)
    assert [(s.status, s.why) for s in steps] == [("skipped", "no NVIDIA GPU on this machine")]
    steps = run_steps(job, _Recorder(), cwd=tmp_path, has_gpu=True)
    assert steps[0].status == "failed" and steps[0].why == "cannot run '/nonexistent/vllm': No such file or directory"


def test_a_ready_environment_is_locked_and_its_lock_reinstalls_it(stack_index: _Server, tmp_path: Path) -> None:
    url = stack_index.url + "/simple/"
    p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, url)
    assert p.returncode == 0, p.stderr
    env = tmp_path / "env"
    activate = env / "vresolve-env.sh"
    gpu = "" if HAS_GPU else ", 2 skipped (no NVIDIA GPU on this machine)"
    assert p.stdout.splitlines()[-1] == (
        f"ready: vLLM 0.33.0 + torch 2.14.0+cu130 in {env}: checks 2 passed{gpu}; doctor: no problems; use it: "
        f"source {activate}")
    assert f"vresolve: lock of what was installed: {env}.lock (4 files)" in p.stderr
    marker = json.loads((env / ".vresolve-env").read_text())  # the proof that vresolve made it (--force needs it)
    assert {k: marker[k] for k in ("kind", "path", "role", "state", "what")} == {
        "kind": "wheel", "path": str(env), "role": "environment", "state": "ready",
        "what": "vLLM 0.33.0 + torch 2.14.0+cu130"}
    assert marker["vresolve"] and marker["created"].endswith("Z") and isinstance(marker["pid"], int)
    assert sorted(f.name for f in (tmp_path / "env.lock").iterdir()) == ["env.sh", "environment.yml", "pylock.toml",
                                                                        "requirements.txt"]
    q = subprocess.run(["bash", "-c", f"source {activate} && echo $TORCH_CUDA_ARCH_LIST $VIRTUAL_ENV"],
                       capture_output=True, text=True)
    assert q.stdout == f"9.0 {env}\n"
    # the next machine: the lock, with its hashes, checked against this machine first
    r = _apply(["--lock", "env.lock/requirements.txt", "--yes", "--venv", "env2", "--json"], tmp_path, url)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ready"] is True and out["lock"]["files"] == [str(tmp_path / "env2.lock" / "requirements.txt")]
    assert [f["cause"] for f in out["lock_check"]] == ([] if HAS_GPU else ["library-not-found"])  # made for an H200
    first = installed_versions(str(env / "bin" / "python"), tmp_path)
    again = installed_versions(str(tmp_path / "env2" / "bin" / "python"), tmp_path)
    assert {"vllm", "torch", "torchvision", "tinydep"} <= set(first) and again == first
    # --force replaces a ready environment, and removes the previous one once the new one is ready
    f = _apply([*H200, "--yes", "--venv", "env", "--force"], tmp_path, url)
    assert f.returncode == 0 and f"vresolve: removed the previous {env}" in f.stderr
    assert _left(tmp_path) == ["env", "env.lock", "env2", "env2.lock"]
