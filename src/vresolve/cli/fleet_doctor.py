"""``vresolve fleet doctor --ray``: doctor's environment checks on every node of a Ray cluster at once, and
what only a fleet shows: nodes whose installed vLLM, torch (its CUDA build) or companions differ from the
other nodes' or from a lock's. Jetsons run their JetPack's stack: they are compared with each other, and with
a lock FILE given for every node, but not held to fleet lock's DIR or to the other nodes' stack.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Any

from ..doctor.facts import Finding
from ..host import EnvReport, Host
from .args import _load
from .common import lock_header_of, new_console, print_json

DRIFT = "fleet-drift"  # a fleet-only cause: the nodes do not all hold the same stack
_DISTS = ("vllm", "torch", "torchvision", "torchaudio", "flashinfer-python", "xformers")


def _installed(host: Host, name: str) -> str | None:
    d = host.installed_dist(name)
    return d.version if d is not None else None


def drift_findings(nodes: dict[str, Host], headers: dict[str, dict[str, Any] | None]
                   ) -> list[tuple[tuple[str, ...], Finding]]:
    """(nodes, finding) for each package whose installed version differs between nodes, or, for the nodes
    ``headers`` gives a lock, from their lock's pin."""
    out = []
    for dist in _DISTS:
        have = {name: _installed(h, dist) for name, h in nodes.items()}
        wanted = {name: _locked((headers.get(name) or {}).get("stack") or {}, dist) for name in nodes}
        if any(w is not None for w in wanted.values()):
            odd = tuple(sorted(n for n in nodes if wanted[n] is not None and not _same(have[n], wanted[n], True)))
            against = {n: f"the lock's {dist} {wanted[n]}" for n in odd}
        else:
            counts = Counter(have.values())
            usual = max(counts, key=lambda v: (counts[v], str(v)))
            odd = tuple(sorted(n for n, v in have.items() if v != usual))
            against = {n: f"{dist} {usual or '(none)'} on the other nodes" for n in odd}
        if not odd:
            continue
        found = "; ".join(f"{n}: {dist} {have[n] or 'not installed'}, not {against[n]}" for n in odd)
        out.append((odd, Finding(
            cause=DRIFT, severity="error", title=f"{dist} differs on {len(odd)} node(s)",
            explanation=f"{found}; a job that runs on every node (vLLM across nodes on Ray) needs the same "
                        "stack everywhere",
            fix="install the same lock on every node (vresolve fleet lock; Ray: the runtime_env it writes)",
            evidence=tuple(f"{n}: {dist} {have[n] or 'not installed'}" for n in odd), source="fleet")))
    return out


def _lock_for(lock: str | None, tag: str, cache: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """``--lock FILE``: that lock for every node; ``--lock DIR`` (fleet lock's): DIR/<the node's platform>/."""
    import os

    if lock is None:
        return None
    path = os.path.join(lock, tag, "requirements.txt") if os.path.isdir(lock) else lock
    if path not in cache:
        cache[path] = lock_header_of(path) if os.path.exists(path) or not os.path.isdir(lock) else None
    return cache[path]


def _locked(stack: dict[str, Any], dist: str) -> str | None:
    if dist == "torch" and stack.get("torch"):
        variant = stack.get("variant")
        return f"{stack['torch']}+{variant}" if variant and variant != "cpu" else str(stack["torch"])
    v = stack.get(dist)
    return str(v) if isinstance(v, str) else None


def _same(have: str | None, wanted: str | None, locked: bool) -> bool:
    if have == wanted:
        return True
    if locked and have is not None and wanted is not None:
        # PyPI's torch of the lock's default CUDA carries no local tag: 2.10.0 is 2.10.0+cu128 there
        return have.split("+")[0] == wanted.split("+")[0] and "+" not in have
    return False


def fleet_doctor(args: argparse.Namespace) -> int:
    from ..detect import fill_capabilities
    from ..doctor import check_against_lock, diagnose, worst_exit_code
    from ..fleet.ray import node_doctor, ray_nodes_run
    from ..render import envelope
    from ..resolve.jetson import is_jetson

    m = _load(args)
    cache: dict[str, dict[str, Any] | None] = {}
    if args.lock_file and not os.path.isdir(args.lock_file):
        _lock_for(args.lock_file, "", cache)  # a bad lock is a usage error before any node is asked
    from ..render.progress import note
    from .common import no_progress, ray_cluster

    note(f"asking every alive node of {ray_cluster(args.ray)} to run doctor's checks (at most {args.timeout:g} s)"
         " ...", quiet=no_progress(args))
    answers = ray_nodes_run(args.ray or None, node_doctor, (args.timeout,), args.timeout + 30)
    by_dir = bool(args.lock_file) and os.path.isdir(args.lock_file)  # fleet lock's DIR: a lock per platform
    nodes: dict[str, Host] = {}
    jetsons: dict[str, Host] = {}
    headers: dict[str, dict[str, Any] | None] = {}
    per_node: list[dict[str, Any]] = []
    failed = []
    for name, answer, why in answers:
        if answer is None:
            failed.append({"host": name, "why": why})
            continue
        try:
            host = fill_capabilities(Host.from_dict(answer["host"]), m)
            env = EnvReport.from_dict(answer["environment"])
        except (KeyError, TypeError, ValueError) as e:
            failed.append({"host": name, "why": f"unreadable answer: {e}"})
            continue
        jetson = is_jetson(host, m)  # its JetPack's stack: not in fleet lock's DIR, not compared with the others'
        (jetsons if jetson else nodes)[name] = host
        headers[name] = header = None if jetson and by_dir else _lock_for(args.lock_file, host.platform.tag, cache)
        findings = diagnose(host, m, env)
        if header is None and by_dir and not jetson:
            findings.insert(0, Finding(
                cause=DRIFT, severity="error", title=f"no lock for {host.platform.tag}",
                explanation=f"{args.lock_file} has no {host.platform.tag}/requirements.txt for this node",
                fix="vresolve fleet lock with an inventory that holds this node", source="fleet"))
        if header is not None:
            findings = check_against_lock(header, host, env, name=args.lock_file) + findings
        per_node.append({"host": name, "findings": findings})
    fleet = drift_findings(nodes, headers) + drift_findings(jetsons, headers)
    all_findings = [f for n in per_node for f in n["findings"]] + [f for _, f in fleet]
    code = max(worst_exit_code(all_findings), 1 if failed else 0)
    if getattr(args, "json", None):
        print_json(envelope("fleet.doctor", {
            "nodes": [{"host": n["host"], "findings": [f.to_dict() for f in n["findings"]]} for n in per_node],
            "fleet": [{"hosts": list(h), **f.to_dict()} for h, f in fleet], "failed": failed}))
        return code
    _print_human(per_node, fleet, failed)
    return code


def _print_human(per_node: list[dict[str, Any]], fleet: list[tuple[tuple[str, ...], Finding]],
                 failed: list[dict[str, Any]]) -> None:
    from rich.text import Text

    console = new_console()
    style = {"error": "red", "warning": "yellow", "info": ""}
    for n in per_node:
        worst = [f for f in n["findings"] if f.severity != "info"]
        console.print(Text(f"{n['host']}: " + ("healthy" if not worst else f"{len(worst)} finding(s)"), style="bold"))
        for f in worst:
            console.print(Text(f"  {f.severity}: {f.title}", style=style.get(f.severity, "")))
    for _, f in fleet:
        console.print(Text(f"fleet: {f.title}: {f.explanation}", style="red"))
    for x in failed:
        print(f"failed: {x['host']}: {x['why']}", file=sys.stderr)
