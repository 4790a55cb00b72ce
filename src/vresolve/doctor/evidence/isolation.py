"""A source package that imports torch in its setup.py without declaring it, failing in pip's isolated build.

flash-attn's and xFormers' source packages (sdists) import torch to compute their build requirements, but do not list
torch among them: pip builds them in a fresh environment holding only what they declare, so "Getting requirements to
build wheel" fails there, whatever torch is installed (``pip install flash-attn --no-build-isolation`` is their
documented way). The line ``build-requirements-failed`` is re-typed ``sdist-imports-torch`` when the paste shows such
a package's source archive being built and no other typed error line names another reason.

Input::

    Collecting flash-attn
      Using cached flash_attn-2.7.4.post1.tar.gz (6.0 MB)
      Installing build dependencies ... done
      Getting requirements to build wheel ... error                     sdist-imports-torch
"""

from __future__ import annotations

from msgspec.structs import replace
from packaging.utils import canonicalize_name

from .model import Evidence, Seen, Signal
from .signals import CONTEXT_SIGNALS

__all__ = ["FAILED", "FRAME", "IMPORTS_TORCH", "SDISTS_IMPORTING_TORCH", "retype_isolation"]

FAILED = "build-requirements-failed"
IMPORTS_TORCH = "sdist-imports-torch"
#: a traceback's frame in the setup.py of a source package an installer unpacked to build it
FRAME = "installer-build-frame"
#: source packages whose setup.py imports torch without declaring it as a build requirement
SDISTS_IMPORTING_TORCH = ("flash-attn", "xformers")


def _building_one(e: Evidence) -> str | None:
    """The package of that kind whose source archive the paste shows downloaded (or taken from pip's cache), whose
    build an installer says failed (uv's "Failed to download and build `flash-attn==2.6.3`"), or whose unpacked
    source's setup.py a traceback runs."""
    names = [d.value.name for d in e.dists if d.how == "download"]
    names += [ev.value.name for ev in e.installer if ev.value.action == "build-failed" and ev.value.name]
    names += [canonicalize_name(s.value.detail) for s in e.signals if s.value.code == FRAME and s.value.detail]
    return next((name for name in names if name in SDISTS_IMPORTING_TORCH), None)


def retype_isolation(e: Evidence) -> Evidence:
    """``e`` with a failed build-requirements step typed ``sdist-imports-torch`` where the paste shows it so."""
    # (or, with "No module named 'torch'", a frame in the setup.py of such a package an installer unpacked)
    no_torch = any(f.value.module == "torch" for f in e.import_failures)
    failed = [s for s in e.signals if s.value.code == FAILED or (
        s.value.code == FRAME and no_torch and canonicalize_name(s.value.detail or "") in SDISTS_IMPORTING_TORCH)]
    if not failed or any(s.value.code not in (FAILED, IMPORTS_TORCH, FRAME, *CONTEXT_SIGNALS) for s in e.signals):
        return e
    if any(f.value.module != "torch" for f in e.import_failures):
        return e
    name = _building_one(e)
    if name is None:
        return e
    out: list[Seen[Signal]] = [replace(s, value=Signal(code=IMPORTS_TORCH, detail=name)) if any(s is f for f in failed)
                               else s for s in e.signals]
    return replace(e, signals=tuple(out))
