"""``vresolve apply``: the plan (or ``--lock FILE``) shown, confirmed, run into a new environment, verified,
doctored, and locked.

Order: the job (from the plan flags, or the lock after ``doctor --lock`` passed on this machine); its paths
locked (one apply per path, :class:`vresolve.apply.Guard`) and what a killed apply left there put right; the
paths it makes claimed (an existing one is refused, or with ``--force``, when vresolve's marker proves it made
it, put aside); its steps (each directory it makes marked); its checks (those that
need a GPU skipped on a machine without one); ``doctor`` on the environment; then, when ready, the lock of
what was installed next to the environment and the activation file in it. A failed step, a failed check or
an error from doctor removes the new environment (``--keep-failed`` keeps it); an interrupt always does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK, UsageError, VresolveError
from .args import _load, _opt, plan_inputs, probe_timeout, refuse_broken_driver
from .common import lock_header_of, new_console, print_json, shown

EXIT_NOT_READY = 1


def cmd_apply(args: argparse.Namespace) -> int:
    from ..apply import Guard, check_unsafe

    _refuse(args)
    m = _load(args)
    this = _this_machine(m, probe_timeout(args))
    if not args.apply_lock and args.gpu.strip().lower() == "auto":
        refuse_broken_driver(this)  # before anything is planned, shown, asked or changed
    job, plan, head, lock_check = _lock_job(args, m, this) if args.apply_lock else (*_plan_job(args, m, this), [])
    check_unsafe(job.creates)  # a home, the root, a file, a link, a mount point: refused before anything is made
    _refuse_foreign_lock(args, job, plan)
    if not args.yes and (_opt(args, "json") or not sys.stdin.isatty()):
        raise UsageError("apply: asks before changing anything, and there is no terminal to ask on: pass --yes")
    with Guard(job.creates) as guard:  # one apply per path; the parents it makes go again unless it succeeds
        return _guarded(args, m, this, job, plan, head, lock_check, guard)


def _guarded(args: argparse.Namespace, m: Any, this: Any, job: Any, plan: Any, head: list[Any],
             lock_check: list[Any], guard: Any) -> int:
    """Under the lock: what an apply that did not finish left put right (or reported), the paths checked (refused
    before anything is shown or asked), the plan shown, the question, the claim, the run."""
    from ..apply import check_targets, claim, recover

    for line in recover(job.creates):
        _say(line)
    check_targets(job.creates, force=args.force)
    if not _opt(args, "json") and not _opt(args, "quiet"):
        from ..render.apply import job_human

        console = new_console()
        for item in job_human(job, head):
            console.print(item)
    _confirm(args, job)
    c = claim(job.creates, force=args.force, what=job.what, kind=job.kind)
    code = _run(args, m, this, job, plan, c, lock_check)
    if not c.creates:  # it succeeded, or kept what it made (--keep-failed): the parents it made stay
        guard.keep()
    return code


def _say(line: str) -> None:
    """A line on stderr that never fails (after SIGHUP the terminal is gone; the cleanup must go on)."""
    try:
        print(f"vresolve: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _refuse_foreign_lock(args: argparse.Namespace, job: Any, plan: Any) -> None:
    """The lock apply writes next to the environment replaces only files vresolve wrote (their header)."""
    from ..lock import FORMATS, foreign_files

    if job.kind != "lock" and plan is None:
        return  # a source build, a plan that is not locked (a Jetson index's wheels): no lock written
    names = ["requirements"] if job.kind == "lock" else list(FORMATS)
    lock_dir = Path(args.lock_dir).resolve() if args.lock_dir else job.env_dir.with_name(job.env_dir.name + ".lock")
    found = foreign_files(lock_dir, names)
    if found:
        raise UsageError(f"apply: the lock would replace {', '.join(repr(str(f)) for f in found)}, which vresolve did "
                         f"not write (no '# vresolve-lock:' header): move {'them' if len(found) > 1 else 'it'} "
                         "away, or choose another --lock-dir; nothing changed")


def _refuse(args: argparse.Namespace) -> None:
    if args.installer == "conda":
        raise UsageError("--installer conda: apply makes virtual environments with uv or pip; for conda, run the "
                         "steps of vresolve plan --installer conda")
    if args.keep_torch:
        raise UsageError("--keep-torch: apply makes new environments only; it never changes the one vresolve runs "
                         "in (run the steps of vresolve plan --keep-torch yourself)")
    if args.apply_lock:
        given = [f for f, v in (("--gpu", args.gpu != "auto"), ("--driver", args.driver), ("--vllm", args.vllm),
                                ("--torch", args.torch), ("--variant", args.variant), ("--python", args.python),
                                ("--source-build", args.source_build != "auto"), ("--glibc", args.glibc)) if v]
        if given:
            raise UsageError(f"--lock: installs the stack the lock records; {', '.join(given)} would plan another "
                             "(leave them out, or leave out --lock)")


def _this_machine(m: Any, timeout: float) -> Any:
    """This machine (apply installs here, whatever machine the plan names): its GPUs decide which checks run."""
    from msgspec.structs import replace

    from ..detect import Overrides, detect_host, fill_capabilities

    return fill_capabilities(detect_host(replace(Overrides.from_env(), smi_timeout=timeout), installed=False), m)


def _plan_job(args: argparse.Namespace, m: Any, this: Any) -> tuple[Any, Any, list[Any]]:
    """(the job, the wheel plan or None for a source build or a plan that is not locked, what to show) from the
    plan flags."""
    from msgspec.structs import replace

    from ..apply import source_job, wheel_job
    from ..plan import build_plan
    from ..render.text import source_table, stack_table
    from ..resolve import NoCompatibleStack, resolve

    m, host, request, detected_by = plan_inputs(args)
    if host.platform.glibc is None and this.platform.glibc is not None and host.platform.tag == this.platform.tag:
        host = replace(host, platform=replace(host.platform, glibc=this.platform.glibc))  # it installs here
    if host.platform.tag != this.platform.tag:
        raise UsageError(f"--platform: apply installs on this machine ({this.platform.tag}), not "
                         f"{host.platform.tag}")
    sp = None
    if args.source_build == "always" or args.precompiled:
        sp = _source_plan(args, m, host, request, None)
    else:
        try:
            res = resolve(host, m, request)
        except NoCompatibleStack as e:
            sp = _source_plan(args, m, host, request, e)
    cwd = Path.cwd()
    if sp is not None:
        return source_job(sp, cwd, _parallelism(sp, this)), None, [source_table(sp, detected_by)]
    plan = build_plan(m, res, installer=args.installer, env_dir=args.venv)
    # a plan that cannot be locked by hash (a Jetson index's wheels): its script is the record, no lock written
    return wheel_job(plan, cwd), plan if plan.lockable else None, [stack_table(plan.resolution, detected_by)]


def _source_plan(args: argparse.Namespace, m: Any, host: Any, request: Any, e: Any) -> Any:
    """The source build, when asked for or when no wheel covers the GPU (--source-build auto); else ``e``."""
    from ..plan.source import plan_source_build

    asked = e is None
    if not asked and not (args.source_build == "auto" and (request.cpu or bool({"gpu", "platform"} & e.cause_kinds))):
        raise e
    why = () if asked else [f"no prebuilt wheel fits ({e.headline}): building from source"]
    return plan_source_build(host, m, request, installer=args.installer, env_dir=args.venv, src_dir=args.src_dir,
                             why_no_wheel=why, precompiled=args.precompiled)


def _parallelism(sp: Any, this: Any) -> tuple[tuple[str, str], ...]:
    """MAX_JOBS and NVCC_THREADS from this machine's memory and cores, when the plan left them to the build
    machine (a plan for a named GPU does not know the memory of the machine that builds)."""
    from ..plan import build_parallelism

    if sp.max_jobs is not None:
        return ()
    jobs, threads = build_parallelism(this.cpu_count, this.memory_mib)
    return (("MAX_JOBS", str(jobs or 1)), ("NVCC_THREADS", str(threads)))


def _lock_job(args: argparse.Namespace, m: Any, this: Any) -> tuple[Any, Any, list[Any], list[Any]]:
    """``--lock FILE``: checked against this machine (doctor --lock: an error refuses, exit 1), then the job
    that installs it; its checks and exports are those of the plan the lock records."""
    from ..apply import lock_job
    from ..doctor import check_against_lock
    from ..render.apply import finding_lines

    lock_file = Path(args.apply_lock).resolve()
    text = _lock_text(args.apply_lock)  # the format by content, whatever the name
    header = lock_header_of(args.apply_lock)
    findings = check_against_lock(header, this, None, name=str(lock_file))
    if any(f.severity == "error" for f in findings):
        lines = [f"--lock: this machine is not the one {shown(args.apply_lock, 200)} was made for (doctor --lock):"]
        raise LockDoesNotFit("\n".join(lines + finding_lines(findings)))
    plan = _plan_of_lock(args, m, header)
    extra = _lock_body(args, m, plan, text)
    job = lock_job(plan, lock_file, header, Path.cwd())
    from rich.text import Text

    head: list[Any] = [Text(f"{job.what}: doctor --lock on this machine: "
                            + ("no problems" if not findings else "warnings only"))]
    head += [Text(f"  {line}", style="yellow") for line in finding_lines(findings)]
    head += [Text(line, style="yellow") for line in extra]
    return job, None, head, findings


def _lock_text(path: str) -> str:
    """The text of the lock at ``path`` (a regular file, bounded); UsageError for a pylock.toml (by content)."""
    from ..apply.lockfile import MAX_LOCK_BYTES, is_pylock
    from ..matrix.files import Unreadable, read_regular_file

    name = shown(path, 200)
    try:
        text = read_regular_file(path, MAX_LOCK_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise UsageError(f"--lock: cannot read {name} (No such file or directory)") from None
    except Unreadable as e:
        raise UsageError(f"--lock: cannot read {name}: {e}") from None
    if is_pylock(text):
        raise UsageError(f"--lock: {name} is a pylock.toml (TOML with lock-version): apply installs the "
                         "requirements.txt of a vresolve lock (beside it in the lock's directory)")
    return text


def _lock_body(args: argparse.Namespace, m: Any, plan: Any, text: str) -> list[str]:
    """Every line of the lock that is not vresolve's own (a pinned, hashed requirement, a comment, the index
    vresolve names for this stack): refused (exit 2), or with ``--allow-lock-options`` the lines to show before
    asking. An unreadable line is refused always."""
    from ..apply.lockfile import check_lock_body
    from ..lock import lock_index_urls
    from ..render.shell import escape_controls

    body = check_lock_body(text, lock_index_urls(plan, m))
    name = shown(args.apply_lock, 200)

    def listed(lines: Any) -> list[str]:
        return [escape_controls(f"  line {x.number}: {x.text[:200]}  ({x.why})") for x in lines[:50]] + (
            [f"  ... and {len(lines) - 50} more"] if len(lines) > 50 else [])

    if body.unreadable:
        raise UsageError("\n".join([f"--lock: {name} has lines that are not requirements; nothing is installed:",
                                     *listed(body.unreadable)]))
    if not body.extra:
        return []
    if not args.allow_lock_options:
        raise UsageError("\n".join([f"--lock: {name} holds lines that are not pinned, hashed requirements of the "
                                     "index (they would install what vresolve did not lock); nothing is installed:",
                                     *listed(body.extra),
                                     "Pass --allow-lock-options to install them as written (shown before asking)."]))
    lines = [f"{name} holds lines that are not pinned, hashed requirements; installed as written "
             "(--allow-lock-options):", *listed(body.extra)]
    if _opt(args, "json") or _opt(args, "quiet"):  # no preview: said on stderr
        for line in lines:
            print(f"vresolve: warning: {line.strip()}", file=sys.stderr)
    return lines


def _plan_of_lock(args: argparse.Namespace, m: Any, header: dict[str, Any]) -> Any:
    """The plan of the stack a lock records, for the machine it records (its steps around the install, its
    checks, its exports)."""
    from packaging.specifiers import SpecifierSet

    from ..detect import detect_interpreter
    from ..plan import build_plan
    from ..resolve import NoCompatibleStack, Request, resolve
    from .targets import parse_glibc, target_host

    machine, stack = header["machine"], header["stack"]
    try:
        glibc = parse_glibc(machine["glibc"]) if machine.get("glibc") else None
        gpus = machine.get("gpus") or {}
        try:
            host = target_host(m, gpus=",".join(gpus) or "none", driver=machine.get("min_driver"),
                               python=machine.get("python"), platform=machine.get("platform"),
                               base=detect_interpreter(), glibc=glibc)
        except UsageError:  # a GPU this matrix does not name (a fleet's node, detected): by its capability
            host = target_host(m, gpus=",".join(f"sm_{cc.replace('.', '')}" for cc in gpus.values()) or "none",
                               driver=machine.get("min_driver"), python=machine.get("python"),
                               platform=machine.get("platform"), base=detect_interpreter(), glibc=glibc)
        request = Request(vllm=SpecifierSet(f"=={stack['vllm']}"), torch=SpecifierSet(f"=={stack['torch']}"),
                          variant=stack.get("variant"), driver_policy=machine.get("driver_policy") or "minor-compat",
                          cpu=not host.gpus)
        res = resolve(host, m, request)
    except (UsageError, NoCompatibleStack, KeyError, ValueError) as e:
        raise UsageError(f"--lock: the stack {shown(args.apply_lock, 200)} records is not one this matrix can plan "
                         f"({str(e).splitlines()[0][:200]})") from None
    return build_plan(m, res, installer=args.installer, env_dir=args.venv)


def _confirm(args: argparse.Namespace, job: Any) -> None:
    """Ask before changing anything; ``--yes`` skips the question; without a terminal, fail (exit 2)."""
    if args.yes:
        return
    from rich.text import Text

    from ..render.shell import escape_controls

    answer = new_console(stderr=True).input(Text(escape_controls(f"Install {job.what} into {job.env_dir}? [y/N] ")))
    if answer.strip().lower() not in ("y", "yes"):
        raise _Declined("apply: nothing changed (not confirmed)")


class LockDoesNotFit(VresolveError):
    """``apply --lock``: doctor --lock found an error: this machine is not one the lock was made for. Exit 1."""

    code = "lock-does-not-fit"
    exit_code = EXIT_NOT_READY


class _Declined(UsageError):
    code = "not-confirmed"
    exit_code = EXIT_NOT_READY


def _run(args: argparse.Namespace, m: Any, this: Any, job: Any, plan: Any, c: Any, lock_check: list[Any]) -> int:
    """Run the job to its verdict; interrupted anywhere before it (Ctrl-C, SIGTERM, SIGHUP), the installer is stopped
    and what the run made is removed: the environment, the files of its lock."""
    written: list[Path] = []
    try:
        return _apply(args, m, this, job, plan, c, lock_check, written)
    except BaseException:
        done = c.fail()
        for p in written:
            p.unlink(missing_ok=True)
        for line in done:
            _say(line)
        raise


def _apply(args: argparse.Namespace, m: Any, this: Any, job: Any, plan: Any, c: Any, lock_check: list[Any],
           written: list[Path]) -> int:
    from ..apply import environ, run_checks, run_steps
    from ..render.apply import ApplyProgress

    cwd, has_gpu = Path.cwd(), bool(this.gpus)
    checks: list[Any] = []
    with ApplyProgress(new_console(stderr=True), verbose=bool(_opt(args, "verbose")),
                       quiet=bool(_opt(args, "quiet"))) as progress:
        steps = run_steps(job, progress, cwd=cwd, has_gpu=has_gpu, claimed=c)
        if steps and steps[-1].status == "failed":
            return _failed_step(args, m, this, job, steps, c)
        checks = run_checks(job.verify, progress, cwd=cwd, env=environ(job.exports, cwd), has_gpu=has_gpu,
                            timeout=args.timeout)
    # a failed check already says the environment is not ready: doctor is not run, and the verdict says so
    skipped = "not run: a check failed" if any(x.status == "failed" for x in checks) else None
    findings = _doctor(args, m, this, job) if skipped is None else []
    ready = skipped is None and not any(f.severity == "error" for f in findings)
    if not ready:
        return _report(args, job, steps, checks, findings, ready=False, cleanup=_cleanup(args, c),
                       lock_check=lock_check, doctor_skipped=skipped)
    lock, problem = _write_lock(args, m, job, plan)
    written += [Path(f) for f in (lock or {}).get("files", ())]
    activate = _write_activation(job)
    done = c.succeed()
    written.clear()
    code = _report(args, job, steps, checks, findings, ready=True, cleanup=done, lock=lock, activate=activate,
                   lock_check=lock_check)
    if problem:
        print(f"vresolve: error: {problem}", file=sys.stderr)
        return EXIT_NOT_READY
    return code


def _cleanup(args: argparse.Namespace, c: Any) -> list[str]:
    return c.keep() if args.keep_failed else c.fail()


def _failed_step(args: argparse.Namespace, m: Any, this: Any, job: Any, steps: list[Any], c: Any) -> int:
    from ..apply import failure_causes
    from ..render.apply import failure_lines

    failed = steps[-1]
    causes = failure_causes(job, failed, this, m)
    cleanup = _cleanup(args, c)
    if _opt(args, "json"):
        from ..render import envelope
        from ..render.apply import apply_view

        print_json(envelope("apply", apply_view(job, steps, [], [], ready=False, causes=causes, cleanup=cleanup,
                                                 doctor_skipped="not run: a step failed")))
    else:
        for line in [*failure_lines(failed, causes, job.log), *cleanup]:
            print(f"vresolve: {line}", file=sys.stderr)
    return EXIT_NOT_READY


def _doctor(args: argparse.Namespace, m: Any, this: Any, job: Any) -> list[Any]:
    """``doctor --interpreter`` on the new environment: the findings."""
    from ..detect import library_shadows, probe_environment
    from ..doctor import diagnose

    env = probe_environment(job.python, timeout=args.timeout)
    return diagnose(this, m, env, shadows=library_shadows())


def _write_lock(args: argparse.Namespace, m: Any, job: Any, plan: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(the lock written next to the environment, or None; what went wrong, or None)."""
    from .._atomic import write_files_atomic
    from ..apply import installed_versions, lock_differences
    from ..errors import VresolveError
    from ..lock import FILE_NAMES, FORMATS, compile_lock, write_lock

    lock_dir = Path(args.lock_dir).resolve() if args.lock_dir else job.env_dir.with_name(job.env_dir.name + ".lock")
    if job.kind == "lock":  # the lock it installed, kept beside the environment
        src = Path(args.apply_lock)
        try:
            lock_dir.mkdir(parents=True, exist_ok=True)
            write_files_atomic([(lock_dir / FILE_NAMES["requirements"], src.read_bytes())])
        except OSError as e:
            return None, f"the lock could not be copied into {lock_dir} ({e.strerror or e})"
        return {"dir": str(lock_dir), "files": [str(lock_dir / FILE_NAMES["requirements"])]}, None
    if plan is None:
        return None, None  # a source build: its recipe is the record (vresolve lock locks wheel plans)
    quiet = _opt(args, "json") or _opt(args, "quiet")
    try:
        lock = compile_lock(plan, m, progress=None if quiet else (lambda msg: print(f"vresolve: lock: {msg}",
                                                                                    file=sys.stderr, flush=True)))
        diffs = lock_differences(lock.files["requirements"], installed_versions(job.python, Path.cwd()))
        if diffs:
            return None, ("the lock was not written: it differs from what was installed (the index changed while "
                          "apply ran?): " + "; ".join(diffs[:5]))
        files = write_lock(lock, lock_dir, FORMATS)
    except VresolveError as e:
        return None, f"the environment is ready, its lock was not written: {e}"
    return {"dir": str(lock_dir), "files": [str(f) for f in files], "packages": lock.packages}, None


def _write_activation(job: Any) -> Path | None:
    from .._atomic import write_atomic
    from ..apply import ACTIVATE
    from ..plan.steps import Expand
    from ..render.apply import activation_text

    path = job.env_dir / ACTIVATE
    here = str(Path.cwd())  # the file is sourced from anywhere: $PWD is where apply ran
    exports = [(k, Expand(v.replace("$PWD", here)) if isinstance(v, Expand) else v) for k, v in job.exports]
    try:
        write_atomic(path, activation_text(job.env_dir, exports, job.what))
    except (OSError, ValueError):
        return None
    return path


def _report(args: argparse.Namespace, job: Any, steps: list[Any], checks: list[Any], findings: list[Any], *,
            ready: bool, cleanup: list[str], lock: dict[str, Any] | None = None, activate: Path | None = None,
            lock_check: list[Any] | None = None, doctor_skipped: str | None = None) -> int:
    from ..render.apply import apply_view, verdict_line

    if _opt(args, "json"):
        from ..render import envelope

        print_json(envelope("apply", apply_view(job, steps, checks, findings, ready=ready, cleanup=cleanup,
                                                 lock=lock, activate=activate, lock_check=lock_check or (),
                                                 doctor_skipped=doctor_skipped)))
        return EXIT_OK if ready else EXIT_NOT_READY
    if findings:
        from ..render.apply import finding_lines

        for line in finding_lines(findings):
            print(f"vresolve: doctor: {line}", file=sys.stderr)
    for line in cleanup:
        print(f"vresolve: {line}", file=sys.stderr)
    if lock is not None:
        print(f"vresolve: lock of what was installed: {lock['dir']} ({len(lock['files'])} files)", file=sys.stderr)
    print(verdict_line(job, checks, findings, ready, activate, doctor_skipped=doctor_skipped))
    return EXIT_OK if ready else EXIT_NOT_READY
