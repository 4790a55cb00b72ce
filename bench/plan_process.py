"""Time ``vresolve plan`` as a whole process against ``python -c pass`` on the same interpreter.

    python bench/plan_process.py [--runs 15] [--cpu] [--baseline DIR] [-- PLAN ARGS...]

Default plan arguments: ``--gpu "NVIDIA H200" --driver 580.159.04`` (no probing, so the
figure is the cost of vresolve itself). Each command runs once to warm the OS caches and
vresolve's caches, then ``--runs`` rounds, each round running every command once (interleaved:
on a shared, noisy machine every median sees the same load); prints the medians and their ratio
to ``python -c pass``, for ``--help``, and for the human output and ``--json`` with the plan output
cache, without it (the validated matrix still cached), and with no cache at all (every run parses
the YAML). ``--cpu``: CPU time (user + system) instead of wall time, steadier on a machine whose cores other work
shares. ``--baseline DIR``: every vresolve row also run with ``PYTHONPATH=DIR/src`` (an earlier checkout, e.g.
``git worktree add DIR COMMIT`` or ``git archive COMMIT | tar -x -C DIR``), interleaved with the current code:
before and after under the same load.

It also prints the import of the modules that a ``--json`` plan for a named GPU imports, running nothing (the
rest of a cold plan is the matrix load, the resolution and the rendering), and the floors: the same interpreter
importing only the modules that cannot be left out (argparse for ``--help``, with a parser of nine commands printing
its help; for a plan, what the resolver, the matrix's classes and the matrix cache need: argparse, msgspec (the
records' Structs), packaging, resolvelib, pickle, hashlib, json, pathlib; rich's console and table for the human output).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_HELP_FLOOR = """
import argparse
p = argparse.ArgumentParser(prog="x", description="d")
p.add_argument("--json", action="store_true")
s = p.add_subparsers(dest="command", metavar="COMMAND")
for n in "plan lock apply doctor detect matrix fleet site completion".split():
    s.add_parser(n, help="the help of " + n)
p.print_help()
"""
_PLAN_FLOOR = ("import argparse, msgspec, typing, pathlib, pickle, hashlib, json, packaging.specifiers, "
               "packaging.version, resolvelib")

# what a plan for a named GPU imports (the console script's re too), run nothing: the rest of a cold plan is its work
_PLAN_MODULES = ("import re, vresolve._entry, vresolve._cache, vresolve.cli, vresolve.cli.targets, vresolve.detect, "
                 "vresolve.matrix.cache, vresolve.plan, vresolve.resolve, vresolve.render")


def _cpu_ms() -> float:
    """CPU time (user + system, ms) of the children waited for so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def _medians(cmds: list[tuple[list[str], dict[str, str]]], runs: int, cpu: bool = False) -> list[float]:
    """The median wall time (ms) of each command, or its CPU time with ``cpu``, run once to warm up, then ``runs``
    interleaved rounds."""
    clock = _cpu_ms if cpu else lambda: time.perf_counter() * 1000
    for argv, env in cmds:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, (argv, env) in enumerate(cmds):
            t = clock()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
            times[i].append(clock() - t)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline", metavar="DIR", help="also time the checkout in DIR (its src/), interleaved")
    ap.add_argument("--cpu", action="store_true",
                    help="CPU time (user + system) instead of wall time: steadier where other work shares the cores")
    ap.add_argument("plan_args", nargs="*")
    args = ap.parse_args()
    if args.runs < 9:
        ap.error("--runs: at least 9")
    plan_args = args.plan_args or ["--gpu", "NVIDIA H200", "--driver", "580.159.04"]
    # as on a user's machine, let Python keep the bytecode of vresolve's modules (this sandbox sets
    # PYTHONDONTWRITEBYTECODE, which makes every run compile them from source: ~40 ms)
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONDONTWRITEBYTECODE", "VRESOLVE_PLAN_CACHE", "VRESOLVE_CACHE_DIR")}
    # the console script, as users run it (python -m adds runpy's imports, ~5 ms)
    script = os.path.join(os.path.dirname(sys.executable), "vresolve")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "vresolve"]
    py = sys.executable
    rows: list[tuple[str, list[str], dict[str, str]]] = [
        ("python -c pass", [py, "-c", "pass"], base_env),
        ("floor of --help: argparse, 9 commands, print_help", [py, "-c", _HELP_FLOOR], base_env),
        ("floor of a plan (--json): its unavoidable imports", [py, "-c", _PLAN_FLOOR], base_env),
        ("floor of a plan (human): those and rich", [py, "-c", _PLAN_FLOOR + ", rich.console, rich.table"], base_env),
        ("vresolve --help (kept in the output cache)", [*cmd, "--help"], base_env),
        ("vresolve --help (no output cache)", [*cmd, "--help"], {**base_env, "VRESOLVE_PLAN_CACHE": "0"}),
        ("vresolve's modules of a --json plan imported, nothing run", [py, "-c", _PLAN_MODULES], base_env),
    ]
    # warm: the plan's output is cached; cold: computed (the validated matrix still cached);
    # cold, no caches: the matrix's YAML parsed and validated too (the first run after any edit)
    for cache, env in (("warm: plan output cached", {}), ("cold: no plan output cache", {"VRESOLVE_PLAN_CACHE": "0"}),
                       ("cold, no caches at all", {"VRESOLVE_CACHE_DIR": ""})):
        for label, extra in (("human", []), ("--json", ["--json"])):
            rows.append((f"vresolve plan {' '.join(plan_args)} ({label}, {cache})", [*cmd, "plan", *plan_args, *extra],
                         {**base_env, **env}))
    if args.baseline:
        src = os.path.join(os.path.abspath(args.baseline), "src")
        rows += [(f"{label} [baseline]", argv, {**env, "PYTHONPATH": src}) for label, argv, env in rows[4:]]
    medians = _medians([(argv, env) for _, argv, env in rows], args.runs, args.cpu)
    base = medians[0]
    print(f"python -c pass: median {base:.1f} ms{' of CPU' if args.cpu else ''} ({args.runs} interleaved runs, "
          f"{sys.executable})")
    for (label, _, _), t in zip(rows[1:], medians[1:], strict=True):
        print(f"{label}: median {t:.1f} ms, ratio {t / base:.2f}x")


if __name__ == "__main__":
    main()
