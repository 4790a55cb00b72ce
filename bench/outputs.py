"""Record what vresolve prints for a fixed set of commands, and compare two records byte for byte.

    python bench/outputs.py write DIR [--src SRC]     run every command, write DIR/NNN.{argv,out,err,rc}
    python bench/outputs.py compare OLD NEW           exit 1 and show the first differences if any differ
                                                      (a progress line's elapsed seconds are masked)

A refactor that must not change behaviour (issue 29: one pipeline for every target) is checked with it:
record before (``--src`` an earlier checkout's ``src``, e.g. from ``git worktree add /tmp/base main``), record
after, compare. Every command runs as its own process with no caches (``VRESOLVE_CACHE_DIR=``), a fixed
``SOURCE_DATE_EPOCH``, a fixed terminal width, ``NO_COLOR``, in an empty scratch directory; the checkout's own
path and the scratch directory are replaced by ``<ROOT>`` and ``<CWD>`` so that two checkouts compare equal.
The commands cover plans (uv, pip, conda, source builds, refusals, CPU), every output form (human, ``-q``,
``--json``, ``--shell``), Jetsons (Orin with and without its index, JetPack 5, Thor, GH200), fleets, the grid,
``matrix`` views and ``doctor`` on pasted logs.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
H200 = ["--gpu", "NVIDIA H200", "--driver", "580.159.04", "--python", "3.12", "--platform", "linux-x86_64"]
ORIN = ["--gpu", "Jetson AGX Orin", "--driver", "540.4.0", "--platform", "linux-aarch64", "--python", "3.10",
        "--jetpack", "6.2"]
JIDX = ["--jetson-index", "https://jetson.example/"]
_DATA = "tests/data"

PLANS: list[list[str]] = [
    H200, [*H200, "--json"], [*H200, "-q"], [*H200, "--shell", "fish"], [*H200, "--shell", "dotenv"],
    [*H200, "--installer", "pip"], [*H200, "--installer", "conda"], [*H200, "--installer", "conda", "--json"],
    [*H200, "--source-build", "always"], [*H200, "--source-build", "always", "--json"],
    [*H200, "--vllm", "==0.10.1"], [*H200, "--variant", "cu126", "--json"], [*H200, "--torch", "==2.8.0"],
    [*H200, "--precompiled", "--source-build", "always"],
    ["--gpu", "NVIDIA H200", "--driver", "525.60.13", "--python", "3.12", "--platform", "linux-x86_64"],
    ["--gpu", "NVIDIA H200", "--driver", "525.60.13", "--python", "3.12", "--platform", "linux-x86_64", "--json"],
    ["--gpu", "NVIDIA L4", "--driver", "550.54.15", "--python", "3.11", "--platform", "linux-x86_64"],
    ["--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", "--python", "3.10", "--platform", "linux-x86_64"],
    ["--gpu", "Tesla K80", "--driver", "470.82.01", "--python", "3.10", "--platform", "linux-x86_64", "--json"],
    ["--gpu", "NVIDIA GeForce RTX 5090", "--driver", "570.86.10", "--python", "3.12", "--platform", "linux-x86_64"],
    ["--gpu", "NVIDIA GeForce RTX 3090", "--driver", "450.80.02", "--python", "3.12", "--platform", "linux-x86_64"],
    ["--gpu", "NVIDIA H100 80GB HBM3,NVIDIA A100-SXM4-80GB", "--driver", "550.144.03", "--python", "3.12",
     "--platform", "linux-x86_64", "--json"],
    ["--gpu", "none", "--python", "3.12", "--platform", "linux-x86_64"],
    ["--gpu", "none", "--python", "3.12", "--platform", "linux-x86_64", "--json"],
    ["--gpu", "GH200", "--driver", "580.95.05", "--python", "3.12", "--platform", "linux-aarch64"],
    ["--gpu", "GH200", "--driver", "580.95.05", "--python", "3.12", "--platform", "linux-aarch64", "--json"],
    ["--gpu", "NVIDIA Thor", "--platform", "linux-aarch64", "--python", "3.12", "--json"],
    ["--gpu", "NVIDIA Thor", "--platform", "linux-aarch64", "--python", "3.12"],
    ORIN, [*ORIN, "--json"], [*ORIN, *JIDX], [*ORIN, *JIDX, "--json"], [*ORIN, *JIDX, "-q"],
    [*ORIN, *JIDX, "--shell", "fish"], [*ORIN, *JIDX, "--shell", "dotenv"],
    [*ORIN, "--jetson-index", "https://jetson.example/jp6/cu126/", "--vllm", "==0.7.3", "--json"],
    [*ORIN, *JIDX, "--vllm", ">=0.15"], [*ORIN, *JIDX, "--vllm", ">=0.15", "--json"],
    [*ORIN, *JIDX, "--source-build", "always"],
    ["--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64", "--python", "3.10", "--jetpack", "6.0", *JIDX],
    ["--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64", "--python", "3.8", "--jetpack", "5.1.2", "--json"],
    ["--gpu", "sm_87", "--platform", "linux-aarch64", "--python", "3.10"],
    ["--gpu", "sm_87", "--platform", "linux-x86_64", "--python", "3.10"],
    ["--gpu", "sm_90", "--driver", "580.95.05", "--platform", "linux-aarch64", "--python", "3.12", "--json"],
]
OTHERS: list[list[str]] = [
    ["--json", "matrix", "grid"], ["matrix", "grid"], ["matrix", "validate"], ["matrix", "show", "jetson", "--json"],
    ["matrix", "show", "gpus"],
    ["fleet", "plan", f"{_DATA}/fleet/inventory.json"], ["fleet", "plan", f"{_DATA}/fleet/inventory.json", "--json"],
    ["fleet", "plan", f"{_DATA}/fleet/inventory.json", *JIDX, "--json"],
    ["--help"], ["plan", "--help"], ["apply", "--help"], ["completion", "bash"],
]


_TREES = f"{_DATA}/probes/jetson"


def _detected_commands() -> list[list[str]]:
    """``detect`` and ``plan --gpu auto`` on the captured L4T trees (``ENV:`` words set the probe's environment)."""
    out: list[list[str]] = []
    for tree, gpu, py in (("orin-r36.4.3", "Orin (nvgpu)", "3.10"), ("orin-nano-r36.4.7", "Orin (nvgpu)", "3.10"),
                          ("orin-nx-r35.2.1", "Orin (nvgpu)", "3.8"), ("thor-r38.2.2", "NVIDIA Thor", "3.12"),
                          ("xavier-r35.4.1", "Xavier", "3.8")):
        env = [f"ENV:VRESOLVE_PROBE_ROOT={_TREES}/{tree}", f"ENV:VRESOLVE_GPUS={gpu}", f"ENV:VRESOLVE_PYTHON={py}",
               "ENV:VRESOLVE_PLATFORM=linux-aarch64", "ENV:VRESOLVE_NVIDIA_SMI=/nonexistent/nvidia-smi",
               "ENV:VRESOLVE_NO_NVML=1"]
        out += [[*env, "detect", "--json"], [*env, "plan", "--gpu", "auto", *JIDX],
                [*env, "plan", "--gpu", "auto", *JIDX, "--json"], [*env, "plan", "--gpu", "auto", "--json"]]
    return out


def _doctor_commands() -> list[list[str]]:
    """``doctor --no-env --log`` on the first few pastes of each kind the tests keep (sorted: the same set each time)."""
    out: list[list[str]] = []
    for sub, n in (("logs", 12), ("corpus", 12), ("heldout", 6)):
        pastes = sorted(p for p in (ROOT / _DATA / sub).glob("*.txt"))[:n]
        for p in pastes:
            rel = str(p.relative_to(ROOT))
            out.append(["doctor", "--no-env", "--log", rel])
            out.append(["doctor", "--no-env", "--log", rel, "--json"])
    return out


def commands() -> list[list[str]]:
    return [["plan", *a] for a in PLANS] + OTHERS + _detected_commands() + _doctor_commands()


def write(dest: Path, src: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vr-outputs.") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}
        env.update(VRESOLVE_CACHE_DIR="", SOURCE_DATE_EPOCH="1700000000", COLUMNS="110", LINES="50", NO_COLOR="1",
                   TERM="dumb", PYTHONPATH=str(src), LC_ALL="C.UTF-8", PYTHONHASHSEED="0")
        for i, argv in enumerate(commands()):
            # paths in the argv are relative to the checkout: make them absolute to the checkout that runs
            real = [a.replace(_DATA, str(ROOT / _DATA), 1) if _DATA in a else a for a in argv]
            extra = dict(a[4:].split("=", 1) for a in real if a.startswith("ENV:"))
            real = [a for a in real if not a.startswith("ENV:")]
            p = subprocess.run([sys.executable, "-m", "vresolve", *real], cwd=scratch, env={**env, **extra},
                               capture_output=True,
                               text=True, timeout=300, check=False)
            for suffix, text in (("argv", " ".join(argv) + "\n"), ("out", p.stdout), ("err", p.stderr),
                                 ("rc", f"{p.returncode}\n")):
                text = text.replace(str(src.parent), "<ROOT>").replace(str(ROOT), "<ROOT>").replace(scratch, "<CWD>")
                (dest / f"{i:03d}.{suffix}").write_text(text)
    print(f"{len(commands())} commands recorded in {dest}")


#: what a progress line says of the time it took (render/progress.py's Ticker): different on every run, so masked
_ELAPSED = re.compile(r"(: done in )\d+\.\d s$", re.MULTILINE)


def _timeless(text: str) -> str:
    return _ELAPSED.sub(r"\1<T> s", text)


def compare(old: Path, new: Path) -> int:
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    differ = []
    for name in names:
        a, b = old / name, new / name
        ta = _timeless(a.read_text()) if a.exists() else "<missing>\n"
        tb = _timeless(b.read_text()) if b.exists() else "<missing>\n"
        if ta != tb:
            differ.append(name)
            if len(differ) <= 5:
                argv = (old / (name.split(".")[0] + ".argv"))
                print(f"--- {name}: vresolve {argv.read_text().strip() if argv.exists() else '?'}")
                sys.stdout.writelines(list(difflib.unified_diff(ta.splitlines(True), tb.splitlines(True), n=1))[:40])
    total = len([n for n in names if n.endswith(".argv")])
    print(f"{total} commands, {len(names)} files: {len(differ)} differ" + (f": {' '.join(differ)}" if differ else ""))
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dest", type=Path)
    w.add_argument("--src", type=Path, default=ROOT / "src", help="the src/ of the checkout to run (default: this one)")
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args()
    if args.cmd == "write":
        write(args.dest, args.src.resolve())
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
