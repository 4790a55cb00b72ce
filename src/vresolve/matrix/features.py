"""``features.yaml``: features' compute-capability floors (bfloat16, FlashAttention 2, FP8 types) and the SMs binary
libraries' releases support (TensorRT). doctor's facts for judging a message's claim about the GPU against the GPU a
paste shows, not a resolver input.
"""

from __future__ import annotations

from typing import Any

from .model import Feature, Library, LibrarySms
from .pythons import _release_spec
from .rows import _PROV, _Rows

__all__ = ["_read_features"]


def _read_feature(d: dict[str, Any], row: str, r: _Rows) -> Feature | None:
    r.known(d, row, ("id", "name", "min_compute_capability", "signals", *_PROV))
    ident, name = r.get(d, "id", row, str), r.get(d, "name", row, str)
    if ident is not None:
        r.once(("feature", ident), "feature", row, "id")
    floor = r.cap(d, "min_compute_capability", row)
    signals = r.strings(d, "signals", row)
    prov = r.provenance(d, row)
    if ident is None or name is None or floor is None or signals is None or prov is None:
        return None
    return Feature(id=ident, name=name, min_compute_capability=floor, signals=signals, provenance=prov)


def _read_library(d: dict[str, Any], row: str, r: _Rows) -> Library | None:
    r.known(d, row, ("name", "releases", *_PROV))
    name = r.get(d, "name", row, str)
    if name is not None:
        r.once(("library", name), "library", row, "name")
    rows = []
    for i, rd in enumerate(r.get(d, "releases", row, list) or ()):
        sub, at = r.mapping(rd, row, f"releases[{i}]"), f"{row} releases[{i}]"
        if sub is None:
            continue
        r.known(sub, at, ("releases", "lowest", "highest", *_PROV))
        specs = r.list_of(sub, "releases", at, _release_spec, "release or specifier")
        lowest, highest = r.cap(sub, "lowest", at), r.cap(sub, "highest", at)
        prov = r.provenance(sub, at)
        if lowest is not None and highest is not None and highest < lowest:
            r.problem(at, "highest", "expected a capability at or above `lowest`")
        elif specs is not None and lowest is not None and highest is not None and prov is not None:
            rows.append(LibrarySms(releases=specs, lowest=lowest, highest=highest, provenance=prov))
    prov = r.provenance(d, row)
    if name is None or prov is None:
        return None
    return Library(name=name, rows=tuple(rows), provenance=prov)


def _read_features(doc: dict[str, Any], r: _Rows) -> tuple[tuple[Feature, ...], tuple[Library, ...]]:
    features = [f for row, d in r.rows(doc, "features", "id") if (f := _read_feature(d, row, r)) is not None]
    libraries = [x for row, d in r.rows(doc, "libraries", "name") if (x := _read_library(d, row, r)) is not None]
    return tuple(features), tuple(libraries)
