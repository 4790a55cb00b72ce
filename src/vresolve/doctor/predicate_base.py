"""The fact model and the registry of doctor's predicates: :class:`Facts` (what a predicate reads), :class:`Hit`
(what it yields), :class:`Missing`, and :func:`predicate`, which registers one by the name a known-issues row's
``when:`` gives. The predicates themselves: :mod:`.predicates` (a machine's and an environment's facts) and
:mod:`.paste_predicates` and :mod:`.toolchain_predicates` (what only a pasted text shows); :mod:`.predicates`
imports them, so importing it registers every one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..host import EnvReport, Host, HostGpu, TorchRuntime
from ..matrix import Matrix

if TYPE_CHECKING:
    from .evidence import Evidence, Seen


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """What is known of the machine and the environment, live or pasted; ``unknown``: fields holding a default,
    not an observation (a paste that does not show them), which no predicate reads as a fact."""

    host: Host
    matrix: Matrix
    env: EnvReport | None = None
    unknown: frozenset[str] = frozenset()
    #: directories of LD_LIBRARY_PATH that hold CUDA libraries pip's nvidia-* packages also ship (live only)
    shadows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the typed facts and signals of a pasted text or log (what only a paste shows: an installer's messages)
    log: Evidence | None = None

    @property
    def gpus(self) -> tuple[HostGpu, ...]:
        """The GPUs whose compute capability is known."""
        return tuple(g for g in self.host.gpus if g.compute_capability is not None)

    @property
    def torch(self) -> TorchRuntime | None:
        return self.env.torch if self.env is not None and not self.env.error else None


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """Where a row holds: its evidence, its placeholders' values, and whether it is said one step softer."""

    evidence: tuple[str, ...] = ()
    fill: dict[str, str] = msgspec.field(default_factory=dict)
    softer: bool = False
    #: the row may hold but a fact it needs is not shown: no finding, an error whose cause is not settled
    missing: Missing | None = None
    #: the pasted lines it holds on, in order (a typed-line predicate's: where doctor says its cause first)
    seen: tuple[Seen[Any], ...] = ()


class Missing(msgspec.Struct, frozen=True):
    """What a pasted error needs to be judged by its row: the error, the fact not shown, what to paste."""

    error: str
    missing: str
    paste: str


Test = Callable[[Facts], Iterator[Hit]]


class Predicate(msgspec.Struct, frozen=True):
    name: str
    facts: tuple[str, ...]
    fills: tuple[str, ...]
    test: Test


#: every predicate by name: a known-issues row's ``when:`` names one (``matrix validate`` checks both ways)
PREDICATES: dict[str, Predicate] = {}


def predicate(name: str, facts: tuple[str, ...], fills: tuple[str, ...] = ()) -> Callable[[Test], Test]:
    def register(test: Test) -> Test:
        if name in PREDICATES:
            raise ValueError(f"predicate {name!r} registered twice")
        PREDICATES[name] = Predicate(name, facts, fills, test)
        return test
    return register


