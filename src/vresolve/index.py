"""Reading a package index: the only module (with ``refresh``) that touches the network.

- :func:`configured_index_url` finds the index the user's installers use (flag, then
  ``PIP_INDEX_URL`` / ``UV_DEFAULT_INDEX`` / ``UV_INDEX_URL``, then pip's and uv's
  configuration files, then pip's own default). vresolve never hard-codes a registry.
- :meth:`IndexClient.project_files` lists a project's files through the simple API,
  PEP 691 JSON first and the PEP 503 HTML page as the fallback; relative URLs are resolved
  against the response's own URL.
- :meth:`IndexClient.read_metadata` returns a wheel's ``METADATA``: the PEP 658/714
  ``.metadata`` file when the index offers one, else the ``*.dist-info/METADATA`` member
  read out of the remote zip with HTTP range requests (the end of the file, the central
  directory, the one member). A wheel is never downloaded whole.
"""

from __future__ import annotations

import configparser
import io
import os
import sys
import time
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests

from .errors import PackageIndexError, UsageError

__all__ = ["IndexFile", "IndexClient", "configured_index_url", "simple_to_project_url"]

_JSON_V1 = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{_JSON_V1}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_TAIL = 64 * 1024  # first range read: the end of central directory and, usually, the directory
_MIN_READ = 64 * 1024  # later reads are at least this large, to save round trips


@dataclass(frozen=True, slots=True)
class IndexFile:
    """One file of a project as the simple API lists it."""

    filename: str
    url: str
    hashes: dict[str, str]
    requires_python: str | None
    yanked: bool
    metadata: bool | dict[str, str]  # PEP 658/714: whether a .metadata file is offered (and its hashes)
    size: int | None = None


def _pip_default_index() -> str:
    try:  # pip's own default, so that no registry is written here
        from pip._internal.models.index import PyPI  # type: ignore[import-not-found]
    except ImportError as e:  # pragma: no cover - pip is present in every venv we support
        raise UsageError("no package index configured: pass --index-url URL") from e
    return str(PyPI.simple_url)


def _pip_config_files() -> list[Path]:
    if os.environ.get("PIP_CONFIG_FILE"):
        return [Path(os.environ["PIP_CONFIG_FILE"])]
    xdg = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    home = Path.home()
    files = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in xdg),
             home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"]
    if os.environ.get("VIRTUAL_ENV"):
        files.append(Path(os.environ["VIRTUAL_ENV"]) / "pip.conf")
    return files


def _uv_config_files() -> list[Path]:
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path("/etc/uv/uv.toml"), Path(xdg) / "uv" / "uv.toml"]


def configured_index_url(flag: str | None = None) -> tuple[str, str]:
    """The simple-API URL to read, and where it came from (for messages).

    Order: the flag; ``PIP_INDEX_URL``; ``UV_DEFAULT_INDEX`` / ``UV_INDEX_URL``; the last pip
    configuration file that sets ``index-url`` (the later files override the earlier, as in
    pip); uv's ``uv.toml`` (``index-url``, or the ``[[index]]`` marked ``default = true``);
    pip's built-in default.
    """
    if flag:
        return flag, "--index-url"
    for var in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var], var
    return _pip_configured() or _uv_configured() or (_pip_default_index(), "pip's default")


def _pip_configured() -> tuple[str, str] | None:
    """The ``index-url`` of the last pip configuration file that sets one (later files override earlier)."""
    found: tuple[str, str] | None = None
    for f in _pip_config_files():
        cp = configparser.ConfigParser()
        try:
            cp.read(f)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            if cp.has_option(section, "index-url"):
                found = (cp.get(section, "index-url").strip(), str(f))
    return found


def _uv_configured() -> tuple[str, str] | None:
    """uv.toml's ``index-url``, or its ``[[index]]`` marked ``default = true`` (read on Python 3.11+)."""
    if sys.version_info >= (3, 11):
        import tomllib

        for f in _uv_config_files():
            try:
                doc = tomllib.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(doc.get("index-url"), str):
                return doc["index-url"], str(f)
            for idx in doc.get("index", []) or []:
                if isinstance(idx, dict) and idx.get("default") and isinstance(idx.get("url"), str):
                    return idx["url"], str(f)
    return None


def simple_to_project_url(simple_url: str, name: str) -> str:
    return urljoin(simple_url.rstrip("/") + "/", f"{name}/")


class _LinkParser(HTMLParser):
    """PEP 503 anchors: href, data-requires-python, data-yanked, data-(dist-info|core)-metadata."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._attrs: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._attrs is not None:
            self.links.append((self._attrs, "".join(self._text).strip()))
            self._attrs = None


def _hashes_from_fragment(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    hashes = {}
    if "=" in parts.fragment:
        algo, _, value = parts.fragment.partition("=")
        hashes[algo] = value
    return urlunsplit(parts._replace(fragment="")), hashes


def _metadata_flag(value: Any) -> bool | dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):  # HTML attribute: "true" or "sha256=..."
        if "=" in value:
            algo, _, digest = value.partition("=")
            return {algo: digest}
        return value.lower() == "true" or value == ""
    return bool(value)


class IndexClient:
    """A small, polite client: one ``requests.Session``, timeouts, bounded retries."""

    def __init__(self, simple_url: str, *, timeout: float = 30.0, retries: int = 3,
                 session: requests.Session | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 offline: bool = False) -> None:
        self.simple_url = simple_url.rstrip("/") + "/"
        self.timeout = timeout
        self.retries = retries
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "vresolve (matrix refresh)")
        self.cache = Path(cache_dir) if cache_dir is not None else None
        self.offline = offline
        if offline and self.cache is None:
            raise UsageError("--offline needs the cache (VRESOLVE_CACHE_DIR is empty)")
        self.requests = 0  # how many HTTP requests were sent (for reports)
        self.cache_hits = 0  # answers from the cache (fresh by validators, or immutable files)

    # ------------------------------------------------------------------ cache
    def _cache_file(self, kind: str, key: str) -> Path | None:
        if self.cache is None:
            return None
        import hashlib

        return self.cache / "http" / kind / hashlib.sha256(key.encode()).hexdigest()

    def _cached_page(self, url: str, accept: str) -> tuple[str, str, str]:
        """(final URL, content type, body) of a listing, revalidated with ETag / Last-Modified."""
        import json

        f = self._cache_file("pages", f"{accept}\n{url}")
        entry = None
        if f is not None and f.exists():
            try:
                entry = json.loads(f.read_text())
            except ValueError:
                entry = None
        if self.offline:
            if entry is None:
                raise PackageIndexError(f"{url}: not in the cache (--offline)")
            self.cache_hits += 1
            return entry["final_url"], entry["content_type"], entry["body"]
        headers = {"Accept": accept}
        if entry is not None:
            if entry.get("etag"):
                headers["If-None-Match"] = entry["etag"]
            if entry.get("last_modified"):
                headers["If-Modified-Since"] = entry["last_modified"]
        resp = self._get(url, headers, allow=(200, 304))
        if resp.status_code == 304 and entry is not None:
            self.cache_hits += 1
            return entry["final_url"], entry["content_type"], entry["body"]
        result = (resp.url or url, resp.headers.get("Content-Type", "").split(";")[0].strip(), resp.text)
        if f is not None:  # kept for --offline; revalidated online only where the index gave validators
            from ._atomic import write_atomic

            write_atomic(f, json.dumps({"url": url, "final_url": result[0], "content_type": result[1],
                                        "etag": resp.headers.get("ETag"),
                                        "last_modified": resp.headers.get("Last-Modified"), "body": result[2]}))
        return result

    # ------------------------------------------------------------------ HTTP
    def _get(self, url: str, headers: dict[str, str] | None = None, *, allow: tuple[int, ...] = (200,)
             ) -> requests.Response:
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.25 * 2 ** (attempt - 1), 4.0))
            self.requests += 1
            try:
                resp = self.session.get(url, headers=headers, timeout=self.timeout)
            except requests.RequestException as e:
                last = f"{type(e).__name__}: {e}"
                continue
            if resp.status_code in allow:
                return resp
            if resp.status_code >= 500 or resp.status_code == 429:
                last = f"HTTP {resp.status_code}"
                continue
            raise PackageIndexError(f"{url}: HTTP {resp.status_code}")
        raise PackageIndexError(f"{url}: gave up after {self.retries + 1} attempts ({last})")

    # ------------------------------------------------------------------ listing
    def project_files(self, name: str) -> list[IndexFile]:
        """Every file of project ``name`` (PEP 691 JSON, or PEP 503 HTML)."""
        import json

        url = simple_to_project_url(self.simple_url, name)
        base, ctype, body = self._cached_page(url, _ACCEPT)
        if ctype == _JSON_V1:
            try:
                doc = json.loads(body)
                files = doc["files"]
                return [IndexFile(
                    filename=f["filename"], url=urljoin(base, f["url"]), hashes=dict(f.get("hashes") or {}),
                    requires_python=f.get("requires-python"), yanked=bool(f.get("yanked")),
                    metadata=_metadata_flag(f.get("core-metadata", f.get("dist-info-metadata", False))),
                    size=f.get("size")) for f in files]
            except (ValueError, KeyError, TypeError) as e:
                raise PackageIndexError(f"{url}: malformed PEP 691 JSON answer ({e})") from None
        parser = _LinkParser()
        parser.feed(body)
        out = []
        for attrs, text in parser.links:
            href = attrs.get("href")
            if not href:
                continue
            clean, hashes = _hashes_from_fragment(urljoin(base, href))
            meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
            out.append(IndexFile(
                filename=text or clean.rsplit("/", 1)[-1], url=clean, hashes=hashes,
                requires_python=attrs.get("data-requires-python"), yanked="data-yanked" in attrs,
                metadata=_metadata_flag(meta) if meta is not None else False))
        return out

    # ------------------------------------------------------------------ metadata
    def read_metadata(self, f: IndexFile) -> tuple[bytes, str]:
        """A wheel's METADATA bytes, and how they were read (``pep658``, ``range`` or ``cache``).

        A released file never changes, so its METADATA is cached for good, keyed by the file's URL
        and hash.
        """
        key = f"{f.url}#{sorted(f.hashes.items())}"
        cached = self._cache_file("metadata", key)
        if cached is not None and cached.exists():
            self.cache_hits += 1
            return cached.read_bytes(), "cache"
        if self.offline:
            raise PackageIndexError(f"{f.filename}: its METADATA is not in the cache (--offline)")
        if f.metadata:
            data, how = self._get(f.url + ".metadata").content, "pep658"
        else:
            with zipfile.ZipFile(_RangeReader(self, f.url)) as zf:
                names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
                if len(names) != 1:
                    raise PackageIndexError(f"{f.filename}: expected one *.dist-info/METADATA, found {len(names)}")
                data, how = zf.read(names[0]), "range"
        if cached is not None:
            from ._atomic import write_bytes_atomic

            write_bytes_atomic(cached, data)
        return data, how

    def read_members(self, f: IndexFile) -> list[str]:
        """The member names of a wheel's zip (its central directory, read with range requests).

        Cached for good like METADATA: a released file never changes.
        """
        import json

        cached = self._cache_file("members", f"{f.url}#{sorted(f.hashes.items())}")
        if cached is not None and cached.exists():
            try:
                names = json.loads(cached.read_text())
                if isinstance(names, list) and all(isinstance(n, str) for n in names):
                    self.cache_hits += 1
                    return names
            except ValueError:
                pass
        if self.offline:
            raise PackageIndexError(f"{f.filename}: its file list is not in the cache (--offline)")
        try:
            with zipfile.ZipFile(_RangeReader(self, f.url)) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile as e:
            raise PackageIndexError(f"{f.filename}: not a readable zip ({e})") from None
        if cached is not None:
            from ._atomic import write_atomic

            write_atomic(cached, json.dumps(names))
        return names


class _RangeReader(io.RawIOBase):
    """A seekable, read-only file over HTTP range requests, for ``zipfile``.

    Keeps what it fetched; every miss fetches at least ``_MIN_READ`` bytes.
    """

    def __init__(self, client: IndexClient, url: str) -> None:
        super().__init__()
        self.client, self.url = client, url
        resp = client._get(url, {"Range": f"bytes=-{_TAIL}", "Accept-Encoding": "identity"}, allow=(206, 200))
        if resp.status_code != 206:
            raise PackageIndexError(
                f"{url}: the server ignores HTTP range requests; refusing to download the whole wheel")
        total = resp.headers.get("Content-Range", "").rpartition("/")[2]
        if not total.isdigit():
            raise PackageIndexError(f"{url}: range answer without a usable Content-Range header")
        self.size = int(total)
        self._chunks: list[tuple[int, bytes]] = [(self.size - len(resp.content), resp.content)]
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _cached(self, start: int, end: int) -> bytes | None:
        for s, data in self._chunks:
            if s <= start and end <= s + len(data):
                return data[start - s:end - s]
        return None

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size - self._pos)
        if n <= 0:
            return 0
        start, end = self._pos, self._pos + n
        data = self._cached(start, end)
        if data is None:
            stop = min(self.size, max(end, start + _MIN_READ))
            resp = self.client._get(self.url, {"Range": f"bytes={start}-{stop - 1}", "Accept-Encoding": "identity"},
                                    allow=(206,))
            if len(resp.content) != stop - start:
                raise PackageIndexError(f"{self.url}: short range answer ({len(resp.content)} of {stop - start} bytes)")
            self._chunks.append((start, resp.content))
            data = resp.content[:n]
        buffer[:n] = data
        self._pos = end
        return n
