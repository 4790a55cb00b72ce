"""Every shell artefact, written by one quoting layer: a command line, the exports (bash, fish,
dotenv) and the source-build script. Values from the machine, the index or the user are quoted;
only ``$PWD``, ``$CUDA_HOME`` and ``$PATH`` in vresolve's own values expand.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..names import SHELLS
from ..plan.steps import Check, Expand, Step
from ..values import INVISIBLE

if TYPE_CHECKING:
    from ..names import Shell
    from ..plan import InstallPlan
    from ..plan.source import SourcePlan


def shell_line(argv: Sequence[str]) -> str:
    """A command line for bash: every word quoted (vresolve's own ``$PWD``-style values expand)."""
    return " ".join(sh_value(a) for a in argv)


_EXPANDED = ("$PWD", "$CUDA_HOME", "$PATH")  # the only variables vresolve's own values refer to

# what ends a comment's line, or what a terminal or editor would act on (values.INVISIBLE)
_UNPRINTABLE_RE = re.compile(f"[{INVISIBLE}]")


def escape_controls(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\n``, ``\\x1b``): inert for a
    file's syntax and for a terminal. ``lines=True`` keeps the line breaks (``\\n``) of a text of lines."""
    def esc(m: re.Match[str]) -> str:
        c = m[0]
        if lines and c == "\n":
            return c
        return repr(c)[1:-1] if ord(c) < 0x80 or ord(c) > 0x9f else f"\\x{ord(c):02x}"

    return _UNPRINTABLE_RE.sub(esc, text)


def comment(text: str, marker: str = "#") -> str:
    """One comment line of any artefact (bash, fish, dotenv, requirements, YAML, TOML): whatever
    ``text`` holds stays inside the comment."""
    return f"{marker} {escape_controls(text)}"


def _expanded_parts(v: str) -> list[str]:
    parts = [v]
    if isinstance(v, Expand):  # vresolve's own value: its variables expand
        for var in _EXPANDED:
            parts = [x for p in parts for x in _split_keep(p, var)]
    return [p for p in parts if p]


def sh_value(v: str) -> str:
    """One word for bash or POSIX sh: quoted, so that it is exactly ``v``; only an :class:`Expand`
    value's ``$PWD``/``$CUDA_HOME``/``$PATH`` expand."""
    parts = _expanded_parts(v)
    if not parts:
        return "''"
    return "".join(f'"{p}"' if p in _EXPANDED and isinstance(v, Expand) else shlex.quote(p) for p in parts)


_FISH_SAFE_RE = re.compile(r"[A-Za-z0-9_./:@%+=,-]+")


def fish_quote(text: str) -> str:
    """One fish word that is exactly ``text``. fish reads ``\\\\`` and ``\\'`` inside single quotes,
    so POSIX quoting (shlex) is not enough: a value ending in a backslash would open a string."""
    if _FISH_SAFE_RE.fullmatch(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_value(v: str) -> str:
    """One fish value; an :class:`Expand` value's variables expand (``$PATH`` is a list there)."""
    if isinstance(v, Expand) and len(_expanded_parts(v)) > 1 and v.endswith(":$PATH"):
        return " ".join(fish_value(Expand(x)) for x in v[: -len(":$PATH")].split(":")) + " $PATH"
    parts = _expanded_parts(v)
    if not parts:
        return "''"
    return "".join(f'"{p}"' if p in _EXPANDED and isinstance(v, Expand) else fish_quote(p) for p in parts)


_DOTENV_SAFE_RE = re.compile(r"[A-Za-z0-9_./:@%+=,-]*")


def dotenv_value(v: str) -> str:
    """A dotenv value: plain when it needs no quoting (every reader agrees on those), else in single
    quotes, which python-dotenv and compose read literally. ValueError for what single quotes cannot
    hold: a quote, a backslash, a control character, blanks at an end."""
    if _DOTENV_SAFE_RE.fullmatch(v) or isinstance(v, Expand):
        return v
    if "'" in v or "\\" in v or _UNPRINTABLE_RE.search(v) or v != v.strip():
        raise ValueError(f"{escape_controls(v)!r} cannot be written as a dotenv value "
                         "(it holds a quote, a backslash, a control character or blanks at an end)")
    return f"'{v}'"


def _split_keep(text: str, var: str) -> list[str]:
    out: list[str] = []
    for i, piece in enumerate(text.split(var)):
        if i:
            out.append(var)
        out.append(piece)
    return out


def exports_text(env: Sequence[tuple[str, str]], shell: Shell) -> str:
    """The exports in one shell's syntax (``--shell bash|fish|dotenv``); ValueError for a value the
    dialect cannot hold, and for a variable name that is not one."""
    for k, _ in env:
        if not _NAME_RE.fullmatch(k):
            raise ValueError(f"{escape_controls(k)!r} is not an environment variable name")
    if shell == "bash":
        return "".join(f"export {k}={sh_value(v)}\n" for k, v in env)
    if shell == "fish":
        return "".join(f"set -gx {k} {fish_value(v)}\n" for k, v in env)
    if shell == "dotenv":
        return "".join(f"{k}={dotenv_value(v)}\n" for k, v in env)
    raise ValueError(f"shell {shell!r} (expected one of: {', '.join(SHELLS)})")


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _line(argv: Sequence[str]) -> str:
    return shell_line(argv)


def render_script(p: SourcePlan, uv: str = "uv") -> str:
    """The recipe as one bash script; every value is shell-quoted (``bash -n`` accepts it). ``uv``: how its
    commands name uv (the human view names the uv that exists on this machine)."""
    from ..host import describe_gpus
    from ..plan.source import GIB_PER_NVCC_THREAD
    out = ["#!/usr/bin/env bash",
           comment(f"Build vLLM {p.vllm.version} from source for "
                   f"{describe_gpus(p.host.gpus) if p.archs else 'the CPU'}"),
           comment(f"torch {p.torch_version}" + (f", CUDA {p.torch_cuda}" if p.torch_cuda else "") + " -- made by vresolve"),
           "set -euo pipefail", ""]
    # everything before the clone (environment, torch, toolkit) runs before the exports
    clone = next(i for i, s in enumerate(p.steps) if s.tool == "git")
    for s in p.steps[:clone]:
        out += [comment(s.why), _line(_with_uv(s.argv, uv)), ""]
    out.append(comment("the build environment"))
    out += _export_lines(p.env, p.env_reasons)
    if p.max_jobs is None:  # (0: nothing is compiled, as with VLLM_USE_PRECOMPILED)
        out += [comment("MAX_JOBS and NVCC_THREADS from this machine: 2 nvcc threads on 8+ cores, a 4 GiB budget per"),
                comment("nvcc thread in 80 % of the available memory, no more jobs than cores / NVCC_THREADS"),
                "export NVCC_THREADS=$(( $(nproc) >= 8 ? 2 : 1 ))" if p.target == "cuda" else "NVCC_THREADS=1",
                "mem_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)",
                f"jobs=$(( mem_gib * 8 / 10 / ({GIB_PER_NVCC_THREAD} * NVCC_THREADS) ))",
                "cores=$(( $(nproc) / NVCC_THREADS ))",
                "export MAX_JOBS=$(( jobs < 1 ? 1 : (jobs > cores ? cores : jobs) ))"]
    if p.toolkit is not None and p.max_jobs != 0:
        out.append("unset CMAKE_CUDA_ARCHITECTURES  # torch's CMake ignores it; TORCH_CUDA_ARCH_LIST rules")
    out.append("")
    if p.checks:
        out.append(comment("checks before building (the seed's pitfalls: nvcc != torch's CUDA, an unsupported gcc)"))
        out += _check_lines(p.checks)
    return "\n".join(out + _step_lines(p.steps[clone:], uv) + _verify_lines(p.verify))


def _export_lines(env: Sequence[tuple[str, str]], reasons: Sequence[tuple[str, str]]) -> list[str]:
    out = []
    for (k, v), (_, why) in zip(env, reasons, strict=True):
        out += [comment(why), f"export {k}={sh_value(v)}"]
    return out


def _check_lines(checks: Sequence[Check]) -> list[str]:
    return [f"{_line(c.argv)} | grep -qF {shlex.quote(c.expect)} || "
            f"{{ echo {shlex.quote('vresolve: check failed: ' + c.name)} >&2; exit 1; }}" for c in checks] + [""]


def _step_lines(steps: Sequence[Step], uv: str = "uv") -> list[str]:
    out = []
    for s in steps:
        line = _line(_with_uv(s.argv, uv))
        out += [comment(s.why), f"(cd {shlex.quote(s.cwd)} && {line})" if s.cwd else line, ""]
    return out


def _with_uv(argv: Sequence[str], uv: str) -> tuple[str, ...]:
    """``argv`` with the program ``uv`` named as ``uv`` says (a path when no uv is on PATH)."""
    return (uv, *argv[1:]) if argv and argv[0] == "uv" else tuple(argv)


def _verify_lines(verify: Sequence[Check]) -> list[str]:
    return [comment("verify"), *(f"{_line(c.argv)} | tee /dev/stderr | grep -qF {shlex.quote(c.expect)}" for c in verify), ""]


def render_install_script(p: InstallPlan, uv: str = "uv") -> str:
    """A wheel plan with checks before its install (a wheel set of a target's own index) as one bash script: the
    checks (L4T's toolkit), the environment and the install, the exports, the checks after. ``uv``: as for
    :func:`render_script`."""
    r = p.resolution
    if r.index is not None:
        c, w = r.index, r.index.wheels
        title = (f"vLLM {w.vllm} + torch {w.torch} for {c.jetson.module.name} under JetPack {c.jetpack.version}, "
                 f"from the Jetson index's {w.path} path -- made by vresolve")
        first = "L4T's CUDA toolkit, before anything is installed"
    else:
        title = f"vLLM {r.vllm.version} + torch {r.torch.version}+{r.torch.variant.variant} -- made by vresolve"
        first = "checks before anything is installed"
    out = ["#!/usr/bin/env bash", comment(title), "set -euo pipefail", "", comment(first)]
    out += _check_lines(p.checks)
    out += _step_lines(p.steps, uv)
    out += [comment("the environment vLLM runs in"), *_export_lines(p.env, p.env_reasons), ""]
    return "\n".join(out + _verify_lines(p.verify))


def plan_commands(p: InstallPlan, uv: str = "uv") -> str:
    """What to run for a wheel plan, and nothing else (``plan -q``): its script when checks come before its install
    (they are part of what to run), else :func:`commands_text`."""
    if p.checks:
        return render_install_script(p) + "\n"
    return commands_text(p.steps, p.env, uv)


def commands_text(steps: Sequence[Step], env: Sequence[tuple[str, str]], uv: str = "uv") -> str:
    """What to run, and nothing else (``plan -q``): each step's command (uv named as the human plan names it),
    then the exports (bash)."""
    return "".join(f"{shell_line(_with_uv(s.argv, uv))}\n" for s in steps) + exports_text(env, "bash")
