"""Time ``vresolve matrix grid --json`` (every cell computed by the plan command) against ``python -c pass``.

    python bench/grid_build.py [--runs 9] [--workers N] [-- GRID ARGS...]

Each run is a whole process (the matrix from its cache, as a user would run it), interleaved with
``python -c pass`` on the same interpreter so that both see the same load. Prints both medians, their
ratio, and the time per cell.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _timed(argv: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(argv, check=True, capture_output=True, text=True)
    return time.perf_counter() - t, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--workers", type=int, help="default: vresolve's")
    ap.add_argument("grid_args", nargs="*")
    args = ap.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as on a user's machine: bytecode kept
    script = os.path.join(os.path.dirname(sys.executable), "vresolve")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "vresolve"]
    grid = [*cmd, "matrix", "grid", "--json", "-q", *args.grid_args,
            *(["--workers", str(args.workers)] if args.workers else [])]
    _timed(grid)  # warm the OS caches and vresolve's matrix cache
    base, times, out = [], [], ""
    for _ in range(args.runs):
        base.append(_timed([sys.executable, "-c", "pass"])[0])
        t, out = _timed(grid)
        times.append(t)
    shape = json.loads(out)
    cells = len(shape["rows"]) * len(shape["columns"])
    b, g = statistics.median(base), statistics.median(times)
    print(f"python -c pass: median {b * 1000:.1f} ms ({args.runs} runs, {os.cpu_count()} cores)")
    print(f"{' '.join(grid[len(cmd):])}: median {g:.2f} s (min {min(times):.2f}, max {max(times):.2f}), "
          f"ratio {g / b:.1f}x, {cells} cells, {g / cells * 1000:.2f} ms per cell")


if __name__ == "__main__":
    main()
