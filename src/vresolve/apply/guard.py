"""What ``apply`` may touch, and the proof that it made it.

- the marker (:data:`MARKER`, JSON) that apply writes into every directory it makes (an environment, a source
  build's clone): ``--force`` replaces only a directory that holds one (and is an environment or a clone), and
  never a home, the root, a mount point, a file or a symbolic link (:func:`refusal`);
- a file lock beside each path (``.NAME.vresolve-lock``, ``fcntl.flock``): one apply at a time per path, a second
  fails at once naming the first's pid (:class:`Guard`);
- the parent directories apply made for a path, removed again (only those, only when empty) when it fails;
- :func:`recover`: what an apply killed outright (SIGKILL, a power cut) left: a previous environment hidden under
  ``.NAME.vresolve-previous-PID``, an incomplete environment, half a removal; put right when the marker proves it,
  else reported with the command that puts it right.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError

__all__ = ["MARKER", "Guard", "read_marker", "recover", "refusal", "remove_tree", "unsafe", "write_marker"]

MARKER = ".vresolve-env"  # in every directory apply makes: {"vresolve", "created", "pid", "what", "state", ...}
_MARKER_MAX = 64 << 10


def write_marker(d: Path, *, what: str, kind: str, state: str, pid: int | None = None) -> None:
    """The marker in ``d`` (a directory apply made): who made it, when, for what, and how far it got
    (``installing``, ``ready``, ``kept-failed``)."""
    from .. import __version__
    from .._atomic import write_atomic

    old = read_marker(d) or {}
    body = {"vresolve": __version__, "created": old.get("created") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pid": pid if pid is not None else os.getpid(), "path": str(d), "what": what, "kind": kind,
            "role": "source" if (d / ".git").exists() else "environment", "state": state}
    write_atomic(d / MARKER, json.dumps(body, sort_keys=True) + "\n")


def read_marker(d: Path) -> dict[str, Any] | None:
    """The marker of ``d`` (a regular file, not a link; bounded), or None when there is none that parses."""
    try:
        fd = os.open(d / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MARKER_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        value = json.loads(data[:_MARKER_MAX])
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and "vresolve" in value else None


def _home() -> list[Path]:
    out = []
    for h in (os.environ.get("HOME"), _pw_home()):
        if h:
            try:
                out.append(Path(h).resolve())
            except (OSError, RuntimeError):
                pass
    return out


def _pw_home() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None


def unsafe(p: Path) -> str | None:
    """Why ``p`` may never be replaced, whatever it holds (a link, a file, the root, a home, a mount point, the
    current directory), or None. Nothing is touched."""
    if p.is_symlink():
        return "it is a symbolic link"
    if not p.exists():
        return None
    if not p.is_dir():
        return "it is a file, not an environment"
    real = p.resolve()
    if real == Path(real.anchor):
        return "it is the root directory"
    if any(h == real or real in h.parents for h in _home()):
        return "it is the home directory" if real in _home() else "it holds the home directory"
    if os.path.ismount(p):
        return "it is a mount point"
    cwd = Path.cwd().resolve()
    if cwd == real or real in cwd.parents:
        return "it holds the current directory"
    return None


def refusal(p: Path) -> str | None:
    """Why ``--force`` may not replace the existing ``p`` (None: vresolve made it, it may)."""
    why = unsafe(p)
    if why is not None:
        return why
    if read_marker(p) is None:
        return f"it holds no {MARKER} marker: vresolve did not make it"
    if not ((p / "pyvenv.cfg").is_file() or (p / "conda-meta").is_dir() or (p / ".git").exists()):
        return f"it holds a {MARKER} marker but is not a virtual or conda environment nor a source clone"
    return None


def remove_tree(p: Path) -> None:
    """Remove a directory apply made, its marker last: stopped half-way, what is left still proves whose it is."""
    marker = p / MARKER
    with os.scandir(p) as it:
        entries = [e for e in it if e.name != MARKER]
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            try:
                os.unlink(e.path)
            except FileNotFoundError:
                pass
    marker.unlink(missing_ok=True)
    shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a pid from before a reboot (a container's small pids): not this run
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not running
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _hidden(p: Path) -> list[tuple[str, Path, int]]:
    """(kind, path, pid) of what apply put beside ``p``: ``previous`` (an environment put aside by --force),
    ``removing`` (one being removed)."""
    pattern = re.compile(re.escape(f".{p.name}.vresolve-") + r"(previous|removing)-(\d{1,10})")
    try:
        names = sorted(os.listdir(p.parent))
    except OSError:
        return []
    return [(m[1], p.parent / n, int(m[2])) for n in names if (m := pattern.fullmatch(n))]


def _ours(p: Path, pid: int, state: str) -> bool:
    m = read_marker(p)
    return m is not None and m.get("pid") == pid and m.get("state") == state and not p.is_symlink()


def recover(paths: Sequence[Path]) -> list[str]:
    """Put right what an apply that did not finish left at ``paths`` (its owner dead; the caller holds the lock);
    what was done or found, one line each. Only what a marker proves apply made is removed; the rest is reported
    with the command that restores it."""
    out: list[str] = []
    for p in paths:
        m = read_marker(p) if p.is_dir() and not p.is_symlink() else None
        if m is not None and m.get("state") == "installing" and isinstance(m.get("pid"), int) \
                and not _alive(m["pid"]) and not any(k == "previous" and pid == m["pid"] for k, _, pid in _hidden(p)):
            remove_tree(p)
            out.append(f"removed the incomplete {p} left by apply {m['pid']}, which did not finish")
        for kind, hidden, pid in _hidden(p):
            if _alive(pid):
                out.append(f"{hidden} belongs to process {pid}, which is still running: left as it is")
            elif kind == "removing":
                out.append(_finish_removing(hidden, pid))
            else:
                out.append(_restore(p, hidden, pid))
    return out


def _finish_removing(hidden: Path, pid: int) -> str:
    if read_marker(hidden) is not None:
        remove_tree(hidden)
        return f"removed {hidden}, which apply {pid} was removing when it stopped"
    return f"{hidden} is what apply {pid} was removing when it stopped; to remove it: rm -rf {_q(hidden)}"


def _restore(p: Path, aside: Path, pid: int) -> str:
    """The previous environment apply ``pid`` put aside (``--force``): put back, unless that apply had finished."""
    exists = p.exists() or p.is_symlink()
    if exists and _ours(p, pid, "ready"):  # the new one was ready: only the previous one's removal was cut short
        if read_marker(aside) is not None:
            remove_tree(aside)
            return f"removed the previous {p}, which apply {pid} replaced and did not finish removing"
        return f"{aside} is the previous {p}, which apply {pid} replaced; to remove it: rm -rf {_q(aside)}"
    if exists and _ours(p, pid, "installing"):
        remove_tree(p)
        exists = False
    if not exists:
        os.replace(aside, p)
        return f"put back the previous {p}, which apply {pid} had put aside and did not finish"
    return (f"the previous {p} is at {aside} (put aside by apply {pid}, which did not finish); {p} holds something "
            f"vresolve cannot prove it made: to put the previous one back, move {_q(p)} away, then: "
            f"mv {_q(aside)} {_q(p)}")


def _q(p: Path) -> str:
    from ..render.shell import sh_value

    return sh_value(str(p))


class Guard:
    """Held for the whole apply: the parents made for ``paths`` (removed again, when empty, unless
    :meth:`keep` is called), then a lock on each path. A path another apply holds: UsageError naming its pid."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = tuple(dict.fromkeys(paths))
        self.made: list[Path] = []
        self.held: list[tuple[Path, int]] = []
        self.kept = False

    def __enter__(self) -> Guard:
        try:
            for p in self.paths:
                self._parents(p)
            for p in sorted(self.paths):
                self.held.append((p.parent / f".{p.name}.vresolve-lock", _lock(p)))
        except BaseException:
            self.__exit__()
            raise
        return self

    def keep(self) -> None:
        """The job succeeded: the parents it made are its own now."""
        self.kept = True

    def __exit__(self, *exc: object) -> None:
        for lock_file, fd in reversed(self.held):
            try:
                lock_file.unlink(missing_ok=True)  # before the unlock: the next one locks a new file (see _lock)
            except OSError:
                pass
            os.close(fd)
        self.held = []
        if not self.kept:
            for d in reversed(self.made):
                try:
                    d.rmdir()  # only when empty: a directory someone else put something into stays
                except OSError:
                    pass
        self.made = []

    def _parents(self, p: Path) -> None:
        missing = []
        for d in p.parents:
            if d.exists() or d.is_symlink():
                break
            missing.append(d)
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                continue
            except OSError as e:
                raise UsageError(f"apply: {str(p)!r} cannot be made: {str(d)!r}: {e.strerror or e}; nothing "
                                 "changed") from None
            self.made.append(d)


def _lock(p: Path) -> int:
    """An exclusive lock on ``.NAME.vresolve-lock`` beside ``p`` (its fd, the lock file holding our pid); the holder
    unlinks it before it unlocks, so a lock taken on a file no longer at that name is taken again."""
    import fcntl

    lock_file = p.parent / f".{p.name}.vresolve-lock"
    while True:
        try:
            fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise UsageError(f"apply: cannot lock {str(p)!r} ({str(lock_file)!r}: {e.strerror or e}); nothing "
                             "changed") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(f"apply: another vresolve apply (pid {other}) is making {str(p)!r} now; nothing "
                             "changed: wait for it to end, or choose another path") from None
        try:
            st = os.stat(lock_file, follow_symlinks=False)
            same = (st.st_dev, st.st_ino) == (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)
