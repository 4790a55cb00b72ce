"""``dataclass`` for vresolve's records: the standard one, with ``frozen=True`` kept by the type checker, not at run time.

Why: on Python 3.11 ``dataclasses`` compiles each generated method on its own, and a frozen class gets two more (a
``__setattr__`` and a ``__delattr__`` that raise): about 0.2 ms a class, and a plan creates some fifty classes, a
tenth of a cold ``vresolve plan`` (measured: 27 ms of class creation, 9 ms of it for frozen). Nothing in vresolve
assigns to a record or catches ``FrozenInstanceError``; what it relies on is kept:

- immutability, checked where it is written: mypy (run before every commit) sees ``dataclasses.dataclass`` with
  ``frozen=True`` here and rejects any assignment to a field of a frozen record;
- equality and hashing by the fields, exactly as for a frozen dataclass: ``unsafe_hash`` generates the same
  ``__hash__`` (the fields that compare) where ``frozen`` would, and no class that defines its own ``__hash__``
  or has ``eq=False`` gets one (as with ``frozen``);
- ``dataclasses.fields``, ``replace``, ``asdict``, pickling and ``slots`` as before (``__init__`` assigns the
  fields directly instead of through ``object.__setattr__``: records are also cheaper to make).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    from dataclasses import dataclass as _dataclass

    def dataclass(cls=None, /, *, frozen=False, **kwargs):
        """``dataclasses.dataclass(cls, **kwargs)``, hashable by its fields where ``frozen`` would make it so."""

        def wrap(c):
            # dataclasses' own test of a __hash__ written in the class (None: Python's, for a class with __eq__)
            own = c.__dict__.get("__hash__", wrap)
            explicit = not (own is wrap or (own is None and "__eq__" in c.__dict__))
            if frozen and kwargs.get("eq", True) and not explicit:
                return _dataclass(c, unsafe_hash=True, **kwargs)
            return _dataclass(c, **kwargs)

        return wrap if cls is None else wrap(cls)

__all__ = ["dataclass"]
