"""One stack for a whole fleet, on the real resolver. Pure: an Inventory and the matrix in, a FleetPlan out.

- **Groups**: hosts with the same facts (driver, GPUs, Python, platform, glibc) are one group, resolved once.
- **Common stack**: per CPU architecture, one combined host: the oldest driver of the nodes that have one,
  every distinct GPU of every node (the union of compute capabilities), one Python, the oldest glibc;
  the newest vLLM that resolves for every architecture is then resolved for each (one lock per platform).
- **Blocking**: what holds the common stack back, found by resolving the combined host again without one
  limit at a time (the driver, one GPU generation, glibc, one architecture): the nodes behind that limit
  and the upgrade that releases the newer stack.
- **Jetsons** are planned apart: a Jetson's CUDA is its JetPack's (L4T's), so its stack is its JetPack's (the
  Jetson index's wheels with ``--jetson-index``, the unified ARM builds on a Thor, or the refusal that says the
  way), never the server-ARM stack of the other aarch64 nodes, and never a limit on theirs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..host import DriverInfo, Host, HostGpu, PlatformInfo, describe_gpus
from ..resolve import NoCompatibleStack, Request, Resolution, Stack, resolve
from ..resolve.gpudriver import DriverGap, driver_gaps
from ..resolve.jetson import (
    JetsonWheelChoice,
    capability_only_jetson,
    is_jetson,
    named_by_capability,
    with_board_gpu,
)
from .inventory import Failed, FleetHost, Inventory

if TYPE_CHECKING:
    from ..matrix import Matrix
    from ..values import DriverVersion

__all__ = ["Group", "Blocker", "FleetPlan", "plan_fleet", "group_hosts"]


class Group(msgspec.Struct, frozen=True, kw_only=True):
    """Identical hosts, and the best stack for them (None: no stack, with why)."""

    hosts: tuple[str, ...]
    host: Host
    resolution: Resolution | None
    why_not: str | None = None
    jetson: JetsonWheelChoice | None = None  # a Jetson's wheels from its JetPack's path of the Jetson index
    apart: bool = False  # a Jetson: its JetPack's stack, outside the common one

    @property
    def stack(self) -> Stack | None:
        return self.resolution.stack if self.resolution else self.jetson.stack if self.jetson else None


class Blocker(msgspec.Struct, frozen=True, kw_only=True):
    """Nodes that hold the common stack back: why, the upgrade that would release it, and what it unlocks."""

    hosts: tuple[str, ...]
    why: str
    upgrade: str | None  # None: no upgrade of these nodes helps (their GPUs are too old): leave them out
    unlocks: Version  # the vLLM the whole fleet would get


class FleetPlan(msgspec.Struct, frozen=True, kw_only=True):
    hosts: int
    groups: tuple[Group, ...]
    common: dict[str, Resolution]  # platform tag -> the common stack's resolution there ({} when none)
    combined: dict[str, Host]  # platform tag -> the combined host resolved
    common_error: str | None
    blocking: tuple[Blocker, ...]
    failed: tuple[Failed, ...]
    python: Version

    @property
    def apart(self) -> tuple[str, ...]:
        """The nodes planned apart from the common stack (Jetsons)."""
        return tuple(n for g in self.groups if g.apart for n in g.hosts)

    @property
    def ok(self) -> bool:
        """A stack for every node planned: the common one, and each Jetson group's own."""
        shared = any(not g.apart for g in self.groups)
        return (bool(self.common) or not shared) and all(g.stack for g in self.groups if g.apart)


def _key(h: Host) -> tuple[Any, ...]:
    gpus = Counter((g.name, str(g.compute_capability)) for g in h.gpus)
    return (str(h.driver.version), str(h.driver.cuda), tuple(sorted(gpus.items())), str(h.python_minor),
            h.platform.tag, str(h.platform.glibc), h.platform.jetson, str(h.platform.l4t))


def group_hosts(hosts: Sequence[FleetHost]) -> list[tuple[list[str], Host]]:
    """Hosts with the same facts, in order of first appearance: (names, the first host's facts)."""
    groups: dict[tuple[Any, ...], tuple[list[str], Host]] = {}
    for fh in hosts:
        k = _key(fh.host)
        if k in groups:
            groups[k][0].append(fh.name)
        else:
            groups[k] = ([fh.name], fh.host)
    return list(groups.values())


def _request(host: Host, base: Request) -> Request:
    return replace(base, cpu=not host.gpus)


def _try(host: Host, m: Matrix, request: Request) -> tuple[Resolution | None, str | None]:
    try:
        return resolve(host, m, _request(host, request)), None
    except NoCompatibleStack as e:
        return None, e.headline


def _group(names: list[str], h: Host, m: Matrix, request: Request) -> Group:
    """One group's best stack; a Jetson's is its JetPack's: the Jetson index's wheels when its path has a set
    (and the index is named), else what the resolver says for a Jetson (Thor's unified ARM builds, or the way)."""
    if not is_jetson(h, m):
        res, why = _try(h, m, request)
        return Group(hosts=tuple(names), host=h, resolution=res, why_not=why)
    try:  # a Jetson that listed no GPU is no CPU machine: the resolver asks for its module instead
        res = resolve(h, m, replace(request, own_index=True))  # its JetPack's path of the Jetson index: candidates
        return Group(hosts=tuple(names), host=h, resolution=None if res.index else res, jetson=res.index, apart=True)
    except NoCompatibleStack as e:
        return Group(hosts=tuple(names), host=h, resolution=None, why_not=e.headline, apart=True)


def _python(hosts: Sequence[FleetHost], given: Version | None) -> Version:
    """One Python for the fleet: the one given, else the one most nodes run (the older one on a tie)."""
    if given is not None:
        return Version(f"{given.major}.{given.minor}")
    counts = Counter(h.host.python_minor for h in hosts)
    return min(counts, key=lambda v: (-counts[v], v)) if counts else Version("3.12")


def _combined(hosts: Sequence[Host], python: Version, tag: str) -> Host:
    """The host that every node of one architecture is: oldest driver, all GPU kinds, one Python, oldest glibc."""
    drivers = [h.driver for h in hosts if h.driver.version is not None]
    oldest = min(drivers, key=lambda d: d.version) if drivers else DriverInfo()  # type: ignore[arg-type, return-value]
    kinds: dict[tuple[str, str], HostGpu] = {}
    for h in hosts:
        for g in h.gpus:
            kinds.setdefault((g.name, str(g.compute_capability)), g)
    gpus = tuple(replace(g, index=i) for i, g in enumerate(kinds.values()))
    glibcs = [h.platform.glibc for h in hosts]
    glibc = None if any(v is None for v in glibcs) or not glibcs else min(v for v in glibcs if v is not None)
    os_, _, machine = tag.partition("-")
    return Host(driver=replace(oldest, source="oldest driver in the fleet" if drivers else None), gpus=gpus,
                python=python, platform=PlatformInfo(os=os_, machine=machine, glibc=glibc))


def plan_fleet(inv: Inventory, m: Matrix, request: Request, *, python: Version | None = None) -> FleetPlan:
    """Groups, the common stack per architecture, and the nodes that hold it back."""
    usable, failed = _usable(inv, m)
    groups = [_group(names, h, m, request) for names, h in group_hosts(usable)]
    apart = {n for g in groups if g.apart for n in g.hosts}
    py = _python([fh for fh in usable if fh.name not in apart] or usable, python)
    by_tag: dict[str, list[FleetHost]] = {}
    for fh in usable:
        if fh.name not in apart:
            by_tag.setdefault(fh.host.platform.tag, []).append(fh)
    # a driver that cannot drive a node's own GPU is that node's fact, judged per node: the composite host
    # (the oldest driver beside every GPU kind) is not judged for it, and those nodes' drivers do not count
    stuck = {fh.name: gaps for fhs in by_tag.values() for fh in fhs
             if (gaps := [g for g in driver_gaps(fh.host, m) if g.trusted])}
    request = replace(request, gpu_driver=False)
    combined = {tag: _combined([replace(fh.host, driver=DriverInfo()) if fh.name in stuck else fh.host
                                for fh in fhs], py, tag) for tag, fhs in sorted(by_tag.items())}
    common, error = _common(combined, m, request) if combined else ({}, "every node is a Jetson: each group's "
                                                                             "stack is its JetPack's")
    blocking: list[Blocker] = []
    if stuck:
        blocking = _driver_blockers(stuck, common)
        error = (f"no stack runs on {', '.join(stuck)}: the driver there cannot drive the GPU "
                 f"({'; '.join(dict.fromkeys(f'{g.need}, not {g.driver}' for gs in stuck.values() for g in gs))})")
        common = {}
    elif common:
        blocking = _blockers(by_tag, combined, common, m, request)
    return FleetPlan(hosts=len(inv.hosts), groups=tuple(groups), common=common, combined=combined,
                     common_error=error, blocking=tuple(blocking), failed=failed, python=py)


def _driver_blockers(stuck: dict[str, list[DriverGap]], common: dict[str, Resolution]) -> list[Blocker]:
    """Nodes whose driver cannot drive their GPUs: no stack runs there; the driver upgrade each needs, and the
    common stack the whole fleet gets once they have it (the other nodes' facts)."""
    if not common:
        return []
    unlocks = min(r.vllm.version for r in common.values())
    by_gap: dict[str, list[DriverGap]] = {}
    nodes: dict[str, list[str]] = {}
    for name, gaps in stuck.items():
        for g in gaps:
            by_gap.setdefault(g.need, []).append(g)
            nodes.setdefault(g.need, []).append(name)
    return [Blocker(hosts=tuple(dict.fromkeys(nodes[need])), unlocks=unlocks,
                    why=f"{need}; these nodes have driver {', '.join(dict.fromkeys(str(g.driver) for g in gs))}",
                    upgrade=(f"driver {gs[0].branch} or newer (>= {gs[0].support.first})" if gs[0].kind == "too-old"
                             else f"the {gs[0].branch} legacy driver ({gs[0].support.last_branch}.x)"))
            for need, gs in by_gap.items()]


def _usable(inv: Inventory, m: Matrix) -> tuple[list[FleetHost], tuple[Failed, ...]]:
    """The hosts a plan can use (a Jetson that listed no GPU gets its board's; an aarch64 GPU known only by a
    capability that only a Jetson module has is that module's); a GPU whose compute capability is unknown, or is
    only a Jetson's on an x86_64 host, makes its host a failure."""
    usable, failed = [], list(inv.failed)
    for fh in (replace(fh, host=named_by_capability(with_board_gpu(fh.host, m), m)) for fh in inv.hosts):
        unknown = [g.name for g in fh.host.gpus if g.compute_capability is None]
        jetson = [(g, row) for g in fh.host.gpus if (row := capability_only_jetson(g, m)) is not None]
        if unknown:
            failed.append(Failed(host=fh.name, why=f"compute capability of {', '.join(sorted(set(unknown)))} unknown"))
        elif jetson:
            g, row = jetson[0]
            failed.append(Failed(host=fh.name, why=f"GPU {g.name!r} of compute capability {row.compute_capability.sm} on "
                                                   f"{fh.host.platform.tag}: only a Jetson module ({row.name}), an "
                                                   "aarch64 board, has it"))
        else:
            usable.append(fh)
    return usable, tuple(failed)


def _best(combined: dict[str, Host], m: Matrix, request: Request) -> tuple[dict[str, Resolution], str | None]:
    """Each architecture's own best stack; the first failure's headline."""
    out = {}
    for tag, h in combined.items():
        res, why = _try(h, m, request)
        if res is None:
            return {}, f"{tag}: {why}"
        out[tag] = res
    return out, None


def _common(combined: dict[str, Host], m: Matrix, request: Request) -> tuple[dict[str, Resolution], str | None]:
    """The newest vLLM that resolves on every architecture, resolved for each."""
    best, error = _best(combined, m, request)
    if not best:
        return {}, error
    version = min(r.vllm.version for r in best.values())
    out = {}
    for tag, res in best.items():
        if res.vllm.version != version:
            pinned = replace(request, vllm=request.vllm & SpecifierSet(f"=={version}"))
            again, why = _try(combined[tag], m, pinned)
            if again is None:
                return {}, f"{tag}: vLLM {version}: {why}"
            res = again
        out[tag] = res
    return out, None


def _blockers(by_tag: dict[str, list[FleetHost]], combined: dict[str, Host], common: dict[str, Resolution],
              m: Matrix, request: Request) -> list[Blocker]:
    """Per architecture: the limits whose removal would give a newer vLLM to the whole fleet."""
    current = min(r.vllm.version for r in common.values())
    best = {tag: _try(h, m, request)[0] for tag, h in combined.items()}
    ceiling = {tag: r.vllm.version if r else current for tag, r in best.items()}
    out: list[Blocker] = []
    for tag, h in combined.items():
        others = [v for t, v in ceiling.items() if t != tag]
        found = _limits(tag, by_tag[tag], h, m, request, ceiling[tag])
        for b in found:
            unlocks = min([b.unlocks, *others])
            if unlocks > current:
                out.append(replace(b, unlocks=unlocks))
        if not found and others and ceiling[tag] == current < max(others):
            out.append(Blocker(hosts=tuple(fh.name for fh in by_tag[tag]), upgrade=None, unlocks=max(others),
                               why=f"no vLLM newer than {current} has a wheel for {tag} with these nodes' facts"))
    return out


def _limits(tag: str, hosts: list[FleetHost], h: Host, m: Matrix, request: Request, have: Version
            ) -> list[Blocker]:
    """One architecture's limits: the driver, each GPU generation, glibc."""
    out = []
    lifted, _ = _try(replace(h, driver=DriverInfo()), m, request)
    if h.driver.version is not None and lifted is not None and lifted.vllm.version > have and lifted.min_driver:
        floor: DriverVersion = lifted.min_driver
        behind = [fh.name for fh in hosts if fh.host.driver.version is not None and fh.host.driver.version < floor]
        if behind:
            out.append(Blocker(hosts=tuple(behind), upgrade=f"driver >= {floor}", unlocks=lifted.vllm.version,
                               why=f"driver older than {floor} ({tag}; oldest {h.driver.version}): vLLM "
                                   f"{lifted.vllm.version} needs CUDA {lifted.cuda}"))
    caps = sorted({g.compute_capability for g in h.gpus if g.compute_capability is not None})
    for cc in caps if len(caps) > 1 else ():
        rest = tuple(g for g in h.gpus if g.compute_capability != cc)
        lifted, _ = _try(replace(h, gpus=rest), m, request)
        if lifted is not None and lifted.vllm.version > have:
            gone = [g for g in h.gpus if g.compute_capability == cc]
            behind = [fh.name for fh in hosts if any(g.compute_capability == cc for g in fh.host.gpus)]
            out.append(Blocker(hosts=tuple(behind), upgrade=None, unlocks=lifted.vllm.version,
                               why=f"{describe_gpus(gone)}: no newer vLLM stack runs on {cc.sm}; "
                                   "leave these nodes out (or give them their own stack)"))
    if h.platform.glibc is not None:
        lifted, _ = _try(replace(h, platform=replace(h.platform, glibc=None)), m, request)
        if lifted is not None and lifted.vllm.version > have and lifted.glibc_floor is not None:
            g = lifted.glibc_floor
            behind = [fh.name for fh in hosts if fh.host.platform.glibc is not None and fh.host.platform.glibc < g]
            if behind:
                out.append(Blocker(hosts=tuple(behind), upgrade=f"glibc >= {g} (a newer OS image)",
                                   unlocks=lifted.vllm.version, why=f"glibc older than {g} ({tag})"))
    return out
