"""Time ``vresolve fleet plan`` on a large inventory: 10,000 hosts by default.

    python bench/fleet_plan.py [--hosts 10000] [--runs 5]

The inventory is made of real ``vresolve detect --json`` answers (one per machine kind, from detect's own
overrides: GPU, driver, platform, Python), repeated under distinct names over a mixed fleet: 6 GPU kinds,
5 drivers, 2 CPU architectures, 2 Pythons (at most 60 distinct groups, as in a real cluster). Prints the
median of ``--runs`` whole processes (``fleet plan --json``) for N hosts and for 100 hosts, their ratio,
and the in-process split (reading the inventory; grouping and resolving).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = [("H100", "linux-x86_64"), ("A100", "linux-x86_64"), ("L4", "linux-x86_64"), ("H200", "linux-x86_64"),
         ("GH200", "linux-aarch64"), ("V100", "linux-x86_64")]
DRIVERS = ["535.104.05", "550.54.15", "570.86.15", "575.57.08", "580.65.06"]
PYTHONS = ["3.11", "3.12"]


def _detect(gpu: str, driver: str, platform: str, python: str) -> dict:
    env = {**os.environ, "VRESOLVE_GPUS": gpu, "VRESOLVE_DRIVER": driver, "VRESOLVE_PLATFORM": platform,
           "VRESOLVE_PYTHON": python, "VRESOLVE_NO_NVML": "1"}
    out = subprocess.run([sys.executable, "-m", "vresolve", "detect", "--json"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["host"]


def make_inventory(n: int, answers: list[dict]) -> dict:
    return {"schema": "vresolve.fleet/1", "failed": [],
            "inventory": [{"name": f"node-{i:05d}", "host": answers[(i * 7919) % len(answers)], "source": "file"}
                          for i in range(n)]}


def _median_s(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    answers = [_detect(g, d, p, py) for g, p in KINDS for d in DRIVERS for py in PYTHONS]
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in (100, args.hosts):
            paths[n] = os.path.join(tmp, f"inv-{n}.json")
            with open(paths[n], "w") as fh:
                json.dump(make_inventory(n, answers), fh)
        cmd = [sys.executable, "-m", "vresolve", "fleet", "plan", "--json", "--python", "3.12"]
        small = _median_s([*cmd, paths[100]], args.runs)
        big = _median_s([*cmd, paths[args.hosts]], args.runs)
        print(f"fleet plan --json, 100 hosts: median {small:.2f} s ({args.runs} runs)")
        print(f"fleet plan --json, {args.hosts} hosts ({len(answers)} machine kinds): median {big:.2f} s, "
              f"ratio {big / small:.2f}x")
        from vresolve.cli.fleet import read_inventory
        from vresolve.fleet import plan_fleet
        from vresolve.matrix import load_matrix
        from vresolve.resolve import Request

        m = load_matrix(None)
        reads, plans = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            inv = read_inventory([paths[args.hosts]], m)
            t2 = time.perf_counter()
            from packaging.version import Version

            p = plan_fleet(inv, m, Request(), python=Version("3.12"))
            reads.append(t2 - t)
            plans.append(time.perf_counter() - t2)
        print(f"in process, {args.hosts} hosts: read and check the inventory {statistics.median(reads):.2f} s, "
              f"group and resolve ({len(p.groups)} groups) {statistics.median(plans):.2f} s (medians)")


if __name__ == "__main__":
    main()
