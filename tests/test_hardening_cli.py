"""Hostile input against the command line, the lock writer, the plan output cache, signals and doctor's probes.

Each test reproduces an attack with real processes, real files, real signals and a real package index on
loopback (never the internet), and states what must hold: a one-line error and exit 2 for bad input, nothing
written outside ``-o`` nor half of a lock, no stale cached answer, no temporary directory or uv process left
behind, and bounded memory.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vresolve import _entry
from vresolve.cli import main
from vresolve.errors import VresolveError
from vresolve.lock import FILE_NAMES, compile_lock, write_lock

from .conftest import ROOT, TINY
from .test_index import _Server, make_wheel
from .test_lock import _meta, _plan

SRC = str(ROOT / "src")
ALL = ["requirements", "pylock", "conda", "env"]
TARGET = ["--gpu", "H200", "--driver", "580.159.04", "--python", "3.12"]
NOWHERE = ["--index-url", "http://127.0.0.1:9/simple/", "--offline"]  # where a refused command must not get to


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(extra)
    return env


def vresolve(*argv: str, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    """``vresolve ARGV`` as a real process (its own interpreter, this checkout's code)."""
    return subprocess.run([sys.executable, "-m", "vresolve", *argv], capture_output=True, text=True,
                          env=env or _env(), timeout=300, **kw)  # type: ignore[call-overload, no-any-return]


def one_line_error(code: int, err: str, flag: str) -> None:
    """Exit 2, one short line on stderr that names the input, no traceback."""
    assert code == 2, err
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("vresolve: error: ") and flag in err, err
    assert len(err) < 400, err[:400]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    """The tiny index of tests/test_lock.py on loopback (vllm 0.33.0 -> torch 2.14.0, torchvision, tinydep)."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = _Server()
    for name, (version, requires) in {
            "vllm": ("0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
            "torch": ("2.14.0", ["tinydep"]), "torchvision": ("0.29.0", ["torch==2.14.0"]),
            "tinydep": ("1.0", [])}.items():
        fn = f"{name}-{version}-py3-none-any.whl"
        s.add_project_json(name, {fn: make_wheel(_meta(name, version, requires), name, version, padding=1000)})
    yield s
    s.close()


def _lock_argv(index: _Server, out: Path, *extra: str) -> list[str]:
    return ["lock", "--matrix", str(TINY), *TARGET, "--index-url", index.url + "/simple/", "-o", str(out), *extra]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(root.rglob("*"))}


# ---------------------------------------------------------------------------------------------- 4. numbers, sizes

HUGE = "9" * 5000  # past Python's 4300-digit limit of int(str)


@pytest.mark.parametrize(("argv", "flag"), [
    (["plan", "--gpu", "H100", "--python", "3." + HUGE], "--python"),
    (["plan", "--gpu", "H100", "--python", "3.12." + "1" * 100], "--python"),
    (["plan", "--gpu", "H100", "--driver", "5" * 5000], "--driver"),
    (["plan", "--gpu", "H100", "--glibc", "2." + HUGE], "--glibc"),
    (["plan", "--gpu", "H100", "--vllm", "==0." + HUGE], "--vllm"),
    (["plan", "--gpu", "H100", "--torch", ">=2." + HUGE], "--torch"),
    (["plan", "--gpu", "H100", "--variant", "cu" + HUGE], "--variant"),
    (["plan", "--gpu", "sm_" + HUGE], "--gpu"),
    (["plan", "--gpu", "H" * 100_000], "--gpu"),
    (["plan", "--gpu", "0xH100"], "--gpu"),
    (["plan", "--gpu", "H100*0"], "--gpu"),
    (["plan", "--gpu", "H100,0xA100"], "--gpu"),
    (["plan", "--gpu", "3000000xH100"], "--gpu"),
    (["plan", "--gpu", "1025xH100"], "--gpu"),
    (["plan", "--gpu", "600xH100,600xA100"], "--gpu"),
    (["plan", "--gpu", ",".join(["H100"] * 2000)], "--gpu"),
    (["plan", "--gpu", "\u00b2xH100"], "--gpu"),  # '²'.isdigit() is True, int('²') a ValueError
    (["plan", "--gpu", HUGE + "xH100"], "--gpu"),
    (["plan", "--gpu", "H100*" + HUGE], "--gpu"),
    (["lock", "--offline", "--gpu", "H100", "--timeout", "nan"], "--timeout"),
    (["lock", "--offline", "--gpu", "H100", "--timeout", "inf"], "--timeout"),
    (["lock", "--offline", "--gpu", "H100", "--timeout", "0"], "--timeout"),
    (["lock", "--offline", "--gpu", "H100", "--timeout", "-1"], "--timeout"),
    (["lock", "--offline", "--gpu", "H100", "--timeout", "1e300"], "--timeout"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "http://[::1"], "--index-url"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "ftp://example.invalid/simple/"], "--index-url"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "http:///simple/"], "--index-url"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "simple"], "--index-url"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "http://127.0.0.1:99999/simple/"], "--index-url"),
    (["lock", "--offline", "--gpu", "H100", "--index-url", "http://127.0.0.1/sim ple/"], "--index-url"),
    (["doctor", "--no-env", "--log", os.devnull, "--timeout", "nan"], "--timeout"),
    (["detect", "--timeout", "inf"], "--timeout"),
    (["matrix", "refresh", "--timeout", "nan", "--offline"], "--timeout"),
    (["matrix", "refresh", "--index-url", "http://[::1", "--offline"], "--index-url"),
    (["matrix", "refresh", "--workers", "1000000000", "--offline"], "--workers"),
    (["matrix", "refresh", "--since", "0." + HUGE, "--offline"], "--since"),
])
def test_bad_numbers_and_sizes_are_one_line_exit_2(argv: list[str], flag: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    one_line_error(code, err, flag)
    assert out == ""


def test_gpu_counts_up_to_the_maximum_still_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "1000xH100,24xA100", "--driver", "580.95.05", "--python", "3.12",
                        "--json"], capsys)
    assert code == 0
    assert json.loads(out)["host"]["gpus"] == [
        {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "count": 1000},
        {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0", "count": 24}]


def test_huge_numbers_are_short_one_line_errors_as_a_process() -> None:
    p = vresolve("plan", "--gpu", "H100", "--python", "3." + HUGE)
    one_line_error(p.returncode, p.stderr, "--python")


# ---------------------------------------------------------------------------------------------- 1. lock --profiles

@pytest.mark.parametrize("name", ["../../x", "<absolute>", "a/b", "..", ".", ".hidden", "a b",
                                  "-o", "x" * 300, "a\\b"])
def test_profile_names_cannot_leave_the_output_directory(name: str, index: _Server, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base"
    out = base / "a" / "b"
    out.mkdir(parents=True)
    name = str(tmp_path / "absolute") if name == "<absolute>" else name
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(json.dumps({name: " ".join(TARGET)}))
    before = _tree(tmp_path)
    code, _, err = run(["lock", "--matrix", str(TINY), "--index-url", index.url + "/simple/",
                        "--profiles", str(profiles), "-o", str(out)], capsys)
    one_line_error(code, err, "--profiles")
    assert _tree(tmp_path) == before
    assert index.requests == []  # refused before uv ran


@pytest.mark.parametrize("flags", ['--gpu "H200', "--gpu 'H200", "--gpu H200 \\"])
def test_profile_with_an_unbalanced_quote_is_one_line(flags: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(json.dumps({"h200": flags}))
    code, _, err = run(["lock", "--matrix", str(TINY), "--profiles", str(profiles), "-o", str(tmp_path), *NOWHERE],
                       capsys)
    one_line_error(code, err, "h200")


@pytest.mark.parametrize("flags", ["-h", "--help", "--he", "--gpu H200 -h", "-vh", "-qh", "--version"])
def test_profile_cannot_ask_for_help_or_version(flags: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(json.dumps({"h200": flags}))
    code, out, err = run(["lock", "--matrix", str(TINY), "--profiles", str(profiles), "-o", str(tmp_path),
                          *NOWHERE], capsys)
    one_line_error(code, err, "h200")
    assert out == ""


@pytest.mark.parametrize("doc", ["{}", "[]", "h200: [--gpu, H200]", "12: --gpu H200", "null: --gpu H200"])
def test_profiles_file_of_the_wrong_shape_is_one_line(doc: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(doc)
    code, _, err = run(["lock", "--matrix", str(TINY), "--profiles", str(profiles), "-o", str(tmp_path), *NOWHERE],
                       capsys)
    one_line_error(code, err, "--profiles")


def test_profiles_with_good_names_still_lock(index: _Server, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("h200-driver580.py3_12: " + " ".join(TARGET) + "\n")
    code, _, err = run(["lock", "--matrix", str(TINY), "--index-url", index.url + "/simple/", "--profiles",
                        str(profiles), "-o", str(tmp_path / "out"), "--format", "requirements"], capsys)
    assert code == 0, err
    assert (tmp_path / "out" / "h200-driver580.py3_12" / "requirements.txt").is_file()


# ---------------------------------------------------------------------------------------------- 2. writing the lock

def test_output_that_is_a_file_is_refused_before_uv_runs(index: _Server, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a-file"
    target.write_text("mine\n")
    for out in (target, target / "sub"):
        code, _, err = run(_lock_argv(index, out), capsys)
        one_line_error(code, err, str(target))
    assert target.read_text() == "mine\n" and index.requests == []


def test_unusable_cache_directory_is_never_an_error(index: _Server, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "cache-is-a-file"
    a_file.write_text("")
    for cache in (a_file, a_file / "below-a-file", tmp_path / ("x" * 300)):
        monkeypatch.setenv("VRESOLVE_CACHE_DIR", str(cache))
        code, _, err = run(["plan", *TARGET, "--json"], capsys)
        assert code == 0, err
        code, _, err = run(_lock_argv(index, tmp_path / "out", "--format", "requirements"), capsys)
        assert code == 0, err
    assert _entry.main(["plan", *TARGET, "--json"]) == 0


def _write_with_file_size_limit(limit: int, fn: Callable[[], object]) -> object:
    """Run ``fn`` with RLIMIT_FSIZE at ``limit`` bytes (SIGXFSZ ignored: writes past it fail with EFBIG)."""
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old_limit[1]))
    try:
        return fn()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


def test_full_disk_writes_no_file_of_the_lock(index: _Server, tmp_path: Path) -> None:
    """The largest file (pylock.toml) cannot be written: every old file stays as it was, no temporary file left."""
    m, plan = _plan()
    lock = compile_lock(plan, m, index_url=index.url + "/simple/")
    sizes = {f: len(lock.files[f].encode()) for f in ALL}
    out = tmp_path / "out"
    out.mkdir()
    for f in ALL:
        (out / FILE_NAMES[f]).write_text(f"# vresolve-lock: {{}}\nold {f}\n")  # an earlier lock: may be replaced
    before = _tree(out)
    limit = max(sizes.values()) - 1
    assert sum(s <= limit for s in sizes.values()) == 3  # three of the four would fit
    with pytest.raises((OSError, VresolveError), match="File too large"):
        _write_with_file_size_limit(limit, lambda: write_lock(lock, out, ALL))
    assert _tree(out) == before
    written = write_lock(lock, out, ALL)  # room again: all four
    assert {p.name: p.read_text() for p in written} == {FILE_NAMES[f]: lock.files[f] for f in ALL}


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (needs root and mount; skipped where the kernel refuses)."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_lock_on_a_full_tmpfs_writes_no_file(index: _Server, small_tmpfs: Path) -> None:
    """Room for three of the four files (one page each): none is written, one line, exit 2."""
    fd = os.open(small_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:  # fill the disk
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    os.ftruncate(fd, os.fstat(fd).st_size - 3 * 4096)  # three free pages
    os.close(fd)
    out = small_tmpfs / "lock"
    p = vresolve(*_lock_argv(index, out, "-q"), env=_env(UV_CACHE_DIR=os.environ["UV_CACHE_DIR"]))
    one_line_error(p.returncode, p.stderr, str(out))
    assert sorted(e.name for e in small_tmpfs.iterdir()) == ["filler"]


# ---------------------------------------------------------------------------------------------- 3. plan output cache

def _cache_files() -> list[Path]:
    return sorted(Path(os.environ["VRESOLVE_CACHE_DIR"]).glob("plan-*.out"))


@pytest.mark.parametrize("argv", [
    ["--gpu", "H100", "--gpu", "auto"],
    ["--gpu=H100", "--gpu=auto"],
    ["--gpu", "H100", "--gpu=auto"],
    ["--gpu", "H100", "--gp", "auto"],
    ["--gpu", "H100", "--gp=AUTO"],
])
def test_plan_cache_uses_the_gpu_argparse_uses(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse takes the last --gpu (and its abbreviations): the probing plan is never answered from the named GPU's
    entry; what is kept is kept under the probed machine's key only (the plan-output cache keyed after detection)."""
    for _ in range(2):
        code = _entry.main(["plan", *argv, "--driver", "580.95.05", "--python", "3.12", "--json"])
        out = capsys.readouterr().out
        assert code in (0, 1, 2)
        if code != 2:  # an abbreviation argparse refuses is fine too
            assert json.loads(out)["host"]["detected_by"] != "given on the command line"
    assert all(b"\nmachine=" in f.read_bytes() for f in _cache_files())


def test_plan_cache_last_gpu_wins_when_it_names_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--gpu", "auto", "--gpu", "A100", "--driver", "580.95.05", "--python", "3.12", "--json"]
    assert _entry.main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["host"]["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert len(_cache_files()) == 1
    assert _entry.main(argv) == 0 and json.loads(capsys.readouterr().out) == first


def test_plan_cache_never_serves_a_corrupted_answer(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", *TARGET, "--json"]
    assert _entry.main(argv) == 0
    fresh = capsys.readouterr().out
    (entry,) = _cache_files()
    data = bytearray(entry.read_bytes())
    i = len(data) - len(fresh) // 2  # a byte in the middle of the cached stdout
    data[i] ^= 0x01
    entry.write_bytes(bytes(data))
    assert _entry.main(argv) == 0
    assert capsys.readouterr().out == fresh
    for cut in (len(data) - 10, len(data) // 2, 3):  # truncated entries too
        entry.write_bytes(bytes(data[:cut]))
        assert _entry.main(argv) == 0
        assert capsys.readouterr().out == fresh


def test_plan_cache_sees_an_edit_that_keeps_size_and_mtime(tiny_copy: Callable[..., Path],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_copy()
    argv = ["plan", "--gpu", "A100", "--driver", "580.159.04", "--python", "3.12", "--json", "--matrix", str(path)]
    assert _entry.main(argv) == 0
    capsys.readouterr()
    f = path / "vllm.yaml"
    st = f.stat()
    text = f.read_bytes()
    edited = text.replace(b'min_compute_capability: "7.5"', b'min_compute_capability: "9.0"')
    assert len(edited) == len(text) and edited != text
    with open(f, "r+b") as fh:  # in place: the same inode, size and (restored) mtime
        fh.write(edited)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns, f.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    assert _entry.main(argv) == 1  # A100 (8.0) is now below vLLM's minimum: no stack
    assert "no-compatible-stack" in capsys.readouterr().out


def test_plan_cache_follows_the_last_matrix_flag(tiny_copy: Callable[..., Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_copy()
    argv = ["plan", "--gpu", "A100", "--driver", "580.159.04", "--python", "3.12", "--json",
            "--matrix", str(TINY), "--matrix", str(path)]
    assert _entry.main(argv) == 0
    capsys.readouterr()
    f = path / "vllm.yaml"
    f.write_text(f.read_text().replace('min_compute_capability: "7.5"', 'min_compute_capability: "9.0"'))
    assert _entry.main(argv) == 1


# ---------------------------------------------------------------------------------------------- 5, 6. uv and signals

def _children(pid: int) -> list[int]:
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                kids.append(int(d))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_signal_stops_uv_and_removes_the_temporary_directory(sig: int, code: int, index: _Server,
                                                             tmp_path: Path) -> None:
    """uv waits on an index that answers slowly; a signal sent to vresolve alone stops both, and cleans up."""
    index.delay["/simple/vllm/"] = [120.0]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = _env(TMPDIR=str(tmp), UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    proc = subprocess.Popen([sys.executable, "-m", "vresolve", *_lock_argv(index, tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    uv: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while "/simple/vllm/" not in index.requests:  # uv is running, and waiting on the index
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        uv = _children(proc.pid)
        assert uv and [e.name for e in tmp.iterdir() if e.name.startswith("vresolve-lock-")]
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert "Traceback" not in err
        assert not [e.name for e in tmp.iterdir() if e.name.startswith("vresolve-lock-")]
        assert not [pid for pid in uv if _alive(pid)]
        assert not (tmp_path / "out").exists()
    finally:
        for pid in [proc.pid, *uv]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def test_uv_dies_with_a_killed_vresolve(index: _Server, tmp_path: Path) -> None:
    """SIGKILL reaches no handler: uv is stopped by the kernel's parent-death signal instead."""
    index.delay["/simple/vllm/"] = [120.0]
    tmp = tmp_path / "tmp"  # a SIGKILLed vresolve cannot remove its temporary directory: keep it in the test's own
    tmp.mkdir()
    env = _env(TMPDIR=str(tmp), UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    proc = subprocess.Popen([sys.executable, "-m", "vresolve", *_lock_argv(index, tmp_path / "out")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    uv: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while "/simple/vllm/" not in index.requests:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        uv = _children(proc.pid)
        assert uv
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while [pid for pid in uv if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in uv if _alive(pid)]
    finally:
        for pid in [proc.pid, *uv]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def test_uv_pip_compile_is_run_once(index: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """uv retries its own requests (UV_HTTP_RETRIES): vresolve does not run it again on a network error."""
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    index.fail_first["/simple/vllm/"] = 100  # 503 on every request
    code, _, err = run(_lock_argv(index, tmp_path / "out"), capsys)  # (stderr has the server thread's too)
    assert code == 1 and "vresolve: error: uv pip compile could not read the package index: " in err
    assert index.requests.count("/simple/vllm/") == 1, index.requests
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- 7. doctor

def _fake_python(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "python"
    exe.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    exe.chmod(0o755)
    return exe


def _max_rss_mb_of(argv: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    """(exit code, peak RSS in MB of ``argv``'s process, its stdout) measured by a fresh parent."""
    probe = ("import json, resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "print(json.dumps([p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,"
             " p.stdout]))\n")
    p = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=600)
    code, mb, out = json.loads(p.stdout)
    return code, mb, out


def test_doctor_bounds_what_the_probe_prints(tmp_path: Path) -> None:
    exe = _fake_python(tmp_path, "head -c 300000000 /dev/zero | tr '\\0' a\n")
    code, mb, out = _max_rss_mb_of([sys.executable, "-m", "vresolve", "doctor", "--interpreter", str(exe), "--json"],
                                   _env())
    assert code in (0, 1)
    env = json.loads(out)["environment"]
    assert "MiB" in env["error"], env["error"]
    assert mb < 200, mb


@pytest.mark.parametrize("answer", [
    "[1, 2]", '"text"', "null", '{"modules": 5}', '{"modules": [1]}', '{"modules": [{"name": 5}]}',
    '{"modules": [{"origin": "x"}]}', '{"modules": [{"name": "torch", "error": ["x"]}]}',
    '{"sys_path": "abc"}', '{"sys_path": [1]}', '{"requires": {"vllm": 5}}', '{"requires": [1]}',
    '{"requires": {"vllm": [1]}}', '{"torch": []}', '{"torch": {"arch_list": 5}}',
    '{"torch": {"version": 2.1}}', '{"torch": {"available": "yes"}}', '{"vllm_extensions": {"a": 1}}',
    "[" * 200_000 + "]" * 200_000, '{"modules": [' + "1" * 5000 + "]}",
])
def test_doctor_survives_a_hostile_probe_answer(answer: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "answer").write_text("\n@@vresolve@@" + answer + "\n")
    exe = _fake_python(tmp_path, f"cat '{tmp_path / 'answer'}'\n")
    code, out, err = run(["doctor", "--interpreter", str(exe), "--json"], capsys)
    assert code in (0, 1) and "Traceback" not in err
    error = json.loads(out)["environment"]["error"]
    assert error and "malformed" in error and "\n" not in error and len(error) < 300, error


@pytest.mark.parametrize("header", [
    "[1, 2]", '"x"', "5", "{}", '{"machine": []}', '{"stack": "x", "machine": {}}',
    '{"machine": {"min_driver": 5}, "stack": {}}', '{"machine": {"min_driver": "garbage"}, "stack": {}}',
    '{"machine": {"gpus": [1]}, "stack": {}}', '{"machine": {"gpus": {"H100": 9.0}}, "stack": {}}',
    '{"machine": {"python": 3.12}, "stack": {}}', '{"machine": {"platform": ["linux"]}, "stack": {}}',
    '{"machine": {"glibc": {}}, "stack": {}}', '{"machine": {}, "stack": {"torch": 2}}',
    '{"machine": {"min_driver": "' + "5" * 5000 + '"}, "stack": {}}',
])
def test_doctor_lock_with_a_malformed_header_is_one_line(header: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "requirements.txt"
    f.write_text(f"# vresolve-lock: {header}\ntorch==2.14.0\n")
    code, _, err = run(["doctor", "--no-env", "--lock", str(f)], capsys)
    one_line_error(code, err, "--lock")


def test_doctor_lock_reads_a_bounded_amount(tmp_path: Path) -> None:
    """``--lock /dev/zero`` under a 1 GiB address-space limit: a one-line error, not a MemoryError."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run([sys.executable, "-m", "vresolve", "doctor", "--no-env", "--lock", "/dev/zero"],
                       capture_output=True, text=True, env=_env(), timeout=300, preexec_fn=limit)
    one_line_error(p.returncode, p.stderr, "--lock")


def test_doctor_probe_past_its_timeout_is_stopped_with_its_children(tmp_path: Path) -> None:
    """A probe that hangs, holding its stdout open in a child: stopped at the timeout, the child too."""
    from vresolve.detect import probe_environment

    pidfile = tmp_path / "child"
    exe = _fake_python(tmp_path, f"sleep 600 &\necho $! > '{pidfile}'\nwait\n")
    env = probe_environment(str(exe), timeout=2)
    assert env.error == "importing the stack timed out after 2 s"
    child = int(pidfile.read_text())
    try:  # SIGKILL has been sent to the whole group; its delivery to the orphan is the kernel's, not instant
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_doctor_probe_that_dies_says_why_in_one_line(tmp_path: Path) -> None:
    from vresolve.detect import probe_environment

    exe = _fake_python(tmp_path, "echo 'first line' >&2\necho 'ImportError: libfoo.so: cannot open' >&2\nexit 3\n")
    env = probe_environment(str(exe))
    assert env.error == "the probe died (exit code 3): ImportError: libfoo.so: cannot open"
    env = probe_environment(str(tmp_path / "missing"))
    assert env.error and "could not run" in env.error


# ---------------------------------------------------------------------------------------------- flags, as argparse

def test_cache_reads_gpu_and_matrix_as_argparse_does() -> None:
    """For any plan argv argparse accepts, the cache's reading of --gpu and --matrix is argparse's."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from vresolve._cache import _last_value
    from vresolve.cli import build_parser
    from vresolve.errors import UsageError

    tokens = st.sampled_from(["--gpu", "--gp", "--g", "--gpu=auto", "--gp=H100", "--gpu=", "auto", "AUTO ", "H100",
                              "none", "--matrix", "--mat", "--m=/m2", "/m1", "--json", "--driver", "580.95.05",
                              "--glibc", "2.28", "--gl", "-v", "--", "-q", "--venv", "--gpu-x"])
    parser = build_parser("plan")

    @settings(max_examples=400, deadline=None)
    @given(st.lists(tokens, max_size=8))
    def check(argv: list[str]) -> None:
        try:
            args = parser.parse_args(["plan", *argv])
        except UsageError:
            return
        gpu = _last_value(argv, "--gpu")
        assert (gpu if gpu is not None else "auto") == args.gpu
        assert _last_value(argv, "--matrix") == getattr(args, "matrix", None)

    check()


def test_read_only_cache_directory_is_never_an_error(small_tmpfs: Path, index: _Server, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    monkeypatch.setenv("VRESOLVE_CACHE_DIR", str(small_tmpfs / "cache"))
    assert _entry.main(["plan", *TARGET, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stack"]["vllm"] == "0.33.0"
    code, _, err = run(_lock_argv(index, tmp_path / "out", "-q"), capsys)
    assert code == 0, err


def test_plan_flags_fuzzed_never_give_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """Any value of any plan flag: a plan (0), no stack (1) or a one-line error (2); never an exception."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    values = st.one_of(st.text(max_size=40), st.from_regex(r"[0-9.]{1,12}", fullmatch=True),
                       st.from_regex(r"[0-9]{4300,4400}", fullmatch=True).map(lambda d: "3." + d),
                       st.sampled_from(["H100", "0xH100", "sm_90", "nan", "-1", "cu128", "==0.10.1", ">=9999"]))
    flags = st.sampled_from(["--gpu", "--driver", "--python", "--glibc", "--vllm", "--torch", "--variant",
                             "--platform", "--installer", "--driver-policy", "--source-build"])

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(flags, values), min_size=1, max_size=3))
    def check(pairs: list[tuple[str, str]]) -> None:
        argv = ["plan", "--gpu", "H100", "--json"] + [f"{f}={v}" for f, v in pairs]
        code = main(argv)
        out, err = capsys.readouterr()
        assert code in (0, 1, 2), (argv, err)
        if code == 2:
            assert "error" in json.loads(out) and len(out) < 2000

    check()


@pytest.mark.parametrize("argv", [["doctor", "--no-env", "--log", "a\0b"], ["plan", "--gpu", "H100", "--venv", "x\0"],
                                  ["lock", "--gpu", "H100", "--profiles", "\0"], ["detect", "--nvidia-smi", ""],
                                  ["plan", "--gpu", "H100", "--src-dir", "x" * 5000]])
def test_path_flags_that_no_system_takes(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the flag fuzzer: a NUL byte in a path flag was a ValueError traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "expected a path" in err and len(err) < 1000, err
