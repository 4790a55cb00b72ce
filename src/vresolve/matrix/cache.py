"""The validated matrix kept as a pickle in the user's cache, keyed by its files' bytes and the code.

Parsing and validating the YAML costs tens of milliseconds, so a matrix that validated is kept under
a key made of the files' bytes (the revision), the code that builds the objects (this package and
``values``), and vresolve's, packaging's and Python's versions: an edited file, or new code, misses
the cache and is validated again. A cache that cannot be read or written is only a miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from pathlib import Path

from .model import Matrix

FORMAT = 2


def _key(revision: str) -> str:
    import sys

    from packaging import __version__ as packaging_version

    from .. import __version__, values

    h = hashlib.sha256(f"{FORMAT}|{revision}|{__version__}|{packaging_version}|{sys.version}".encode())
    code = sorted(Path(__file__).parent.glob("*.py")) + [Path(values.__file__)]
    for module in code:  # the code that built the objects, so edits miss the cache
        h.update(module.read_bytes())
    return h.hexdigest()[:24]


def cache_file(revision: str) -> Path | None:
    """Where the validated matrix of ``revision`` is kept; None when caching is off."""
    from .._cache import cache_dir

    cdir = cache_dir()
    return Path(cdir) / f"matrix-{_key(revision)}.pickle" if cdir else None


def read(cfile: Path, revision: str, root: Path) -> Matrix | None:
    import gc

    collecting = gc.isenabled()
    gc.disable()  # tens of thousands of new objects, none of them garbage: a collection would only cost
    try:
        with open(cfile, "rb") as fh:
            m = pickle.load(fh)
    except Exception:  # noqa: BLE001 - a missing, stale or corrupt cache is only a miss
        return None
    finally:
        if collecting:
            gc.enable()
    if not isinstance(m, Matrix) or m.revision != revision:
        return None
    return m if m.path == str(root) else dataclasses.replace(m, path=str(root))


def write(cfile: Path, m: Matrix) -> None:
    from .._atomic import write_bytes_atomic

    try:
        write_bytes_atomic(cfile, pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass
