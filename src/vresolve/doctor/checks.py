"""The environment and the machine judged against the matrix: each problem a Finding with a cause code
from DESIGN.md's vocabulary, the evidence, and a fix (a reinstall carries the corrected plan).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from packaging.version import Version

from ..host import EnvReport, Host, HostGpu, TorchRuntime
from ..matrix import KnownIssue, Matrix
from ..values import core_extension, public_version
from .facts import (
    REINSTALL_CAUSES,
    Finding,
    dedupe,
    is_source_tree,
    needs_libcuda,
    torch_pin,
    with_version,
)
from .judge import Facts, judged
from .logs import from_issue, issue_for, match_log
from .pasted import classify
from .predicates import jetson_here


def diagnose(host: Host, matrix: Matrix, env: EnvReport | None = None, *,
             shadows: Sequence[tuple[str, Sequence[str]]] = (), log: str | None = None,
             reinstall: Sequence[str] = (), unknown: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings about this environment and/or a log.

    ``reinstall``: the shell lines of the corrected plan (from the resolver), appended to the fix
    of every finding whose cure is a reinstall. ``unknown``: the facts that hold a default, not an
    observation (pasted text that does not show them: ``torch.cuda``, ``torch.available``); the
    checks that need one of them do not run.
    """
    out = _Findings(("\nReinstall into a fresh environment with the plan vresolve computes for this machine:\n  "
                     + "\n  ".join(reinstall)) if reinstall else "")
    gpus = [g for g in host.gpus if g.compute_capability is not None]
    judged(Facts(host=host, matrix=matrix, env=env, unknown=unknown,
                 shadows=tuple((d, tuple(libs)) for d, libs in shadows)), out.add)  # the rows judged from facts
    if env is not None:
        _environment(host, matrix, env, gpus, out.add, unknown)
    if log:
        _log(matrix, log, env, unknown, out)
    return dedupe(out.findings)


class _Findings:
    """The findings so far; a reinstall's fix carries the corrected plan."""

    def __init__(self, plan_text: str) -> None:
        self.plan_text = plan_text
        self.findings: list[Finding] = []

    def add(self, cause: str, severity: str, title: str, explanation: str, fix: str,
            evidence: Sequence[str] = (), facts: tuple[str, ...] = ()) -> None:
        if cause in REINSTALL_CAUSES and self.plan_text and severity == "error":
            fix += self.plan_text
        self.findings.append(Finding(cause=cause, severity=severity, title=title, explanation=explanation, fix=fix,
                                     evidence=tuple(evidence), facts=facts))


#: a CUDA runtime library the loader did not find, and its CUDA major: ``libcudart.so.12``, Windows'
#: ``cudart64_110.dll`` (11.0's; 12 and later name the major alone: ``cudart64_12.dll``)
_RUNTIME_LIB_RE = re.compile(r"lib(?:cudart|cublas|cublasLt|nvrtc|cusparse|cufft|curand|cusolver|nvJitLink)\.so\.(\d+)"
                             r"|(?<![\w.])(?:cudart|cublas|cublasLt|nvrtc|cusparse|cufft|curand|cusolver|nvJitLink)"
                             r"64_(\d{1,3})(?:_\d+)?\.dll")
#: vLLM asking for the library: its package in a frame, an import of it, its compiled module
_VLLM_ASKS_RE = re.compile(r"[/\\]vllm[/\\]|\b(?:from|import) vllm\b|\bvllm\._C\b")


def runtime_library_major(log: str) -> int | None:
    """The CUDA major of the first CUDA runtime library the log names (see ``_RUNTIME_LIB_RE``); None when none."""
    m = _RUNTIME_LIB_RE.search(log)
    if m is None:
        return None
    digits = m[1] or m[2]
    return int(digits[:-1] if m[2] and len(digits) == 3 else digits)


def lone_runtime_library(major: int, torch_cuda: str | None, cuda_torch_known: bool, vllm_asks: bool) -> bool:
    """A missing CUDA runtime library of CUDA ``major`` is a library the loader does not find (not another CUDA
    major's runtime) when torch's CUDA is that major, or when nothing shows another major: neither a torch built
    for another CUDA major nor vLLM asking for it."""
    built = public_version(torch_cuda) if cuda_torch_known and torch_cuda else None
    torch_major = built.major if built is not None else None
    if torch_major == major:
        return True
    return torch_major is None and not vllm_asks


def _log(matrix: Matrix, log: str, env: EnvReport | None, unknown: frozenset[str], out: _Findings) -> None:
    """The log's lines matched against the known issues; a CUDA-major mismatch set against this environment: a
    lone missing runtime library where nothing shows another CUDA major."""
    torch_known = env is not None and env.torch is not None and "torch.cuda" not in unknown
    torch_cuda = env.torch.cuda if torch_known and env is not None and env.torch is not None else None
    for issue, ev in match_log(log, matrix.known_issues):
        extra = out.plan_text if issue.cause in REINSTALL_CAUSES and issue.severity == "error" else ""
        found = from_issue(issue, ev, "log", extra)
        wanted = runtime_library_major(log) if issue.id == "cuda-runtime-major-mismatch" else None
        asks = wanted is not None and (bool(_VLLM_ASKS_RE.search(log)) or _vllm_cuda_major(matrix, env) == wanted)
        if wanted is not None and lone_runtime_library(wanted, torch_cuda, torch_known, asks):
            k = _row(matrix, "cuda-runtime-library-not-found", "library-not-found")
            found = from_issue(k, (*ev, *((f"torch.version.cuda = {torch_cuda}",) if torch_cuda else ())), "log")
        elif wanted is not None and torch_cuda:
            # set against this environment: which side is the other CUDA major
            found = Finding(cause=found.cause, severity=found.severity, title=found.title,
                            explanation=found.explanation + f" Here, torch is built with CUDA {torch_cuda}; the "
                            f"failing library asks for CUDA {wanted}'s runtime, so the other package is the odd one "
                            "out.", fix=found.fix, evidence=(*found.evidence, f"torch.version.cuda = {torch_cuda}"),
                            source="log")
        out.findings.append(found)


def _vllm_cuda_major(matrix: Matrix, env: EnvReport | None) -> int | None:
    """The CUDA major of the installed vLLM release's wheel (its local tag's, ``+cu118``, else the release's)."""
    vllm = env.module("vllm") if env is not None else None
    version = public_version(vllm.version) if vllm is not None and vllm.version else None
    release = matrix.vllm_release(version) if version is not None else None
    if vllm is None or release is None:
        return None
    tag = re.fullmatch(r"cu(\d+?)\d", (vllm.version or "").partition("+")[2])
    return int(tag[1]) if tag else release.cuda.major if release.cuda is not None else None


def _row(matrix: Matrix, row_id: str, cause: str) -> KnownIssue:
    """The known-issues row of this id, else the first of its cause (a matrix without it)."""
    return next((k for k in matrix.known_issues if k.id == row_id), None) or issue_for(matrix, cause)


def _extensions(matrix: Matrix, host: Host, env: EnvReport) -> tuple[tuple[str, ...], str]:
    """(the compiled modules the installed vLLM release's wheel ships on this platform, its main kernel module).

    Read off the wheel's file list in the matrix; () when the release is not in the matrix, and on a Jetson, whose
    vLLM is a build of its own (the Jetson index's, or one from source), not the release's wheel (then the main
    module is judged from what the installed package holds).
    """
    vllm = env.module("vllm")
    version = public_version(vllm.version) if vllm is not None and host.platform.l4t is None else None
    release = matrix.vllm_release(version) if version is not None else None
    wheels = release.wheels_for(host.platform.tag) if release is not None else ()
    expected = wheels[0].extensions if wheels else ()
    return expected, core_extension(expected or env.vllm_extensions)


def _other_extensions(matrix: Matrix, env: EnvReport, expected: Sequence[str], core: str, no_driver: bool,
                      emit: Callable[..., None]) -> None:
    """vLLM's other compiled modules: the ones its wheel ships but this install lacks, and those that fail."""
    missing = [m for m in expected if m != core and m not in env.vllm_extensions]
    if missing:
        k = issue_for(matrix, "optional-kernel-missing")
        emit("optional-kernel-missing", "warning", f"this vLLM lacks {len(missing)} compiled module(s) its wheel ships",
             "The release's wheel ships these kernel libraries; this install (a source build, or a partial one) has "
             "none of them, so the features that use them fall back or fail at run time.",
             k.fix,
             tuple(f"{m}: not in the installed package" for m in missing))
    for name in env.vllm_extensions:
        rep = env.module(name)
        if name == core or rep is None or not rep.error or (no_driver and needs_libcuda(rep)):
            continue
        hit = classify(matrix, rep.traceback or rep.error)  # a known failure, or None
        emit(hit.cause if hit else "optional-kernel-missing", "warning", f"{name} does not load",
             (hit.explanation if hit else f"vLLM's compiled module {name} fails to load; the features that use it "
                                          "fail."),
             (hit.fix if hit else "Reinstall vLLM's wheel for this torch."), (rep.error,))


def _environment(host: Host, matrix: Matrix, env: EnvReport, gpus: Sequence[HostGpu],
                 emit: Callable[..., None], unknown: frozenset[str] = frozenset()) -> None:
    """torch, vLLM and its compiled modules, and the companions, as the environment imported them."""
    if env.error:
        emit("library-not-found", "warning", "The environment could not be inspected", env.error,
             "Run the interpreter by hand: python -c 'import torch, vllm'", [env.python])
        return
    torch_mod = env.module("torch")
    if torch_mod is not None and torch_mod.error and "No module named 'torch'" not in torch_mod.error:
        k = classify(matrix, torch_mod.traceback or torch_mod.error)
        emit(k.cause if k else "library-not-found", "error", "torch does not import",
             (k.explanation if k else "importing torch fails in this environment."),
             (k.fix if k else "Reinstall torch."), (torch_mod.error,))
    if env.torch is not None:
        if "torch.cuda" not in unknown and host.platform.l4t is not None:
            _generic_torch_on_jetson(host, matrix, env.torch, emit)  # (the rest of torch's checks are rows)
    _vllm(host, matrix, env, gpus, emit)


def _generic_torch_on_jetson(host: Host, matrix: Matrix, torch: TorchRuntime, emit: Callable[..., None]) -> bool:
    """A Jetson on L4T's own CUDA (Orin, Xavier) whose torch is not built for that CUDA: a CPU build, or a generic
    aarch64 (server ARM) build of another CUDA, from PyPI or the PyTorch index. Said once, with the Jetson's way
    (the Jetson index's wheels for its JetPack); True when said."""
    from ..resolve import Request
    from ..resolve.jetson import index_wheels

    here = jetson_here(host, matrix)
    if here is None:
        return False
    module, jp, how = here
    built = Version(torch.cuda) if torch.cuda and re.fullmatch(r"\d+\.\d+", torch.cuda) else None
    if built is not None and (built.major, built.minor) == (jp.cuda.major, jp.cuda.minor):
        return False
    sets = index_wheels(matrix, module, jp, Request())
    way = (f"Install the wheels built for JetPack {jp.version}: vresolve plan --gpu auto --jetson-index URL (the "
           "Jetson AI Lab index" + (f"; its {sets[0].path} path has vLLM {sets[0].vllm} with torch {sets[0].torch}"
                                    if sets else "") + "), into a fresh environment; or vresolve plan --gpu auto for "
           "the other ways (NVIDIA's torch for the JetPack and a source build).")
    what = "a CPU build" if built is None else f"built for CUDA {built}"
    emit("cpu-only-build" if built is None else "cuda-variant-mismatch", "error",
         f"torch {torch.version} is {what}, not for this Jetson's CUDA {jp.cuda}",
         f"{module} under JetPack {jp.version} runs L4T's own CUDA {jp.cuda}. The aarch64 torch of PyPI and the "
         "PyTorch index is built for server ARM (SBSA) CUDA or for the CPU: on a Jetson it does not see the GPU, or "
         "fails at its first kernel. Only torch built for the JetPack (NVIDIA's, or the Jetson index's) runs here.",
         way, (f"torch {torch.version}, torch.version.cuda = {torch.cuda}", f"{how}: JetPack {jp.version}, CUDA {jp.cuda}"))
    return True


def _vllm(host: Host, matrix: Matrix, env: EnvReport, gpus: Sequence[HostGpu], emit: Callable[..., None]) -> None:
    """vLLM's main kernel module and the others its wheel ships; the torch its wheel pins."""
    torch = env.torch
    vllm = env.module("vllm")
    expected, core = _extensions(matrix, host, env)
    vllm_c = env.module(core)
    no_driver = host.driver.version is None and not gpus
    if vllm is not None and vllm.origin:
        tree = is_source_tree(vllm.origin)
        c_failed = vllm_c is not None and bool(vllm_c.error)
        driverless = vllm_c is not None and c_failed and no_driver and needs_libcuda(vllm_c)
        if driverless:
            c_failed = False
            emit("library-not-found", "info", f"{core} needs the NVIDIA driver, absent on this machine",
                 f"vLLM's CUDA kernels ({core}) link against the driver's libcuda.so.1; this machine has no NVIDIA "
                 "driver, so they cannot load here. They are installed, and load on a machine with the driver.",
                 "Nothing to do here; run vLLM on a machine with an NVIDIA GPU and driver.",
                 (vllm_c.error or "",) if vllm_c else ())
        if tree and c_failed:
            k = issue_for(matrix, "source-tree-shadowing")
            emit("source-tree-shadowing", "error", "A vLLM source checkout shadows the installed vLLM",
                 f"`import vllm` loads {vllm.origin}, a source tree whose compiled extension was never built, so "
                 f"{core} is missing there even if an installed vLLM has it.",
                 k.fix,
                 (f"vllm from {vllm.origin}", vllm_c.error or "" if vllm_c else "", f"sys.path[0] = {env.sys_path[0]!r}"
                  if env.sys_path else ""))
        elif c_failed:
            assert vllm_c is not None
            text = vllm_c.traceback or vllm_c.error or ""
            if torch is not None and torch.cuda is None and f"No module named '{core}'" in text:
                k = issue_for(matrix, "cpu-only-build")
                emit("cpu-only-build", "error", "vLLM has no compiled extension for this torch",
                     k.explanation,
                     k.fix, (vllm_c.error or "", f"torch {torch.version}, CUDA None"))
            else:
                _core_fails(matrix, env, core, text, vllm_c.error or "", emit)
        if not tree:
            _other_extensions(matrix, env, expected, core, no_driver, emit)


def _core_fails(matrix: Matrix, env: EnvReport, core: str, text: str, error: str,
                emit: Callable[..., None]) -> None:
    """vLLM's main module fails beside a CUDA torch: a known failure; a module missing although torch is the one
    vLLM pins (the install lacks it); else torch's ABI, the usual cause."""
    hit = classify(matrix, text)
    pin = torch_pin(env.requirement_lines("vllm"))
    torch = env.torch
    if hit is None and f"No module named '{core}'" in text and torch is not None and pin is not None \
            and pin == public_version(torch.version):
        k = issue_for(matrix, "incomplete-install")
        vllm = env.module("vllm")
        emit(k.cause, "error", k.title, k.explanation, with_version(k.fix, vllm.version if vllm else None),
             (error, f"vllm requires torch=={pin}; installed torch {torch.version} "
                                                     f"(CUDA {torch.cuda})"))
        return
    abi = issue_for(matrix, "torch-abi-mismatch")
    emit(hit.cause if hit else abi.cause, "error", hit.title if hit else f"{core} does not load",
         hit.explanation if hit else "vLLM's compiled extension fails to load with this torch.",
         hit.fix if hit else abi.fix, (error,))
