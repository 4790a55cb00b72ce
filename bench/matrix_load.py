"""Time loading and validating the whole shipped matrix in-process.

    python bench/matrix_load.py [--runs 25] [--matrix DIR]

Prints the median, min and max of ``load_matrix()`` over the runs (after one warm-up run,
so that imports and the OS file cache are not counted), and, for scale, the time of
parsing the YAML alone with the C loader.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import yaml

from vresolve.matrix import FILES, default_matrix_path, load_matrix


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--matrix", type=Path, default=None)
    args = ap.parse_args()
    root = args.matrix or default_matrix_path()
    load_matrix(root)  # warm-up
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        load_matrix(root)
        times.append((time.perf_counter() - t) * 1000)
    yaml_times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        for name in FILES:
            yaml.load((root / name).read_bytes(), Loader=yaml.CSafeLoader)
        yaml_times.append((time.perf_counter() - t) * 1000)
    size = sum((root / n).stat().st_size for n in FILES)
    print(f"matrix {root} ({size / 1024:.0f} KiB in {len(FILES)} files), {args.runs} runs")
    print(f"load_matrix: median {statistics.median(times):.1f} ms (min {min(times):.1f}, max {max(times):.1f})")
    print(f"YAML parse alone: median {statistics.median(yaml_times):.1f} ms")


if __name__ == "__main__":
    main()
