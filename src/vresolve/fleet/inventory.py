"""A fleet's inventory (``vresolve.fleet/1``): named hosts, each as ``vresolve detect`` describes a machine,
and the nodes that could not be read, with why. Pure: reading files is the caller's; this module checks
the shape of what they held (every string from a file is hostile until checked here).
"""

from __future__ import annotations

from typing import Any

import msgspec
from packaging.version import InvalidVersion

from ..host import Host
from ..parsers import machine_text

__all__ = ["SCHEMA", "FleetHost", "Failed", "Inventory", "InventoryError", "inventory_from_json", "MAX_NAME"]

SCHEMA = "vresolve.fleet/1"
DETECT_SCHEMA = "vresolve.detect/1"
SOURCES = ("ray", "k8s", "file")
MAX_NAME = 253  # a Kubernetes node name (a DNS subdomain) is at most 253 characters
MAX_HOSTS = 1_000_000  # far past any cluster; keeps a hostile file's cost bounded


class InventoryError(ValueError):
    """An inventory that is not one: ``inventory[3].host.gpus[0].compute_capability: invalid capability 'x'``."""


class FleetHost(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    host: Host
    source: str  # "ray" | "k8s" | "file"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "host": self.host.to_dict(), "source": self.source}


class Failed(msgspec.Struct, frozen=True, kw_only=True):
    """A node that was asked and did not answer (a timeout, a dead node, unreadable labels)."""

    host: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "why": self.why}


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    hosts: tuple[FleetHost, ...] = ()
    failed: tuple[Failed, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "hosts": len(self.hosts), "inventory": [h.to_dict() for h in self.hosts],
                "failed": [f.to_dict() for f in self.failed]}

    def merged(self, other: Inventory) -> Inventory:
        return Inventory(hosts=self.hosts + other.hosts, failed=self.failed + other.failed)


def clean_name(value: object, where: str) -> str:
    """A node's name: a non-empty string, made one plain line, at most :data:`MAX_NAME` characters."""
    if not isinstance(value, str) or not value.strip():
        raise InventoryError(f"{where}: expected a non-empty string, got {type(value).__name__}")
    name = machine_text(value, MAX_NAME + 1)
    if len(name) > MAX_NAME:
        raise InventoryError(f"{where}: a name of more than {MAX_NAME} characters")
    return name


def host_from_json(d: object, where: str) -> Host:
    """A detect ``host`` object -> Host; InventoryError naming the first bad field."""
    if not isinstance(d, dict):
        raise InventoryError(f"{where}: expected an object (as vresolve detect --json's 'host'), "
                             f"got {type(d).__name__}")
    for key, kind in (("driver", dict), ("gpus", list), ("platform", dict), ("installed", list),
                      ("python", str)):
        if d.get(key) is not None and not isinstance(d[key], kind):
            raise InventoryError(f"{where}.{key}: expected {'an object' if kind is dict else 'a ' + kind.__name__}, "
                                 f"got {type(d[key]).__name__}")
    for i, g in enumerate(d.get("gpus") or ()):
        if not isinstance(g, dict) or not isinstance(g.get("name"), str) or not isinstance(g.get("index"), int):
            raise InventoryError(f"{where}.gpus[{i}]: expected an object with a string 'name' and an integer 'index'")
    plat = d.get("platform") or {}
    if plat.get("machine") not in (None, "x86_64", "aarch64"):
        raise InventoryError(f"{where}.platform.machine: expected 'x86_64' or 'aarch64', got "
                             f"{str(plat.get('machine'))[:40]!r}")
    try:
        host = Host.from_dict(d)
    except (KeyError, TypeError, ValueError, InvalidVersion, AttributeError) as e:
        raise InventoryError(f"{where}: {' '.join(str(e).split())[:200] or type(e).__name__}") from None
    if host.python.major != 3 or len(host.python.release) < 2:
        raise InventoryError(f"{where}.python: expected a Python 3 version such as '3.12', got {str(host.python)!r}")
    return _plain(host)


def _plain(host: Host) -> Host:
    """GPU names as plain lines (they reach a terminal)."""
    from msgspec.structs import replace

    gpus = tuple(replace(g, name=machine_text(g.name) or f"GPU {g.index}") for g in host.gpus)
    return replace(host, gpus=gpus) if gpus != host.gpus else host


def inventory_from_json(doc: object, where: str, *, default_name: str = "host") -> Inventory:
    """A ``vresolve.fleet/1`` inventory, or one ``vresolve detect --json`` answer (one host, named
    ``default_name``), checked; InventoryError naming ``where`` and the first bad field."""
    if not isinstance(doc, dict):
        raise InventoryError(f"{where}: expected a JSON object (vresolve.fleet/1 or vresolve.detect/1)")
    schema = doc.get("schema")
    if schema == DETECT_SCHEMA:
        return Inventory(hosts=(FleetHost(name=clean_name(default_name, where),
                                          host=host_from_json(doc.get("host"), f"{where}: host"), source="file"),))
    if schema != SCHEMA:
        raise InventoryError(f"{where}: schema {str(schema)[:60]!r} is not {SCHEMA!r} or {DETECT_SCHEMA!r}")
    items, failed = doc.get("inventory"), doc.get("failed") or []
    if not isinstance(items, list) or not isinstance(failed, list):
        raise InventoryError(f"{where}: expected 'inventory' (and 'failed') to be lists")
    if len(items) + len(failed) > MAX_HOSTS:
        raise InventoryError(f"{where}: more than {MAX_HOSTS} hosts")
    hosts = []
    for i, item in enumerate(items):
        at = f"{where}: inventory[{i}]"
        if not isinstance(item, dict):
            raise InventoryError(f"{at}: expected an object with 'name', 'host' and 'source'")
        source = item.get("source", "file")
        if source not in SOURCES:
            raise InventoryError(f"{at}.source: expected one of {', '.join(SOURCES)}, got {str(source)[:40]!r}")
        hosts.append(FleetHost(name=clean_name(item.get("name"), f"{at}.name"),
                               host=host_from_json(item.get("host"), f"{at}.host"), source=source))
    return Inventory(hosts=tuple(hosts), failed=_failed(failed, where))


def _failed(failed: list[Any], where: str) -> tuple[Failed, ...]:
    bad = []
    for i, f in enumerate(failed):
        if not isinstance(f, dict) or not isinstance(f.get("why"), str):
            raise InventoryError(f"{where}: failed[{i}]: expected an object with 'host' and 'why'")
        bad.append(Failed(host=clean_name(f.get("host"), f"{where}: failed[{i}].host"),
                          why=machine_text(f["why"], 1024)))
    return tuple(bad)
