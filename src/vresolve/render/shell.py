"""Every shell artefact, written by one quoting layer: a command line, the exports (bash, fish,
dotenv) and the source-build script. Values from the machine, the index or the user are quoted;
only ``$PWD``, ``$CUDA_HOME`` and ``$PATH`` in vresolve's own values expand.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..names import SHELLS

if TYPE_CHECKING:
    from ..names import Shell
    from ..plan.source import SourcePlan


def shell_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)


_EXPANDED = ("$PWD", "$CUDA_HOME", "$PATH")  # the only variables vresolve's own values refer to


def sh_value(v: str, fish: bool = False) -> str:
    """Quote a value; ``$PWD``/``$CUDA_HOME``/``$PATH`` in it still expand."""
    parts = [v]
    for var in _EXPANDED:
        parts = [x for p in parts for x in _split_keep(p, var)]
    if fish and len(parts) > 1 and v.endswith(":$PATH"):  # fish: PATH is a list
        return " ".join(sh_value(x, fish) for x in v[: -len(":$PATH")].split(":")) + " $PATH"
    return "".join(f'"{p}"' if p in _EXPANDED else shlex.quote(p) for p in parts if p)


def _split_keep(text: str, var: str) -> list[str]:
    out: list[str] = []
    for i, piece in enumerate(text.split(var)):
        if i:
            out.append(var)
        out.append(piece)
    return out


def exports_text(env: Sequence[tuple[str, str]], shell: Shell) -> str:
    """The exports in one shell's syntax (``--shell bash|fish|dotenv``)."""
    if shell == "bash":
        return "".join(f"export {k}={sh_value(v)}\n" for k, v in env)
    if shell == "fish":
        return "".join(f"set -gx {k} {sh_value(v, fish=True)}\n" for k, v in env)
    if shell == "dotenv":
        return "".join(f"{k}={v}\n" for k, v in env)
    raise ValueError(f"shell {shell!r} (expected one of: {', '.join(SHELLS)})")


def _line(argv: Sequence[str]) -> str:
    """Shell-quote each word; ``$PWD``/``$CUDA_HOME``/``$PATH`` in them still expand."""
    return " ".join(sh_value(a) for a in argv)


def render_script(p: SourcePlan) -> str:
    """The recipe as one bash script; every value is shell-quoted (``bash -n`` accepts it)."""
    from ..host import describe_gpus
    from ..plan.source import GIB_PER_NVCC_THREAD
    out = ["#!/usr/bin/env bash",
           f"# Build vLLM {p.vllm.version} from source for {describe_gpus(p.host.gpus) if p.archs else 'the CPU'}",
           f"# torch {p.torch_version}" + (f", CUDA {p.torch_cuda}" if p.torch_cuda else "") + " -- made by vresolve",
           "set -euo pipefail", ""]
    # everything before the clone (environment, torch, toolkit) runs before the exports
    clone = next(i for i, s in enumerate(p.steps) if s.tool == "git")
    for s in p.steps[:clone]:
        out += [f"# {s.why}", _line(s.argv), ""]
    out.append("# the build environment")
    for (k, v), (_, why) in zip(p.env, p.env_reasons, strict=True):
        out.append(f"# {why}")
        out.append(f"export {k}={sh_value(v)}")
    if p.max_jobs is None:  # (0: nothing is compiled, as with VLLM_USE_PRECOMPILED)
        out += ["# MAX_JOBS and NVCC_THREADS from this machine: 2 nvcc threads on 8+ cores, a 4 GiB budget per",
                "# nvcc thread in 80 % of the available memory, no more jobs than cores / NVCC_THREADS",
                "export NVCC_THREADS=$(( $(nproc) >= 8 ? 2 : 1 ))" if p.target == "cuda" else "NVCC_THREADS=1",
                "mem_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)",
                f"jobs=$(( mem_gib * 8 / 10 / ({GIB_PER_NVCC_THREAD} * NVCC_THREADS) ))",
                "cores=$(( $(nproc) / NVCC_THREADS ))",
                "export MAX_JOBS=$(( jobs < 1 ? 1 : (jobs > cores ? cores : jobs) ))"]
    if p.toolkit is not None and p.max_jobs != 0:
        out.append("unset CMAKE_CUDA_ARCHITECTURES  # torch's CMake ignores it; TORCH_CUDA_ARCH_LIST rules")
    out.append("")
    if p.checks:
        out.append("# checks before building (the seed's pitfalls: nvcc != torch's CUDA, an unsupported gcc)")
        for c in p.checks:
            out.append(f"{_line(c.argv)} | grep -qF {shlex.quote(c.expect)} || "
                       f"{{ echo {shlex.quote('vresolve: check failed: ' + c.name)} >&2; exit 1; }}")
        out.append("")
    for s in p.steps[clone:]:
        out.append(f"# {s.why}")
        out.append(f"(cd {shlex.quote(s.cwd)} && {_line(s.argv)})" if s.cwd else _line(s.argv))
        out.append("")
    out.append("# verify")
    for c in p.verify:
        out.append(f"{_line(c.argv)} | tee /dev/stderr | grep -qF {shlex.quote(c.expect)}")
    out.append("")
    return "\n".join(out)
