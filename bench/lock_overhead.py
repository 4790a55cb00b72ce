"""Time ``vresolve lock`` against the bare ``uv pip compile`` it runs (same inputs, same uv cache).

    python bench/lock_overhead.py [--runs 9] [-- LOCK FLAGS...]

Default flags: ``--gpu "NVIDIA H100 80GB HBM3" --driver 580.95.05``. Both commands run once
to warm uv's cache, then ``--runs`` times each, alternating, each from no earlier output (uv
reads an existing output file as preferences); prints the medians and the overhead of
vresolve over uv in percent.
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


def _time(argv: list[str], fresh: str | None = None) -> float:
    if fresh and os.path.exists(fresh):
        os.unlink(fresh)  # uv reads an existing output file as preferences: start each run from none
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("flags", nargs="*")
    args = ap.parse_args()
    # this machine's glibc: a lock for manylinux_2_28 would need llguidance from source (vLLM 0.33.0's closure)
    flags = args.flags or ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.95.05",
                           "--glibc", os.confstr("CS_GNU_LIBC_VERSION").split()[-1]]
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # keep bytecode, as on a user's machine
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"  # as vresolve runs uv: no interpreter download for --python-version
    with tempfile.TemporaryDirectory() as out:
        lock = [sys.executable, "-m", "vresolve", "lock", *flags, "-o", out, "--json", "-q"]
        report = json.loads(subprocess.run(lock, check=True, capture_output=True, text=True).stdout)
        # the bare compile, exactly as vresolve ran it (its argv is not in the report: rebuild it)
        from vresolve.cli.args import build_parser, plan_inputs
        from vresolve.lock import _inputs, _platform_triple, _uv_bin
        from vresolve.plan import build_plan
        from vresolve.resolve import resolve

        a = build_parser().parse_args(["lock", *flags])
        m, host, request, _ = plan_inputs(a)
        plan = build_plan(m, resolve(host, m, request))
        reqs, options = _inputs(plan, m)
        src = os.path.join(out, "requirements.in")
        with open(src, "w") as fh:
            fh.write("".join(f"{r}\n" for r in reqs))
        bare = [_uv_bin(), "pip", "compile", src, "--python-version", str(host.python_minor), "--python-platform",
                _platform_triple(plan), "--generate-hashes", "--no-header", "--no-build", "--output-file",
                os.path.join(out, "bare", "pylock.toml"), *options]
        os.makedirs(os.path.join(out, "bare"))
        bare_out = os.path.join(out, "bare", "pylock.toml")
        _time(bare, bare_out)
        t_lock, t_bare = [], []
        for _ in range(args.runs):
            t_lock.append(_time(lock))
            t_bare.append(_time(bare, bare_out))
    ml, mb = statistics.median(t_lock), statistics.median(t_bare)
    print(f"{report['locks'][0]['packages']} packages; {args.runs} runs each, uv cache warm")
    print(f"uv pip compile (bare): median {mb:.2f} s")
    print(f"vresolve lock (all four files): median {ml:.2f} s")
    print(f"overhead: {ml - mb:+.2f} s ({(ml - mb) / mb * 100:+.1f} %)")


if __name__ == "__main__":
    main()
