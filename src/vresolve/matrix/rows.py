"""The typed row reader every table's reader uses: getters over one YAML file that collect problems (naming the
file, row and field) instead of raising, and share equal values across the matrix (what the cache pickles once).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..errors import MatrixProblem
from ..values import VERIFIED_LEVELS, Capability, DriverVersion
from .checks import cut, problem, shown
from .model import (
    DriverFloor,
    Provenance,
)

_T = TypeVar("_T")
_S = TypeVar("_S", bound=str)


class _Rows:
    """Typed getters over one YAML file that collect problems instead of raising.

    Each getter returns None after recording a problem; callers drop rows that came back
    incomplete, so one bad value never hides the next one.
    """

    def __init__(self, file: str, problems: list[MatrixProblem], shared: dict[Any, Any]) -> None:
        self.file = file
        self.problems = problems
        self.shared = shared
        self.seen: dict[Hashable, str] = {}  # what once() saw in this file, and where

    def once(self, key: Hashable, what: str, row: str, fld: str, at: str | None = None) -> None:
        """A problem when ``key`` was seen before in this file: ``what`` is listed twice; ``at`` (default:
        the row) names where, in the message of the repeat."""
        here = at or row
        first = self.seen.setdefault(key, here)
        if first != here:
            self.problem(row, fld, f"{what} listed twice (also {first})")

    def share(self, value: _T) -> _T:
        """One object for each value across the matrix: the cache pickles a shared object once, so a
        cold start unpickles a few hundred versions and capabilities instead of thousands.

        Versions, specifiers and driver versions are shared only with ones spelled the same (12.8 and
        12.8.0 are equal but print differently); tuples only when their items are the same objects.
        """
        key: Any
        if isinstance(value, (Version, SpecifierSet, DriverVersion)):
            key = (type(value), str(value))
        elif isinstance(value, tuple) and type(value) is tuple:
            key = (tuple, tuple(map(id, value)))
        else:
            key = (type(value), value)
        return self.shared.setdefault(key, value)  # type: ignore[no-any-return]

    def problem(self, row: str, fld: str, message: str) -> None:
        self.problems.append(problem(self.file, row, fld, message))

    def mapping(self, value: Any, row: str, fld: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(row, fld, f"expected a mapping, got {_kind(value)}")
            return None
        return value

    def rows(self, doc: dict[str, Any], key: str, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (row name, mapping) for each row of the list ``doc[key]``."""
        items = doc.get(key)
        if not isinstance(items, list):
            self.problem("", key, f"expected a list of rows, got {_kind(items)}")
            return
        for i, item in enumerate(items):
            name = f"{key}[{i}]"
            if isinstance(item, dict) and isinstance(item.get(label), str):
                name += f" {shown(item[label])}"
            d = self.mapping(item, name, "")
            if d is not None:
                yield name, d

    def known(self, d: dict[str, Any], row: str, allowed: tuple[str, ...], prefix: str = "") -> None:
        for k in d:
            if k not in allowed:
                self.problem(row, prefix + cut(str(k)), f"unknown field (expected one of: {', '.join(allowed)})")

    def get(self, d: dict[str, Any], key: str, row: str, kind: type | tuple[type, ...], *,
            required: bool = True, fld: str | None = None) -> Any:
        fld = fld or key
        if key not in d or d[key] is None:
            if required:
                self.problem(row, fld, "missing")
            return None
        value = d[key]
        if not isinstance(value, kind) or isinstance(value, bool) and bool not in _as_tuple(kind):
            want = " or ".join(t.__name__ for t in _as_tuple(kind))
            hint = " (quote it: YAML reads 12.10 as a number)" if isinstance(value, (int, float)) and str in _as_tuple(kind) else ""
            self.problem(row, fld, f"expected {want}, got {_kind(value)} {shown(value)}{hint}")
            return None
        return value

    def _parsed(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                expected: str, *, required: bool = True, fld: str | None = None) -> Any:
        text = self.get(d, key, row, str, required=required, fld=fld)
        if text is None:
            return None
        try:
            return self.share(parse(text))
        except (InvalidVersion, InvalidSpecifier, ValueError):
            self.problem(row, fld or key, f"invalid {what} {shown(text)} (expected {expected})")
            return None

    def version(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> Version | None:
        return self._parsed(d, key, row, Version, "version", "a version such as '12.8'", **kw)

    def driver(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> DriverVersion | None:
        return self._parsed(d, key, row, DriverVersion.parse, "driver version", "a version such as '580.65.06'", **kw)

    def spec(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> SpecifierSet | None:
        return self._parsed(d, key, row, SpecifierSet, "specifier", "a specifier such as '>=3.9,<3.13'", **kw)

    def cap(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> Capability | None:
        return self._parsed(d, key, row, Capability.parse, "compute capability",
                            "MAJOR.MINOR such as '8.6'", **kw)

    def date(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> str | None:
        """An ISO date, to the day or to the month (``2025-01-23`` or ``2020-07``)."""
        return self._parsed(d, key, row, _iso_date, "date", "YYYY-MM-DD or YYYY-MM", **kw)

    def list_of(self, d: dict[str, Any], key: str, row: str, parse: Callable[[str], Any], what: str,
                *, required: bool = True, fld: str | None = None, unique: bool = True) -> tuple[Any, ...] | None:
        """A list of strings, each parsed; an item listed twice is a problem (unless not ``unique``)."""
        fld = fld or key
        items = self.get(d, key, row, list, required=required, fld=fld)
        if items is None:
            return None if required else ()
        out, seen = [], set()
        for i, item in enumerate(items):
            value = self._item(item, row, f"{fld}[{i}]", parse, what)
            if value is None:
                return None
            if unique and value in seen:
                self.problem(row, f"{fld}[{i}]", f"{shown(item)} listed twice")
            seen.add(value)
            out.append(value)
        return self.share(tuple(out))

    def _item(self, item: Any, row: str, fld: str, parse: Callable[[str], Any], what: str) -> Any:
        if not isinstance(item, str):
            self.problem(row, fld, f"expected str, got {_kind(item)} {shown(item)} (quote it)")
            return None
        try:
            return self.share(parse(item))
        except (InvalidVersion, ValueError, re.error) as e:
            self.problem(row, fld, f"invalid {what} {shown(item)}" + (f": {e}" if what == "regular expression" else ""))
            return None

    def caps(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[Capability, ...] | None:
        return self.list_of(d, key, row, Capability.parse, "compute capability", **kw)

    def strings(self, d: dict[str, Any], key: str, row: str, **kw: Any) -> tuple[str, ...] | None:
        return self.list_of(d, key, row, str, "string", **kw)

    def choice(self, d: dict[str, Any], key: str, row: str, choices: tuple[_S, ...], *,
               required: bool = True, fld: str | None = None) -> _S | None:
        value = self.get(d, key, row, str, required=required, fld=fld)
        if value is None:
            return None
        if value not in choices:
            self.problem(row, fld or key, f"invalid value {shown(value)} (expected one of: {', '.join(choices)})")
            return None
        return choices[choices.index(value)]  # the choice itself, typed as one

    def provenance(self, d: dict[str, Any], row: str) -> Provenance | None:
        src = d.get("source")
        if isinstance(src, str) and src.strip():
            sources: tuple[str, ...] | None = (src,)
        elif isinstance(src, list) and src and all(isinstance(s, str) and s.strip() for s in src):
            sources = tuple(src)
        else:
            self.problem(row, "source", "missing" if src is None else
                         f"expected a URL or 'owner/repo@tag:path', or a list of them, got {shown(src)}")
            sources = None
        verified = self.choice(d, "verified", row, VERIFIED_LEVELS)
        note = self.get(d, "note", row, str, required=False)
        if sources is None or verified is None:
            return None
        return self.share(Provenance(source=self.share(sources), verified=verified, note=note))

    def driver_floor(self, d: dict[str, Any], key: str, row: str) -> DriverFloor | None:
        m = self.get(d, key, row, dict)
        if m is None:
            return None
        self.known(m, row, ("linux", "windows"), prefix=f"{key}.")
        # an explicit null is allowed (NVIDIA prints "N/A"); a missing key is not
        linux = self.driver(m, "linux", row, required="linux" not in m, fld=f"{key}.linux")
        windows = self.driver(m, "windows", row, required=False, fld=f"{key}.windows")
        if linux is None and m.get("linux") is not None:
            return None
        return DriverFloor(linux=linux, windows=windows)


def _iso_date(text: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
        raise ValueError(text)
    _dt.date.fromisoformat(text if len(text) == 10 else text + "-01")
    return text


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


_PROV = ("source", "verified", "note")
