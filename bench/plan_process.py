"""Time ``vresolve plan`` as a whole process against ``python -c pass`` on the same interpreter.

    python bench/plan_process.py [--runs 15] [-- PLAN ARGS...]

Default plan arguments: ``--gpu "NVIDIA H200" --driver 580.159.04`` (no probing, so the
figure is the cost of vresolve itself). Each command runs once to warm the OS caches and
vresolve's caches, then ``--runs`` times; prints the medians and their ratio to ``python -c
pass``, for the human output and ``--json``, with the plan output cache, without it (the
validated matrix still cached), and with no cache at all (every run parses the YAML).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median_ms(argv: list[str], runs: int) -> float:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("plan_args", nargs="*")
    args = ap.parse_args()
    if args.runs < 9:
        ap.error("--runs: at least 9")
    plan_args = args.plan_args or ["--gpu", "NVIDIA H200", "--driver", "580.159.04"]
    base = _median_ms([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass: median {base:.1f} ms ({args.runs} runs, {sys.executable})")
    import os

    # as on a user's machine, let Python keep the bytecode of vresolve's modules (this sandbox sets
    # PYTHONDONTWRITEBYTECODE, which makes every run compile them from source: ~40 ms)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # the console script, as users run it (python -m adds runpy's imports, ~5 ms)
    script = os.path.join(os.path.dirname(sys.executable), "vresolve")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "vresolve"]
    t = _median_ms([*cmd, "--help"], args.runs)
    print(f"vresolve --help: median {t:.1f} ms, ratio {t / base:.2f}x")
    # warm: the plan's output is cached; cold: computed (the validated matrix still cached);
    # cold, no caches: the matrix's YAML parsed and validated too (the first run after any edit)
    for cache, env in (("warm: plan output cached", {}), ("cold: no plan output cache", {"VRESOLVE_PLAN_CACHE": "0"}),
                       ("cold, no caches at all", {"VRESOLVE_CACHE_DIR": ""})):
        os.environ.pop("VRESOLVE_PLAN_CACHE", None)
        os.environ.pop("VRESOLVE_CACHE_DIR", None)
        os.environ.update(env)
        for label, extra in (("human", []), ("--json", ["--json"])):
            t = _median_ms([*cmd, "plan", *plan_args, *extra], args.runs)
            print(f"vresolve plan {' '.join(plan_args)} ({label}, {cache}): median {t:.1f} ms, ratio {t / base:.2f}x")

if __name__ == "__main__":
    main()
