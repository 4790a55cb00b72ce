"""A plan turned into what ``apply`` runs (a :class:`Job`), the paths it may make (claimed first, removed
again on failure), and the run itself: the steps, the checks, what ended up installed.

No printing: progress goes to a :class:`Reporter` that the CLI gives (the render layer draws it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from .._proc import uv_bin
from ..errors import UsageError
from ..plan.steps import Check, Expand, Step, install_lock
from .guard import read_marker, refusal, remove_tree, unsafe, write_marker
from .run import Ran, run_command

if TYPE_CHECKING:
    from ..plan import InstallPlan, SourcePlan

__all__ = ["Job", "Claim", "Reporter", "StepOutcome", "CheckOutcome", "wheel_job", "source_job", "lock_job",
           "check_targets", "check_unsafe", "claim", "run_steps", "run_checks", "installed_versions", "ACTIVATE"]

ACTIVATE = "vresolve-env.sh"  # the activation file apply writes into the environment


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """What ``apply`` runs, in order: ``steps`` (with ``build_env`` exported and ``pre_checks`` run before step
    ``build_from``, for a source build), then ``verify`` with ``exports`` set."""

    what: str  # "vLLM 0.33.0 + torch 2.14.0+cu130"
    kind: str  # "wheel" | "source" | "lock"
    env_dir: Path  # absolute
    python: str  # the environment's interpreter
    steps: tuple[Step, ...]
    verify: tuple[Check, ...]
    exports: tuple[tuple[str, str], ...]
    creates: tuple[Path, ...]  # every path the steps make: none may exist before (or --force), removed on failure
    build_from: int | None = None  # source builds: the first step of the build proper (after the clone)
    build_env: tuple[tuple[str, str], ...] = ()
    pre_checks: tuple[Check, ...] = ()
    log: Path | None = None  # source builds: every step's output, kept after a failure


def _abs(base: Path, p: str) -> Path:
    return Path(os.path.normpath(base / p))


def wheel_job(plan: InstallPlan, cwd: Path) -> Job:
    """A wheel plan; one with checks before its install (a wheel set of a target's own index: L4T's toolkit) runs
    them first, with the plan's exports set for the install and the checks."""
    r = plan.resolution
    env_dir = _abs(cwd, plan.env_dir)
    if r.index is not None:
        w = r.index.wheels
        what = f"vLLM {w.vllm} + torch {w.torch} from the Jetson index's {w.path} path"
    else:
        what = f"vLLM {r.vllm.version} + torch {r.torch.version}+{r.torch.variant.variant}"
    first = bool(plan.checks)
    return Job(what=what, kind="wheel", env_dir=env_dir, python=str(env_dir / "bin" / "python"), steps=plan.steps,
               verify=plan.verify, exports=plan.env, creates=(env_dir,), build_from=0 if first else None,
               build_env=plan.env if first else (), pre_checks=plan.checks)


def lock_job(plan: InstallPlan, lock_file: Path, header: Mapping[str, object], cwd: Path) -> Job:
    """The lock's packages instead of the plan's install steps: a fresh environment, the lock installed with
    its hashes, then the plan's own steps after the install (``vllm download-kernels``); the plan's checks."""
    fresh, *rest = plan.steps
    after = [s for s in rest if s.tool == "vllm"]
    stack = header.get("stack") or {}
    assert isinstance(stack, dict)
    job = wheel_job(plan, cwd)
    what = f"vLLM {stack.get('vllm')} + torch {stack.get('torch')}+{stack.get('variant')} from {lock_file.name}"
    steps = (fresh, install_lock(plan.installer, plan.env_dir, str(lock_file)), *after)
    return Job(what=what, kind="lock", env_dir=job.env_dir, python=job.python, steps=steps, verify=job.verify,
               exports=job.exports, creates=job.creates)


def source_job(sp: SourcePlan, cwd: Path, parallelism: Sequence[tuple[str, str]] = ()) -> Job:
    """A source build: the recipe's steps; its exports from the clone on; its checks (nvcc, gcc) before the
    build; the output of every step in ``<environment>.build.log``. ``parallelism``: MAX_JOBS and NVCC_THREADS
    for this machine, when the plan left them to the build machine."""
    if sp.env_dir is None:
        raise UsageError("apply: --keep-torch builds into the environment vresolve runs in; apply makes new "
                         "environments only (run the recipe of vresolve plan --keep-torch yourself)")
    env_dir = _abs(cwd, sp.env_dir)
    clone = next(i for i, s in enumerate(sp.steps) if s.tool == "git")
    creates = [env_dir, _abs(cwd, sp.src_dir)]
    creates += [_abs(cwd, s.argv[s.argv.index("-p") + 1]) for s in sp.steps if s.tool == "conda" and "-p" in s.argv]
    python = sp.python[0] if len(sp.python) == 1 else str(env_dir / "bin" / "python")
    return Job(what=f"vLLM {sp.vllm.version} built from source against torch {sp.torch_version}", kind="source",
               env_dir=env_dir, python=str(_abs(cwd, python)), steps=sp.steps, verify=sp.verify,
               exports=sp.env, creates=tuple(creates), build_from=clone, build_env=(*sp.env, *parallelism),
               pre_checks=sp.checks, log=env_dir.with_name(env_dir.name + ".build.log"))


class Claim(msgspec.Struct, kw_only=True):
    """The paths a job makes, claimed before it runs: ``moved`` holds the existing ones put aside (``--force``),
    (where it was, where it is now). Each directory the job makes gets vresolve's marker (:meth:`mark`)."""

    creates: tuple[Path, ...]
    moved: list[tuple[Path, Path]]
    what: str = ""
    kind: str = ""

    def mark(self, state: str = "installing") -> None:
        """vresolve's marker in each directory of the job that exists now (see :mod:`.guard`)."""
        for p in self.creates:
            if p.is_dir() and not p.is_symlink():
                m = read_marker(p)
                if m is None or m.get("state") != state or m.get("pid") != os.getpid():
                    try:
                        write_marker(p, what=self.what, kind=self.kind, state=state)
                    except OSError:
                        pass

    def fail(self) -> list[str]:
        """Remove what the job made and put back what was there; what was done, one line each."""
        with _no_interrupts():  # a second Ctrl-C must not leave half an environment behind
            done = [f"removed {p}" for p in self.creates if _remove(p)]
            for old, aside in self.moved:
                os.replace(aside, old)
                done.append(f"put back the previous {old}")
        self.moved = []
        return done

    def succeed(self) -> list[str]:
        """Remove what was put aside for the new environment (``--force``); the job's paths are its own now."""
        self.mark("ready")  # first: killed during the removal below, a rerun sees the new one was ready
        done = [f"removed the previous {old}" for old, aside in self.moved if _remove(aside, rename=False)]
        self.creates, self.moved = (), []
        return done

    def keep(self) -> list[str]:
        """Keep what a failed job made (``--keep-failed``), and what was put aside where it is; one line each."""
        self.mark("kept-failed")
        done = [f"kept {p} (--keep-failed)" for p in self.creates if p.exists()]
        done += [f"the previous {old} is at {aside}" for old, aside in self.moved]
        self.creates, self.moved = (), []
        return done


def check_targets(paths: Sequence[Path], *, force: bool) -> None:
    """UsageError when one of ``paths`` exists (without ``force``; with it, when vresolve did not make it: see
    :func:`.guard.refusal`) or cannot be made (a read-only directory). Nothing is touched."""
    for p in paths:
        if p.exists() or p.is_symlink():
            why = refusal(p)
            if why is not None:
                raise UsageError(f"apply: {str(p)!r} exists and {why}; apply replaces only an environment it made "
                                 "(with --force): choose another path (--venv, --src-dir); nothing changed")
            if not force:
                raise UsageError(f"apply: {str(p)!r} exists; apply never replaces it: choose another path (--venv, "
                                 "--src-dir) or pass --force to replace it (put back if the new one fails)")
        elif not os.access(p.parent if p.parent.exists() else _existing(p.parent), os.W_OK | os.X_OK):
            raise UsageError(f"apply: {str(p)!r} cannot be made: {str(_existing(p.parent))!r} is not writable")


def check_unsafe(paths: Sequence[Path]) -> None:
    """UsageError for a path apply may never replace, whatever it holds (see :func:`.guard.unsafe`): checked before
    anything is made or locked beside it."""
    for p in paths:
        why = unsafe(p)
        if why is not None:
            raise UsageError(f"apply: {str(p)!r} {why[3:] if why.startswith('it ') else why}; apply never replaces "
                             "it (--force neither): choose another path (--venv, --src-dir); nothing changed")


def claim(paths: Sequence[Path], *, force: bool, what: str = "", kind: str = "") -> Claim:
    """Claim ``paths`` for a job (checked by :func:`check_targets`): an existing one (``force``, made by vresolve)
    is moved aside in its directory, to be removed when the job succeeds and put back when it fails."""
    check_targets(paths, force=force)
    moved: list[tuple[Path, Path]] = []
    try:
        for p in paths:
            if p.exists() or p.is_symlink():
                aside = p.with_name(f".{p.name}.vresolve-previous-{os.getpid()}")
                os.replace(p, aside)
                moved.append((p, aside))
    except BaseException as e:
        for old, aside in moved:
            os.replace(aside, old)
        if isinstance(e, OSError):
            raise UsageError(f"--force: {str(p)!r} cannot be put aside ({e.strerror or e}); nothing changed") from None
        raise
    return Claim(creates=tuple(paths), moved=moved, what=what, kind=kind)


def _existing(p: Path) -> Path:
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def _remove(p: Path, *, rename: bool = True) -> bool:
    """Remove a path the job made: renamed out of the way first (so the name is free at once), then deleted, its
    marker last."""
    if not (p.exists() or p.is_symlink()):
        return False
    if p.is_dir() and not p.is_symlink():
        gone = p
        if rename:
            gone = p.with_name(f".{p.name}.vresolve-removing-{os.getpid()}")
            os.replace(p, gone)
        remove_tree(gone)
    else:
        p.unlink()
    return True


class _no_interrupts:  # noqa: N801 - SIGINT ignored for the duration (main thread only)
    def __enter__(self) -> None:
        import signal
        import threading

        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


class StepOutcome(msgspec.Struct, frozen=True, kw_only=True):
    index: int  # 1-based
    step: Step
    status: str  # "ok" | "failed" | "skipped"
    ran: Ran | None = None
    why: str = ""  # skipped: why; failed: what failed


class CheckOutcome(msgspec.Struct, frozen=True, kw_only=True):
    check: Check
    status: str  # "passed" | "failed" | "skipped"
    output: str = ""
    why: str = ""


class Reporter(Protocol):
    """Where a run's progress goes (the CLI draws it)."""

    def step_started(self, index: int, total: int, step: Step) -> None: ...

    def line(self, text: str) -> None: ...

    def step_finished(self, outcome: StepOutcome) -> None: ...

    def check_finished(self, outcome: CheckOutcome) -> None: ...


NO_GPU = "no NVIDIA GPU on this machine"


def environ(pairs: Sequence[tuple[str, str]], cwd: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with ``pairs`` set; vresolve's own ``$PWD``, ``$CUDA_HOME`` and
    ``$PATH`` (in :class:`Expand` values) expanded here, as the recipe's shell would."""
    out = dict(os.environ if base is None else base)
    for k, v in pairs:
        out[k] = _expand(v, cwd, out)
    return out


def _expand(v: str, cwd: Path, env: Mapping[str, str]) -> str:
    if not isinstance(v, Expand):
        return v
    return v.replace("$PWD", str(cwd)).replace("$CUDA_HOME", env.get("CUDA_HOME", "")).replace(
        "$PATH", env.get("PATH", ""))


def _argv(step_argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The plan's argv as it runs: ``uv`` is vresolve's own uv; a relative program path is from ``cwd``."""
    argv = [_expand(a, cwd, env) for a in step_argv]
    if argv[0] == "uv":
        argv[0] = uv_bin()
    elif "/" in argv[0] and not os.path.isabs(argv[0]):
        argv[0] = str(cwd / argv[0])
    return argv


def run_steps(job: Job, reporter: Reporter, *, cwd: Path, has_gpu: bool, claimed: Claim | None = None
              ) -> list[StepOutcome]:
    """Run the job's steps in order, to the first that fails (its outcome last, status "failed"); after each,
    the marker in every directory of ``claimed`` that exists by then."""
    out: list[StepOutcome] = []
    env = environ((), cwd)
    for i, step in enumerate(job.steps, 1):
        if i - 1 == job.build_from:
            env = environ(job.build_env, cwd)
            failed = _pre_checks(job, env, cwd, i)
            if failed is not None:
                out.append(failed)
                reporter.step_finished(failed)
                return out
        reporter.step_started(i, len(job.steps), step)
        if step.needs_gpu and not has_gpu:
            o = StepOutcome(index=i, step=step, status="skipped", why=NO_GPU)
        else:
            ran = run_command(_argv(step.argv, cwd, env), cwd=cwd / step.cwd if step.cwd else cwd, env=env,
                              on_line=reporter.line, log=job.log)
            o = StepOutcome(index=i, step=step, status="ok" if ran.ok else "failed", ran=ran,
                            why="" if ran.ok else ran.error or f"exit code {ran.returncode}")
        if claimed is not None:
            claimed.mark()
        out.append(o)
        reporter.step_finished(o)
        if o.status == "failed":
            break
    return out


def _pre_checks(job: Job, env: Mapping[str, str], cwd: Path, index: int) -> StepOutcome | None:
    """The source build's checks before the build (nvcc is torch's CUDA, a supported gcc): the first that
    fails, as the outcome of a step of its own."""
    for c in job.pre_checks:
        ran = run_command(_argv(c.argv, cwd, env), cwd=cwd, env=env, log=job.log, keep_output=True, timeout=120)
        if not ran.ok or c.expect not in ran.output:
            step = Step(tool="check", argv=c.argv, why=f"check before step {index}: {c.name}")
            return StepOutcome(index=index, step=step, status="failed", ran=ran,
                               why=f"{c.name}: expected {c.expect!r} in its output")
    return None


def run_checks(checks: Sequence[Check], reporter: Reporter, *, cwd: Path, env: Mapping[str, str], has_gpu: bool,
               timeout: float = 600.0) -> list[CheckOutcome]:
    """Run every check (those that need a GPU are skipped on a machine without one)."""
    out = []
    for c in checks:
        if c.needs_gpu and not has_gpu:
            o = CheckOutcome(check=c, status="skipped", why=NO_GPU)
        else:
            ran = run_command(_argv(c.argv, cwd, env), cwd=cwd, env=env, keep_output=True, timeout=timeout)
            ok = ran.ok and c.expect in ran.output
            o = CheckOutcome(check=c, status="passed" if ok else "failed", output=ran.output[-4000:],
                             why="" if ok else (ran.error or f"exit code {ran.returncode}; expected {c.expect!r}"))
        out.append(o)
        reporter.check_finished(o)
    return out


def installed_versions(python: str, cwd: Path) -> dict[str, str]:
    """Every distribution installed in the environment of ``python`` (normalized name -> version), as uv lists
    them; {} when it cannot say."""
    from packaging.utils import canonicalize_name

    ran = run_command([uv_bin(), "pip", "list", "--python", python, "--format", "freeze"], cwd=cwd,
                      env=dict(os.environ, NO_COLOR="1"), keep_output=True, timeout=120)
    if not ran.ok:
        return {}
    pins = (line.strip().partition("==") for line in ran.output.splitlines())
    return {canonicalize_name(name): version for name, eq, version in pins if eq and name and version}
