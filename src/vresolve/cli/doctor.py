"""``vresolve doctor``: this environment (or a pasted log, or a lock's recorded machine) checked against the matrix,
findings printed as JSON, markdown or the human view.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import UsageError
from .args import _load, _opt
from .common import lock_header_of, new_console, print_json, shown

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from typing import Any

__all__ = ["cmd_doctor"]


def _env_python(flag: str | None) -> str:
    if flag:
        return flag
    for var, rel in (("VIRTUAL_ENV", "bin/python"), ("CONDA_PREFIX", "bin/python")):
        root = os.environ.get(var)
        if root and os.path.exists(os.path.join(root, rel)):
            return os.path.join(root, rel)
    return sys.executable


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor import check_against_lock, worst_exit_code

    m = _load(args)
    kept, header = _doctor_inputs(args)
    evidence = _read(args, kept)
    log = kept.text() if kept is not None else None
    if evidence is not None:
        _readable(args, evidence, log)
    unclear: list[Any] = []
    unseen: frozenset[str] = frozenset()  # what a paste does not show (said so in what was checked)
    if evidence is not None and args.no_env and header is None:
        host, env, findings, unseen = _pasted_only(m, evidence, log)
    else:
        host, env, findings = _live(args, m, evidence, log, pasted_report=evidence is not None and header is None)
    if evidence is not None:  # what only the log's typed lines show, judged the same way for both
        from ..doctor.pasted import judge_pasted, keep_available, merge_log_findings, optional_kernels_cited, overruled

        # a cause the log's typed lines show is cited by line; a signature's finding of it gives way
        pasted, unclear = judge_pasted(evidence, m, [f for f in findings if f.source != "log"],
                                       host=None if args.no_env else host)  # the live machine's facts
        assert kept is not None
        findings = keep_available(overruled(merge_log_findings(findings, pasted, kept.cite), evidence, m),
                                  evidence)
        if not args.no_env:
            from ..doctor.beside import live_torch_covers

            findings = live_torch_covers(findings, host, env)
        unclear = optional_kernels_cited(unclear, findings)
        if unclear:  # not settled: the cause such lines most often had, as a lead (a base rate, not a finding)
            import msgspec

            from ..doctor.likely import likely_lead

            unclear[0] = msgspec.structs.replace(unclear[0], likely=likely_lead(evidence, m))
        if args.no_env and not findings and not unclear and _holds_nothing(evidence):
            raise UsageError(f"--log: {args.log!r} holds nothing doctor can read (no error line, version, GPU or "
                             "driver): paste the error and the output of `vllm collect-env`")
    if header is not None:
        findings = check_against_lock(header, host, env, name=args.lock_file) + findings
    nothing = _nothing_to_check(env) if evidence is None and header is None else None
    _print_doctor(args, findings, host, env, unclear, unseen, nothing)
    return 1 if unclear or nothing else worst_exit_code(findings)


def _read(args: argparse.Namespace, kept: Any) -> Any:
    """The evidence of the pasted log (None without one): the whole log, line by line, in bounded memory."""
    from .._bounded import InputLimit

    if kept is None:
        return None
    from ..doctor.evidence import read_evidence

    try:
        return read_evidence(kept)
    except OSError as e:
        raise UsageError(f"--log: cannot read {args.log!r} ({e.strerror or e})") from None
    except InputLimit as e:
        raise UsageError(f"--log: {args.log!r}: {e}") from None
    finally:
        kept.close()


def _pasted_only(m: Any, evidence: Any, log: str | None) -> tuple[Any, Any, list[Any], frozenset[str]]:
    """(host, environment, findings, facts not shown) of the pasted text alone: its facts (collect_env, nvidia-smi,
    pip list, tracebacks...) judged by the same checks as a live environment's, those it does not show left out."""
    from ..doctor.beside import judge_report

    return judge_report(evidence, m, log=log, reinstall=lambda host: _reinstall_lines(host, m))


def _live(args: argparse.Namespace, m: Any, evidence: Any, log: str | None,
          pasted_report: bool) -> tuple[Any, Any, list[Any]]:
    """(host, environment, findings) of this machine (its environment unless --no-env), with a pasted report's
    own facts judged too (``pasted_report``)."""
    from ..detect import Overrides, detect_host, fill_capabilities, library_shadows, probe_environment
    from ..doctor import diagnose

    host = fill_capabilities(detect_host(Overrides.from_env(), installed=False), m)
    env = None if args.no_env else probe_environment(_env_python(args.env_python), timeout=args.timeout)
    findings = diagnose(host, m, env, shadows=() if args.no_env else library_shadows(), log=log,
                        reinstall=_reinstall_lines(host, m))
    if pasted_report:
        from ..doctor.beside import with_pasted_report

        findings = with_pasted_report(findings, evidence, m)
    return host, env, findings


def _nothing_to_check(env: Any) -> str | None:
    """What doctor says of an environment it probed that has neither torch nor vLLM (its own, typically): nothing was
    checked, which is not healthy (exit 1); None when either is there, or the probe itself failed."""
    if env is None or env.error is not None:
        return None
    if any(m.origin is not None for m in env.modules if m.name in ("torch", "vllm")):
        return None
    from ..render.shell import escape_controls

    return (f"nothing to check here: no torch/vLLM in this environment ({escape_controls(env.python)}); point doctor "
            "at your environment: --interpreter YOUR_ENV/bin/python")


def _readable(args: argparse.Namespace, evidence: Any, log: str | None) -> None:
    """A pasted log that is empty is an input error, not "no problems" (one that holds nothing doctor reads is
    refused once judged: a known line may still name a cause)."""
    if evidence.lines == 0 or not (log or "").strip():
        raise UsageError(f"--log: {args.log!r} is empty: paste the error and the output of `vllm collect-env`")


def _holds_nothing(evidence: Any) -> bool:
    """No typed line and no fact at all in a pasted log."""
    return not evidence.kinds and not any(
        getattr(evidence, name) for name in evidence.__struct_fields__ if name not in ("lines", "cut_lines"))


def _print_doctor(args: argparse.Namespace, findings: list[Any], host: Any, env: Any, unclear: list[Any],
                  unseen: frozenset[str], nothing: str | None = None) -> None:
    """doctor's answer: JSON, markdown, or the human view (``-q``: without the list of what was checked)."""
    from ..doctor import observations
    from ..render import doctor_human, envelope

    if _opt(args, "json"):
        print_json(envelope("doctor", {"findings": [f.to_dict() for f in findings],
                                        "unclear": [u.to_dict() for u in unclear], "nothing_checked": nothing,
                                        "observations": observations(host, env, unseen),
                                        "host": host.to_dict(), "environment": env.to_dict() if env else None}))
    elif args.doctor_format == "markdown":
        from ..render.markdown import doctor_markdown

        sys.stdout.write(doctor_markdown(findings, observations(host, env, unseen), unclear, nothing))
    else:
        console = new_console()
        for item in doctor_human(findings, host, env, unclear, unseen, checked=not _opt(args, "quiet"),
                                 nothing=nothing):
            console.print(item)


def _doctor_inputs(args: argparse.Namespace) -> tuple[Any, dict[str, Any] | None]:
    """(the log to read, as a KeptLog, or None; the lock's recorded assumptions), each from its flag."""
    from ..doctor.logs import KeptLog

    if _opt(args, "doctor_python") is not None:  # elsewhere --python is a version X.Y; doctor takes no version
        raise UsageError(f"doctor --python {shown(args.doctor_python)}: the environment's interpreter is "
                         "--interpreter EXE (doctor plans for no Python version)")
    log = None
    if args.log == "-":
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        if sys.stdin.isatty():  # a terminal waits for the paste: say so (a pipe or a file needs no word)
            print("vresolve: paste the log, then press Ctrl-D on a line of its own", file=sys.stderr, flush=True)
            stream = getattr(stream, "raw", stream)  # one read per call: one Ctrl-D ends it (a buffer reads on)
        log = KeptLog(stream)
    elif args.log:
        try:
            log = KeptLog(open(args.log, "rb"))  # noqa: SIM115 - read to its end by the caller, then closed
        except OSError as e:
            raise UsageError(f"--log: cannot read {args.log!r} ({e.strerror or e})") from None
    if args.no_env and log is None and not args.lock_file:
        raise UsageError("--no-env: give a --log or --lock to read, or leave out --no-env")
    if not args.lock_file:
        return log, None
    return log, lock_header_of(args.lock_file)


def _reinstall_lines(host: Any, m: Any) -> list[str]:
    """The corrected plan's steps, for the fix of a finding whose cure is a reinstall ([] when none fits)."""
    from ..plan import build_plan
    from ..render.shell import shell_line
    from ..resolve import NoCompatibleStack, Request, resolve

    if host.driver.broken:  # no plan until the driver works: never the CPU backend on a GPU machine
        return []
    try:
        res = resolve(host, m, Request(cpu=not host.gpus))
    except NoCompatibleStack:
        return []
    return [shell_line(s.argv) for s in build_plan(m, res).steps]
