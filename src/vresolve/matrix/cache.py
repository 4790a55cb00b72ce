"""The validated matrix kept as a pickle in the user's cache, keyed by its files' bytes and the code.

Parsing and validating the YAML costs tens of milliseconds, so a matrix that validated is kept under
a key made of the files' bytes (the revision), the code that builds the objects (this package and
``values``), and vresolve's, packaging's and Python's versions: an edited file, or new code, misses
the cache and is validated again. A cache that cannot be read or written is only a miss.

The file is ``MAGIC``, the SHA-256 of the payload, then the payload (a pickle): a file whose checksum
does not match (a flipped byte, a truncated write) is a miss, never a silently different matrix. The
payload is read by an unpickler that knows only the matrix's own classes, so a planted file cannot run
code; anything else in it is a miss. (A checksum is no signature: whoever can write the cache can also
make a matrix that differs and checksums right. ``vresolve matrix validate`` therefore never reads the
cache: it always checks the YAML; and a cache directory or file that another user owns, or that group or
others can write, is never read: see :func:`vresolve._cache.trusted_cache_dir`.)
"""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path
from typing import Any

import msgspec
import msgspec.structs

from .model import Matrix

FORMAT = 9  # 4: KnownIssue.signals; 5: Matrix.jetson_wheels; 6: DriverSupport (gpus.yaml driver:); 7: equal strings once;
#              8: KnownIssue.when; 9: msgspec Structs (pickled as their class called with the fields)
MAGIC = b"vresolve-matrix-cache\0"
MAX_BYTES = 64 * 2**20  # the shipped matrix pickles to well under 1 MiB


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
    """Where the validated matrix of ``revision`` is kept; None when caching is off or the cache directory is
    not this user's alone (then said once on stderr)."""
    from .._cache import trusted_cache_dir

    cdir = trusted_cache_dir(create=True)
    return Path(cdir) / f"matrix-{_key(revision)}.pickle" if cdir else None


def _classes() -> dict[tuple[str, str], type]:
    """Every class a pickled matrix holds, by (module, name): the model's Structs, vresolve's values and
    packaging's versions and specifiers. Protocol 5 pickles of these need no other global (no copyreg
    reconstructor, no builtins: tuples, dicts and frozensets have opcodes of their own)."""
    from packaging.specifiers import Specifier, SpecifierSet
    from packaging.version import Version

    from .. import values
    from . import model

    classes: list[type] = [c for c in vars(model).values()
                           if isinstance(c, type) and issubclass(c, msgspec.Struct) and c.__module__ == model.__name__]
    classes += [values.Capability, values.ArchList, values.DriverVersion, Version, Specifier, SpecifierSet]
    return {(c.__module__, c.__qualname__): c for c in classes}


class _MatrixUnpickler(pickle.Unpickler):
    """Finds only the matrix's classes: a pickle that names any other global (``os.system``, ``builtins.eval``,
    ``copyreg``...) fails to load instead of running it. Called once per distinct class (about 25 times)."""

    allowed: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        cls = self.allowed.get((module, name))
        if cls is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not a class of the matrix")
        return cls


class _OneString(pickle.Pickler):
    """Pickles each distinct string once: a repeated one (another object, equal) is a persistent id naming the first."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._strings: dict[str, str] = {}

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is str:
            first = self._strings.setdefault(obj, obj)
            if first is not obj:
                return first
        return None


class _SameString(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        return pid


def _dumps(m: Matrix) -> bytes:
    """The pickle of ``m`` in which each distinct string is written once. The matrix repeats its strings
    (platforms, sources, notes: a quarter of the bytes) as distinct objects, which pickle's memo (by identity) writes
    again each time; a copy of ``m`` whose equal strings are one object pickles them once, so every load makes
    fewer objects from a smaller file (707 KB -> 523 KB), with nothing to do for the unpickler."""
    out = io.BytesIO()
    _OneString(out).dump(m)
    out.seek(0)
    return pickle.dumps(_SameString(out).load(), protocol=pickle.HIGHEST_PROTOCOL)


def seal(payload: bytes) -> bytes:
    """The cache file's bytes for a pickled matrix: the magic, the payload's SHA-256, the payload."""
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _unsealed(data: bytes) -> io.BytesIO | None:
    """The payload to unpickle (a view of ``data``, not a copy), when ``data`` starts with the magic and the
    payload's checksum matches; else None."""
    head = len(MAGIC) + 32
    if len(data) < head or not data.startswith(MAGIC):
        return None
    if hashlib.sha256(memoryview(data)[head:]).digest() != data[len(MAGIC):head]:
        return None
    payload = io.BytesIO(data)  # shares the bytes: unpickling reads them in place
    payload.seek(head)
    return payload


def read(cfile: Path, revision: str, root: Path) -> Matrix | None:
    import gc

    from .._cache import read_cache_file

    data = read_cache_file(cfile, MAX_BYTES)  # None: missing, odd, or not this user's alone
    payload = _unsealed(data) if data is not None else None
    if payload is None:
        return None
    if not _MatrixUnpickler.allowed:
        _MatrixUnpickler.allowed = _classes()
    collecting = gc.isenabled()
    gc.disable()  # tens of thousands of new objects, none of them garbage: a collection would only cost
    try:
        m = _MatrixUnpickler(payload).load()
    except Exception:  # noqa: BLE001 - a stale or corrupt cache is only a miss
        return None
    finally:
        if collecting:
            gc.enable()
    if not isinstance(m, Matrix) or m.revision != revision:
        return None
    return m if m.path == str(root) else msgspec.structs.replace(m, path=str(root))


def write(cfile: Path, m: Matrix) -> None:
    from .._atomic import write_bytes_atomic
    from .._cache import prune

    try:
        write_bytes_atomic(cfile, seal(_dumps(m)), mode=0o600)
    except OSError:
        return
    prune(str(cfile.parent), "matrix-", ".pickle", keep=MATRICES_KEPT)


#: validated matrices kept (about 0.7 MB each: a few checkouts or versions side by side)
MATRICES_KEPT = 4
