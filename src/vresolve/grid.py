"""The support grid's model: every GPU capability in the matrix x every driver branch -> what ``vresolve plan``
answers there (the CLI computes the answers, :mod:`vresolve.render.grid` draws them).

Rows are the compute capabilities of ``gpus.yaml``'s architectures that have a GPU on the platform;
columns are the NVIDIA driver branches of the matrix's driver floors (each CUDA toolkit's and update's
minimum driver and each major's minor-version-compatibility floor), each at the newest floor the matrix
records in that branch: a driver of that branch at least that new.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from .errors import UsageError

__all__ = ["Row", "Column", "Answer", "Grid", "rows", "columns", "pythons", "cell_of", "grid_from_answers"]


class Row(msgspec.Struct, frozen=True):
    """One compute capability of one architecture; ``names``: its GPUs, the first one planned for."""

    family: str
    capability: str
    names: tuple[str, ...]
    jetpack: str | None = None  # a Jetson on L4T's own CUDA: planned for this JetPack, from the Jetson index


class Column(msgspec.Struct, frozen=True):
    """A driver branch (``570``) at ``driver``, the newest floor the matrix records in it; ``cuda``:
    the toolkits (and minor-compatibility majors) whose floors lie in the branch."""

    branch: int
    driver: str
    cuda: tuple[str, ...]


class Answer(msgspec.Struct, frozen=True):
    """``vresolve plan --json`` for one input: its exit code, its object and (bash) exports."""

    argv: tuple[str, ...]
    code: int
    plan: dict[str, Any]
    exports: str = ""


class Grid(msgspec.Struct, frozen=True):
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    python: str
    platform: str
    policy: str
    revision: str
    #: (capability, driver) -> (vLLM version or None, "wheel" | "source" | "none")
    cells: dict[tuple[str, str], tuple[str | None, str]] = msgspec.field(default_factory=dict)

    def releases(self) -> list[str]:
        """The vLLM releases in the grid, oldest first."""
        from packaging.version import Version

        return sorted({v for v, _ in self.cells.values() if v}, key=Version)


def rows(m: Any, platform: str, families: Sequence[str] | None = None) -> tuple[Row, ...]:
    """The capabilities with a GPU on ``platform`` (Jetson modules only on linux-aarch64), by architecture;
    ``families``: only these architectures."""
    out = []
    for arch in m.architectures:
        if families is not None and arch.family not in families:
            continue
        for cc in arch.compute_capabilities:
            names = tuple(g.name for g in m.gpus if g.compute_capability == cc
                          and (platform == "linux-aarch64" or g.segment != "jetson"))
            # the GPU planned for: one whose name --gpu takes as one name (no comma); one the family's first driver
            # covers before a later part with its own (an L4 or an RTX PRO 6000 is not the first of its family)
            own = {g.name for g in m.gpus if g.driver is not None}
            plannable = sorted((n for n in names if "," not in n), key=lambda n: n in own)
            if plannable:
                out.append(Row(arch.family, str(cc), (plannable[0], *[n for n in names if n != plannable[0]]),
                               _jetson_index_jetpack(m, plannable[0])))
    if not out:
        raise UsageError(f"no GPU of {', '.join(families or ('the matrix',))} runs on {platform}")
    return tuple(out)


def _jetson_index_jetpack(m: Any, gpu: str) -> str | None:
    """For a Jetson module on L4T's own CUDA (Orin), the newest JetPack whose path of the Jetson index has vLLM wheels
    for it (its row is planned for that JetPack, driver aside: a Jetson's driver is L4T's); None otherwise."""
    row = m.find_gpu(gpu)
    if row is None or row.segment != "jetson":
        return None
    found = [v for w in m.jetson_wheels if row.name in w.modules for v in w.jetpacks]
    return str(max(found)) if found else None


def columns(m: Any) -> tuple[Column, ...]:
    """Driver branches from the matrix's floors (Linux), each at its newest recorded floor: those of the CUDA majors
    some torch build of the matrix is built for (older toolkits, CUDA 9 and 10, are there for doctor's judgement of
    old environments, not for plans)."""
    floors: list[tuple[Any, str]] = []
    built = [v.cuda.major for r in m.torch for v in r.variants if v.cuda is not None]
    for t in (t for t in m.toolkits if not built or t.version.major >= min(built)):
        label = f"{t.version.major}.{t.version.minor}"
        if t.min_driver.linux is not None:
            floors.append((t.min_driver.linux, label))
        floors.extend((u.min_driver.linux, label) for u in t.updates if u.min_driver.linux is not None)
    floors.extend((c.minor_compat_driver.linux, f"{c.major}.x") for c in m.cuda_majors
                  if c.minor_compat_driver.linux is not None)
    branches: dict[int, list[tuple[Any, str]]] = {}
    for d, label in floors:
        branches.setdefault(d.key[0], []).append((d, label))
    out = []
    for b in sorted(branches):
        newest = max(d for d, _ in branches[b])
        labels = tuple(dict.fromkeys(label for _, label in sorted(branches[b], key=lambda x: x[0])))
        out.append(Column(b, str(newest), labels))
    return tuple(out)


def pythons(m: Any) -> tuple[str, ...]:
    """The Pythons (X.Y) that torch ships wheels for and some vLLM release accepts, oldest first."""
    from packaging.version import Version

    found = {Version(f"{p.major}.{p.minor}") for t in m.torch for p in t.python}
    ok = [p for p in found if any(v.requires_python is None or Version(f"{p}.0") in v.requires_python
                                  for v in m.vllm)]
    return tuple(str(p) for p in sorted(ok))


def cell_of(a: Answer) -> tuple[str | None, str]:
    """(vLLM version, kind) of one answer: a wheel, only a source build, or nothing (exit 1)."""
    if a.code != 0:
        return None, "none"
    stack = a.plan.get("stack") or {}
    return stack.get("vllm"), "source" if stack.get("install_kind") == "source" else "wheel"


def grid_from_answers(m: Any, rs: Sequence[Row], cs: Sequence[Column], answers: dict[tuple[str, str], Answer], *,
                      python: str, platform: str, policy: str) -> Grid:
    g = Grid(tuple(rs), tuple(cs), python, platform, policy, m.revision)
    for key, a in answers.items():
        g.cells[key] = cell_of(a)
    return g
