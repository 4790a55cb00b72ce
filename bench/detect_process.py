"""Time detection on this machine: each probe in-process, then ``vresolve detect --json`` and
``vresolve plan --gpu auto`` as whole processes against ``python -c pass`` on the same interpreter.

    python bench/detect_process.py [--runs 15] [--repeat 5] [--profile FILE]

Meant for a GPU machine (the figures of issue 28: ``plan --gpu auto`` at most 4x ``python -c pass``).
The per-probe table gives each probe's first call (cold: the library loaded, the driver woken) and the
median of ``--repeat`` more. ``--profile FILE`` writes the cumulative profile of one in-process
``plan --gpu auto`` there.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def _median_ms(argv: list[str], runs: int) -> float:
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


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
    args = ap.parse_args()
    if not args.no_probes:
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
    cmd = [sys.executable, "-m", "vresolve"]
    base = _median_ms([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass: median {base:.1f} ms ({args.runs} runs, {sys.executable})")
    for label, argv in (("detect --json", ["detect", "--json"]), ("plan --gpu auto", ["plan", "--gpu", "auto"]),
                        ("plan --gpu auto --json", ["plan", "--gpu", "auto", "--json"])):
        t = _median_ms([*cmd, *argv], args.runs)
        print(f"vresolve {label}: median {t:.1f} ms, ratio {t / base:.2f}x")


if __name__ == "__main__":
    main()
