"""Time and peak memory of reading a big pasted log with ``vresolve.doctor.evidence.read_evidence``.

    python bench/doctor_log.py [--mb 200] [--keep FILE]

Writes a log of about ``--mb`` MB (vLLM engine lines, tracebacks, pip output, nvidia-smi and collect_env blocks,
a 5 MB line, NUL bytes, binary garbage, ANSI colours; the facts to find are planted once each, near the end),
then reads it in a fresh Python process, from a binary stream, and prints the wall time, the process's peak RSS
(``resource.getrusage``) after the imports and after the read, and whether the planted facts were found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

_LINES = (
    "INFO 05-16 18:10:{s:02d} [engine.py:{n}] Avg prompt throughput: {n}.{s} tokens/s, Avg generation throughput: "
    "{n}.7 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 4.{s}%",
    "(EngineCore_0 pid={n}) INFO 08-19 14:58:{s:02d} [gpu_worker.py:277] Available KV cache memory: 112.61 GiB",
    "\x1b[32mINFO\x1b[0m:     127.0.0.1:{n} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "  File \"/usr/local/lib/python3.12/dist-packages/vllm/engine/llm_engine.py\", line {n}, in step",
    "    outputs = self.model_executor.execute_model(execute_model_req={s})",
    "Requirement already satisfied: numpy in /usr/local/lib/python3.12/dist-packages (from vllm) (1.26.{s})",
    "[{n}/6896] Building CUDA object CMakeFiles/_C.dir/csrc/attention/attention_kernels.cu.o",
    "WARNING 05-16 18:10:{s:02d} [scheduler.py:{n}] Sequence group {n} is preempted by PreemptionMode.RECOMPUTE",
    "",
)
#: the facts planted once, each on its own line (the last matter: nothing earlier may crowd them out)
PLANTED = (
    "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |",
    "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |",
    "PyTorch version: 2.1.2+cu121",
    "Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)",
    "\x1b[31mImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: "
    "_ZN3c104cuda9SetDeviceEi\x1b[0m",
    "c++: fatal error: Killed signal terminated program cc1plus",
)
EXPECTED = {"driver": "535.104.05", "torch": "2.1.2+cu121", "gpu": "NVIDIA H100 80GB HBM3", "python": "3.10.12",
            "symbol": "_ZN3c104cuda9SetDeviceEi", "killed": "cc1plus"}


def write_log(path: Path, mb: int) -> int:
    rng = random.Random(1)
    target = mb * 1_000_000
    with path.open("wb") as f:
        f.write(b"x" * 5_000_000 + b" Driver Version: 999.99.99\n")  # a 5 MB line: its end must not be read
        f.write(b"\x00\x01\x02\xff\xfe binary \x00garbage\x00\n" * 3)
        block = "\n".join(_LINES[i % len(_LINES)].format(n=rng.randrange(10, 9999), s=rng.randrange(60))
                          for i in range(20_000)).encode() + b"\n"
        while f.tell() < target:
            f.write(block)
        f.write("\n".join(PLANTED).encode() + b"\n")
        return f.tell()


_CHILD = r"""
import json, resource, sys, time
from vresolve.doctor.evidence import read_evidence
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    e = read_evidence(f)
elapsed = time.perf_counter() - t
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
gpu = next((g.value.name for g in e.gpus if g.value.name), None)
texts = [s.text for name in ("driver", "dists", "symbols", "killed", "gpus") for s in getattr(e, name)]
print(json.dumps({
    "seconds": round(elapsed, 2), "peak_rss_mib_after_imports": round(before / 1024, 1),
    "peak_rss_mib": round(after / 1024, 1), "lines": e.lines, "cut_lines": e.cut_lines,
    "found": {"driver": str(e.value("driver")), "torch": e.torch, "gpu": gpu, "python": e.value("python"),
              "symbol": e.symbols[0].value.mangled if e.symbols else None,
              "killed": e.killed[0].value.program if e.killed else None},
    "control_characters_in_texts": any(c < " " or c == "\x7f" for t in texts for c in t),
    "dropped": dict(e.dropped)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="write the log here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big.log"
        size = write_log(path, args.mb)
        src = str(Path(__file__).resolve().parents[1] / "src")
        env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
        run = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env,
                             check=True)
    result = json.loads(run.stdout)
    result["bytes"] = size
    result["all_found"] = result["found"] == EXPECTED
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
