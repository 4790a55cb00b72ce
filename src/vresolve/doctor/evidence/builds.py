"""Build logs: that a build is going on, what killed it (the OOM killer: signal 9, exit status 137), the
architectures nvcc was asked for, and pip's isolated build environments.

Input::

    /usr/local/cuda/bin/nvcc -I/tmp/pip-build-env-dy69uemu/overlay/... -gencode arch=compute_75,code=sm_75 ...
    Killed                                                  (the line before ran nvcc: nvcc was killed)
    c++: fatal error: Killed signal terminated program cc1plus
    nvcc error   : 'cicc' died due to signal 9 (Kill signal)
    ninja: build stopped: subcommand failed.
    error: command '/usr/bin/gcc' failed with exit code 137
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .collect import Collector, apply_rules
from .lines import Line
from .model import MESSAGE, Killed, Nvcc

__all__ = ["BuildReader"]

HOW = "build"

Handler = Callable[[re.Match[str], Line, Collector], None]

_BUILD_RE = re.compile(
    r"\bnvcc\b.*\s-(?:c|o|gencode)\s|Building (?:CUDA|CXX|C) object|\[\d+/\d+\] (?:Building|Linking)|\bninja: "
    r"|\bcmake\b.*--build|running build_ext|Building (?:wheels?|editable) for|\bcc1plus\b|FAILED: \S+\.o\b"
    r"|pip-build-env-|builds-v\d+[/\\]\.tmp|Running setup\.py|\bbuild_wheel\.py\b|\bsetup\.py (?:build|build_ext|bdist_wheel)\b|error: command .* failed|\bmake(?:\[\d+\])?: \*\*\*|recipe for target"
    # a container image's build (docker build, compose's build): its RUN steps install and compile
    r"|\bfailed to build\b.*\bThe command '/bin/sh -c |The command '/bin/sh -c .*' returned a non-zero code")
_BUILD_NEEDLES = ("nvcc", "Building", "build_wheel.py", "ninja", "cmake", "build_ext", "cc1plus", "FAILED:", "pip-build-env", "builds-v",
                  "setup.py", "error: command", "make", "recipe for target", "The command '/bin/sh")
_COMMAND_RE = re.compile(r"^\s*(?:\S*/)?(nvcc|gcc|g\+\+|c\+\+|cc|clang\+*|ptxas|cicc|ld|ninja|cmake)\s")
_BUILD_ENV_RE = re.compile(r"(/tmp/pip-build-env-\w+/overlay|[A-Za-z]:\\[^\"\s]*?\\pip-build-env-\w+\\overlay"
                           # uv's isolated build environments: ~/.cache/uv/builds-v0/.tmpEHrRRA (Windows: ...\uv\cache\...)
                           r"|(?:[A-Za-z]:)?[^\"\s]*?[/\\]uv[/\\](?:cache[/\\])?builds-v\d+[/\\]\.tmp\w+)")


def _killed(out: Collector, line: Line, program: str | None, how: str = "signal 9") -> None:
    out.add("killed", Killed(program=program, how=how, in_build=out.in_build), line, MESSAGE, HOW)


def _terminated(m: re.Match[str], line: Line, out: Collector) -> None:
    _killed(out, line, m["program"])


def _alone(m: re.Match[str], line: Line, out: Collector) -> None:
    """``Killed`` on a line of its own: the shell's word for signal 9; the program is the one the line before ran."""
    command = _COMMAND_RE.match(out.last_command) if out.near("command", line, 2) else None
    _killed(out, line, command[1] if command else None)


def _exit_137(m: re.Match[str], line: Line, out: Collector) -> None:
    _killed(out, line, None, "exit status 137")


def _stopped(m: re.Match[str], line: Line, out: Collector) -> None:
    out.in_build = True
    _killed(out, line, "ninja", "build stopped")


def _gencode(m: re.Match[str], line: Line, out: Collector) -> None:
    for code in re.finditer(r"(?:-gencode[= ]|--generate-code=)arch=compute_\w+,code=\[?((?:sm|compute)_\w+)",
                            line.body):
        out.add("gencode", code[1], line, MESSAGE, HOW, code.span())


def _cmake_cuda(m: re.Match[str], line: Line, out: Collector) -> None:
    version = m["version"]
    out.add("nvcc", Nvcc(release=".".join(version.split(".")[:2]), version=version if version.count(".") == 2 else None),
            line, MESSAGE, "cmake", m.span())


def _nvcc_path(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("nvcc", Nvcc(release=m["version"]), line, MESSAGE, "path", m.span())


def _cmake_python(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", m["version"], line, MESSAGE, "cmake", m.span())


_UNIT = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}


def _top_memory(m: re.Match[str], line: Line, out: Collector) -> None:
    unit = _UNIT[m["unit"]]
    out.add("memory", (float(m["total"]) * unit, (float(m["free"]) + float(m["cache"])) * unit), line, MESSAGE, "top",
            m.span())


#: advice or a condition before the words ("set MAX_JOBS=4 to avoid OOM", "if you run out of memory, ..."): not said
#: of what happened
_OOM_ADVICE_RE = re.compile(r"\b(?:avoid(?:ing)?|prevent(?:ing)?|if(?: you)?|in case(?: of)?|when(?: you)?|unless)"
                            r"\b[^.;:]{0,24}$", re.IGNORECASE)


#: a word before the match that denies it ("it does not use all the memory", "never runs out of RAM")
_OOM_DENIED_RE = re.compile(r"\b(?:not|never|no longer|without)\b[^.;:]{0,16}$|n't\b[^.;:]{0,16}$", re.IGNORECASE)
#: a path in the line (its directories, "/usr/local/cuda/include/...", say nothing of which memory)
_PATH_RE = re.compile(r"\S*[/\\]\S*")


def _oom_words(m: re.Match[str], line: Line, out: Collector) -> None:
    before = line.body[:m.start()]
    if _OOM_ADVICE_RE.search(before) or _OOM_DENIED_RE.search(before):
        return
    lower = _PATH_RE.sub(" ", line.lower)
    if not any(word in lower for word in ("cuda", "gpu", "vram", "device", "torch.", "outofmemoryerror")):
        out.add("oom_words", m[0], line, MESSAGE, HOW, m.span())


#: the host's memory said used up in a user's words: "it's using all available RAM (16GB), then all available SWAP",
#: "eats up all the memory", "runs out of RAM", "exhausts the RAM and swap"
_MEMORY_USED_UP_RE = re.compile(
    r"\b(?:(?:us(?:es|ing|ed?)|eat(?:s|ing)?|ate|consum(?:es|ing|ed?)|exhaust(?:s|ing|ed)?|fill(?:s|ing|ed)?"
    r"|tak(?:es|ing|e)|took|max(?:es|ing|ed)?)\s+(?:up\s+|out\s+)?(?:all|100\s?%)\s+(?:of\s+)?"
    r"(?:the\s+|my\s+|its\s+|available\s+|system\s+|of\s+the\s+){0,2}(?:RAM|memory|swap)"
    r"|(?:runs?|running) out of (?:RAM|memory|swap)|ran out of swap"
    r"|exhaust(?:s|ing|ed)? (?:the |all )?(?:RAM|memory|swap))\b", re.IGNORECASE)


def _jobs(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("build_jobs", int(m["n"]), line, MESSAGE, HOW, m.span())


def _threads(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("build_jobs", int(m["n"]), line, MESSAGE, HOW, m.span("flag"))  # (cited by the flag, not the command)


def _build_env(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("build_env_paths", m[1], line, MESSAGE, HOW, m.span())
    out.mark("build-env", line)


RULES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("Killed", re.compile(r"Killed signal terminated program (?P<program>\S+)"), _terminated),
    ("Killed", re.compile(r"internal compiler error: Killed \(program (?P<program>\w+)\)"), _terminated),
    ("signal 9", re.compile(r"['\"]?(?P<program>[\w+]+)['\"]? died due to signal 9"), _terminated),
    ("illed", re.compile(r"\b(?P<program>nvcc|ptxas|cicc|cc1plus)\b.*\b[Kk]illed\b(?! signal terminated)"),
     _terminated),
    ("Killed", re.compile(r"^\s*(?:#\d+ [\d.]+\s+)?Killed\s*$"), _alone),  # (BuildKit's "#10 4196.7 " before it)
    ("137", re.compile(r"(?:exit status|exit code|exited with code|exit code:)\s*137\b"), _exit_137),
    ("ninja: build stopped", re.compile(r"ninja: build stopped"), _stopped),
    ("arch=compute_", re.compile(r"arch=compute_"), _gencode),
    ("CUDA compiler identification", re.compile(r"The CUDA compiler identification is NVIDIA (?P<version>\d+\.\d+(?:\.\d+)?)"),
     _cmake_cuda),
    ("Found CUDA", re.compile(r"Found CUDA(?:Toolkit)?: .*\(found (?:suitable )?version \"(?P<version>\d+\.\d+(?:\.\d+)?)"),
     _cmake_cuda),
    ("Found Python", re.compile(r"Found Python\d?: .*\(found (?:suitable )?version \"(?P<version>\d+\.\d+(?:\.\d+)?)"),
     _cmake_python),
    # a CUDA toolkit's own nvcc, by the directory NVIDIA's installers name after its version (/usr/local/cuda-8.0)
    ("/bin/nvcc", re.compile(r"[/\\]cuda-(?P<version>\d{1,2}\.\d)[/\\]bin[/\\]nvcc\b"), _nvcc_path),
    # the toolkit a build uses, by CUDA_HOME (or CUDA_PATH) naming a toolkit's directory: export CUDA_HOME=/usr/local/cuda-11.8
    ("CUDA_", re.compile(r"\bCUDA_(?:HOME|PATH)\s*[=:]\s*['\"]?[^\s'\"]*?[/\\]cuda-(?P<version>\d{1,2}\.\d)(?![\w.])"),
     _nvcc_path),
    ("pip-build-env-", _BUILD_ENV_RE, _build_env),
    ("builds-v", _BUILD_ENV_RE, _build_env),
    ("Mem", re.compile(r"(?P<unit>KiB|MiB|GiB) Mem\s*:\s*(?P<total>[\d.]+) total,\s*(?P<free>[\d.]+) free,"
                       r"\s*[\d.]+ used,\s*(?P<cache>[\d.]+) buff/cache"), _top_memory),
    ("OOM", re.compile(r"\bOOM\b(?:[- ](?:[Ee]rror|[Kk]ill(?:ed|er)?))?"), _oom_words),
    ("memory", re.compile(r"\b(?:out of (?:host |system )?memory|ran out of (?:RAM|memory)|Cannot allocate memory"
                          r"|virtual memory exhausted)\b",
                          re.IGNORECASE), _oom_words),
    *((needle, _MEMORY_USED_UP_RE, _oom_words) for needle in ("RAM", "memory", "Memory", "swap", "SWAP")),
    ("MAX_JOBS", re.compile(r"\bMAX_JOBS=(?P<n>\d{1,4})\b"), _jobs),
    ("-j", re.compile(r"\b(?:cmake|make|ninja)\b[^\n]*?[\s'\"]-j\s?=?(?P<n>\d{1,4})\b"), _jobs),
    # nvcc compiling several architectures at once (--threads, vLLM's and flash-attn's NVCC_THREADS): each thread a
    # front end and cicc of its own in memory (a wrapped command line: its -gencode flags on the line)
    ("--threads", re.compile(r"(?:\bnvcc\b|-gencode[= ])[^\n]*?\s(?P<flag>--threads[= ](?P<n>\d{1,3}))\b"), _threads),
    ("NVCC_THREADS", re.compile(r"\bNVCC_THREADS=(?P<n>\d{1,3})\b"), _jobs),
)


def _cuda_tag(tag: str) -> str:
    """A wheel tag's CUDA (``cu111`` 11.1, ``cu92`` 9.2, ``cu128`` 12.8) or ``cpu``."""
    digits = tag[2:] if tag.startswith("cu") else ""
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else "cpu"


def _ext_build(m: re.Match[str], line: Line, out: Collector) -> None:
    torch = m["torch"] or ""
    if not torch and m.groupdict().get("pt"):  # PyG's +pt113 / +pt21: the major's digit, then the minor's
        pt = m["pt"]
        torch = f"{pt[0]}.{pt[1:]}"
    out.add("ext_builds", (torch, _cuda_tag(m["cu"])), line, MESSAGE, HOW, m.span())


#: the torch and CUDA a third-party extension's wheel was built for, as its wheel index or file name says them
_EXT_BUILD_RULES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    # PyG's find-links pages (torch-scatter, -sparse, -cluster, pyg-lib): .../whl/torch-1.8.0+cu111.html
    ("torch-", re.compile(r"\btorch-(?P<torch>\d+\.\d+\.\d+)\+(?P<cu>cu\d{2,3}|cpu)\.html\b"), _ext_build),
    # OpenMMLab's and detectron2's: .../mmcv/dist/cu111/torch1.9.0/index.html, .../wheels/cu111/torch1.9/index.html
    ("/torch", re.compile(r"/(?P<cu>cu\d{2,3}|cpu)/torch(?P<torch>\d+\.\d+(?:\.\d+)?)/"), _ext_build),
    # a wheel's local tag: PyG's torch_scatter-2.1.2+pt21cu121, flash-attn's flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE
    ("+pt", re.compile(r"\b[A-Za-z][\w.]*-\d[\w.]*\+pt(?P<pt>\d{2,3})(?P<cu>cu\d{2,3}|cpu)(?P<torch>)"), _ext_build),
    ("torch", re.compile(r"\b[A-Za-z][\w.]*-\d[\w.]*\+(?P<cu>cu\d{2,3})torch(?P<torch>\d+\.\d+)"), _ext_build),
)


class BuildReader:
    """Build lines: they set the build context, and hold kills, gencode flags and build environments."""

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        for needle in _BUILD_NEEDLES:  # (a loop, not any(): this runs for every line of a big log)
            if needle in body:
                if _BUILD_RE.search(body):
                    out.in_build = True
                    out.kinds.add("build_log")
                    out.mark("build-line", line)
                break
        if _COMMAND_RE.match(body):
            out.last_command = body
            out.mark("command", line)
        found = apply_rules(_EXT_BUILD_RULES, line, out) if "torch" in body or "+pt" in body else False
        return apply_rules(RULES, line, out) or found
