"""A pasted log judged beside the live machine (``doctor --log`` without ``--no-env``): what the paste's own report
shows of its environment, and what the live environment's facts say of the paste's failure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..host import EnvReport, Host
from ..matrix import Matrix
from .facts import Finding, caps_covered

if TYPE_CHECKING:
    from .evidence import Evidence

__all__ = ["judge_report", "with_pasted_report", "live_torch_covers"]


def judge_report(e: Evidence, matrix: Matrix, log: str | None = None,
                 reinstall: Callable[[Host], Sequence[str]] | None = None
                 ) -> tuple[Host, EnvReport | None, list[Finding], frozenset[str]]:
    """(host, environment, findings, facts not shown) of what a paste shows of its own machine and environment
    (collect_env, nvidia-smi, pip list, tracebacks...), judged by the same checks as a live environment's, the facts
    it does not show left out; each finding cites its pasted lines. ``reinstall``: the corrected plan's lines for the
    pasted machine, asked for only where the paste names all a plan needs (never from defaults)."""
    from ..detect import fill_capabilities
    from .checks import diagnose
    from .evidence import to_host_facts
    from .pasted import cite

    facts = to_host_facts(e)
    host, env = fill_capabilities(facts.host, matrix), facts.env
    whole = (host.driver.version is not None and host.known_gpus()
             and not {"python", "platform.os", "platform.machine"} & facts.unknown)
    lines = reinstall(host) if reinstall is not None and whole else ()
    findings = cite(diagnose(host, matrix, env, log=log, unknown=facts.unknown, reinstall=lines), e)
    return host, env, findings, facts.unknown


def with_pasted_report(findings: Sequence[Finding], e: Evidence, matrix: Matrix) -> list[Finding]:
    """The live findings and those of the facts a pasted report shows of its own environment (:func:`judge_report`)
    for the causes the live checks do not name: a report pasted from another machine or environment is judged, not
    hidden behind this one's (a CPU torch beside the report's GPUs is not "no problems found" because this machine
    has no GPU)."""
    pasted = judge_report(e, matrix)[2]
    named = {f.cause for f in findings}
    return [*findings, *(f for f in pasted if f.cause not in named)]


def live_torch_covers(findings: Sequence[Finding], host: Host, env: EnvReport | None) -> list[Finding]:
    """A pasted "no kernel image" (``arch-not-in-build`` from the log) where the live environment's torch has
    kernels for every GPU of this machine: the finding says so, and that the image missing is another package's
    (vLLM's, flash-attn's, xFormers', an extension built here) or the log came from another environment."""
    torch = env.torch if env is not None and not env.error else None
    gpus = host.known_gpus()
    if torch is None or not torch.available or not torch.arch_list or not gpus:
        return list(findings)
    if not all(caps_covered(torch.arch_list, cc) for _, cc in gpus):
        return list(findings)
    sms = ", ".join(f"{g.name} ({cc.sm})" for g, cc in gpus)
    said = (f" This environment's torch {torch.version} has kernels for this machine's GPUs ({sms}): "
            f"torch.cuda.get_arch_list() = {list(torch.arch_list)}. The kernel image missing is not torch's here: it "
            "is another package's (vLLM's, flash-attn's, xFormers', an extension built on this machine), or the log "
            "came from another environment; run the failing command again in this one, and paste its whole log with "
            "`vllm collect-env` from where it failed.")
    out = []
    for f in findings:
        if f.cause == "arch-not-in-build" and f.source == "log":
            f = msgspec.structs.replace(f, explanation=f.explanation + said,
                                        evidence=(*f.evidence, f"this environment: torch {torch.version}, "
                                                               f"get_arch_list() = {list(torch.arch_list)}"))
        out.append(f)
    return out
