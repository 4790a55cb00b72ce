"""What many in-process runs of the CLI share within one scope (the grid's and the page's thousands of plans): the
matrix read once per ``--matrix``, the parser built once per command, and pure computations (a resolution, a
refusal) made once per key. Outside :func:`sharing` every run computes its own."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from typing import Any

__all__ = ["shared", "shared_call", "sharing"]


#: within :func:`sharing`: what many in-process runs of the CLI share (the matrix, the parser), by key
_SHARED: dict[Any, Any] | None = None


def shared(key: Any, compute: Any) -> Any:
    """``compute()``, or within :func:`sharing` its value from the first run that asked for ``key``."""
    if _SHARED is None:
        return compute()
    if key not in _SHARED:
        _SHARED[key] = compute()
    return _SHARED[key]


def shared_call(key: Any, compute: Any) -> Any:
    """:func:`shared` for a pure computation that may refuse: within :func:`sharing` its refusal (a VresolveError,
    such as no compatible stack) is kept too and raised again to the next run that asks for ``key``."""
    from ..errors import VresolveError

    def outcome() -> tuple[bool, Any]:
        try:
            return True, compute()
        except VresolveError as e:
            return False, e

    ok, value = shared(key, outcome)
    if not ok:
        raise value
    return value


def sharing() -> Any:
    """A scope in which many in-process runs of the CLI (the grid's and the page's plans) read the matrix once
    per ``--matrix`` and build the parser once per command: their files do not change while the scope lasts."""
    import contextlib

    @contextlib.contextmanager
    def scope() -> Any:
        global _SHARED
        outer = _SHARED
        _SHARED = {} if outer is None else outer
        try:
            yield
        finally:
            _SHARED = outer

    return scope()
