"""Time detection on this machine: each probe in-process, then ``vresolve detect --json`` and
``vresolve plan --gpu auto`` as whole processes against ``python -c pass`` on the same interpreter.

    python bench/detect_process.py [--runs 15] [--repeat 5] [--profile FILE] [--fake]

Meant for a GPU machine (the figures of issue 28: ``plan --gpu auto`` at most 4x ``python -c pass``).
The per-probe table gives each probe's first call (cold: the library loaded, the driver woken) and the
median of ``--repeat`` more. ``--profile FILE`` writes the cumulative profile of one in-process
``plan --gpu auto`` there. The whole processes run interleaved (every median sees the same load); ``plan --gpu
auto`` both kept in the plan output cache (keyed after detection, in a fresh cache directory: the first run keeps
it) and computed (``VRESOLVE_PLAN_CACHE=0``). ``--fake``: on a machine without a GPU, the H200 the tests fake (an
``nvidia-smi`` script answering from tests/data/probes/nvidia-h200, no NVML, an empty probe root): the cost of
vresolve around a probe, not the probe's (a real one costs NVML's initialisation, ~38 ms on the H200).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1000
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return first, statistics.median(times)


def probe_table(repeat: int) -> None:
    """Each probe of vresolve.detect (its driver probes, then the rest), timed in this process."""
    from vresolve.detect import driver as d
    from vresolve.detect import probes as p

    o = p.Overrides.from_env()
    rows: list[tuple[str, Callable[[], object]]] = [
        ("import pynvml", lambda: __import__("pynvml")),
        ("_probe_nvml (init, queries, shutdown)", lambda: d._probe_nvml(o, d._Found())),
        ("_probe_proc", lambda: d._probe_proc(o, d._Found())),
        ("_probe_libcuda", lambda: d._probe_libcuda(o, d._Found())),
        ("_smi_query (nvidia-smi --query-gpu)", lambda: d._smi_query(o, d._Found())),
        ("_smi_banner (nvidia-smi)", lambda: d._smi_banner(o, d._Found())),
        ("_kernel_evidence", lambda: d._kernel_evidence(o)),
        ("_pci_gpus", lambda: d._pci_gpus(o)),
        ("_library_evidence", lambda: d._library_evidence(o)),
        ("_probe_platform", lambda: p._probe_platform(o, [])),
        ("_probe_memory", lambda: p._probe_memory(o)),
        ("_probe_toolkits", lambda: p._probe_toolkits(o, [])),
        ("_probe_tools", lambda: p._probe_tools(o)),
        ("_probe_installed", p._probe_installed),
        ("_probe_gpus (as detect runs it)", lambda: d._probe_gpus(o, d._Found())),
        ("detect_host(installed=False)", lambda: p.detect_host(o, installed=False)),
        ("detect_host()", lambda: p.detect_host(o)),
    ]
    print(f"{'probe':45} {'first ms':>9} {'median ms':>10}")
    for name, fn in rows:
        try:
            first, med = _time(fn, repeat)
        except Exception as e:  # a probe this machine cannot run: say so, go on
            print(f"{name:45} failed: {type(e).__name__}: {e}")
            continue
        print(f"{name:45} {first:9.1f} {med:10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile")
    ap.add_argument("--no-probes", action="store_true", help="only the whole processes")
    ap.add_argument("--fake", action="store_true", help="the H200 the tests fake, for a machine without a GPU "
                    "(implies --no-probes)")
    args = ap.parse_args()
    if not args.no_probes and not args.fake:
        probe_table(args.repeat)
    if args.profile:
        import contextlib
        import cProfile
        import io
        import pstats

        from vresolve.cli import main as cli_main

        prof = cProfile.Profile()
        prof.enable()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                cli_main(["plan", "--gpu", "auto", "--json"])
        except SystemExit:
            pass
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(60)
        with open(args.profile, "w") as f:
            f.write(buf.getvalue())
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="vresolve-bench-") as tmp:
        processes(args.runs, tmp, args.fake)


def _fake_h200(tmp: str) -> dict[str, str]:
    """The environment of the H200 the tests fake: nvidia-smi answering from its captured output, no NVML."""
    probes = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "probes",
                          "nvidia-h200")
    bindir, root = os.path.join(tmp, "bin"), os.path.join(tmp, "root")
    os.makedirs(bindir)
    os.makedirs(root)
    with open(os.path.join(probes, "query-gpu.csv")) as f:
        rows = f.read().split("\n", 1)[1]
    with open(os.path.join(tmp, "query.csv"), "w") as f:
        f.write(rows)
    smi = os.path.join(bindir, "nvidia-smi")
    with open(smi, "w") as f:
        f.write(f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat {shlex.quote(os.path.join(tmp, "query.csv"))}; exit 0;; '
                f'esac\ncat {shlex.quote(os.path.join(probes, "nvidia-smi.txt"))}\n')
    os.chmod(smi, 0o755)
    return {"PATH": f"{bindir}:/usr/bin:/bin", "VRESOLVE_NO_NVML": "1", "VRESOLVE_PROBE_ROOT": root}


def processes(runs: int, tmp: str, fake: bool) -> None:
    """Whole processes against ``python -c pass``, interleaved; the plan output cache in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if k not in ("VRESOLVE_PLAN_CACHE", "VRESOLVE_CACHE_DIR")}
    env["VRESOLVE_CACHE_DIR"] = os.path.join(tmp, "cache")
    if fake:
        env.update(_fake_h200(tmp))
    cmd = [sys.executable, "-m", "vresolve"]
    rows: list[tuple[str, list[str], dict[str, str]]] = [("python -c pass", [sys.executable, "-c", "pass"], env),
                                                         ("vresolve detect --json", [*cmd, "detect", "--json"], env)]
    for label, extra in (("human", []), ("--json", ["--json"])):
        argv = [*cmd, "plan", "--gpu", "auto", *extra]
        rows += [(f"vresolve plan --gpu auto ({label}, kept in the plan output cache)", argv, env),
                 (f"vresolve plan --gpu auto ({label}, computed: VRESOLVE_PLAN_CACHE=0)", argv,
                  {**env, "VRESOLVE_PLAN_CACHE": "0"})]
    medians = _interleaved([(argv, e) for _, argv, e in rows], runs)
    base = medians[0]
    print(f"python -c pass: median {base:.1f} ms ({runs} interleaved runs, {sys.executable}"
          f"{'; the H200 faked: nvidia-smi script, no NVML' if fake else ''})")
    for (label, _, _), t in zip(rows[1:], medians[1:], strict=True):
        print(f"{label}: median {t:.1f} ms, ratio {t / base:.2f}x")


def _interleaved(cmds: list[tuple[list[str], dict[str, str]]], runs: int) -> list[float]:
    """The median wall time (ms) of each command: run once (to warm the caches), then ``runs`` rounds, each running
    every command once."""
    for argv, env in cmds:
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, (argv, env) in enumerate(cmds):
            t = time.perf_counter()
            subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            times[i].append((time.perf_counter() - t) * 1000)
    return [statistics.median(t) for t in times]


if __name__ == "__main__":
    main()
