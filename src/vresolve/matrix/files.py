"""Where the matrix lives and how it is loaded: its files' bytes give its revision; a matrix that
validated before comes from the cache (:mod:`.cache`), else the reader (:mod:`.load`) parses and
checks the YAML. Cheap to import: the reader is imported only on a cache miss.

Only regular files are read, each up to :data:`MAX_FILE_BYTES`: a directory, a FIFO, a device
(``/dev/zero``), a dangling symlink or a huge file is one problem of the matrix, never a hang, a
traceback or a ``MemoryError``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..errors import UsageError
from . import cache as _cache
from .model import FILES, Matrix

MAX_FILE_BYTES = 16 * 2**20  # the biggest matrix file is a few hundred KB

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Unreadable(Exception):
    """Why a file was not read, in words (one line, without the file's name)."""


def _check_stat(st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((what for test, what in _NOT_REGULAR if test(st.st_mode)), "not a file")
        raise Unreadable(f"not a regular file ({kind})")
    if st.st_size > limit:
        raise Unreadable(f"larger than {limit / 2**20:.0f} MiB ({st.st_size / 2**20:.1f} MiB): "
                         "a matrix file is a few hundred KB")


def read_regular_file(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` (symlinks followed) when it is a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError when nothing is there, :class:`Unreadable` for anything else that is not
    such a file. A FIFO is opened without blocking and never read; a device is never opened.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise Unreadable("a symbolic link to a file that does not exist") from None
        raise
    except OSError as e:
        raise Unreadable(f"cannot be read ({e.strerror or e})") from None
    _check_stat(st, limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise Unreadable(f"cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        _check_stat(st, limit)  # the file opened, in case it was swapped since the stat
        chunks, size = [], 0
        while size <= limit:  # bounded, should it have grown since; one read() when it has not
            chunk = os.read(fd, min(st.st_size, limit) + 1 - size if size <= st.st_size else 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise Unreadable(f"cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise Unreadable(f"larger than {limit / 2**20:.0f} MiB: a matrix file is a few hundred KB")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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
    raw, revision = read_files(root)
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


def read_files(root: Path) -> tuple[dict[str, bytes | str | None], str]:
    """Each matrix file's bytes (None: absent; a str: why it was not read), and the revision they make."""
    raw: dict[str, bytes | str | None] = {}
    digest = hashlib.sha256()
    for name in FILES:
        try:
            data: bytes | str = read_regular_file(root / name)
        except FileNotFoundError:
            raw[name] = None
            continue
        except Unreadable as e:
            data = str(e)  # a problem of the matrix: it never validates, so it is never cached
        raw[name] = data
        digest.update(name.encode() + (b"\0" if isinstance(data, bytes) else b"\0!") + (
            data if isinstance(data, bytes) else data.encode()) + b"\0")
    return raw, digest.hexdigest()[:16]
