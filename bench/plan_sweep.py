"""Time an in-process sweep: every GPU in the matrix x NVIDIA driver branches 470 to 590.

    python bench/plan_sweep.py [--python 3.12] [--platform linux-x86_64]

Each driver branch B is represented by the version ``B.999.99`` (newer than any release of
that branch). Every (GPU, branch) pair is resolved; the script prints the total time, the
time per resolution, and how many pairs got a stack, for the sweep as a whole.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from packaging.version import Version

from vresolve.host import DriverInfo, Host, HostGpu, PlatformInfo
from vresolve.matrix import load_matrix
from vresolve.resolve import NoCompatibleStack, Request, resolve
from vresolve.values import DriverVersion

BRANCHES = tuple(range(470, 595, 5))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="3.12")
    ap.add_argument("--platform", default="linux-x86_64")
    args = ap.parse_args()
    m = load_matrix()
    machine = args.platform.split("-", 1)[1]
    t0 = time.perf_counter()
    outcome: Counter[str] = Counter()
    for gpu in m.gpus:
        for branch in BRANCHES:
            host = Host(driver=DriverInfo(version=DriverVersion.parse(f"{branch}.999.99")),
                        gpus=(HostGpu(index=0, name=gpu.name, compute_capability=gpu.compute_capability),),
                        python=Version(args.python + ".0"), platform=PlatformInfo(os="linux", machine=machine))
            try:
                resolve(host, m, Request())
                outcome["stack"] += 1
            except NoCompatibleStack:
                outcome["no stack"] += 1
    total = time.perf_counter() - t0
    n = sum(outcome.values())
    print(f"{len(m.gpus)} GPUs x {len(BRANCHES)} driver branches ({BRANCHES[0]}..{BRANCHES[-1]}) = {n} resolutions")
    print(f"total {total:.2f} s, {total / n * 1000:.2f} ms per resolution; "
          + ", ".join(f"{k}: {v}" for k, v in sorted(outcome.items())))


if __name__ == "__main__":
    main()
