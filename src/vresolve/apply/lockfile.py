"""What ``apply --lock FILE`` installs, judged before anything is shown or run.

A requirements file is a program for the installer: ``--extra-index-url``, ``--find-links``, ``-r FILE``,
``-e PATH`` or ``pkg @ file:///...`` make it install wheels nobody was shown, and installing a wheel runs its
code. So the file's format is decided by its content (a ``pylock.toml`` is TOML with ``lock-version``,
whatever its name), and each logical line of a requirements file (continuations joined, comments dropped, as
pip reads it) is one of:

- vresolve's own: a comment, a blank line, ``name==version`` (markers allowed) with its ``--hash=`` options,
  or ``--extra-index-url URL`` for an index vresolve itself writes into the lock of the stack it records;
- an ``Extra`` line: any other option, an unpinned or unhashed requirement, a URL or path requirement,
  extras, options after a requirement other than ``--hash``: installed only when the user allows it, and
  shown first;
- unreadable (not a requirement pip could read): never installed.

Pure: no printing, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import msgspec

__all__ = ["LockLine", "LockBody", "MAX_LOCK_BYTES", "is_pylock", "check_lock_body"]

MAX_LOCK_BYTES = 16 * 2**20  # a lock of a whole vLLM closure is tens of KB

_COMMENT_RE = re.compile(r"(^|\s+)#.*$")  # pip's own: a comment starts a line or follows whitespace
_LONG_RE = re.compile(r"(--[A-Za-z0-9-]*)[=\s]?(.*)")
_HASH_RE = re.compile(r"(sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128})")


class LockLine(msgspec.Struct, frozen=True):
    """A logical line of a lock that is not vresolve's own: its first physical line's number, its text (as
    joined), and why."""

    number: int
    text: str
    why: str


class LockBody(msgspec.Struct, frozen=True):
    pins: int  # the pinned, hashed requirements
    extra: tuple[LockLine, ...]  # installable, but not vresolve's own: only with the user's leave
    unreadable: tuple[LockLine, ...]  # never installed


def is_pylock(text: str) -> bool:
    """Whether ``text`` is a pylock.toml (TOML with a top-level ``lock-version``), whatever the file's name."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found, no-redef]
    try:
        return "lock-version" in tomllib.loads(text)
    except (ValueError, RecursionError):  # not TOML (a requirements file never is, unless it is only comments)
        return False


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line's number, the line) with backslash continuations joined, as pip's ``join_lines`` does: a
    comment line ends a continuation."""
    first = 0
    parts: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.endswith("\\") or _COMMENT_RE.match(line):
            if _COMMENT_RE.match(line):
                line = " " + line
            if parts:
                yield first, "".join([*parts, line])
                parts = []
            else:
                yield number, line
        else:
            if not parts:
                first = number
            parts.append(line[:-1])
    if parts:
        yield first, "".join(parts)


def check_lock_body(text: str, index_urls: Sequence[str]) -> LockBody:
    """Every logical line of a requirements-file lock judged (see the module's docstring). ``index_urls``: the
    indexes vresolve writes (``--extra-index-url``) into the lock of the stack the lock's header records."""
    pins, extra, unreadable = 0, [], []
    for number, raw in _logical_lines(text):
        line = _COMMENT_RE.sub("", raw).strip()
        if not line:
            continue
        option = line.startswith("-")
        verdict = _option(line, index_urls) if option else _requirement(line)
        if verdict is None:
            pins += not option
        elif verdict[0] == "unreadable":
            unreadable.append(LockLine(number, line, verdict[1]))
        else:
            extra.append(LockLine(number, line, verdict[1]))
    return LockBody(pins=pins, extra=tuple(extra), unreadable=tuple(unreadable))


def _option(line: str, index_urls: Sequence[str]) -> tuple[str, str] | None:
    long = _LONG_RE.match(line)
    name, value = (long[1], long[2]) if long else (line[:2], line[2:])
    value = value.strip()
    if name == "--extra-index-url" and value in index_urls:
        return None  # the index vresolve itself names for this stack
    what = {"--extra-index-url": "another index", "--index-url": "another index", "-i": "another index",
            "--find-links": "a place to find wheels", "-f": "a place to find wheels",
            "-r": "another file's requirements", "--requirement": "another file's requirements",
            "-c": "another file's constraints", "--constraint": "another file's constraints",
            "-e": "an editable install (a path or URL)", "--editable": "an editable install (a path or URL)",
            "--trusted-host": "a host whose certificate is not checked", "--no-index": "no index"}.get(name)
    return ("extra", f"an installer option: {what}" if what else "an installer option")


def _requirement(line: str) -> tuple[str, str] | None:
    """None for ``name==version`` (markers allowed) with only ``--hash`` options after it; else (kind, why)."""
    from packaging.requirements import InvalidRequirement, Requirement

    tokens = line.split()
    cut = next((i for i, t in enumerate(tokens) if t.startswith("-")), len(tokens))  # pip's own split
    spec, options = " ".join(tokens[:cut]), tokens[cut:]
    if "/" in spec.split(";")[0] or spec.split(";")[0].strip().endswith((".whl", ".zip", ".tar.gz")):
        return "extra", "a path or URL, not a package from the index"
    try:
        req = Requirement(spec)
    except InvalidRequirement as e:
        return "unreadable", f"not a requirement ({str(e).splitlines()[0][:120]})"
    if req.url:
        return "extra", "a URL, not a package from the index"
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or specs[0].version.endswith(".*"):
        return "extra", "not pinned to one version (name==version)"
    if req.extras:
        return "extra", "extras (vresolve's locks pin every package itself)"
    hashes, it = 0, iter(options)
    for opt in it:
        value = opt[len("--hash="):] if opt.startswith("--hash=") else next(it, "") if opt == "--hash" else None
        if value is None:
            return "extra", f"an installer option after the requirement ({opt[:40]})"
        if not _HASH_RE.fullmatch(value):
            return "unreadable", f"a hash that is not sha256/384/512 hex ({value[:40]})"
        hashes += 1
    return None if hashes else ("extra", "no --hash (nothing checks what is downloaded)")
