"""Time ``vresolve site`` (every plan of the page computed by the plan command) and measure the page.

    python bench/site_build.py [--repeat 3] [--python 3.12] [--installer uv,pip,conda] [--workers N]

Each run is a whole ``vresolve site -o TMP`` process (the matrix from its cache, as a user would run it).
Prints the median wall time, the page's size (bytes, and gzip-compressed as a web server would send it),
how many plans it holds (and how many distinct ones), and the time per plan; without --python, every
Python the matrix has wheels for, as the published page is built.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", help="X.Y[,X.Y...] (default: every Python of the matrix)")
    ap.add_argument("--installer", help="default: uv,pip,conda")
    ap.add_argument("--workers", type=int, help="default: one per core")
    args = ap.parse_args()
    extra = [*(["--python", args.python] if args.python else []), *(["--installer", args.installer]
                                                                    if args.installer else []),
             *(["--workers", str(args.workers)] if args.workers else [])]
    times, summary, size_gz = [], {}, 0
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "vresolve", "site", "-o", tmp, "--json", *extra],
                               capture_output=True, text=True, check=True)
            times.append(time.perf_counter() - t0)
            summary = json.loads(p.stdout)
            size_gz = len(gzip.compress((Path(tmp) / "index.html").read_bytes(), 9))
    med = statistics.median(times)
    print(f"vresolve site {' '.join(extra) or '(every Python, every installer)'} on {os.cpu_count()} cores: "
          f"median {med:.1f} s of {args.repeat} (min {min(times):.1f}, max {max(times):.1f})")
    print(f"page {summary['bytes'] / 1e6:.2f} MB ({size_gz / 1e6:.2f} MB gzip), {summary['plans']} plans "
          f"({summary['distinct_plans']} distinct, {summary['strings']} distinct strings), "
          f"{med / summary['plans'] * 1000:.1f} ms per plan (a plan is two plan runs: --json and --shell bash)")


if __name__ == "__main__":
    main()
