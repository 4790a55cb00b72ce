"""Run inside a private network namespace by tests/test_fleet_ray.py: a real local Ray cluster (a head and a
worker per further entry of FLEET_NODES), each node's raylet with its own PATH led by its own fake nvidia-smi,
then the fleet commands against it. Prints one JSON object: each command's exit code and output. Shuts the cluster down through
the Cluster object (never by process name).

argv: WORKDIR (holds node-<n>/bin/nvidia-smi and node-<n>/site, written by the test)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile

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
    temp = tempfile.mkdtemp(prefix="vr-ray-", dir="/tmp")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "env_vars": node_env(work, head),
                                                           "node_ip_address": "127.0.0.1", "temp_dir": temp})
    try:
        for n in workers:
            cluster.add_node(num_cpus=1, env_vars=node_env(work, n), node_ip_address="127.0.0.1", temp_dir=temp)
        cluster.wait_for_nodes()
        inv = os.path.join(work, "inventory.json")
        results = [run(["fleet", "detect", "--ray", cluster.address, "--json", "-o", inv, "--timeout", "120"]),
                   run(["fleet", "plan", inv, "--json", "--python", "3.12"]),
                   run(["fleet", "doctor", "--ray", cluster.address, "--json", "--timeout", "120"])]
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    print("@@fleet@@" + json.dumps(results))


if __name__ == "__main__":
    main_()
