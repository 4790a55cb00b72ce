"""The plan output cache replays an answer only to a terminal of the same size: rich lays the human plan's tables
out for the terminal's width, so a plan first shown in 60 columns and then asked for in 150 is laid out again
(before, the 60-column layout came back from the cache). ``vresolve --help`` is kept the same way (argparse wraps
it for the terminal). Real processes on a real pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import zlib
from pathlib import Path

from .conftest import ROOT

ARGV = ["plan", "--gpu", "NVIDIA H200", "--driver", "580.159.04"]


def _on_terminal(columns: int, cache: Path, cwd: Path, *, plan_cache: bool = True, argv: list[str] = ARGV) -> bytes:
    """What ``vresolve ARGV`` (a plan by default) writes to a terminal of ``columns`` columns (stdin, stdout and stderr on it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_") and k not in ("COLUMNS", "LINES")}
    env.update(VRESOLVE_CACHE_DIR=str(cache), NO_COLOR="1", PYTHONPATH=str(ROOT / "src"))
    if not plan_cache:
        env["VRESOLVE_PLAN_CACHE"] = "0"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    try:
        proc = subprocess.Popen([sys.executable, "-m", "vresolve", *argv], cwd=cwd, env=env, stdin=slave,
                                stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        assert proc.wait(timeout=120) == 0
    return b"".join(chunks)


def test_cached_plan_is_laid_out_for_the_terminal_it_is_shown_in(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    narrow = _on_terminal(60, cache, tmp_path)  # computed, and kept in the cache
    assert any(f.name.startswith("plan-") for f in cache.iterdir())
    assert _on_terminal(60, cache, tmp_path) == narrow  # the same terminal: the kept answer
    wide = _on_terminal(150, cache, tmp_path)
    computed = _on_terminal(150, cache, tmp_path, plan_cache=False)
    assert computed != narrow  # the width matters to this plan's layout (else this test could not fail)
    assert wide == computed


def test_help_is_kept_and_laid_out_for_the_terminal(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    narrow = _on_terminal(60, cache, tmp_path, argv=["--help"])
    assert b"usage: vresolve" in narrow
    kept = [f for f in cache.iterdir() if f.name.startswith("plan-")]
    assert len(kept) == 1 and b"usage: vresolve" in kept[0].read_bytes()
    assert _on_terminal(60, cache, tmp_path, argv=["--help"]) == narrow  # exit status 0, as argparse's
    # read back from the cache, not computed again: a marked answer (its checksum made to match) comes back
    head, _, rest = kept[0].read_bytes().partition(b"\n")
    code, key_len, out_len, _ = (int(x, 16) for x in head.split(b" "))
    out = rest[key_len:key_len + out_len] + b"MARK\n"
    rest = rest[:key_len] + out + rest[key_len + out_len:]
    kept[0].write_bytes(f"{code:x} {key_len:x} {len(out):x} {zlib.crc32(rest):x}\n".encode() + rest)
    assert _on_terminal(60, cache, tmp_path, argv=["--help"]).endswith(b"MARK\r\n")
    wide = _on_terminal(150, cache, tmp_path, argv=["--help"])
    assert wide == _on_terminal(150, cache, tmp_path, plan_cache=False, argv=["--help"])
    assert wide != narrow
