"""Diagnose a broken environment or an error log: Host + Matrix + reports -> Findings. Pure.

The inputs come from detection (:func:`vresolve.detect.detect_host`, ``probe_environment``,
``library_shadows``) and from the user (a log); this module only compares them with the
matrix. Each finding has a cause code from DESIGN.md's vocabulary, a severity, what happened
in plain words, the evidence, and a fix with exact commands; where the fix is a reinstall it
carries the corrected plan from the resolver.

Log lines are matched against the known-issues table (``compat_matrix/known_issues.yaml``),
whose signatures tell look-alikes apart (an undefined symbol in torch's namespaces versus a
vLLM kernel built for other architectures; ``No module named 'vllm._C'`` with a CPU torch
versus with a source checkout first on ``sys.path``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from .host import EnvReport, Host, HostGpu, ModuleReport
from .matrix import KnownIssue, Matrix
from .values import ArchList, Capability, core_extension, exact_pin, public_version

__all__ = ["Finding", "SEVERITIES", "diagnose", "check_lock", "match_log", "observations", "worst_exit_code"]

SEVERITIES = ("error", "warning", "info")
REINSTALL_CAUSES = ("cpu-only-build", "torch-abi-mismatch", "cuda-variant-mismatch", "arch-not-in-build",
                    "companion-mismatch", "installer-replaced-torch")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    cause: str
    severity: str  # "error" | "warning" | "info"
    title: str
    explanation: str
    fix: str
    evidence: tuple[str, ...] = ()
    source: str = "environment"  # "environment" | "log" | "lock"

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "severity": self.severity, "title": self.title,
                "explanation": self.explanation, "fix": self.fix, "evidence": list(self.evidence),
                "source": self.source}


def worst_exit_code(findings: Sequence[Finding]) -> int:
    """1 when any finding is an error, else 0."""
    return 1 if any(f.severity == "error" for f in findings) else 0


# --------------------------------------------------------------------------- logs


def _evidence(text: str, match: re.Match[str], context: int = 1) -> tuple[str, ...]:
    lines = text.splitlines()
    line_no = text.count("\n", 0, match.start())
    lo, hi = max(0, line_no - context), min(len(lines), line_no + context + 1)
    return tuple(line.rstrip()[:300] for line in lines[lo:hi] if line.strip())


def match_log(text: str, issues: Sequence[KnownIssue]) -> list[tuple[KnownIssue, tuple[str, ...]]]:
    """Every known issue whose signature matches the log, with the lines that show it, in log order."""
    hits = []
    for issue in issues:
        for pattern in issue.patterns():
            m = pattern.search(text)
            if m:
                hits.append((m.start(), issue, _evidence(text, m)))
                break
    hits.sort(key=lambda h: h[0])
    return [(issue, ev) for _, issue, ev in hits]


def _from_issue(issue: KnownIssue, evidence: Sequence[str], source: str, fix_extra: str = "") -> Finding:
    return Finding(cause=issue.cause, severity=issue.severity, title=issue.title, explanation=issue.explanation,
                   fix=issue.fix + fix_extra, evidence=tuple(evidence), source=source)


# --------------------------------------------------------------------------- the environment


def _caps_covered(arch_list: Sequence[str], cc: Capability) -> bool:
    """torch.cuda.get_arch_list() covers cc (the rule of :meth:`ArchList.covers`)."""
    return ArchList.from_torch(arch_list).covers(cc)


def _is_source_tree(origin: str | None) -> str | None:
    """The checkout root when a module's origin is a vLLM source tree rather than an installed package."""
    if not origin:
        return None
    pkg = os.path.dirname(origin) if origin.endswith(".py") else origin
    root = os.path.dirname(pkg)
    if any(part in ("site-packages", "dist-packages") for part in root.split(os.sep)):
        return None
    markers = ("setup.py", "pyproject.toml", "CMakeLists.txt", "csrc")
    return root if sum(os.path.exists(os.path.join(root, m)) for m in markers) >= 2 else None


def _torch_pin(lines: Sequence[str]) -> Version | None:
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.lower() != "torch":
            continue
        pin = exact_pin(req.specifier)
        return Version(pin.public) if pin is not None else None
    return None


def _issue(matrix: Matrix, cause: str) -> KnownIssue | None:
    return next((k for k in matrix.known_issues if k.cause == cause), None)


def _classify(matrix: Matrix, text: str) -> KnownIssue | None:
    hits = match_log(text, matrix.known_issues)
    return hits[0][0] if hits else None


def diagnose(host: Host, matrix: Matrix, env: EnvReport | None = None, *,  # noqa: C901 (issue 12: to split)
             shadows: Sequence[tuple[str, Sequence[str]]] = (), log: str | None = None,
             reinstall: Sequence[str] = ()) -> list[Finding]:
    """Findings about this environment and/or a log.

    ``reinstall``: the shell lines of the corrected plan (from the resolver), appended to the fix
    of every finding whose cure is a reinstall.
    """
    findings: list[Finding] = []
    plan_text = ("\nReinstall into a fresh environment with the plan vresolve computes for this machine:\n  "
                 + "\n  ".join(reinstall)) if reinstall else ""

    def add(cause: str, severity: str, title: str, explanation: str, fix: str, evidence: Sequence[str] = ()) -> None:
        if cause in REINSTALL_CAUSES and plan_text and severity == "error":
            fix += plan_text
        findings.append(Finding(cause=cause, severity=severity, title=title, explanation=explanation, fix=fix,
                                evidence=tuple(evidence)))

    gpus = [g for g in host.gpus if g.compute_capability is not None]
    if host.driver.nvml_library_mismatch:
        k = _issue(matrix, "nvml-driver-mismatch")
        add("nvml-driver-mismatch", "error", "The NVIDIA kernel module and its user-space library differ",
            k.explanation if k else "The driver was upgraded but the old kernel module is still loaded.",
            k.fix if k else "Reboot, or reload the nvidia kernel modules.",
            [p for p in host.problems if "mismatch" in p])
    if env is not None:
        _environment(host, matrix, env, gpus, add)
    if shadows:
        torch_cuda = env.torch.cuda if env and env.torch else None
        add("library-not-found" if not torch_cuda else "cuda-variant-mismatch", "warning",
            "LD_LIBRARY_PATH puts other CUDA libraries before pip's",
            "The dynamic loader searches LD_LIBRARY_PATH before the nvidia-* packages torch depends on, so these "
            "libraries load instead of the ones torch was built and tested with"
            + (f" (torch's CUDA: {torch_cuda})" if torch_cuda else "") + "; a different cuDNN, NCCL or cuBLAS there "
            "fails with undefined symbols or wrong results.",
            "Remove these directories from LD_LIBRARY_PATH for the vLLM environment, e.g.\n  unset LD_LIBRARY_PATH",
            [f"{d}: {', '.join(libs)}" for d, libs in shadows])
    if env is not None and env.torch is not None and env.torch.cuda:
        tc = public_version(env.torch.cuda)
        for tk in host.toolkits:
            if tc is not None and (tk.version.major, tk.version.minor) != (tc.major, tc.minor):
                k = _issue(matrix, "toolkit-mismatch")
                add("toolkit-mismatch", "warning", f"nvcc {tk.version} is not torch's CUDA {env.torch.cuda}",
                    "Building vLLM or any CUDA extension with this nvcc against this torch fails or produces "
                    "kernels that do not load: the toolkit must be torch's CUDA major.minor.",
                    (k.fix if k else "") + f"\nInstall CUDA {tc.major}.{tc.minor} and export CUDA_HOME to it before "
                    "building anything against this torch.", [f"{tk.path}: nvcc {tk.version} ({tk.source})"])
                break
    old = [g for g in gpus if g.compute_capability < Capability(8, 0)]
    if old:
        k = _issue(matrix, "gpu-too-old-for-feature")
        add("gpu-too-old-for-feature", "info", "These GPUs lack bfloat16 and FlashAttention 2",
            "GPUs below compute capability 8.0 have no bfloat16 and do not run FlashAttention 2; models whose "
            "config says bfloat16 must be run in float16.",
            (k.fix if k else "") or "Run with --dtype float16.",
            [f"GPU {g.index}: {g.name} (sm_{g.compute_capability.major}{g.compute_capability.minor})" for g in old])
    if log:
        torch_cuda = env.torch.cuda if env is not None and env.torch is not None else None
        for issue, ev in match_log(log, matrix.known_issues):
            extra = plan_text if issue.cause in REINSTALL_CAUSES and issue.severity == "error" else ""
            found = _from_issue(issue, ev, "log", extra)
            wanted = re.search(r"lib(?:cudart|cublas|cublasLt|nvrtc)\.so\.(\d+)", log)
            if issue.cause == "cuda-variant-mismatch" and wanted and torch_cuda:
                # set against this environment: which side is the other CUDA major
                found = Finding(cause=found.cause, severity=found.severity, title=found.title,
                                explanation=found.explanation + f" Here, torch is built with CUDA {torch_cuda}; the "
                                f"failing library asks for CUDA {wanted[1]}'s runtime"
                                + (", so the other package is the odd one out." if not torch_cuda.startswith(
                                    wanted[1] + ".") else ", which torch has: the package is missing its own."),
                                fix=found.fix, evidence=(*found.evidence, f"torch.version.cuda = {torch_cuda}"),
                                source="log")
            findings.append(found)
    return _dedupe(findings)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in findings:
        key = (f.cause, f.title, f.source)
        if key not in seen:
            seen.add(key)
            out.append(f)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f.severity])


def _extensions(matrix: Matrix, host: Host, env: EnvReport) -> tuple[tuple[str, ...], str]:
    """(the compiled modules the installed vLLM release's wheel ships on this platform, its main kernel module).

    Read off the wheel's file list in the matrix; () when the release is not in the matrix (then the
    main module is judged from what the installed package holds).
    """
    vllm = env.module("vllm")
    version = public_version(vllm.version) if vllm is not None else None
    release = matrix.vllm_release(version) if version is not None else None
    wheels = release.wheels_for(host.platform.tag) if release is not None else ()
    expected = wheels[0].extensions if wheels else ()
    return expected, core_extension(expected or env.vllm_extensions)


def _needs_libcuda(m: ModuleReport) -> bool:
    return "libcuda.so.1" in (m.traceback or "") + (m.error or "")


def _other_extensions(matrix: Matrix, env: EnvReport, expected: Sequence[str], core: str, no_driver: bool,
                      emit: Callable[..., None]) -> None:
    """vLLM's other compiled modules: the ones its wheel ships but this install lacks, and those that fail."""
    missing = [m for m in expected if m != core and m not in env.vllm_extensions]
    if missing:
        k = _issue(matrix, "optional-kernel-missing")
        emit("optional-kernel-missing", "warning", f"this vLLM lacks {len(missing)} compiled module(s) its wheel ships",
             "The release's wheel ships these kernel libraries; this install (a source build, or a partial one) has "
             "none of them, so the features that use them fall back or fail at run time.",
             (k.fix if k else "") or "Install the release's wheel, or build with the architectures that need them.",
             tuple(f"{m}: not in the installed package" for m in missing))
    for name in env.vllm_extensions:
        rep = env.module(name)
        if name == core or rep is None or not rep.error or (no_driver and _needs_libcuda(rep)):
            continue
        k = _classify(matrix, rep.traceback or rep.error)
        emit(k.cause if k else "optional-kernel-missing", "warning", f"{name} does not load",
             (k.explanation if k else f"vLLM's compiled module {name} fails to load; the features that use it fail."),
             (k.fix if k else "Reinstall vLLM's wheel for this torch."), (rep.error,))


def _environment(host: Host, matrix: Matrix, env: EnvReport, gpus: Sequence[HostGpu],  # noqa: C901 (issue 12: to split)
                 emit: Callable[..., None]) -> None:
    if env.error:
        emit("library-not-found", "warning", "The environment could not be inspected", env.error,
             "Run the interpreter by hand: python -c 'import torch, vllm'", [env.python])
        return
    torch_mod = env.module("torch")
    torch = env.torch
    torch_version = public_version(torch.version) if torch else None
    if torch_mod is not None and torch_mod.error and "No module named 'torch'" not in torch_mod.error:
        k = _classify(matrix, torch_mod.traceback or torch_mod.error)
        emit(k.cause if k else "library-not-found", "error", "torch does not import",
             (k.explanation if k else "importing torch fails in this environment."),
             (k.fix if k else "Reinstall torch."), (torch_mod.error,))
    if torch is not None:
        cpu_build = torch.cuda is None
        if gpus and cpu_build:
            k = _issue(matrix, "cpu-only-build")
            emit("cpu-only-build", "error", f"torch {torch.version} is a CPU build on a machine with NVIDIA GPUs",
                 "torch.version.cuda is None: this torch cannot use the GPUs, and vLLM's CUDA kernels cannot load "
                 "against it.", k.fix if k else "Install a CUDA build of torch.",
                 (f"torch {torch.version}, torch.version.cuda = None", f"GPUs: {', '.join(g.name for g in gpus)}"))
        elif gpus and not torch.available:
            floor = None
            tc = public_version(torch.cuda)
            if tc is not None:
                from .resolve import driver_floor

                floor = driver_floor(matrix, tc, "minor-compat", False)
            if floor is not None and host.driver.version is not None and host.driver.version < floor:
                k = _issue(matrix, "driver-too-old")
                emit("driver-too-old", "error", f"driver {host.driver.version} is too old for torch's CUDA {torch.cuda}",
                     f"torch {torch.version} is built with CUDA {torch.cuda}, which needs NVIDIA driver >= {floor} "
                     f"(CUDA minor-version compatibility); this machine has {host.driver.version}.",
                     (k.fix if k else "") + f"\nInstall NVIDIA driver >= {floor}, or a torch built for an older CUDA.",
                     ("torch.cuda.is_available() = False", f"driver {host.driver.version}"))
            else:
                emit("library-not-found", "error", "torch does not see the GPUs",
                     "torch.cuda.is_available() is False although NVIDIA GPUs are present: the CUDA driver library "
                     "does not load in this environment (container without the GPU, CUDA_VISIBLE_DEVICES, or a "
                     "broken driver install).", "Run nvidia-smi; check CUDA_VISIBLE_DEVICES and the container's "
                     "GPU options (--gpus all).",
                     ("torch.cuda.is_available() = False", *(f"{k}={v}" for k, v in host.env
                                                             if k.endswith("VISIBLE_DEVICES")), *(torch.error or "",)))
        elif gpus and torch.available:
            missing = [g for g in gpus if not _caps_covered(torch.arch_list, g.compute_capability)]
            if missing:
                k = _issue(matrix, "arch-not-in-build")
                emit("arch-not-in-build", "error", f"torch {torch.version} has no kernels for "
                     f"{', '.join(g.name for g in missing)}",
                     f"torch's arch list ({' '.join(torch.arch_list)}) has neither SASS for "
                     f"{', '.join(f'sm_{g.compute_capability.major}{g.compute_capability.minor}' for g in missing)} "
                     "nor older PTX: kernels fail with 'no kernel image is available'.",
                     k.fix if k else "Install a torch variant that covers this GPU.",
                     (f"torch.cuda.get_arch_list() = {torch.arch_list}",))
    vllm = env.module("vllm")
    expected, core = _extensions(matrix, host, env)
    vllm_c = env.module(core)
    no_driver = host.driver.version is None and not gpus
    if vllm is not None and vllm.origin:
        tree = _is_source_tree(vllm.origin)
        c_failed = vllm_c is not None and bool(vllm_c.error)
        driverless = c_failed and no_driver and _needs_libcuda(vllm_c)
        if driverless:
            c_failed = False
            emit("library-not-found", "info", f"{core} needs the NVIDIA driver, absent on this machine",
                 f"vLLM's CUDA kernels ({core}) link against the driver's libcuda.so.1; this machine has no NVIDIA "
                 "driver, so they cannot load here. They are installed, and load on a machine with the driver.",
                 "Nothing to do here; run vLLM on a machine with an NVIDIA GPU and driver.",
                 (vllm_c.error or "",) if vllm_c else ())
        if tree and c_failed:
            k = _issue(matrix, "source-tree-shadowing")
            emit("source-tree-shadowing", "error", "A vLLM source checkout shadows the installed vLLM",
                 f"`import vllm` loads {vllm.origin}, a source tree whose compiled extension was never built, so "
                 f"{core} is missing there even if an installed vLLM has it.",
                 (k.fix if k else "") or f"Run from another directory, or remove {tree} from PYTHONPATH.",
                 (f"vllm from {vllm.origin}", vllm_c.error or "" if vllm_c else "", f"sys.path[0] = {env.sys_path[0]!r}"
                  if env.sys_path else ""))
        elif c_failed:
            assert vllm_c is not None
            text = vllm_c.traceback or vllm_c.error or ""
            if torch is not None and torch.cuda is None and f"No module named '{core}'" in text:
                k = _issue(matrix, "cpu-only-build")
                emit("cpu-only-build", "error", "vLLM has no compiled extension for this torch",
                     k.explanation if k else f"{core} is missing: this vLLM was installed without its CUDA kernels.",
                     k.fix if k else "", (vllm_c.error or "", f"torch {torch.version}, CUDA None"))
            else:
                k = _classify(matrix, text)
                emit(k.cause if k else "torch-abi-mismatch", "error", k.title if k else f"{core} does not load",
                     k.explanation if k else "vLLM's compiled extension fails to load with this torch.",
                     k.fix if k else "", (vllm_c.error or "",))
        if not tree:
            _other_extensions(matrix, env, expected, core, no_driver, emit)
        pin = _torch_pin(env.requirement_lines("vllm"))
        if pin is not None and torch_version is not None and pin != torch_version:
            k = _issue(matrix, "torch-abi-mismatch")
            emit("torch-abi-mismatch", "error" if c_failed else "warning",
                 f"vLLM {vllm.version} was built for torch {pin}, not the torch {torch.version} installed",
                 "Every vLLM wheel pins an exact torch: its kernels link against that torch's C++ ABI. Something "
                 "(another install, --no-deps, a later pip install torch) replaced it.",
                 k.fix if k else "", (f"vllm requires torch=={pin}", f"installed torch {torch.version}"))
    for dist, module in (("torchvision", "torchvision"), ("torchaudio", "torchaudio"), ("xformers", "xformers"),
                         ("flashinfer-python", "flashinfer"), ("flash-attn", "flash_attn")):
        rep = env.module(module)
        pin = _torch_pin(env.requirement_lines(dist))
        failed = rep is not None and rep.error and "No module named" not in rep.error
        mismatch = pin is not None and torch_version is not None and pin != torch_version
        if failed or mismatch:
            k = _issue(matrix, "companion-mismatch")
            ev = [e for e in ((rep.error if rep and failed else ""),
                              (f"{dist} requires torch=={pin}; installed torch {torch.version}" if mismatch and torch else ""))
                  if e]
            emit("companion-mismatch", "error" if failed else "warning",
                 f"{dist} does not match the installed torch",
                 f"{dist} is built against one exact torch; with another its C++ operators fail to register or load.",
                 (k.fix if k else "") or f"Install the {dist} release made for torch {torch.version if torch else ''}.",
                 ev)


def observations(host: Host, env: EnvReport | None) -> list[str]:  # noqa: C901 (issue 12: to split)
    """What doctor saw, in plain words, whether or not anything is wrong (the state it judged)."""
    out = []
    gpus = [g for g in host.gpus if g.compute_capability is not None]
    if host.driver.version is not None:
        out.append(f"NVIDIA driver {host.driver.version} (CUDA {host.driver.cuda or '?'}), "
                   + (", ".join(f"{g.name} ({g.compute_capability})" for g in gpus) or "no GPU"))
    else:
        out.append("no NVIDIA driver or GPU")
    if env is None:
        return out
    if env.error:
        out.append(f"the environment ({env.python}) could not be inspected: {env.error}")
        return out
    out.append(f"environment: {env.python}")
    t = env.torch
    if t is None:
        torch_mod = env.module("torch")
        out.append("torch: not installed" if torch_mod is None or "No module named 'torch'" in (torch_mod.error or "")
                   else f"torch: does not import ({torch_mod.error})")
    else:
        seen = f"sees {len(t.device_capabilities)} GPU(s): {', '.join(t.device_capabilities)}" if t.available else \
            "sees no GPU"
        out.append(f"torch {t.version} (CUDA {t.cuda or 'none: a CPU build'}) {seen}")
        if t.available and gpus:
            covered = all(_caps_covered(t.arch_list, g.compute_capability) for g in gpus)
            out.append(f"torch's arch list ({' '.join(t.arch_list)}) " + ("covers every GPU" if covered
                                                                         else "misses a GPU"))
        tc = public_version(t.cuda)
        for tk in host.toolkits:
            same = tc is not None and (tk.version.major, tk.version.minor) == (tc.major, tc.minor)
            out.append(f"nvcc {tk.version} at {tk.path} " + ("matches" if same else "differs from")
                       + f" torch's CUDA {t.cuda}")
    for name in ("vllm", "torchvision", "torchaudio", "xformers", "flashinfer", "flash_attn"):
        m = env.module(name)
        if m is None:
            continue
        if m.error and "No module named" in m.error and (m.origin is None):
            if name == "vllm":
                out.append("vllm: not installed")
            continue
        state = f"{m.version or '?'}" + (f", from {m.origin}" if name == "vllm" and m.origin else "")
        if m.error:
            state += f", does not import: {m.error}"
        out.append(f"{name}: {state}")
    v = env.module("vllm")
    if v is not None and v.origin:
        core = core_extension(env.vllm_extensions)
        c = env.module(core)
        if c is not None:
            out.append(f"{core}: " + ("loads" if not c.error else f"does not load ({c.error})"))
        if env.vllm_extensions:
            reps = [m for m in (env.module(n) for n in env.vllm_extensions) if m is not None]
            fails = [m for m in reps if m.error and not _needs_libcuda(m)]
            driverless = [m for m in reps if m.error and _needs_libcuda(m)]
            out.append(f"vLLM's compiled modules: {len(reps)} found, {len(reps) - len(fails) - len(driverless)} load"
                       + (f", {len(driverless)} need the driver's libcuda.so.1" if driverless else "")
                       + (f", {len(fails)} fail" if fails else ""))
    return out


def check_lock(header: dict[str, object], host: Host, matrix: Matrix, env: EnvReport | None = None,  # noqa: C901 (issue 12: to split)
               name: str = "the lock") -> list[Finding]:
    """Does this machine meet the assumptions a lock recorded (``doctor --lock FILE``)?"""
    from .values import DriverVersion

    out: list[Finding] = []
    machine = header.get("machine") or {}
    stack = header.get("stack") or {}
    assert isinstance(machine, dict) and isinstance(stack, dict)
    ev = f"{name}: vLLM {stack.get('vllm')} + torch {stack.get('torch')}+{stack.get('variant')}"

    def add(cause: str, severity: str, title: str, explanation: str, fix: str, *evidence: str) -> None:
        out.append(Finding(cause=cause, severity=severity, title=title, explanation=explanation, fix=fix,
                           evidence=(ev, *evidence), source="lock"))

    floor = machine.get("min_driver")
    if floor and host.gpus:
        need = DriverVersion.parse(str(floor))
        if host.driver.version is None:
            add("driver-too-old", "error", "the lock needs an NVIDIA driver; none found here",
                f"{name} needs NVIDIA driver >= {need}.", f"Install NVIDIA driver >= {need}.")
        elif host.driver.version < need:
            add("driver-too-old", "error", f"driver {host.driver.version} is older than the lock needs ({need})",
                f"The locked stack is CUDA {machine.get('cuda')}; under the {machine.get('driver_policy')} policy it "
                f"needs driver >= {need}.", f"Install NVIDIA driver >= {need}, or make a lock for this machine: "
                "vresolve lock --gpu auto -o DIR", f"this machine: driver {host.driver.version}")
    locked = {str(c) for c in (machine.get("gpus") or {}).values()}  # type: ignore[union-attr]
    here = {str(g.compute_capability) for g in host.gpus if g.compute_capability is not None}
    if here - locked:
        add("arch-not-in-build", "error" if locked else "warning",
            f"this machine has GPUs the lock was not made for ({', '.join(sorted(here - locked))})",
            f"{name} was resolved for compute capability {', '.join(sorted(locked)) or 'none (CPU)'}; the "
            "locked torch and vLLM builds may not carry kernels for the others.",
            "Make a lock for this machine: vresolve lock --gpu auto -o DIR",
            f"this machine: {', '.join(sorted(here))}")
    if locked and not here:
        add("library-not-found", "warning", "the lock was made for NVIDIA GPUs; this machine shows none",
            f"{name} is a CUDA stack for compute capability {', '.join(sorted(locked))}; without a GPU and driver it "
            "installs but cannot run.", "Run it on the machine it was made for, or: vresolve lock --gpu none -o DIR")
    py = machine.get("python")
    if py and str(host.python_minor) != str(py):
        add("python-unsupported", "error", f"the lock is for Python {py}, this is Python {host.python_minor}",
            "Hashes and wheels in the lock are for one Python version; another cannot install them.",
            f"Use Python {py} (uv venv --python {py}), or make a lock for this Python.")
    plat = machine.get("platform")
    if plat and plat != host.platform.tag:
        add("glibc-too-old", "error", f"the lock is for {plat}, this machine is {host.platform.tag}",
            "The locked wheels are built for another platform.", "Make a lock for this platform.")
    want = machine.get("glibc")
    if want and host.platform.glibc is not None and plat == host.platform.tag:
        need = public_version(str(want))
        if need is not None and host.platform.glibc < need:
            add("glibc-too-old", "error", f"the lock's wheels need glibc >= {need}, this machine has {host.platform.glibc}",
                f"{name} was locked for manylinux_{need.major}_{need.minor}: some of its wheels do not install on an "
                "older glibc (the installer finds no wheel, or builds from source).",
                "Make a lock for this machine: vresolve lock --gpu auto -o DIR (it targets this machine's glibc)",
                f"this machine: glibc {host.platform.glibc}")
    if env is not None and env.torch is not None and stack.get("torch"):
        have = public_version(env.torch.version)
        if have is not None and str(have) != str(stack["torch"]):
            add("installer-replaced-torch", "warning",
                f"the environment's torch is {env.torch.version}, the lock's {stack['torch']}",
                "The environment does not match the lock: something installed another torch after it.",
                "Reinstall from the lock into a fresh environment: pip install --require-hashes -r requirements.txt")
    del matrix
    return out
