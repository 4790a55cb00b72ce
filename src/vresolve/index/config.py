"""Which index the user's installers use, read from their configuration as data (no installer is imported, so
this works where there is no pip, as in ``uv tool install``'s environments): the flag; ``UV_DEFAULT_INDEX``,
``UV_INDEX_URL``, ``PIP_INDEX_URL``; uv's configuration files; pip's; else uv's own default, as uv's help names
it. vresolve never hard-codes a registry."""

from __future__ import annotations

import configparser
import functools
import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from ..errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, no-redef]

_ENV = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")  # uv's (the newer name first), then pip's


class IndexSource(NamedTuple):
    url: str
    origin: str  # "--index-url", an environment variable, a configuration file's path, or "uv's default"
    uv_reads: bool  # uv finds this one by itself (its variables, its files, its default)


def configured_index_url(flag: str | None = None, cwd: Path | None = None) -> tuple[str, str]:
    """The simple-API URL to read, and where it came from (for messages).

    Order, as the installers read it: the flag; ``UV_DEFAULT_INDEX``, ``UV_INDEX_URL``,
    ``PIP_INDEX_URL``; uv's configuration (:func:`_uv_configured`); pip's (:func:`_pip_configured`);
    uv's default (:func:`_uv_default_index`).
    """
    found = find_index(flag, cwd) or IndexSource(_uv_default_index(), "uv's default", True)
    return found.url, found.origin


def find_index(flag: str | None = None, cwd: Path | None = None) -> IndexSource | None:
    """The index the flag, the environment or a configuration file names; None when none does."""
    if flag:
        return IndexSource(flag, "--index-url", False)
    for var in _ENV:
        value = os.environ.get(var, "").strip()
        if value:
            value = _uv_index_value(value) if var == "UV_DEFAULT_INDEX" else value
            return IndexSource(_as_url(value, var, Path.cwd()), var, var.startswith("UV_"))
    return _uv_configured(cwd or Path.cwd()) or _pip_configured()


def index_for_uv(flag: str | None = None) -> str | None:
    """The ``--index-url`` to give ``uv pip compile`` so that it resolves from the index ``matrix refresh``
    reads: None where uv finds that one by itself (its variables and files, its default)."""
    found = find_index(flag)
    return None if found is None or found.uv_reads else found.url


def redacted(url: str) -> str:
    """``url`` without its user name and password (for messages and reports)."""
    try:
        u = urlsplit(url)
        if u.username is None and u.password is None:
            return url
        host = u.netloc.rpartition("@")[2]
        return urlunsplit((u.scheme, host, u.path, u.query, u.fragment))
    except ValueError:
        return url.rpartition("@")[2] if "@" in url else url


def credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(``url`` without its credentials, (user, password) or None), decoded as pip and uv decode them."""
    try:
        u = urlsplit(url)
        user, password = u.username, u.password
    except ValueError:
        return url, None
    if user is None and password is None:
        return url, None
    return redacted(url), (unquote(user or ""), unquote(password or ""))


def _as_url(value: str, origin: str, base: Path) -> str:
    """A configured index as a URL: a URL as it is; a directory's path (which uv takes) as a file:// URL."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value):
        try:
            u = urlsplit(value)
            ok = u.scheme in ("http", "https", "file") and (u.scheme == "file" or bool(u.hostname))
        except ValueError:
            ok = False
        if ok:
            return value
        raise UsageError(f"{origin}: {value[:200]!r} is not an http://, https:// or file:// URL of an index")
    return (base / value).resolve().as_uri()


def _uv_index_value(value: str) -> str:
    """``UV_DEFAULT_INDEX``'s and ``[[index]]``'s ``name=URL`` form: the URL (uv reads a name without a colon)."""
    name, sep, url = value.partition("=")
    return url if sep and ":" not in name else value


# ---------------------------------------------------------------------------------------------- uv


def _uv_config_files(cwd: Path) -> list[tuple[Path, dict[str, Any]]]:
    """uv's configuration, most important first: the project's (the nearest ``uv.toml``, or ``pyproject.toml``
    with a ``[tool.uv]`` table, from ``cwd`` up), the user's, the system's; or only ``UV_CONFIG_FILE``'s;
    none under ``UV_NO_CONFIG``."""
    if os.environ.get("UV_CONFIG_FILE"):
        f = Path(os.environ["UV_CONFIG_FILE"])
        return [(f, _read_toml(f) or {})]
    if os.environ.get("UV_NO_CONFIG", "").lower() in ("1", "true", "yes", "on"):
        return []
    found = []
    for d in (cwd, *cwd.parents):
        doc = _read_toml(d / "uv.toml")
        if doc is not None:
            found.append((d / "uv.toml", doc))
            break
        table = ((_read_toml(d / "pyproject.toml") or {}).get("tool") or {}).get("uv")
        if isinstance(table, dict):
            found.append((d / "pyproject.toml", table))
            break
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs = [Path(d) / "uv" for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    for candidates in ([Path(xdg) / "uv"], [*dirs, Path("/etc/uv")]):  # the user's; the system's (the first found)
        for f in (d / "uv.toml" for d in candidates):
            doc = _read_toml(f)
            if doc is not None:
                found.append((f, doc))
                break
    return found


def _read_toml(f: Path) -> dict[str, Any] | None:
    """A TOML file as data; None when it is not there. One that does not parse is an error, as it is to uv."""
    try:
        text = f.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{f}: not valid TOML ({e}); uv would refuse it too") from None


def _uv_configured(cwd: Path) -> IndexSource | None:
    """The default index of uv's configuration, as ``uv pip`` takes it from the files: the first
    ``[[index]]`` marked ``default = true`` of any file; else the first ``[pip] index-url``; else the
    first top-level ``index-url`` (in each, the project's file before the user's, the user's before the
    system's)."""
    files = _uv_config_files(cwd)

    def first(pick: Any) -> IndexSource | None:
        for f, doc in files:
            value = pick(doc)
            if isinstance(value, str) and value.strip():
                return IndexSource(_as_url(_uv_index_value(value.strip()), str(f), f.parent), str(f), True)
        return None

    return (first(lambda doc: next((i.get("url") for i in doc.get("index") or [] if isinstance(i, dict)
                                    and i.get("default") is True), None))
            or first(lambda doc: (doc.get("pip") if isinstance(doc.get("pip"), dict) else {}).get("index-url"))
            or first(lambda doc: doc.get("index-url")))


@functools.lru_cache(maxsize=1)
def _uv_default_index() -> str:
    """uv's own default index, as its help documents it ("by default: <URL>"): the index an installer with no
    configuration uses, named without writing a registry here."""
    import subprocess

    from .._proc import uv_bin

    why = ""
    try:
        out = subprocess.run([uv_bin(), "pip", "compile", "--help"], capture_output=True, text=True, timeout=30,
                             env={**os.environ, "NO_COLOR": "1"}, check=False).stdout
        m = re.search(r"--default-index\b.*?\(by default:\s*<(https?://[^>\s]+)>", out, re.S)
        if m:
            return m[1]
        why = "its help names none"
    except (OSError, subprocess.SubprocessError, UsageError) as e:
        why = str(e)
    raise UsageError(f"no package index configured, and uv's default could not be read ({why}): "
                     "pass --index-url URL, or set UV_DEFAULT_INDEX")


# ---------------------------------------------------------------------------------------------- pip


def _pip_config_files() -> list[Path]:
    """pip's configuration files, the least important first (a later file overrides an earlier one): the
    system's, the user's (not when ``PIP_CONFIG_FILE`` names a file), the virtual environment's,
    ``PIP_CONFIG_FILE``'s; none when ``PIP_CONFIG_FILE`` is the null device."""
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    xdg_dirs = [d for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    files = [*(Path(d) / "pip" / "pip.conf" for d in xdg_dirs), Path("/etc/pip.conf")]
    if not (env_file and Path(env_file).exists()):
        xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        files += [Path.home() / ".pip" / "pip.conf", Path(xdg) / "pip" / "pip.conf"]
    if os.environ.get("VIRTUAL_ENV"):
        files.append(Path(os.environ["VIRTUAL_ENV"]) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


def _pip_configured() -> IndexSource | None:
    """pip's ``index-url``: ``[install]``'s over ``[global]``'s, whichever file set them, and in each the
    last file's (pip merges its files, then reads the command's section over the global one)."""
    found: dict[str, tuple[str, Path]] = {}
    for f in _pip_config_files():
        cp = configparser.RawConfigParser()  # no interpolation: a '%' in a URL is pip's too
        try:
            cp.read(f, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            for key in ("index-url", "index_url"):
                if cp.has_option(section, key) and cp.get(section, key).strip():
                    found[section] = (cp.get(section, key).strip(), f)
    value = found.get("install") or found.get("global")
    if value is None:
        return None
    return IndexSource(_as_url(value[0], str(value[1]), Path.cwd()), str(value[1]), False)


def simple_to_project_url(simple_url: str, name: str) -> str:
    return urljoin(simple_url.rstrip("/") + "/", f"{name}/")
