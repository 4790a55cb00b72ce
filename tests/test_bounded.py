"""Every reader bounded in bytes (and in time for streams), every per-host check linear, and ``fleet detect --k8s``
writing only inventories that ``fleet plan`` reads back (issue 26: unbounded reads and hangs)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from vresolve._bounded import InputLimit, read_bounded
from vresolve.cli import main

CLI = [sys.executable, "-m", "vresolve"]
ENV = {**os.environ, "VRESOLVE_NO_NVML": "1"}


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def cli(argv: list[str], stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """A whole vresolve process, with a generous timeout: a hang fails the test instead of stalling the suite."""
    return subprocess.run([*CLI, *argv], stdin=stdin, capture_output=True, text=True, env=ENV, timeout=120,
                          check=False)


def one_line_error(p: subprocess.CompletedProcess[str] | tuple[int, str, str], *words: str) -> str:
    code, err = (p.returncode, p.stderr) if isinstance(p, subprocess.CompletedProcess) else (p[0], p[2])
    assert code == 2, err
    assert "Traceback" not in err
    line = err.strip()
    assert "\n" not in line, err
    for w in words:
        assert w in line, line
    return line


# --- doctor --log --------------------------------------------------------------------------------------------------

def test_doctor_log_dev_zero_ends_with_one_line() -> None:
    p = cli(["doctor", "--no-env", "--log", "/dev/zero"])
    one_line_error(p, "--log", "/dev/zero", "binary")


def test_doctor_log_endless_text_stream_stops_at_the_cap() -> None:
    """An endless stream of text (no NUL byte) stops at the byte cap, with a one-line error naming the limit."""
    gen = subprocess.Popen([sys.executable, "-c", "import sys\nb = (b'x' * 65535 + b'\\n') * 16\n"
                            "w = sys.stdout.buffer.write\ntry:\n    while True: w(b)\nexcept BrokenPipeError: pass"],
                           stdout=subprocess.PIPE)
    try:
        p = cli(["doctor", "--no-env", "--log", "-"], stdin=gen.stdout)
    finally:
        assert gen.stdout is not None
        gen.stdout.close()
        gen.kill()
        gen.wait()
    one_line_error(p, "--log", "'-'", "1024 MiB")


def test_doctor_log_with_some_nul_bytes_is_still_read(tmp_path: Path) -> None:
    """A real log with a few NUL bytes (a truncated write) is still a log: only mostly-NUL input is refused."""
    log = tmp_path / "x.log"
    line = b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    log.write_bytes(b"\0" * 100 + line * 2000)
    p = cli(["doctor", "--no-env", "--log", str(log)])
    assert p.returncode != 2, p.stderr
    assert "binary" not in p.stderr


# --- fleet inputs --------------------------------------------------------------------------------------------------

def test_fleet_plan_dev_zero_is_refused_at_the_cap() -> None:
    one_line_error(cli(["fleet", "plan", "/dev/zero"]), "INVENTORY", "/dev/zero", "256 MiB")


def test_fleet_detect_k8s_stdin_is_bounded() -> None:
    with open("/dev/zero", "rb") as zero:
        p = cli(["fleet", "detect", "--k8s", "-", "--python", "3.12"], stdin=zero)
    one_line_error(p, "--k8s", "'-'", "256 MiB")


def test_a_stream_that_never_ends_is_bounded_in_time() -> None:
    """A pipe whose writer neither writes nor closes: the read gives up after its timeout."""
    r, w = os.pipe()
    try:
        with os.fdopen(r, "rb", closefd=False) as fh, pytest.raises(InputLimit, match="no end after 0.5 s"):
            read_bounded(fh, 1 << 20, 0.5)
    finally:
        os.close(r)
        os.close(w)


def test_a_fifo_without_a_writer_is_bounded_in_time(tmp_path: Path) -> None:
    from vresolve._bounded import read_path_bounded

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputLimit, match="no end"):
        read_path_bounded(str(fifo), 1 << 20, 0.5)


def _detect_answer(monkeypatch: pytest.MonkeyPatch) -> dict:
    for k, v in {"VRESOLVE_GPUS": "H100", "VRESOLVE_DRIVER": "580.65.06", "VRESOLVE_PLATFORM": "linux-x86_64",
                 "VRESOLVE_PYTHON": "3.12", "VRESOLVE_NO_NVML": "1"}.items():
        monkeypatch.setenv(k, v)
    code, out, _ = run(["detect", "--json"])
    assert code == 0
    for k in ("VRESOLVE_GPUS", "VRESOLVE_DRIVER", "VRESOLVE_PLATFORM"):
        monkeypatch.delenv(k)
    return json.loads(out)["host"]


def test_a_name_twice_in_a_large_inventory_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """30,000 hosts with the last name repeated: the check names it (one pass over the names)."""
    host = _detect_answer(monkeypatch)
    items = [{"name": f"node-{i:05d}", "host": host, "source": "file"} for i in range(30_000)]
    items.append({"name": "node-29999", "host": host, "source": "file"})
    inv = tmp_path / "inv.json"
    inv.write_text(json.dumps({"schema": "vresolve.fleet/1", "inventory": items, "failed": []}))
    one_line_error(run(["fleet", "plan", str(inv)]), "'node-29999' is named twice")


def test_twice_named() -> None:
    from vresolve.cli.fleet import twice_named

    assert twice_named(["a", "b", "c"]) is None
    assert twice_named(["a", "b", "a", "b"]) == "a"
    assert twice_named(iter(())) is None


# --- fleet detect --k8s agrees with fleet plan ---------------------------------------------------------------------

def _node(name: str, **labels: str) -> dict:
    base = {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8", "nvidia.com/cuda.driver-version.full": "580.65.06"}
    return {"kind": "Node", "metadata": {"name": name, "labels": {**base, **labels}}}


def _detect_k8s(tmp_path: Path, nodes: list[dict]) -> tuple[dict, Path]:
    src, out = tmp_path / "nodes.json", tmp_path / "inv.json"
    src.write_text(json.dumps({"items": nodes}))
    code, _, err = run(["fleet", "detect", "--k8s", str(src), "--python", "3.12", "-o", str(out)])
    assert code == 0, err
    return json.loads(out.read_text()), out


def test_k8s_hostile_gpu_count_does_not_blow_up_the_inventory(tmp_path: Path) -> None:
    """1024 GPUs claimed per node: each such node fails (named), so a few KB of labels stay a few KB."""
    nodes = [_node(f"n{i}", **{"nvidia.com/gpu.count": "1024"}) for i in range(50)] + [_node("good")]
    doc, out = _detect_k8s(tmp_path, nodes)
    assert [h["name"] for h in doc["inventory"]] == ["good"]
    assert len(doc["failed"]) == 50 and "1 to 128" in doc["failed"][0]["why"]
    assert out.stat().st_size < 20_000
    assert run(["fleet", "plan", str(out)])[0] in (0, 1)


def test_k8s_capability_minor_10_fails_that_node_and_plan_reads_the_rest(tmp_path: Path) -> None:
    nodes = [_node("bad", **{"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "10"}),
             _node("good", **{"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"})]
    doc, out = _detect_k8s(tmp_path, nodes)
    assert [h["name"] for h in doc["inventory"]] == ["good"]
    assert doc["failed"][0]["host"] == "bad" and "9.10 is not a compute capability" in doc["failed"][0]["why"]
    code, _, err = run(["fleet", "plan", str(out)])
    assert code in (0, 1), err


def test_k8s_duplicate_node_names_keep_the_first(tmp_path: Path) -> None:
    doc, out = _detect_k8s(tmp_path, [_node("a"), _node("a", **{"nvidia.com/gpu.count": "4"}), _node("b")])
    assert [h["name"] for h in doc["inventory"]] == ["a", "b"]
    assert len(doc["inventory"][0]["host"]["gpus"]) == 8
    assert doc["failed"][0]["host"] == "a" and "second node" in doc["failed"][0]["why"]
    code, _, err = run(["fleet", "plan", str(out)])
    assert code in (0, 1), err


def test_ray_node_names_share_a_host_name_in_one_pass() -> None:
    """Nodes of one host name get their node id's start; 30,000 nodes are named (a count per node was quadratic)."""
    from vresolve.fleet.ray import _names

    nodes = [{"NodeManagerHostname": "box", "NodeID": "abcdef0123"}, {"NodeManagerHostname": "box", "NodeID": "99887766"},
             {"NodeManagerHostname": "solo", "NodeID": "x"}]
    assert _names(nodes) == ["box-abcdef01", "box-99887766", "solo"]
    many = [{"NodeManagerHostname": f"n{i}", "NodeID": str(i)} for i in range(30_000)]
    assert _names(many)[-1] == "n29999"
