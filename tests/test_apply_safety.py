"""``apply`` and ``lock`` remove and replace only what vresolve made, and can prove it made: real processes against
a loopback index, real signals (SIGHUP, SIGKILL) during an install that waits, two applies into one path, real
files and directories (a fake home), and ``lock`` in a project that has its own requirements.txt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vresolve.apply.guard import MARKER, recover, write_marker

from .conftest import TINY
from .test_apply import H200, _add, _apply, _dead_url, _env, _left, _processes_naming
from .test_index import _Server

TORCH = "/files/torch-2.14.0-py3-none-any.whl"


@pytest.fixture
def index() -> Iterator[_Server]:
    """vllm 0.33.0 -> torch 2.14.0, torchvision 0.29.0 -> tinydep, and what uv venv --seed takes (as in
    tests/test_apply.py)."""
    s = _Server()
    for name, version, requires in (("vllm", "0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
                                    ("torch", "2.14.0", ["tinydep"]), ("torchvision", "0.29.0", ["torch==2.14.0"]),
                                    ("tinydep", "1.0", []), ("pip", "25.0", []), ("setuptools", "75.0", []),
                                    ("wheel", "0.45.0", [])):
        _add(s, name, version, requires)
    yield s
    s.close()


def _made_by_vresolve(d: Path, pid: int = 1) -> None:
    """An environment an earlier apply made: pyvenv.cfg, the user's file in it, vresolve's marker."""
    d.mkdir()
    (d / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (d / "mine").write_text("keep me")
    write_marker(d, what="an earlier apply", kind="wheel", state="ready", pid=pid)


def _start(args: list[str], tmp: Path, index: _Server, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *H200, "--yes", *args],
                            cwd=tmp, env={**_env(tmp, index.url + "/simple/"), **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for_install(proc: subprocess.Popen[str], index: _Server) -> None:
    """Until uv asks for torch's wheel (the index holds it back): step 2 is running."""
    deadline = time.monotonic() + 90
    while TORCH not in index.requests:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)


def _gone(tmp: Path) -> None:
    deadline = time.monotonic() + 30
    while _processes_naming(str(tmp)):  # uv dies with vresolve (its parent-death signal)
        assert time.monotonic() < deadline, _processes_naming(str(tmp))
        time.sleep(0.1)


@pytest.mark.parametrize("what", ["a project", "a file", "a link", "the home", "the current directory"])
def test_force_never_replaces_what_vresolve_did_not_make(what: str, index: _Server, tmp_path: Path,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("home")  # a fake $HOME with the user's files
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret")
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('mine')\n")
    (tmp_path / "notes.txt").write_text("notes")
    (tmp_path / "link").symlink_to(project)
    venv, why = {"a project": ("project", "it holds no .vresolve-env marker: vresolve did not make it"),
                 "a file": ("notes.txt", "is a file, not an environment"), "a link": ("link", "is a symbolic link"),
                 "the home": (str(home), "is the home directory"),
                 "the current directory": (".", "holds the current directory")}[what]
    before = sorted(str(p) for d in (tmp_path, home) for p in d.rglob("*"))
    p = subprocess.run([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *H200, "--yes", "--force",
                        "--venv", venv], cwd=tmp_path, env={**_env(tmp_path, index.url + "/simple/"), "HOME": str(home)},
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert len(p.stderr.splitlines()) == 1 and why in p.stderr and "nothing changed" in p.stderr, p.stderr
    assert str((tmp_path / venv).resolve() if what != "a link" else tmp_path / venv) in p.stderr
    assert sorted(str(p) for d in (tmp_path, home) for p in d.rglob("*")) == before  # not a file touched
    assert (home / ".ssh" / "id_ed25519").read_text() == "secret" and index.requests == []


@pytest.mark.parametrize("flag", ["--venv=/", "--venv=/tmp/..", "--venv=-x", "--src-dir=--upload-pack=touch"])
def test_path_flags_that_would_be_the_root_or_an_option_are_refused_at_the_flag(flag: str, tmp_path: Path) -> None:
    p = _apply([*H200, "--yes", "--force", flag], tmp_path, _dead_url())
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert "root directory" in p.stderr or "begins with '-', which uv and git would read as an option" in p.stderr
    assert "Traceback" not in p.stderr and _left(tmp_path) == []


def test_a_failed_apply_removes_exactly_the_parent_directories_it_made(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "keep.txt").write_text("mine")
    p = _apply([*H200, "--yes", "--venv", "a/b/c/env"], tmp_path, _dead_url())
    assert p.returncode == 1 and f"removed {tmp_path / 'a/b/c/env'}" in p.stderr
    assert sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*") if "uv-cache" not in x.parts) == [
        "a", "a/keep.txt"]  # a/b and a/b/c were made by the run: gone; a was there: kept


def test_sighup_stops_the_install_and_puts_the_previous_environment_back(index: _Server, tmp_path: Path) -> None:
    _made_by_vresolve(tmp_path / "env")
    index.delay[TORCH] = [60.0]
    proc = _start(["--venv", "env", "--force"], tmp_path, index)
    try:
        _wait_for_install(proc, index)
        assert (tmp_path / "env" / "bin" / "python").exists()  # the new one, the previous one hidden beside it
        assert (tmp_path / f".env.vresolve-previous-{proc.pid}" / "mine").exists()
        os.kill(proc.pid, signal.SIGHUP)  # the ssh connection dropped
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 129, err
    assert f"vresolve: put back the previous {tmp_path / 'env'}" in err and "vresolve: hung up" in err
    assert (tmp_path / "env" / "mine").read_text() == "keep me" and not (tmp_path / "env" / "bin").exists()
    assert _left(tmp_path) == ["env"]  # no hidden previous, no lock file
    _gone(tmp_path)


def test_a_rerun_puts_back_what_a_killed_apply_hid(index: _Server, tmp_path: Path) -> None:
    _made_by_vresolve(tmp_path / "env")
    index.delay[TORCH] = [60.0]
    proc = _start(["--venv", "env", "--force"], tmp_path, index)
    try:
        _wait_for_install(proc, index)
        os.kill(proc.pid, signal.SIGKILL)  # no handler runs
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _gone(tmp_path)
    hidden = f".env.vresolve-previous-{proc.pid}"
    assert sorted(_left(tmp_path)) == sorted([hidden, ".env.vresolve-lock", "env"])  # what the kill left
    assert json.loads((tmp_path / "env" / MARKER).read_text())["state"] == "installing"
    p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, _dead_url())  # the rerun, before anything else
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines()[0] == (f"vresolve: put back the previous {tmp_path / 'env'}, which apply {proc.pid} "
                                        "had put aside and did not finish")
    assert "exists; apply never replaces it" in p.stderr
    assert (tmp_path / "env" / "mine").read_text() == "keep me" and _left(tmp_path) == ["env"]


def test_a_rerun_removes_the_incomplete_environment_of_a_killed_apply(index: _Server, tmp_path: Path) -> None:
    index.delay[TORCH] = [60.0]
    proc = _start(["--venv", "deep/env"], tmp_path, index)
    try:
        _wait_for_install(proc, index)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _gone(tmp_path)
    assert (tmp_path / "deep" / "env" / "bin").is_dir()
    p = _apply([*H200, "--yes", "--venv", "deep/env"], tmp_path, _dead_url())
    assert f"vresolve: removed the incomplete {tmp_path / 'deep/env'} left by apply {proc.pid}" in p.stderr
    assert p.returncode == 1 and _left(tmp_path) == ["deep"]  # this run failed too: its own environment went


def test_a_second_apply_into_the_same_path_fails_at_once_and_touches_nothing(index: _Server, tmp_path: Path) -> None:
    index.delay[TORCH] = [60.0]
    first = _start(["--venv", "env"], tmp_path, index)
    try:
        _wait_for_install(first, index)
        second = _apply([*H200, "--yes", "--venv", "env", "--force"], tmp_path, _dead_url())
        assert second.returncode == 2 and len(second.stderr.splitlines()) == 1, second.stderr
        assert f"another vresolve apply (pid {first.pid}) is making '{tmp_path / 'env'}' now" in second.stderr
        assert (tmp_path / "env" / "bin" / "python").exists() and first.poll() is None  # the first goes on
        os.killpg(first.pid, signal.SIGTERM)
        _, err = first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 143 and f"vresolve: removed {tmp_path / 'env'}" in err
    assert _left(tmp_path) == []


def test_recover_reports_what_it_cannot_prove(tmp_path: Path) -> None:
    """A previous environment hidden by a dead apply, and in its place something without that apply's marker:
    nothing is moved, the command that puts it back is given."""
    env = tmp_path / "env"
    env.mkdir()
    (env / "theirs").write_text("x")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    aside = tmp_path / f".env.vresolve-previous-{dead.pid}"
    _made_by_vresolve(aside)
    [line] = recover([env])
    assert line.startswith(f"the previous {env} is at {aside} (put aside by apply {dead.pid}, which did not finish)")
    assert line.endswith(f"mv {aside} {env}") and (env / "theirs").exists() and (aside / "mine").exists()


def _lock(tmp: Path, index: _Server, *args: str) -> subprocess.CompletedProcess[str]:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return subprocess.run([sys.executable, "-m", "vresolve", "--matrix", str(TINY), "lock", *H200, "--python", py,
                           "--format", "requirements,conda", *args], cwd=tmp, env=_env(tmp, index.url + "/simple/"),
                          capture_output=True, text=True, timeout=120)


def test_lock_never_overwrites_a_projects_own_files(index: _Server, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("flask==3.0\n")
    (tmp_path / "environment.yml").write_text("name: mine\n")
    p = _lock(tmp_path, index)  # no -o: the current directory
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert ("would replace 'requirements.txt', 'environment.yml', which vresolve did not write (no '# vresolve-lock:' "
            "header)") in p.stderr and "--force" in p.stderr
    assert (tmp_path / "requirements.txt").read_text() == "flask==3.0\n" and index.requests == []  # before uv
    assert (tmp_path / "environment.yml").read_text() == "name: mine\n"
    q = _lock(tmp_path, index, "--force")
    assert q.returncode == 0, q.stderr
    assert "# vresolve-lock: {" in (tmp_path / "requirements.txt").read_text()
    r = _lock(tmp_path, index)  # its own files (the header) it replaces
    assert r.returncode == 0, r.stderr


def test_apply_never_writes_its_lock_over_a_file_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "env.lock").mkdir()
    (tmp_path / "env.lock" / "requirements.txt").write_text("mine\n")
    p = _apply([*H200, "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"the lock would replace '{tmp_path / 'env.lock' / 'requirements.txt'}'" in p.stderr
    assert _left(tmp_path) == ["env.lock"] and (tmp_path / "env.lock" / "requirements.txt").read_text() == "mine\n"


def test_a_source_builds_clone_dir_is_replaced_by_the_same_rule(tmp_path: Path) -> None:
    clone = tmp_path / "vllm-src"
    (clone / ".git").mkdir(parents=True)
    (clone / "my-patch.diff").write_text("mine")
    p = subprocess.run([sys.executable, "-m", "vresolve", "apply", *H200, "--source-build", "always", "--yes",
                        "--force", "--venv", "env", "--src-dir", "vllm-src"], cwd=tmp_path,
                       env=_env(tmp_path, _dead_url()), capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"'{clone}' exists and it holds no .vresolve-env marker: vresolve did not make it" in p.stderr
    assert (clone / "my-patch.diff").read_text() == "mine" and _left(tmp_path) == ["vllm-src"]


def test_the_marker_goes_into_every_directory_a_job_makes_and_proves_it(tmp_path: Path) -> None:
    """A clone (``.git``) and an environment (``pyvenv.cfg``) made under a claim: each gets the marker, and then
    --force may replace them; the same directories without it may not be."""
    from vresolve.apply import claim
    from vresolve.apply.guard import read_marker, refusal

    env, clone = tmp_path / "env", tmp_path / "src"
    c = claim([env, clone], force=False, what="vLLM from source", kind="source")
    (clone / ".git").mkdir(parents=True)
    env.mkdir()
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert refusal(env) == refusal(clone) == "it holds no .vresolve-env marker: vresolve did not make it"
    c.mark()
    assert [read_marker(d)["role"] for d in (env, clone)] == ["environment", "source"]  # type: ignore[index]
    assert {read_marker(d)["state"] for d in (env, clone)} == {"installing"}  # type: ignore[index]
    assert refusal(env) is None and refusal(clone) is None
    c.succeed()
    assert read_marker(env)["state"] == "ready" and read_marker(env)["pid"] == os.getpid()  # type: ignore[index]
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / MARKER).write_text(json.dumps({"vresolve": "0.1.0"}))
    assert refusal(tmp_path / "plain") == ("it holds a .vresolve-env marker but is not a virtual or conda environment "
                                           "nor a source clone")


def test_a_terminal_that_hangs_up_stops_the_install_and_puts_the_previous_environment_back(
        index: _Server, tmp_path: Path) -> None:
    """The ssh connection drops for real: apply runs on a terminal (a pty it controls, the live progress drawn on
    it), the terminal goes away (the kernel sends SIGHUP; writing to it fails from then on)."""
    import pty
    import select

    _made_by_vresolve(tmp_path / "env")
    index.delay[TORCH] = [60.0]
    env = _env(tmp_path, index.url + "/simple/")
    argv = [sys.executable, "-m", "vresolve", "--matrix", str(TINY), "apply", *H200, "--yes", "--venv", "env",
            "--force"]
    pid, fd = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        os.chdir(tmp_path)
        os.execve(sys.executable, argv, env)
    try:
        deadline = time.monotonic() + 90
        while TORCH not in index.requests:
            assert time.monotonic() < deadline
            if select.select([fd], [], [], 0.1)[0]:
                os.read(fd, 65536)  # the live progress, drawn on the terminal
        assert (tmp_path / f".env.vresolve-previous-{pid}" / "mine").exists()
    finally:
        os.close(fd)  # the terminal hangs up
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 129
    assert (tmp_path / "env" / "mine").read_text() == "keep me" and not (tmp_path / "env" / "bin").exists()
    assert _left(tmp_path) == ["env"]
    _gone(tmp_path)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize(("state", "after", "line"), [
    ("ready", "new", "removed the previous {env}, which apply {pid} replaced and did not finish removing"),
    ("installing", "previous", "put back the previous {env}, which apply {pid} had put aside and did not finish"),
    (None, "previous", "put back the previous {env}, which apply {pid} had put aside and did not finish"),
])
def test_recover_after_a_killed_force_follows_the_markers(state: str | None, after: str, line: str,
                                                           tmp_path: Path) -> None:
    """Killed after the new environment was ready (only the removal of the previous one was cut short), while it
    was installing, or before it was made: the new one is kept, removed, or was never there."""
    pid, env = _dead_pid(), tmp_path / "env"
    aside = tmp_path / f".env.vresolve-previous-{pid}"
    _made_by_vresolve(aside)
    if state is not None:
        env.mkdir()
        (env / "pyvenv.cfg").write_text("new\n")
        write_marker(env, what="the new one", kind="wheel", state=state, pid=pid)
    assert recover([env]) == [line.format(env=env, pid=pid)]
    assert _left(tmp_path) == ["env"]
    assert (env / ("pyvenv.cfg" if after == "new" else "mine")).exists()
    assert (env / "mine").exists() == (after == "previous")


def test_recover_finishes_a_removal_only_with_the_marker(tmp_path: Path) -> None:
    pid, env = _dead_pid(), tmp_path / "env"
    half = tmp_path / f".env.vresolve-removing-{pid}"
    half.mkdir()
    (half / MARKER).write_text(json.dumps({"vresolve": "0.1.0", "pid": pid}))
    assert recover([env]) == [f"removed {half}, which apply {pid} was removing when it stopped"]
    assert _left(tmp_path) == []
    half.mkdir()
    (half / "data").write_text("x")  # no marker: not proven
    assert recover([env]) == [f"{half} is what apply {pid} was removing when it stopped; to remove it: rm -rf {half}"]
    assert (half / "data").exists()
