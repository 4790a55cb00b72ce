"""``vresolve apply``'s output: the progress of each step (a live display on a terminal, a line per step
otherwise), the installer's own output behind ``-v``, the failure report, the one-line verdict, the
activation file's text and the ``vresolve.apply/1`` body.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .shell import escape_controls, exports_text, sh_value, shell_line

if TYPE_CHECKING:
    from ..apply import CheckOutcome, Job, StepOutcome
    from ..plan.steps import Step

__all__ = ["ApplyProgress", "activation_text", "apply_view", "failure_lines", "finding_lines", "job_human",
           "verdict_line"]

_GIB = 2**30


def _size(n: float) -> str:
    return f"{n / _GIB:.2f} GiB" if n >= _GIB / 4 else f"{n / 2**20:.1f} MiB"


def _short(argv: Sequence[str], limit: int = 90) -> str:
    line = escape_controls(shell_line(argv))
    return line if len(line) <= limit else line[:limit - 3] + "..."


class ApplyProgress:
    """The :class:`vresolve.apply.Reporter` of the CLI, on the stderr console: on a terminal a live line per
    step (spinner, elapsed time, and for downloads the bytes done of those announced); otherwise one line when a
    step starts and one when it ends. ``verbose``: every line of the installer's output too."""

    def __init__(self, console: Any, *, verbose: bool = False, quiet: bool = False) -> None:
        from ..apply import Downloads

        self.console, self.verbose, self.quiet = console, verbose, quiet
        self.live = console.is_terminal and not quiet
        self.progress: Any = None
        self.task: Any = None
        self.downloads = Downloads()
        self.label = ""

    def __enter__(self) -> ApplyProgress:
        if self.live:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=24),
                                     TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=self.console)
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            try:
                self.progress.__exit__(*exc)
            except OSError:  # the terminal hung up (SIGHUP): nothing to draw on, and the cleanup must go on
                pass

    def _print(self, text: str, style: str = "") -> None:
        from rich.text import Text

        if not self.quiet:
            console = self.progress.console if self.progress is not None else self.console
            console.print(Text(text, style=style), soft_wrap=True)  # one line each, as the installer wrote it

    def step_started(self, index: int, total: int, step: Step) -> None:
        from ..apply import Downloads

        self.downloads = Downloads()
        self.label = f"[{index}/{total}] {_short(step.argv)}"
        if self.progress is not None:
            self.task = self.progress.add_task(self.label, total=None, detail="")
        else:
            self._print(f"vresolve: {self.label}")

    def line(self, text: str) -> None:
        if self.verbose:
            self._print("    " + escape_controls(text), "dim")
        if self.downloads.feed(text) and self.progress is not None:
            d = self.downloads
            active = ", ".join(d.active[:2]) + (" ..." if len(d.active) > 2 else "")
            self.progress.update(self.task, total=d.total_bytes, completed=d.done_bytes,
                                 detail=f"{_size(d.done_bytes)} of {_size(d.total_bytes)}"
                                        + (f" (downloading {escape_controls(active)})" if active else ""))

    def step_finished(self, o: StepOutcome) -> None:
        took = f" in {o.ran.seconds:.1f} s" if o.ran is not None else ""
        mark = {"ok": "done", "skipped": f"skipped ({o.why})", "failed": f"FAILED ({escape_controls(o.why)})"}[o.status]
        dl = f", {_size(self.downloads.total_bytes)} downloaded" if self.downloads.total_bytes else ""
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, total=1, completed=1, detail=f"{mark}{dl}")
            self.task = None
        else:
            label = self.label if o.step.tool != "check" else f"[{o.index}] {_short(o.step.argv)}"
            self._print(f"vresolve: {label}: {mark}{took}{dl}", "red" if o.status == "failed" else "")

    def check_finished(self, o: CheckOutcome) -> None:
        style = {"passed": "green", "skipped": "yellow", "failed": "bold red"}[o.status]
        why = f" ({escape_controls(o.why)})" if o.why else ""
        self._print(f"  {o.status}: {escape_controls(o.check.name)}{why}", style)
        if o.status == "failed":
            for line in o.output.strip().splitlines()[-8:]:
                self._print(f"    | {escape_controls(line)}", "dim")


def failure_lines(o: StepOutcome, causes: Sequence[Any], log: Path | None) -> list[str]:
    """The failure report: the step, its last lines of output, the cause when doctor names one."""
    out = [f"step {o.index} failed ({escape_controls(o.why)}): {escape_controls(shell_line(o.step.argv))}",
           f"  ({escape_controls(o.step.why)})"]
    tail = o.ran.tail[-15:] if o.ran is not None else ()
    if tail:
        out.append("its last lines of output:")
        out += [f"  | {escape_controls(line)}" for line in tail]
    if log is not None:
        out.append(f"the whole output: {log}")
    for f in causes:
        out.append(f"cause [{f.cause}]: {escape_controls(f.title)}")
        out.append("  fix: " + escape_controls(f.fix, lines=True).replace("\n", "\n       "))
    return out


def job_human(job: Job, head: Sequence[Any]) -> list[Any]:
    """What apply is about to do: ``head`` (the stack table), the steps, the checks after them, the exports."""
    from rich.text import Text

    out: list[Any] = [*head, Text(f"apply will run, into {escape_controls(str(job.env_dir))}:", style="bold")]
    for i, s in enumerate(job.steps, 1):
        gpu = " (on a machine with the GPUs only)" if s.needs_gpu else ""
        out += [Text(f"  # {escape_controls(s.why)}{gpu}", style="dim"),
                Text(f"  {i}. {escape_controls(shell_line(s.argv), lines=True)}")]
    if job.log is not None:
        out.append(Text(f"  (the output of every step goes to {escape_controls(str(job.log))})", style="dim"))
    if job.verify:
        out.append(Text("then check:", style="bold"))
        out += [Text(escape_controls(f"  - {c.name}" + (" (needs the GPUs)" if c.needs_gpu else "") + f": {c.expect!r}"))
                for c in job.verify]  # one line each, as the plan names them
    if job.build_env or job.exports:
        out.append(Text("with:", style="bold"))
        out += [Text(f"  export {k}={escape_controls(sh_value(v))}") for k, v in job.build_env or job.exports]
    return out


def finding_lines(findings: Sequence[Any]) -> list[str]:
    """Doctor's findings, one line each with its fix."""
    return [escape_controls(f"{f.severity}: {f.title} [{f.cause}]; fix: {' '.join(f.fix.split())}") for f in findings]


def verdict_line(job: Job, checks: Sequence[CheckOutcome], findings: Sequence[Any], ready: bool,
                 activate: Path | None, *, doctor_skipped: str | None = None) -> str:
    """One line: is the machine ready, what was checked, and how to use the environment; ``doctor_skipped``:
    why doctor did not run (None: it ran, and ``findings`` are its)."""
    n = {s: sum(1 for c in checks if c.status == s) for s in ("passed", "failed", "skipped")}
    skipped = f", {n['skipped']} skipped ({checks_skipped_why(checks)})" if n["skipped"] else ""
    failed = f", {n['failed']} FAILED" if n["failed"] else ""
    errors = [f for f in findings if f.severity == "error"]
    doctor = (f"doctor: {doctor_skipped}" if doctor_skipped else f"doctor: {len(errors)} error(s)" if errors else
              f"doctor: {len(findings)} note(s), no errors" if findings else "doctor: no problems")
    head = "ready" if ready else "NOT ready"
    use = f"; use it: source {sh_value(str(activate))}" if activate is not None else ""
    return (f"{head}: {escape_controls(job.what)} in {escape_controls(str(job.env_dir))}: checks {n['passed']} "
            f"passed{skipped}{failed}; {doctor}{use}")


def checks_skipped_why(checks: Sequence[CheckOutcome]) -> str:
    return "; ".join(sorted({c.why for c in checks if c.status == "skipped"}))


def activation_text(env_dir: Path, exports: Sequence[tuple[str, str]], what: str) -> str:
    """The activation file apply writes into the environment (bash): the environment activated, then the plan's
    exports."""
    from .shell import comment

    return "".join([comment(f"{what}: made by vresolve apply; use it with: source <this file>") + "\n",
                    f". {sh_value(str(env_dir / 'bin' / 'activate'))}\n", exports_text(exports, "bash")])


def _step_view(o: StepOutcome) -> dict[str, Any]:
    return {"index": o.index, "tool": o.step.tool, "argv": list(o.step.argv), "shell": shell_line(o.step.argv),
            "status": o.status, "why": o.why, "seconds": round(o.ran.seconds, 2) if o.ran else None,
            "exit_code": o.ran.returncode if o.ran else None,
            "tail": list(o.ran.tail) if o.ran is not None and o.status == "failed" else []}


def apply_view(job: Job, steps: Sequence[StepOutcome], checks: Sequence[CheckOutcome], findings: Sequence[Any],
               *, ready: bool, causes: Sequence[Any] = (), cleanup: Sequence[str] = (),
               lock: dict[str, Any] | None = None, activate: Path | None = None,
               lock_check: Sequence[Any] = (), doctor_skipped: str | None = None) -> dict[str, Any]:
    """The ``vresolve.apply/1`` body; ``lock_check``: doctor --lock's findings on this machine (``--lock``);
    ``doctor_skipped``: why doctor did not run (then ``findings`` is empty), or None."""
    failed = next((s for s in steps if s.status == "failed"), None)
    return {
        "ready": ready, "what": job.what, "kind": job.kind, "environment": str(job.env_dir),
        "steps": [_step_view(s) for s in steps],
        "checks": [{"name": c.check.name, "status": c.status, "expect": c.check.expect, "why": c.why,
                    "output": c.output[-2000:] if c.status == "failed" else ""} for c in checks],
        "findings": [f.to_dict() for f in findings], "doctor_skipped": doctor_skipped,
        "failed": None if failed is None else {"step": failed.index, "shell": shell_line(failed.step.argv),
                                               "why": failed.why, "causes": [f.to_dict() for f in causes],
                                               "log": str(job.log) if job.log else None},
        "cleanup": list(cleanup), "lock": lock, "activate": str(activate) if activate else None,
        "exports": dict(job.exports), "lock_check": [f.to_dict() for f in lock_check],
    }
