"""Where the matrix lives and how it is loaded: its files' bytes give its revision; a matrix that
validated before comes from the cache (:mod:`.cache`), else the reader (:mod:`.load`) parses and
checks the YAML. Cheap to import: the reader is imported only on a cache miss.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import UsageError
from . import cache as _cache
from .model import FILES, Matrix


def default_matrix_path() -> Path:
    """``$VRESOLVE_MATRIX``, else the copy inside the installed package, else the checkout's."""
    env = os.environ.get("VRESOLVE_MATRIX")
    if env:
        return Path(env)
    beside = Path(__file__).parents[1] / "compat_matrix"  # where the wheel puts it: the package's own resource
    if beside.is_dir():
        return beside
    checkout = Path(__file__).resolve().parents[3] / "compat_matrix"  # an editable install of a checkout
    if (checkout.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    from importlib import resources  # slower to import; for installs that are not plain directories

    packaged = resources.files("vresolve") / "compat_matrix"
    if packaged.is_dir():
        return Path(str(packaged))
    return checkout


def load_matrix(path: str | os.PathLike[str] | None = None, *, cache: bool = True) -> Matrix:
    """Load and validate the matrix in directory ``path`` (default: :func:`default_matrix_path`).

    Raises UsageError when the directory is missing, MatrixError listing every problem. A matrix
    that validated before is read from the cache (:mod:`.cache`).
    """
    root = Path(path) if path is not None else default_matrix_path()
    if not root.is_dir():
        raise UsageError(f"matrix directory {str(root)!r} does not exist (expected a compat_matrix/ directory)")
    raw: dict[str, bytes | None] = {}
    digest = hashlib.sha256()
    for name in FILES:
        try:
            data = (root / name).read_bytes()
        except FileNotFoundError:
            raw[name] = None
            continue
        raw[name] = data
        digest.update(name.encode() + b"\0" + data + b"\0")
    revision = digest.hexdigest()[:16]
    cfile = _cache.cache_file(revision) if cache else None
    if cfile is not None:
        m = _cache.read(cfile, revision, root)
        if m is not None:
            return m
    from .load import parse_matrix  # the YAML reader: only when the cache has no answer

    m = parse_matrix(root, raw, revision)
    if cfile is not None:
        _cache.write(cfile, m)
    return m
