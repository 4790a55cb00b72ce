"""``fleet detect --ray``, ``fleet plan`` and ``fleet doctor --ray`` on a real local Ray cluster: a head and two
workers started by the test (ray.cluster_utils.Cluster) inside a private network namespace (``unshare -rn``,
loopback up: Ray binds to 127.0.0.1 and nothing leaves it), each raylet with its own PATH led by its own
nvidia-smi (an H100 at 570, an A100 at 550, a GH200 at 580 that says it is aarch64). Every Ray process is
stopped through the Cluster object. Needs ``vresolve[ray]``, ``unshare`` and ``ip``; about 30 s.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .test_readme import EXPECT, command_of, ray_commands

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'vresolve[ray]')")

BANNER = (Path(__file__).parent / "data" / "probes" / "nvidia-h200" / "nvidia-smi.txt").read_text()
NODES = [  # name, GPU line of nvidia-smi --query-gpu, driver, CUDA the driver serves, env, torch installed
    ("head", None, None, None, {}, "2.10.0"),  # a Ray head without GPUs (no nvidia-smi)
    ("h100", "0, NVIDIA H100 80GB HBM3, GPU-1, 9.0, 570.86.15, 81559, 00000000:18:00.0", "570.86.15", "12.8", {},
     "2.10.0"),
    ("a100", "0, NVIDIA A100-SXM4-80GB, GPU-2, 8.0, 550.54.15, 81920, 00000000:07:00.0", "550.54.15", "12.4", {},
     "2.9.0"),
    ("gh200", "0, NVIDIA GH200 480GB, GPU-3, 9.0, 580.65.06, 97871, 00000009:01:00.0", "580.65.06", "13.0",
     {"VRESOLVE_PLATFORM": "linux-aarch64"}, "2.10.0"),
    # a Jetson Orin under JetPack 6 (its nvidia-smi, L4T's driver): planned apart, its torch not the others' business
    ("orin", "0, Orin (nvgpu), GPU-4, 8.7, 540.4.0, [N/A], 00000000:00:00.0", "540.4.0", "12.6",
     {"VRESOLVE_PLATFORM": "linux-aarch64"}, "2.9.1"),
    # a node whose detection fails (a bad override): reported with why, never fatal to the others
    ("broken", None, None, None, {"VRESOLVE_PYTHON": "not-a-version"}, "2.10.0"),
]


def _namespace_ok() -> bool:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    return subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _namespace_ok(), reason="no private network namespace here (unshare -rn)")]


def _node_dir(work: Path, name: str, query: str | None, driver: str | None, cuda: str | None, torch: str) -> None:
    bindir = work / name / "bin"
    bindir.mkdir(parents=True)
    _torch(work, name, torch)
    if query is None or driver is None or cuda is None:
        return
    (work / name / "query.csv").write_text(query + "\n")
    banner = BANNER.replace("580.159.04", driver).replace("CUDA Version: 13.0", f"CUDA Version: {cuda}")
    (work / name / "banner.txt").write_text(banner)
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n"
                   f'case "$1" in --query-gpu=*) cat {shlex.quote(str(work / name / "query.csv"))}; exit 0;; esac\n'
                   f"cat {shlex.quote(str(work / name / 'banner.txt'))}\n")
    smi.chmod(0o755)


def _torch(work: Path, name: str, torch: str) -> None:
    # an installed torch as pip records one: its dist-info (the node's own site directory, on its PYTHONPATH)
    dist = work / name / "site" / f"torch-{torch}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {torch}\n")


def test_fleet_on_a_local_ray_cluster(tmp_path: Path) -> None:
    for name, query, driver, cuda, _, torch in NODES:
        _node_dir(tmp_path, name, query, driver, cuda, torch)
    src = str(Path(__file__).parents[1] / "src")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}, "FLEET_NODES": json.dumps([{"name": n, "env": e} for n, _, _, _, e, _ in NODES]),
           "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
           "RAY_USAGE_STATS_ENABLED": "0", "VRESOLVE_PYTHON": "3.12"}
    script = Path(__file__).parent / "fleet" / "ray_cluster.py"
    # the README's commands that need a Ray cluster run in it as written; its fleet doctor names a lock of the repo's
    env["README_RAY"] = json.dumps(ray_commands())
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    (tmp_path / "locks" / "linux-x86_64").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[1] / "lockfiles" / "h100-driver580" / "requirements.txt",
                tmp_path / "locks" / "linux-x86_64" / "requirements.txt")
    # Ray's sessions and sockets in a directory of their own with a short path (socket paths are limited to 107
    # bytes), removed whether the run passes, fails or times out
    temp = tempfile.mkdtemp(prefix="vr-ray-", dir="/tmp")
    cmd = (f"ip link set lo up && exec {shlex.quote(sys.executable)} {shlex.quote(str(script))} "
           f"{shlex.quote(str(tmp_path))} {shlex.quote(temp)}")
    try:
        proc = subprocess.run(["unshare", "-rn", "sh", "-c", cmd], env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert "@@fleet@@" in proc.stdout, proc.stderr[-4000:]
    detect, plan, doctor, readme = json.loads(proc.stdout.split("@@fleet@@", 1)[1])
    assert [r["line"] for r in readme] == ray_commands() and len(readme) == 2
    for r in readme:
        assert "Traceback" not in r["said"] and r["code"] == EXPECT[command_of(r["line"])][0], r
    assert (tmp_path / "cluster.json").stat().st_size > 0  # fleet detect --ray -o cluster.json

    assert detect["code"] == 0, detect
    inv = json.loads(detect["stdout"])
    assert inv["schema"] == "vresolve.fleet/1"
    (failed,) = inv["failed"]
    assert "VRESOLVE_PYTHON" in failed["why"] and "not-a-version" in failed["why"]
    seen = {(h["host"]["gpus"][0]["name"] if h["host"]["gpus"] else None, h["host"]["driver"]["version"],
             h["host"]["platform"]["machine"]) for h in inv["inventory"]}
    assert seen == {("NVIDIA H100 80GB HBM3", "570.86.15", "x86_64"), ("NVIDIA A100-SXM4-80GB", "550.54.15", "x86_64"),
                    ("NVIDIA GH200 480GB", "580.65.06", "aarch64"), ("Orin (nvgpu)", "540.4.0", "aarch64"),
                    (None, None, "x86_64")}
    assert {h["source"] for h in inv["inventory"]} == {"ray"}
    orin = next(h["name"] for h in inv["inventory"] if h["host"]["gpus"] and h["host"]["gpus"][0]["name"] == "Orin (nvgpu)")

    assert plan["code"] == 1, plan  # every node but the Orin has a stack; the Orin's JetPack is not known
    p = json.loads(plan["stdout"])
    assert p["hosts"] == 5 and len(p["groups"]) == 5 and p["failed"] == [failed]
    assert p["apart"] == [orin]
    (jetson,) = [g for g in p["groups"] if g["apart"]]
    assert jetson["stack"] is None and "Jetson" in jetson["why_not"]
    common = p["common"]
    assert set(common["per_platform"]) == {"linux-x86_64", "linux-aarch64"}
    x86 = common["per_platform"]["linux-x86_64"]
    assert x86["host"]["driver"] == "550.54.15"  # the oldest driver of the architecture
    assert {g["compute_capability"] for g in x86["host"]["gpus"]} == {"8.0", "9.0"}
    versions = {v["stack"]["vllm"] for v in common["per_platform"].values()}
    assert len(versions) == 1  # one vLLM on every node
    from packaging.version import Version

    gh200 = next(g for g in p["groups"] if g["host"]["platform"] == "linux-aarch64" and not g["apart"])
    x86_names = {h["name"] for h in inv["inventory"] if h["host"]["platform"]["machine"] == "x86_64" and h["host"]["gpus"]}
    # the GH200 at 580 gets a newer vLLM alone than the x86 nodes at 550 and 570 allow the cluster
    assert Version(gh200["stack"]["vllm"]) > Version(common["stack"]["vllm"])
    (blocker,) = p["blocking"]
    assert set(blocker["hosts"]) == x86_names and blocker["upgrade"].startswith("driver >= ")
    assert blocker["unlocks"]["vllm"] == gh200["stack"]["vllm"]

    d = json.loads(doctor["stdout"])
    assert len(d["nodes"]) == 5 and [f["host"] for f in d["failed"]] == [failed["host"]]
    drift = [f for f in d["fleet"] if f["title"].startswith("torch ")]
    assert len(drift) == 1 and len(drift[0]["hosts"]) == 1 and drift[0]["cause"] == "fleet-drift"
    assert "2.9.0" in drift[0]["explanation"] and doctor["code"] == 1
    assert not [f for f in d["fleet"] if orin in f["hosts"]]  # the Orin's torch 2.9.1 is its JetPack's, not drift
