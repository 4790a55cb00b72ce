"""Reading ``known_issues.yaml``: each issue's cause, signals and signatures (regular expressions that compile and
cannot backtrack), and what it applies to.
"""

from __future__ import annotations

import re
from typing import Any

from ..values import parse_variant
from .checks import shown
from .model import (
    CAUSE_CODES,
    SEVERITIES,
    KnownIssue,
)
from .rows import _PROV, _Rows

MAX_SIGNATURE = 1000  # characters; the longest shipped signature has about 330


_SIGNAL_CODE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _signal_code(text: str) -> str:
    """A signal code: kebab-case, at most 40 characters (the evidence reader's codes; a test checks each exists)."""
    if len(text) > 40 or not _SIGNAL_CODE.fullmatch(text):
        raise ValueError("expected a kebab-case code")
    return text


def _checked_regex(text: str) -> str:
    """A signature that compiles and whose search takes time in proportion to the log (:mod:`.patterns`);
    re.error or ValueError, reported with the row, otherwise."""
    from .patterns import backtracking_problem

    if len(text) > MAX_SIGNATURE:
        raise ValueError(f"longer than {MAX_SIGNATURE} characters")
    try:
        re.compile(text, re.MULTILINE)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    why = backtracking_problem(text)
    if why is not None:
        raise ValueError(why)
    return text


def _read_known_issues(doc: dict[str, Any], r: _Rows) -> tuple[KnownIssue, ...]:
    out = []
    for row, d in r.rows(doc, "issues", "id"):
        r.known(d, row, ("id", "cause", "severity", "title", "signals", "signatures", "when", "applies_to", "explanation",
                         "fix", *_PROV))
        ident = r.get(d, "id", row, str)
        if ident is not None:
            r.once(("id", ident), "id", row, "id")
        cause = r.choice(d, "cause", row, CAUSE_CODES)
        severity = r.choice(d, "severity", row, SEVERITIES)
        title = r.get(d, "title", row, str)
        signals = r.list_of(d, "signals", row, _signal_code, "signal code", required=False)
        sigs = r.list_of(d, "signatures", row, _checked_regex, "regular expression", required=False)
        explanation, fix = _paragraphs(d, "explanation", row, r), _paragraphs(d, "fix", row, r)
        when = r.get(d, "when", row, str, required=False)
        prov = r.provenance(d, row)
        gpus, variants = _read_applies_to(d, row, r)
        if (ident is not None and cause is not None and severity is not None and title is not None and
            sigs is not None and signals is not None and explanation is not None and fix is not None
                and prov is not None):
            out.append(KnownIssue(id=ident, cause=cause, severity=severity, title=title, signatures=sigs,
                                  explanation=explanation, fix=fix, provenance=prov, signals=signals, gpus=gpus,
                                  torch_variants=variants, when=when))
    return tuple(out)


def _paragraphs(d: dict[str, Any], key: str, row: str, r: _Rows) -> str | None:
    """A known issue's text: a string, or a list of strings joined by line breaks (so that a row can reuse another's
    paragraph through a YAML anchor)."""
    value = r.get(d, key, row, (str, list))
    if not isinstance(value, list):
        return value
    if not value or not all(isinstance(v, str) for v in value):
        r.problem(row, key, "expected a string or a list of strings")
        return None
    return "\n".join(value)


def _read_applies_to(d: dict[str, Any], row: str, r: _Rows) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A known issue's ``applies_to``: the GPUs (gpus.yaml names, checked with the other cross-references) and
    torch variants on which a plan meets it."""
    a = r.mapping(d["applies_to"], row, "applies_to") if d.get("applies_to") is not None else None
    if a is None:
        return (), ()
    r.known(a, row, ("gpus", "torch_variants"), prefix="applies_to.")
    gpus = r.strings(a, "gpus", row, fld="applies_to.gpus") or ()
    variants = r.strings(a, "torch_variants", row, fld="applies_to.torch_variants") or ()
    for v in variants:
        try:
            parse_variant(v)
        except ValueError:
            r.problem(row, "applies_to.torch_variants", f"invalid variant {shown(v)} (expected cuXYZ or cpu)")
    return tuple(gpus), tuple(variants)
