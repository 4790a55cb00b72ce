"""``plan --gpu auto`` from the plan output cache, keyed after detection (issue 28: on a GPU machine the plan was
most of the time after the probe). The machine is probed on every run; the answer kept for the same arguments on a
machine with the same facts comes back without the matrix, the resolver, the plan or the renderers being imported.
Another driver or another GPU is another key. Never kept: ``--keep-torch`` (it reads the installed environment), a
broken driver (exit 3), a GPU whose compute capability only the matrix knows.

Real processes on a fake machine: an ``nvidia-smi`` script first on PATH answering from the H200's captured output,
no NVML, an empty probe root (as tests/test_detect.py's machines)."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

from .conftest import ROOT
from .test_broken_driver import COULD_NOT_COMMUNICATE, smi_saying, tree
from .test_detect import H200, fake_smi

# the modules a kept answer must not need: None in sys.modules makes their import fail
_BLOCKED = ("import sys\n"
            "for m in ('vresolve.matrix', 'vresolve.resolve', 'vresolve.plan', 'vresolve.render'):\n"
            "    sys.modules[m] = None\n"
            "from vresolve._entry import main\n"
            "sys.exit(main(sys.argv[1:]))\n")

JSON = ["plan", "--gpu", "auto", "--json"]
HUMAN = ["plan", "--gpu", "auto"]


def _machine(tmp_path: Path, *, gpu: str = "NVIDIA H200, GPU-283bb333-7717-fb40-df5e-3812f333d4f7, 9.0",
             driver: str = "580.159.04", cuda: str = "13.0", no_compute_cap: bool = False) -> dict[str, str]:
    """The environment of a machine with one GPU (``name, uuid, capability``) and this driver: its nvidia-smi
    answers as the H200's did, with these facts in its place."""
    tmp_path.mkdir(exist_ok=True)
    query = tmp_path / "query.csv"
    name, uuid, cc = (x.strip() for x in gpu.split(","))
    fields = [name, uuid] + ([] if no_compute_cap else [cc]) + [driver, "143771 MiB", "00000000:00:06.0"]
    query.write_text("0, " + ", ".join(fields) + "\n")
    banner = tmp_path / "banner.txt"
    banner.write_text((H200 / "nvidia-smi.txt").read_text().replace("580.159.04", driver)
                      .replace("CUDA Version: 13.0", f"CUDA Version: {cuda}"))
    bindir = fake_smi(tmp_path, query=str(query), banner=str(banner), no_compute_cap=no_compute_cap)
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return _env(tmp_path, bindir, root)


def _env(tmp_path: Path, bindir: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_") and k not in ("COLUMNS", "LINES")}
    env.update(PATH=f"{bindir}:/usr/bin:/bin", VRESOLVE_NO_NVML="1", VRESOLVE_PROBE_ROOT=str(root),
               VRESOLVE_CACHE_DIR=str(tmp_path / "cache"), NO_COLOR="1", PYTHONPATH=str(ROOT / "src"))
    return env


def _run(env: dict[str, str], argv: list[str], *, cache: bool = True, blocked: bool = False
         ) -> subprocess.CompletedProcess[bytes]:
    env = dict(env)
    if not cache:
        env["VRESOLVE_PLAN_CACHE"] = "0"
    cmd = [sys.executable, "-c", _BLOCKED] if blocked else [sys.executable, "-m", "vresolve"]
    return subprocess.run([*cmd, *argv], env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def _kept(env: dict[str, str]) -> list[Path]:
    cache = Path(env["VRESOLVE_CACHE_DIR"])
    return sorted(cache.glob("plan-*.out")) if cache.is_dir() else []


def _same(a: subprocess.CompletedProcess[bytes], b: subprocess.CompletedProcess[bytes]) -> bool:
    return (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def test_a_repeated_auto_plan_is_the_kept_answer(tmp_path: Path) -> None:
    env = _machine(tmp_path)
    for argv in (JSON, HUMAN):
        first = _run(env, argv)
        assert first.returncode == 0, first.stderr
        computed = _run(env, argv, cache=False)
        assert _same(first, computed)
        # without the matrix, the resolver, the plan and the renderers: only a kept answer can be printed
        assert _run(env, argv, cache=False, blocked=True).returncode != 0  # (else this test could not fail)
        again = _run(env, argv, blocked=True)
        assert _same(again, computed), again.stderr
    kept = _kept(env)
    assert len(kept) == 2  # one per arguments
    for f in kept:
        data = f.read_bytes()
        assert b"plan-auto-output/1" in data and b"NVIDIA H200" in data and b"580.159.04" in data
        assert f.stat().st_mode & 0o777 == 0o600


def test_another_driver_or_gpu_is_another_plan(tmp_path: Path) -> None:
    env = _machine(tmp_path / "h200")
    env["VRESOLVE_CACHE_DIR"] = str(tmp_path / "cache")
    h200 = _run(env, JSON)
    assert h200.returncode == 0, h200.stderr
    for facts in ({"driver": "570.133.20", "cuda": "12.8"},
                  {"gpu": "NVIDIA A100-SXM4-80GB, GPU-0e1a7c3a-1f61-4a1c-9e0b-7a2c3d4e5f60, 8.0"}):
        other = tmp_path / "-".join(facts)
        env2 = {**_machine(other, **facts), "VRESOLVE_CACHE_DIR": env["VRESOLVE_CACHE_DIR"]}
        got = _run(env2, JSON)
        computed = _run(env2, JSON, cache=False)
        assert got.returncode == 0, got.stderr
        assert _same(got, computed) and got.stdout != h200.stdout
        assert _same(_run(env2, JSON, blocked=True), computed)  # and it is kept in turn
    assert len(_kept(env)) == 3
    assert _same(_run(env, JSON, blocked=True), h200)  # the first machine's answer is still its own


def test_keep_torch_is_never_kept(tmp_path: Path) -> None:
    env = _machine(tmp_path)
    argv = [*JSON, "--keep-torch"]
    first = _run(env, argv)
    assert first.returncode in (0, 1), first.stderr
    assert _kept(env) == []
    assert _same(_run(env, argv), first)


def test_a_broken_driver_is_never_kept(tmp_path: Path) -> None:
    bindir = smi_saying(tmp_path, COULD_NOT_COMMUNICATE, 9)
    env = _env(tmp_path, bindir, tree(tmp_path))
    first = _run(env, JSON)
    assert first.returncode == 3, first.stderr
    assert _kept(env) == []
    assert _same(_run(env, JSON), first)


def test_a_capability_from_the_matrix_is_never_kept(tmp_path: Path) -> None:
    env = _machine(tmp_path, no_compute_cap=True)  # a driver before ~510: nvidia-smi names no capability
    first = _run(env, JSON)
    assert first.returncode == 0, first.stderr
    assert b'"cc_source": "matrix"' in _run(env, ["detect", "--json"]).stdout  # (else this test could not fail)
    assert _kept(env) == []


def _rewrite(f: Path, key: bytes = b"", mark: bytes = b"") -> None:
    """Rewrite a kept answer: ``key`` in place of the kept key's machine facts' driver, ``mark`` at the head of its
    output, the checksum made to match."""
    head, _, rest = f.read_bytes().partition(b"\n")
    code, key_len, out_len, _ = (int(x, 16) for x in head.split(b" "))
    k, out = rest[:key_len], mark + rest[key_len:key_len + out_len]
    if key:
        assert b"580.159.04" in k.partition(b"machine=")[2]
        k = k.replace(b"580.159.04", key)
    rest = k + out + rest[key_len + out_len:]
    f.write_bytes(f"{code:x} {len(k):x} {len(out):x} {zlib.crc32(rest):x}\n".encode() + rest)


def test_the_cache_safety_rules_hold(tmp_path: Path) -> None:
    env = _machine(tmp_path)
    computed = _run(env, JSON)
    (kept,) = _kept(env)
    _rewrite(kept, mark=b"MARK\n")
    assert _run(env, JSON).stdout.startswith(b"MARK\n")  # this user's own cache: what it holds is the answer
    cache = Path(env["VRESOLVE_CACHE_DIR"])
    cache.chmod(0o770)  # a directory its group can write: not read, said once
    shared = _run(env, JSON)
    assert shared.stdout == computed.stdout and b"not used" in shared.stderr
    cache.chmod(0o700)
    kept.chmod(0o660)  # a file its group can write
    shared = _run(env, JSON)
    assert shared.stdout == computed.stdout and b"not used" in shared.stderr
    kept.chmod(0o600)
    assert _run(env, JSON).stdout.startswith(b"MARK\n")
    _rewrite(kept, key=b"580.159.05")  # kept for another driver (its checksum right): a miss
    assert _same(_run(env, JSON), computed)
