"""Whether the torch and torchvision a paste shows are the pair the matrix knows (torch.yaml's ``companions``: the
torchvision whose wheel METADATA pins that torch), of one flavour: then "operator torchvision::nms does not exist" is
not the two mismatched, and doctor says so instead of naming companion-mismatch."""

from __future__ import annotations

from typing import Any

from ..matrix import Matrix
from ..values import public_version
from .evidence import Evidence, Seen
from .evidence.model import REPORT

__all__ = ["torchvision_paired"]


def torchvision_paired(e: Evidence, matrix: Matrix) -> tuple[Seen[Any], Seen[Any]] | None:
    """(torch, torchvision) as a tool's report lists them (pip/conda list, collect_env) where torchvision is the
    release the matrix pairs with that torch and both carry the same local tag (``+cu121`` and ``+cu121``, or
    none); None otherwise (a pair the matrix does not know, another flavour, or not both shown)."""
    torch, vision = e.dist("torch"), e.dist("torchvision")
    if torch is None or vision is None or torch.rank != REPORT or vision.rank != REPORT:
        return None
    have_torch, have_vision = str(torch.value.version), str(vision.value.version)
    torch_version = public_version(have_torch)
    release = matrix.torch_release(torch_version) if torch_version is not None else None
    paired = release.companions.get("torchvision") if release is not None else None
    if paired is None or public_version(have_vision) != paired:
        return None
    if have_torch.partition("+")[2] != have_vision.partition("+")[2]:
        return None
    return torch, vision
