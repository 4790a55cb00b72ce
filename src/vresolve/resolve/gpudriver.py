"""Whether the machine's driver branch can drive its GPUs at all (gpus.yaml ``driver:``). Pure.

A driver branch cannot drive a GPU released after it, and CUDA minor-version compatibility never changes
that: an H100 on driver 470 runs nothing, whatever CUDA a build needs. A legacy GPU is likewise dropped
after its last branch (Kepler after R470). Such a host gets no stack, whatever the builds say; a fact
marked ``unverified`` only warns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from ..host import Host, HostGpu

if TYPE_CHECKING:
    from ..matrix import Matrix
    from ..matrix.model import DriverSupport, Gpu
    from ..values import DriverVersion

__all__ = ["DriverGap", "driver_gaps", "refuse_unsupported_driver", "unrecorded_first_drivers"]

_FAMILY_NAMES = {"ada": "Ada Lovelace"}


class DriverGap(msgspec.Struct, frozen=True):
    """One GPU the driver cannot drive: ``kind`` is ``too-old`` (below its first driver) or ``too-new``
    (past its last branch)."""

    gpu: HostGpu
    row: Gpu
    support: DriverSupport
    kind: str
    driver: DriverVersion

    @property
    def trusted(self) -> bool:
        return self.support.provenance.trusted

    @property
    def branch(self) -> str:
        """The branch to install: ``R520`` (the first one) or ``R470`` (the last one)."""
        if self.kind == "too-old":
            assert self.support.first is not None
            return f"R{self.support.first.key[0]}"
        return f"R{self.support.last_branch}"

    @property
    def need(self) -> str:
        """``NVIDIA H100 80GB HBM3 (Hopper) needs driver >= 520.56.06 (R520), the first branch that supports it``."""
        what = f"{self.gpu.name} ({_FAMILY_NAMES.get(self.row.family, self.row.family.capitalize())})"
        if self.kind == "too-old":
            return f"{what} needs driver >= {self.support.first} ({self.branch}), the first branch that supports it"
        return f"{what} is supported up to driver branch {self.branch} only"

    @property
    def text(self) -> str:
        """The need, this machine's driver and the branch to install."""
        if self.kind == "too-old":
            return f"{self.need}; this machine has {self.driver}: install {self.branch} or newer"
        return f"{self.need}; this machine has {self.driver}: install an {self.branch} driver ({self.support.last_branch}.x)"

    @property
    def fix(self) -> str:
        if self.kind == "too-old":
            return f"install NVIDIA driver {self.branch} or newer (>= {self.support.first}) for {self.gpu.name}"
        return f"install the {self.branch} legacy driver ({self.support.last_branch}.x) for {self.gpu.name}"


def driver_gaps(host: Host, matrix: Matrix, gpus: Sequence[HostGpu] | None = None) -> list[DriverGap]:
    """The GPUs (default: the host's) that the host's driver cannot drive, by the matrix's facts. A Jetson's
    driver is L4T's, not a desktop branch: never judged here. No driver known: nothing to judge."""
    driver = host.driver.version
    if driver is None:
        return []
    out = []
    for g in host.gpus if gpus is None else gpus:
        row = matrix.find_gpu(g.name)
        if row is None or row.segment == "jetson":
            continue
        support = matrix.driver_support(row)
        kind = support.refuses(driver) if support is not None else None
        if support is not None and kind is not None:
            out.append(DriverGap(gpu=g, row=row, support=support, kind=kind, driver=driver))
    return out


def refuse_unsupported_driver(host: Host, matrix: Matrix) -> list[str]:
    """Raise NoCompatibleStack when the driver cannot drive a GPU by a trusted fact; the warnings for the
    gaps that rest on unverified facts (planned, with a warning)."""
    from .explain import Cause, NoCompatibleStack

    gaps = driver_gaps(host, matrix)
    sure = _unique([g for g in gaps if g.trusted])
    if sure:
        names = ", ".join(dict.fromkeys(g.gpu.name for g in sure))
        raise NoCompatibleStack(
            f"driver {host.driver.version} cannot drive {names}: no vLLM stack runs on this machine",
            causes=[Cause("driver", g.text) for g in sure],
            hints=list(dict.fromkeys(g.fix for g in sure)))
    return [f"{g.text} (the matrix's fact is unverified"
            f"{': ' + g.support.provenance.note if g.support.provenance.note else ''}; planned anyway)"
            for g in _unique([g for g in gaps if not g.trusted])] + unrecorded_first_drivers(host, matrix)


def unrecorded_first_drivers(host: Host, matrix: Matrix) -> list[str]:
    """Where the matrix records no first driver for a GPU (its row's nor its family's), what it does know: the
    oldest CUDA toolkit whose nvcc targets the GPU's capability came with a driver (the toolkit's own floor) that a
    GPU of that capability cannot predate by much. A driver below that floor is not refused (no fact says so) but
    said: check the GPU is in that driver's supported products (an RTX 3090, sm_86, on R450)."""
    driver = host.driver.version
    if driver is None:
        return []
    out: dict[str, str] = {}
    for g in host.gpus:
        row = matrix.find_gpu(g.name)
        if row is None or row.segment == "jetson" or g.name in out:
            continue
        support = matrix.driver_support(row)
        if support is not None and support.first is not None:
            continue
        first = min((t for t in matrix.toolkits if t.can_target(row.compute_capability)
                     and t.min_driver.linux is not None), key=lambda t: t.version, default=None)
        if first is not None and first.min_driver.linux is not None and driver < first.min_driver.linux:
            out[g.name] = (f"the first driver that supports {g.name} (sm_{row.compute_capability.base.major}"
                           f"{row.compute_capability.base.minor}) is not recorded in the matrix; the first CUDA "
                           f"toolkit that targets it, {first.version}, needs driver >= {first.min_driver.linux}, and "
                           f"this machine has {driver}: check that NVIDIA's release notes for driver {driver} list "
                           f"{g.name} among their supported products before relying on this plan")
    return list(out.values())


def _unique(gaps: Sequence[DriverGap]) -> list[DriverGap]:
    """One gap per GPU model (eight H100s say it once)."""
    return list({g.gpu.name: g for g in gaps}.values())
