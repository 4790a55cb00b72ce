"""vresolve's user cache: where it lives, and the output cache of ``vresolve plan`` (and ``vresolve --help``).

Kept free of heavy imports on purpose: the output cache is consulted before anything else
is imported, so that a repeated ``vresolve plan`` for the same target costs about as much
as starting Python.

The plan output cache answers plans that do not probe the machine (``--gpu`` names GPUs,
``sm_XY`` or ``none``) here, before the CLI is imported, and its key covers everything the output depends on:
the arguments, every ``VRESOLVE_*`` variable, the terminal-related ones and ``PATH``, the
interpreter (its Python and platform are the defaults of a plan), whether stdout is a
terminal, the size of the terminals behind stdin, stdout and stderr (what rich lays tables out
for), and the size, modification and change times and inode of every file of the matrix
and of vresolve's own code (an edit cannot keep the change time). Flags are read as argparse
reads them: the last ``--gpu`` / ``--matrix`` wins, ``--gpu=X`` and abbreviations count. Each
entry carries a CRC-32 of what it holds; one that does not check out is a miss.
``plan --gpu auto`` is keyed only after detection (:class:`LatePlanKey`): the entry point keeps what the command
writes, the CLI probes the machine first (before the matrix, the resolver, the plan and the renderers are imported)
and asks :func:`late_plan_output` with the same key's parts plus the detected ``Host``'s ``repr`` (a frozen
Struct's: every fact detection found, all the plan reads of the machine); a hit is written out and its exit code
returned, a miss is computed and kept by the entry point (what was written after the probe) when it ends with 0
or 1. Never kept: ``--keep-torch`` (it reads the installed environment), a broken driver (exit 3), a machine whose
GPU's compute capability only the matrix gives (detection needed the matrix), a library caller of
``vresolve.cli.main`` (nothing armed a late key).
``vresolve --help`` (or ``-h``) alone is kept the same way, keyed by the terminal, the locale, the interpreter and
vresolve's code: argparse costs more than the rest of it (about 2.2x ``python -c pass`` for a parser of nine commands
printing its help, against 1.6x for an answer read back).
``VRESOLVE_PLAN_CACHE=0`` turns this cache off, ``VRESOLVE_CACHE_DIR=`` (empty) every cache.
A cache directory that cannot be read or written is never an error, only a miss.

A checksum is no signature: whoever can write the cache can write an answer that checks out. So a cache is
used only when it is this user's alone (as pip and uv check): the directory (a symlink to it: the link and
its target) and every file read from it owned by the current user and writable by no group and no other
user. Anything else is not read, not written, and said once on stderr (:func:`trusted_cache_dir`,
:func:`read_cache_file`). vresolve makes its cache directory ``0700`` and its files ``0600``.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["new_run", "cache_dir", "usable_cache_dir", "trusted_cache_dir", "read_cache_file", "plan_output_key",
           "read_plan_output", "write_plan_output", "LatePlanKey", "expect_late_key", "forget_late_key",
           "late_key_expected", "late_plan_output", "replay"]

_TERMINAL_VARS = ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TERM", "COLORTERM")


def cache_dir() -> str | None:
    """``$VRESOLVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/vresolve``, else ``~/.cache/vresolve``;
    ``VRESOLVE_CACHE_DIR=""`` turns the cache off."""
    env = os.environ.get("VRESOLVE_CACHE_DIR")
    if env is not None:
        return env or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vresolve")


def usable_cache_dir() -> str | None:
    """:func:`cache_dir` when it is (or can be made) a writable directory that this user alone can write
    (:func:`trusted_cache_dir`), else None: a cache that cannot be used is only an optimisation lost, never
    an error."""
    d = trusted_cache_dir(create=True)
    return d if d is not None and os.access(d, os.W_OK | os.X_OK) else None


_warned: list[str] = []  # the one warning of this process about a cache not used


def new_run() -> None:
    """A new command starts: its first untrusted cache is warned about (and stops its answer being kept) again."""
    _warned.clear()


def _warn(path: str, why: str) -> None:
    """One line on stderr, once per process: the cache at ``path`` is not used, and why."""
    if not _warned:
        _warned.append(path)
        sys.stderr.write(f"vresolve: warning: cache {path!r} not used: {why}\n")
        sys.stderr.flush()


def _untrusted(st: os.stat_result, what: str) -> str | None:
    """Why a cache directory or file with this stat is not this user's alone, or None when it is."""
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"{what} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    who = [w for bit, w in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "other users")) if st.st_mode & bit]
    if who:
        return f"{what} is writable by {' and '.join(who)} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def trusted_cache_dir(*, create: bool = False) -> str | None:
    """:func:`cache_dir` when it is a directory this user alone can write, else None (off, missing, or not
    trusted: then one warning on stderr). ``create``: make it first (mode 0700) when it is missing. A symlink
    to a directory is followed when the link too is this user's."""
    d = cache_dir()
    if d is None:
        return None
    try:
        if create and not os.path.lexists(d):
            os.makedirs(d, mode=0o700, exist_ok=True)
        link = os.lstat(d)
        st = os.stat(d) if stat.S_ISLNK(link.st_mode) else link
    except (OSError, ValueError):
        return None  # missing (or a dangling link): no cache, nothing to say
    why = None
    if stat.S_ISLNK(link.st_mode) and link.st_uid != os.geteuid():  # a link's own mode is always 0777
        why = f"the symbolic link is owned by uid {link.st_uid}, not by this user (uid {os.geteuid()})"
    if why is None and not stat.S_ISDIR(st.st_mode):
        why = "not a directory"
    why = why or _untrusted(st, "the directory")
    if why:
        _warn(d, why)
        return None
    return d


def read_cache_file(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of a cache file when it is a regular file (not a symlink) of at most ``limit`` bytes that
    this user alone can write; None when it is missing or is not one (one warning when it is not this user's
    alone). Call it only for a file of a :func:`trusted_cache_dir`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        why = _untrusted(st, "the file")
        if why:
            _warn(os.fspath(path), why)
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _last_value(argv: list[str], name: str) -> str | None:
    """The value argparse gives the long option ``name``: its last occurrence wins, as ``NAME VALUE``,
    ``NAME=VALUE`` or an abbreviation of NAME (argparse takes any unambiguous prefix; every prefix is taken
    here, which only ever means a cache miss). A token that starts with ``-`` is never an option's value to
    argparse, so every such token is an option."""
    value = None
    for i, a in enumerate(argv):
        if a == "--":
            break
        head, eq, tail = a.partition("=")
        if len(head) >= 3 and name.startswith(head):
            if eq:
                value = tail
            elif i + 1 < len(argv):
                value = argv[i + 1]
    return value


def _stat_tree(root: str, out: list[str]) -> None:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        out.append(f"{root}:missing")
        return
    for e in entries:
        if e.is_dir():
            if e.name != "__pycache__":
                _stat_tree(e.path, out)
        elif e.name.endswith((".py", ".yaml")):
            st = e.stat()  # ctime and the inode too: an edit cannot keep its ctime, a replacement its inode
            out.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")


def _terminal_sizes() -> str:
    """The size of the terminal behind stdin, stdout and stderr (rich lays a table out for the first it finds,
    when there is no ``COLUMNS``): a plan shown in a terminal of another width is laid out again, not replayed."""
    sizes = []
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
            sizes.append(f"{size.columns}x{size.lines}")
        except (OSError, ValueError):
            sizes.append("-")
    return "terminal=" + ",".join(sizes)


def _help_key(argv: list[str]) -> str:
    """The key of ``vresolve --help``: argparse's text, wrapped for ``COLUMNS`` or the terminal behind stdout, in
    this Python's wording (and its translation, where the locale has one), from vresolve's code."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = ["help-output/1", repr(argv), sys.executable, sys.version, str(sys.stdout.isatty()), _terminal_sizes()]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items()
                    if k.startswith("VRESOLVE_") or k in _TERMINAL_VARS or k in _LOCALE_VARS)
    _stat_tree(here, parts)
    return "\n".join(parts)


_LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # what gettext reads for argparse's own words


def plan_output_key(argv: list[str]) -> str | None:
    """The cache key of ``vresolve <argv>`` (the full text of what the output depends on),
    or None when its output must be computed."""
    if not argv or cache_dir() is None or os.environ.get("VRESOLVE_PLAN_CACHE") == "0":
        return None
    if argv in (["--help"], ["-h"]):
        return _help_key(argv)
    if argv[0] != "plan":
        return None
    gpu = _last_value(argv, "--gpu")
    if gpu is None or gpu.strip().lower() == "auto":
        return None  # probes the machine: keyed only once the machine is known (:func:`late_plan_output`)
    return "\n".join(_plan_key_parts(argv, "plan-output/2"))


def _plan_key_parts(argv: list[str], tag: str) -> list[str]:
    """What a plan's output depends on besides the machine it is for: the arguments, the interpreter, the
    terminal, the environment's ``VRESOLVE_*``, terminal variables and ``PATH``, and the code and matrix files."""
    here = os.path.dirname(os.path.abspath(__file__))
    matrix = _last_value(argv, "--matrix") or os.environ.get("VRESOLVE_MATRIX")
    if matrix is None:
        beside = os.path.join(here, "compat_matrix")
        matrix = beside if os.path.isdir(beside) else os.path.join(os.path.dirname(os.path.dirname(here)), "compat_matrix")
    parts = [tag, repr(argv), sys.executable, sys.version, os.uname().machine,
             str(sys.stdout.isatty()), _terminal_sizes(), os.path.abspath(matrix)]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("VRESOLVE_") or k in _TERMINAL_VARS)
    parts.append(f"PATH={os.environ.get('PATH', '')}")  # the plan names uv as PATH finds it (or by its path)
    _stat_tree(here, parts)
    _stat_tree(os.path.abspath(matrix), parts)
    return parts


class LatePlanKey:
    """A plan whose key is known only once the machine is probed (``plan --gpu auto``): :mod:`vresolve._entry`
    arms one (:func:`expect_late_key`) while it keeps what the command writes; the CLI, having detected the
    machine, asks :func:`late_plan_output`, which on a miss sets ``key`` and ``since`` (how much had been written to
    stdout and stderr by then: what the probes' run writes is not part of the kept answer)."""

    def __init__(self, argv: list[str], written: Callable[[], tuple[int, int]]) -> None:
        self.argv = argv
        self.written = written
        self.key: str | None = None
        self.since = (0, 0)


_late: list[LatePlanKey] = []  # the armed late key of this run (none for a library caller of vresolve.cli)


def expect_late_key(argv: list[str], written: Callable[[], tuple[int, int]]) -> LatePlanKey | None:
    """Arm a late key for ``vresolve <argv>`` when it is a plan and the plan cache is on, else None. ``written``:
    how many pieces of stdout and stderr the caller has kept so far."""
    _late.clear()
    if not argv or argv[0] != "plan" or cache_dir() is None or os.environ.get("VRESOLVE_PLAN_CACHE") == "0":
        return None
    _late.append(LatePlanKey(argv, written))
    return _late[0]


def forget_late_key() -> None:
    _late.clear()


def late_key_expected() -> bool:
    """Whether this run keeps a plan answered for the machine it probed (:func:`expect_late_key` armed one)."""
    return bool(_late)


def late_plan_output(machine: str) -> tuple[int, bytes, bytes] | None:
    """The answer kept for this plan on this machine (``machine``: every fact detection found, in a canonical
    text), or None: a miss, and the answer computed now is kept under that key when the command ends with 0 or 1."""
    if not _late:
        return None
    late = _late[0]
    key = "\n".join([*_plan_key_parts(late.argv, "plan-auto-output/1"), "machine=" + machine])
    hit = read_plan_output(key)
    if hit is None:
        late.key, late.since = key, late.written()
    return hit


def replay(out: bytes, err: bytes) -> None:
    """Write a kept answer's stdout and stderr as they were written."""
    for stream, data in ((sys.stdout, out), (sys.stderr, err)):
        stream.flush()
        stream.buffer.write(data)
        stream.flush()


def _file_name(key: str) -> str:
    # a cheap name (zlib is already loaded); the full key is stored and compared on read
    import zlib

    data = key.encode("utf-8", "surrogateescape")
    return f"plan-{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}.out"


def read_plan_output(key: str) -> tuple[int, bytes, bytes] | None:
    """(exit code, stdout, stderr) of an earlier identical plan, or None (also for an entry that does not
    check out: another key, a wrong length or checksum)."""
    d = trusted_cache_dir()
    if d is None:
        return None
    data = read_cache_file(os.path.join(d, _file_name(key)), PLAN_OUTPUT_MAX_BYTES)
    if data is None:
        return None
    head, sep, rest = data.partition(b"\n")
    try:
        code, key_len, out_len, crc = (int(x, 16) for x in head.split(b" "))
    except ValueError:
        return None
    import zlib

    k = key.encode("utf-8", "surrogateescape")
    if not sep or code not in (0, 1) or key_len != len(k) or rest[:key_len] != k or len(rest) < key_len + out_len \
            or zlib.crc32(rest) != crc:
        return None
    body = rest[key_len:]
    return code, body[:out_len], body[out_len:]


def write_plan_output(key: str, code: int, out: bytes, err: bytes) -> None:
    """Keep a plan's answer; a cache that cannot be written is only a miss next time. Not when this process
    warned about a cache (the warning is not part of the answer)."""
    d = trusted_cache_dir(create=True)
    if d is None or _warned:
        return
    import zlib
    from pathlib import Path

    from ._atomic import write_bytes_atomic

    rest = key.encode("utf-8", "surrogateescape") + out + err
    head = f"{code:x} {len(rest) - len(out) - len(err):x} {len(out):x} {zlib.crc32(rest):x}\n".encode()
    try:
        write_bytes_atomic(Path(d) / _file_name(key), head + rest, mode=0o600)
    except (OSError, ValueError):
        return
    prune(d, "plan-", ".out", keep=PLAN_OUTPUTS_KEPT)


#: the plan answers kept (about 10 KB each); the oldest go first
PLAN_OUTPUTS_KEPT = 200
#: a plan answer larger than this is not one vresolve wrote: a miss
PLAN_OUTPUT_MAX_BYTES = 16 * 2**20


def prune(directory: str, prefix: str, suffix: str, *, keep: int) -> None:
    """Delete all but the ``keep`` newest ``prefix*suffix`` files of a cache directory (best effort):
    a cache must not grow without end (every matrix edit or upgrade adds a file)."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(prefix) and e.name.endswith(suffix)
                   and e.is_file(follow_symlinks=False)]
        if len(entries) <= keep:
            return
        entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
        for e in entries[keep:]:
            os.unlink(e.path)
    except OSError:
        pass
