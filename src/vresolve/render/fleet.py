"""A fleet plan as JSON (``vresolve.fleet/1``, DESIGN.md fixes the field names) and as tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .json import _host_view, jetson_choice_view, stack_view

if TYPE_CHECKING:
    from ..fleet.plan import FleetPlan, Group
    from ..resolve import Resolution

__all__ = ["fleet_plan_view", "fleet_plan_human", "requires_view"]


def requires_view(r: Resolution) -> dict[str, Any]:
    return {"min_driver": str(r.min_driver) if r.min_driver else None, "driver_policy": r.request.driver_policy,
            "glibc": str(r.glibc_floor) if r.glibc_floor else None}


def fleet_plan_view(p: FleetPlan) -> dict[str, Any]:
    """The body of ``vresolve fleet plan --json``."""
    common = None
    if p.common:
        first = p.common.get("linux-x86_64") or next(iter(p.common.values()))
        common = {"stack": stack_view(first.stack), "requires": requires_view(first), "python": str(p.python),
                  "per_platform": {tag: {"stack": stack_view(r.stack), "requires": requires_view(r),
                                         "host": _host_view(p.combined[tag], "combined from the inventory"),
                                         "warnings": list(r.warnings)}
                                   for tag, r in p.common.items()}}
    return {
        "hosts": p.hosts,
        "groups": [{"hosts": list(g.hosts), "host": _host_view(g.host, "inventory"),
                    "stack": stack_view(g.stack) if g.stack else None,
                    "requires": requires_view(g.resolution) if g.resolution else None,
                    "why_not": g.why_not, "apart": g.apart, "jetson": _jetson_view(g)} for g in p.groups],
        "common": common, "common_error": p.common_error, "apart": list(p.apart),
        "blocking": [{"hosts": list(b.hosts), "why": b.why, "upgrade": b.upgrade, "unlocks": {"vllm": str(b.unlocks)}}
                     for b in p.blocking],
        "failed": [f.to_dict() for f in p.failed],
    }


def _jetson_view(g: Group) -> dict[str, Any] | None:
    """A Jetson group's wheel set, and why to take care with it."""
    return None if g.jetson is None else {**jetson_choice_view(g.jetson), "warnings": list(g.jetson.warnings)}


def _names(hosts: tuple[str, ...] | list[str], limit: int = 4) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" (+{len(hosts) - limit} more)" if len(hosts) > limit else "")


def _stack_text(r: Resolution | None, why: str | None = None) -> str:
    if r is None:
        return f"none: {why}" if why else "none"
    s = r.stack
    return f"vLLM {s.vllm} + torch {s.torch}+{s.variant}"


def _group_text(g: Group) -> str:
    if g.jetson is not None:
        w = g.jetson.wheels
        return f"vLLM {w.vllm} + torch {w.torch} (JetPack {g.jetson.jetpack.version}: Jetson index {w.path})"
    return _stack_text(g.resolution, g.why_not)


def fleet_plan_human(p: FleetPlan) -> list[Any]:
    """Rich renderables: the groups' table, the common stack, what holds it back, the failures."""
    from rich.table import Table
    from rich.text import Text

    from ..host import describe_gpus

    out: list[Any] = []
    t = Table(title=f"{p.hosts} hosts in {len(p.groups)} groups", show_lines=False)
    for col in ("nodes", "platform", "GPUs", "driver", "python", "best stack"):
        t.add_column(col)
    for g in p.groups:
        h = g.host
        t.add_row(Text(f"{len(g.hosts)}: {_names(g.hosts)}"), h.platform.tag, Text(describe_gpus(h.gpus) or "none"),
                  str(h.driver.version or "-"), str(h.python_minor), Text(_group_text(g)))
    out.append(t)
    if p.apart:
        out.append(Text(f"\nPlanned apart (Jetson: the JetPack decides the stack, not shared with other nodes; "
                        f"vresolve plan on each board gives its recipe): {_names(p.apart)}", style="bold"))
        if not p.combined:
            return out + [Text(f"  not planned: {f.host}: {f.why}", style="red") for f in p.failed]
    if p.common:
        out.append(Text(f"\nCommon stack (Python {p.python}), one lock per platform:", style="bold"))
        for tag, r in p.common.items():
            need = f"driver >= {r.min_driver}" if r.min_driver else "no driver floor"
            out.append(Text(f"  {tag}: {_stack_text(r)} ({need})"))
    else:
        out.append(Text(f"\nNo common stack: {p.common_error}", style="red"))
    for b in p.blocking:
        action = b.upgrade or "no upgrade of these nodes helps"
        out.append(Text(f"  held back by {len(b.hosts)} node(s): {b.why}; {action} unlocks vLLM {b.unlocks} "
                        f"for the whole cluster: {_names(b.hosts)}", style="yellow"))
    for f in p.failed:
        out.append(Text(f"  not planned: {f.host}: {f.why}", style="red"))
    return out


def _requirement_lines(text: str) -> tuple[list[str], list[str]]:
    """(option lines such as --extra-index-url, requirement lines with their --hash options) of a
    requirements.txt, continuation lines joined, comments dropped."""
    joined, cur = [], ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            cur += line[:-1].strip() + " "
            continue
        cur += line.strip()
        if cur:
            joined.append(cur)
        cur = ""
    options = [x for x in joined if x.startswith("-")]
    return options, [x for x in joined if not x.startswith("-")]


def _with_marker(line: str, machine: str) -> str:
    """``pkg==1 --hash=...`` -> ``pkg==1 ; platform_machine == 'x86_64' --hash=...`` (pip's syntax)."""
    req, sep, opts = line.partition(" --")
    marker = f"platform_machine == '{machine}'"
    req = f"{req.strip()} and {marker}" if ";" in req else f"{req.strip()} ; {marker}"
    return req + (f" --{opts}" if sep else "")


def runtime_env(requirements: dict[str, str], env: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A Ray ``runtime_env`` whose ``pip`` installs each platform's lock (with its hashes) on every node:
    each pin bound to its CPU architecture by a ``platform_machine`` marker when the fleet has several.
    ``env_vars``: the plan's environment, where the platforms agree."""
    options: list[str] = []
    packages: list[str] = []
    several = len(requirements) > 1
    for tag, text in sorted(requirements.items()):
        opts, reqs = _requirement_lines(text)
        options += [o for o in opts if o not in options]
        machine = tag.partition("-")[2]
        packages += [_with_marker(r, machine) if several else r for r in reqs]
    envs = list(env.values())
    shared = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs)} if envs else {}
    return {"pip": {"packages": options + packages, "pip_check": False}, "env_vars": shared}
