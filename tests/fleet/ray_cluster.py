"""Run inside a private network namespace by tests/test_fleet_ray.py: a real local Ray cluster (a head and a
worker per further entry of FLEET_NODES), each node's raylet with its own PATH led by its own fake nvidia-smi,
then the fleet commands against it. Prints one JSON object: each command's exit code and output. Shuts the cluster down through
the Cluster object (never by process name).

argv: WORKDIR (holds node-<n>/bin/nvidia-smi and node-<n>/site, written by the test), TEMPDIR (an empty directory
with a short path for Ray's sessions and sockets, made and removed by the test)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

from ray.cluster_utils import Cluster

from vresolve.cli import main

NODES = json.loads(os.environ["FLEET_NODES"])  # [{"name", "env": {...}}]


def node_env(work: str, n: dict) -> dict:
    bindir = os.path.join(work, n["name"], "bin")
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "VRESOLVE_NO_NVML": "1", **n.get("env", {})}
    site = os.path.join(work, n["name"], "site")
    if os.path.isdir(site):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)
    return env


def run(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return {"argv": argv, "code": code, "stdout": out.getvalue()}


def main_() -> None:
    work = sys.argv[1]
    head, *workers = NODES
    # the cluster's sessions and sockets in a directory of its own, removed afterwards (a short path: socket
    # paths are limited to 107 bytes)
    temp = sys.argv[2]  # made (and removed, whatever happens here) by the test
    # Ray writes the cluster's address file under its default temp dir ($RAY_TMPDIR/ray, else /tmp/ray) whatever
    # temp_dir= says, and does not make that directory: point it here, so a machine that never ran Ray passes too
    os.environ["RAY_TMPDIR"] = temp
    os.makedirs(os.path.join(temp, "ray"))
    cluster = Cluster()  # the head is added inside try, so that whatever started is stopped if anything fails
    try:
        cluster.add_node(num_cpus=1, env_vars=node_env(work, head), node_ip_address="127.0.0.1", temp_dir=temp)
        for n in workers:
            cluster.add_node(num_cpus=1, env_vars=node_env(work, n), node_ip_address="127.0.0.1", temp_dir=temp)
        cluster.wait_for_nodes()
        inv = os.path.join(work, "inventory.json")
        results = [run(["fleet", "detect", "--ray", cluster.address, "--json", "-o", inv, "--timeout", "120"]),
                   run(["fleet", "plan", inv, "--json", "--python", "3.12"]),
                   run(["fleet", "doctor", "--ray", cluster.address, "--json", "--timeout", "120"])]
        # the README's Ray commands, as written (no address: Ray's own discovery finds this cluster), by bash in WORKDIR
        readme = [subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, text=True, timeout=240,
                                 stdin=subprocess.DEVNULL) for line in json.loads(os.environ.get("README_RAY", "[]"))]
        results.append([{"line": p.args[2], "code": p.returncode, "said": p.stdout + p.stderr} for p in readme])
    finally:
        cluster.shutdown()
    print("@@fleet@@" + json.dumps(results))


if __name__ == "__main__":
    main_()
