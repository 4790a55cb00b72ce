"""A Ray cluster's nodes, each read by the same detection as ``vresolve detect``, in one task pinned to the
node (node-affinity scheduling, hard: a task never runs on another node in its place). Needs ``ray``
(``pip install 'vresolve[ray]'``). A node whose task fails or outlives ``timeout`` is reported with why;
the others are kept. The task imports no torch: it runs :func:`vresolve.detect.detect_host`.

This module only talks to Ray; what runs on each node is detect's (the only layer that probes a machine)
and, for ``fleet doctor``, doctor's environment probe.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Callable
from typing import Any

from ..errors import UsageError
from ..parsers import machine_text
from .inventory import Failed, FleetHost, Inventory, InventoryError, host_from_json

__all__ = ["ray_nodes_run", "detect_ray", "node_detect", "node_doctor"]


def node_detect() -> dict[str, Any]:
    """On a node: what ``vresolve detect --json`` says of it (its own PATH, its own VRESOLVE_* overrides)."""
    from ..detect import Overrides, detect_host

    return {"hostname": socket.gethostname(), "host": detect_host(Overrides.from_env()).to_dict()}


def node_doctor(timeout: float) -> dict[str, Any]:
    """On a node: its machine and the environment the task runs in, as ``vresolve doctor`` probes them."""
    import sys

    from ..detect import Overrides, detect_host, probe_environment

    host = detect_host(Overrides.from_env())
    env = probe_environment(sys.executable, timeout=timeout)
    return {"hostname": socket.gethostname(), "host": host.to_dict(), "environment": env.to_dict()}


def _names(nodes: list[dict[str, Any]]) -> list[str]:
    """Each node's host name; with the node id's start where several nodes share one (a local cluster)."""
    hostnames = [machine_text(str(n.get("NodeManagerHostname") or n.get("NodeManagerAddress") or "node"), 200)
                 for n in nodes]
    from collections import Counter

    seen = Counter(hostnames)  # one pass (a count per node was quadratic in the nodes)
    return [h if seen[h] == 1 else f"{h}-{str(n['NodeID'])[:8]}" for h, n in zip(hostnames, nodes, strict=True)]


_ADDRESS = re.compile(r"(ray://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})")


class RayUnreachable(UsageError):
    """``--ray ADDRESS`` names no Ray cluster that answers (exit 2)."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``ray://HOST:PORT`` -> (host, port); UsageError for anything else."""
    m = _ADDRESS.fullmatch(text)
    if m is None or not 0 < int(m[3]) < 65536:
        raise UsageError(f"--ray: invalid address {text[:60]!r} (expected HOST:PORT, ray://HOST:PORT or auto)")
    return m[2].strip("[]"), int(m[3])


def _reachable(address: str | None, timeout: float = 10.0) -> None:
    """An explicit address must accept a TCP connection: ray.init waits minutes for one that never answers."""
    if not address or address == "auto":
        return
    host, port = parse_address(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        raise RayUnreachable(f"--ray: no Ray cluster answers at {address} ({e.strerror or e})") from None


def _why(e: BaseException) -> str:
    """A failed task in one line: the task's own exception (RayTaskError's ``cause``), else Ray's."""
    cause = getattr(e, "cause", None)
    err = cause if isinstance(cause, BaseException) else e
    text = " ".join(str(err).split()) if err is cause else " ".join(str(e).split()).split(" File ")[0]
    return machine_text(f"{type(err).__name__}: {text}", 500)


def _package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ray_nodes_run(address: str | None, fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], timeout: float
                  ) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    """``fn(*args)`` once on every alive node, pinned there: (node name, its answer or None, why not)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started = not ray.is_initialized()
    if started:
        _reachable(address)
        try:  # vresolve itself travels with the job: nodes need not have it installed
            ray.init(address=address or "auto", logging_level=logging.ERROR, log_to_driver=False,
                     runtime_env={"py_modules": [_package_dir()]})
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise RayUnreachable(f"--ray: no Ray cluster at {address or 'auto'} "
                                 f"({machine_text(' '.join(str(e).split()), 200)})") from None
    try:
        nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: str(n.get("NodeID")))
        remote = ray.remote(num_cpus=0, max_retries=0)(fn)
        refs = [remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
                               ).remote(*args) for n in nodes]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        out: list[tuple[str, dict[str, Any] | None, str | None]] = []
        for name, ref in zip(_names(nodes), refs, strict=True):
            if ref not in ready:
                ray.cancel(ref, force=True)
                out.append((name, None, f"no answer within {timeout:g} s"))
                continue
            try:
                out.append((name, ray.get(ref), None))
            except Exception as e:  # RayTaskError, a dead node or worker: that node's failure, not the fleet's
                out.append((name, None, _why(e)))
        return out
    finally:
        if started:
            ray.shutdown()


def detect_ray(address: str | None, timeout: float) -> Inventory:
    """Every alive node of the Ray cluster at ``address`` (None: ``RAY_ADDRESS``, else a local one)."""
    hosts, failed = [], []
    for name, answer, why in ray_nodes_run(address, node_detect, (), timeout):
        if answer is None:
            failed.append(Failed(host=name, why=why or "no answer"))
            continue
        try:
            hosts.append(FleetHost(name=name, host=host_from_json(answer.get("host"), name), source="ray"))
        except InventoryError as e:
            failed.append(Failed(host=name, why=f"unreadable answer: {e}"))
    return Inventory(hosts=tuple(hosts), failed=tuple(failed))
