"""Reading a package index: the only module (with ``refresh``) that touches the network.

- :func:`configured_index_url` finds the index the user's installers use (flag, then
  ``PIP_INDEX_URL`` / ``UV_DEFAULT_INDEX`` / ``UV_INDEX_URL``, then pip's and uv's
  configuration files, then pip's own default). vresolve never hard-codes a registry.
- :meth:`IndexClient.project_files` lists a project's files through the simple API,
  PEP 691 JSON first and the PEP 503 HTML page as the fallback; relative URLs are resolved
  against the response's own URL.
- :meth:`IndexClient.read_metadata` returns a wheel's ``METADATA``: the PEP 658/714
  ``.metadata`` file when the index offers one (checked against the hash the index announces),
  else the ``*.dist-info/METADATA`` member read out of the remote zip with HTTP range requests
  (the end of the file, the central directory, the one member). A wheel is never downloaded whole.

What the index answers is data from outside, checked where it enters:

- every answer is read in a stream with a size budget, and every request has a deadline
  (:class:`Limits`): when it passes, the request's sockets are shut down, so an answer that
  drips (headers or body) cannot hold it. Over either is a
  :class:`~vresolve.errors.PackageIndexError` naming the URL and the limit. A zip member is
  inflated with a bounded output, never all at once; the body of an answer that is retried or
  redirected is never read;
- a listed file whose name is not valid text, is too long, is listed twice, or is a wheel of
  another project, or whose URL or hashes are malformed, is skipped and reported
  (:attr:`IndexClient.skipped`, and a warning); a listing that is not PEP 691 JSON, a wheel that is
  not a readable zip, an inconsistent range answer: each is a PackageIndexError, never a traceback;
- retries are urllib3's ``Retry`` on the session's adapters (5xx and 429, connection errors and
  read timeouts, with backoff; a ``Retry-After`` is honoured, up to ``_RETRY_AFTER_MAX``).
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import hmac
import http.client
import io
import json
import logging
import os
import re
import socket
import struct
import sys
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as _Urllib3Error
from urllib3.util.retry import Retry

from .errors import PackageIndexError, UsageError

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self
    from urllib3.connectionpool import ConnectionPool
    from urllib3.response import BaseHTTPResponse, HTTPResponse

__all__ = ["IndexFile", "IndexClient", "Limits", "configured_index_url", "simple_to_project_url"]

_log = logging.getLogger(__name__)

_JSON_V1 = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{_JSON_V1}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_TAIL = 64 * 1024  # first range read: the end of central directory and, usually, the directory
_MIN_READ = 64 * 1024  # later reads are at least this large, to save round trips
_CHUNK = 64 * 1024  # one read of a streamed answer
_MIB = 1024 * 1024
_MAX_FILENAME = 255  # NAME_MAX of Linux file systems: no distribution file can have a longer name
_MAX_URL = 8192
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_RETRY_AFTER_MAX = 30.0  # seconds: the longest wait a Retry-After gets
_HASH_RE = re.compile(r"[0-9a-f]+")
_CONTENT_RANGE_RE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_FIXED_HASHES = frozenset(hashlib.algorithms_guaranteed) - {"shake_128", "shake_256"}


@dataclass(frozen=True, slots=True)
class Limits:
    """What one answer of the index may cost; over a limit is a PackageIndexError naming the URL and it.

    Real sizes, for scale: a project's listing is at most a few MB (torch's, with every file of
    every release); a wheel's METADATA is 3-50 KB (vLLM's headers are about 16 KB, its long
    description as much again); a wheel's zip central directory is 1-2 MB (torch: some 15,000
    members). Each limit leaves at least ten times that.
    """

    page: int = 64 * _MIB  # one listing page, decoded
    metadata: int = 4 * _MIB  # one METADATA: a .metadata file, or the zip member inflated
    wheel_reads: int = 16 * _MIB  # every range read into one wheel together (central directory, member)
    deadline: float = 300.0  # seconds for one request: its retries, and its whole answer


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


@dataclass(frozen=True, slots=True)
class _Answer:
    url: str  # the final URL (after redirects)
    status: int
    headers: Mapping[str, str]
    content: bytes


class _Retry(Retry):
    """urllib3's ``Retry``, with two bounds: the wait a ``Retry-After`` asks for is cut to
    ``_RETRY_AFTER_MAX``, and the body of an answer that is retried is never read (urllib3 reads
    it to the end before retrying, so a 503 with an endless body would stall the client)."""

    def parse_retry_after(self, retry_after: str) -> float:
        return min(super().parse_retry_after(retry_after), _RETRY_AFTER_MAX)

    def increment(self, method: str | None = None, url: str | None = None, response: BaseHTTPResponse | None = None,
                  error: Exception | None = None, _pool: ConnectionPool | None = None,
                  _stacktrace: TracebackType | None = None) -> Self:
        if response is not None:
            response.close()  # its headers stay readable (Retry-After); its connection is not reused
        return super().increment(method, url, response, error, _pool, _stacktrace)


_local = threading.local()  # the deadline of the request this thread is making


class _Deadline:
    """One request's deadline. When it passes, every socket the request reads from is shut down, so
    that a read blocked in an answer that drips (its status line, headers or body) returns at once;
    a socket the request would read from afterwards (a retry) is refused."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        _local.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:  # a connection back in the pool is another request's now
            self._socks.clear()
        _local.deadline = None

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            if self.expired:
                raise TimeoutError(f"no complete answer within {self.seconds:g} s")
            if sock is not None:
                self._socks.append(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def passed(self) -> bool:
        return self.expired or time.monotonic() > self.end


def _watch(sock: socket.socket | None) -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)


class _HTTPConnection(HTTPConnection):
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]  # as urllib3 declares it; reads the headers
        _watch(self.sock)
        return super().getresponse()


class _HTTPSConnection(HTTPSConnection):
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]
        _watch(self.sock)
        return super().getresponse()


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _Adapter(HTTPAdapter):
    """requests' adapter, with connections whose sockets a request's :class:`_Deadline` can shut down."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def _drop_redirect_body(resp: requests.Response, *args: Any, **kwargs: Any) -> None:
    """A response hook: the body of a redirect is never read (requests reads all of it before following
    the redirect, so an endless one would stall the client); its connection is not reused."""
    if resp.is_redirect:
        resp.raw.close()


def _one_line(e: BaseException | str) -> str:
    """An exception's message on one line, without characters a terminal could misread."""
    text = " ".join(str(e).split())
    return text.encode("ascii", "backslashreplace").decode("ascii")[:400]


def _human(n: int) -> str:
    return f"{n // _MIB} MiB" if n >= _MIB and n % _MIB == 0 else f"{n} bytes"


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


def _join(base: str, href: str) -> str:
    """``href`` resolved against ``base``; '' when it is not a URL at all."""
    try:
        return urljoin(base, href)
    except ValueError:  # e.g. an unbalanced '[' in the host
        return ""


def _hashes_from_fragment(url: str) -> tuple[str, dict[str, str]]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "", {}
    hashes = {}
    if "=" in parts.fragment:
        algo, _, value = parts.fragment.partition("=")
        hashes[algo.lower()] = value.lower()
    return urlunsplit(parts._replace(fragment="")), hashes


def _metadata_flag(value: Any) -> bool | dict[str, str]:
    if isinstance(value, dict):
        return {str(k).lower(): str(v).lower() for k, v in value.items()}
    if isinstance(value, str):  # HTML attribute: "true" or "sha256=..."
        if "=" in value:
            algo, _, digest = value.partition("=")
            return {algo.lower(): digest.lower()}
        return value.lower() == "true" or value == ""
    return bool(value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _malformed(url: str, what: str) -> PackageIndexError:
    return PackageIndexError(f"{url}: malformed PEP 691 JSON answer ({what})")


def _field(url: str, entry: dict[str, Any], key: str, kinds: tuple[type, ...], where: str, default: Any = ...) -> Any:
    """``entry[key]``, checked to be one of ``kinds`` (``default`` when absent, if there is one)."""
    if key not in entry and default is not ...:
        return default
    value = entry.get(key)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _malformed(url, f"{where}.{key}: expected {' or '.join(k.__name__ for k in kinds)}, got {_kind(value)}")
    return value


def _str_map(url: str, value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _malformed(url, f"{where}: expected an object of strings")
    return {k.lower(): v.lower() for k, v in value.items()}


def _json_file(url: str, base: str, i: int, entry: Any) -> IndexFile:
    """One ``files[i]`` of a PEP 691 answer; a field of the wrong type is a malformed answer."""
    where = f"files[{i}]"
    if not isinstance(entry, dict):
        raise _malformed(url, f"{where}: expected an object, got {_kind(entry)}")
    meta = entry.get("core-metadata", entry.get("dist-info-metadata", False))
    if not isinstance(meta, (bool, dict)):
        raise _malformed(url, f"{where}.core-metadata: expected a boolean or an object, got {_kind(meta)}")
    size = entry.get("size")
    return IndexFile(
        filename=_field(url, entry, "filename", (str,), where),
        url=_join(base, _field(url, entry, "url", (str,), where)),
        hashes=_str_map(url, entry.get("hashes") or {}, f"{where}.hashes"),
        requires_python=_field(url, entry, "requires-python", (str, type(None)), where, default=None),
        yanked=bool(_field(url, entry, "yanked", (bool, str), where, default=False)),
        metadata=_str_map(url, meta, f"{where}.core-metadata") if isinstance(meta, dict) else meta,
        size=size if isinstance(size, int) and not isinstance(size, bool) else None)


def _json_listing(url: str, base: str, body: str) -> list[IndexFile]:
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise _malformed(url, _one_line(e)) from None
    except RecursionError:  # arrays nested thousands deep
        raise _malformed(url, "nested too deep") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise _malformed(url, "expected an object with a 'files' list")
    return [_json_file(url, base, i, f) for i, f in enumerate(files)]


def _html_listing(base: str, body: str) -> list[IndexFile]:
    parser = _LinkParser()
    parser.feed(body)
    parser.close()
    out = []
    for attrs, text in parser.links:
        href = attrs.get("href")
        if not href:
            continue
        clean, hashes = _hashes_from_fragment(_join(base, href))
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        out.append(IndexFile(
            filename=text or clean.rsplit("/", 1)[-1], url=clean, hashes=hashes,
            requires_python=attrs.get("data-requires-python"), yanked="data-yanked" in attrs,
            metadata=_metadata_flag(meta) if meta is not None else False))
    return out


def _is_text(s: str) -> bool:
    """Printable text: no control characters, and no undecodable bytes (they decode to lone surrogates)."""
    return bool(s) and s.isprintable()


def _usable_url(url: str) -> bool:
    if not url or len(url) > _MAX_URL or not _is_text(url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _hashes_ok(hashes: Mapping[str, str]) -> bool:
    """Hex digests, of the right length for the algorithms hashlib knows."""
    for algo, digest in hashes.items():
        if not _HASH_RE.fullmatch(digest):
            return False
        if algo in _FIXED_HASHES and len(digest) != 2 * hashlib.new(algo).digest_size:
            return False
    return True


def _unusable(f: IndexFile, project: str) -> str | None:
    """Why a listed file cannot be used (None when it can): checked before anything reads its name."""
    if len(f.filename) > _MAX_FILENAME:
        return f"a file name of {len(f.filename)} characters (at most {_MAX_FILENAME})"
    if not _is_text(f.filename) or "/" in f.filename or "\\" in f.filename:
        return "its name is not valid text"
    if f.filename.endswith(".whl"):
        try:
            name = parse_wheel_filename(f.filename)[0]
        except InvalidWheelFilename:
            return "not a valid wheel file name"
        if name != canonicalize_name(project):
            return f"a wheel of {name!r}, not of {project!r}"
    if not _usable_url(f.url):
        return "its URL is not an http(s) URL"
    if not _hashes_ok(f.hashes) or (isinstance(f.metadata, dict) and not _hashes_ok(f.metadata)):
        return "a malformed hash"
    return None


def _decode_page(url: str, content: bytes, content_type: str, mime: str) -> str:
    """A listing's text: UTF-8 (PEP 691 JSON always; HTML unless its Content-Type names a charset).

    Bytes that do not decode become lone surrogates, so that the one file name holding them is
    skipped (:func:`_unusable`) instead of the whole page being misread in another encoding.
    """
    charset = "utf-8"
    m = re.search(r"charset=[\"']?([A-Za-z0-9._-]+)", content_type, re.IGNORECASE)
    if m and mime != _JSON_V1:
        charset = m[1]
    try:
        return content.decode(charset, "surrogateescape")
    except (LookupError, UnicodeError) as e:
        raise PackageIndexError(f"{url}: the page is not {charset} text ({_one_line(e)})") from None


def _verify(url: str, data: bytes, expected: Mapping[str, str]) -> None:
    """``data`` has every digest the index announced (that hashlib can compute)."""
    for algo, digest in sorted(expected.items()):
        if algo not in _FIXED_HASHES:
            continue
        got = hashlib.new(algo, data).hexdigest()
        if not hmac.compare_digest(got, digest):
            raise PackageIndexError(f"{url}: its {algo} is {got}, but the index announced {digest}; not used")


def _late(url: str, deadline: _Deadline) -> PackageIndexError:
    return PackageIndexError(f"{url}: no complete answer within {deadline.seconds:g} s (the limit for one request)")


def _read_body(resp: requests.Response, url: str, limit: int, deadline: _Deadline) -> bytes:
    """The (decoded) body of a streamed answer: at most ``limit`` bytes, all of it within ``deadline``.

    Each read returns what one receive brings (urllib3's ``read1``, which also inflates a
    compressed answer with a bounded output), and the deadline shuts the socket down when it
    passes, so a server that drips bytes meets it.
    """
    length = resp.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > limit and not resp.headers.get("Content-Encoding"):
        raise PackageIndexError(f"{url}: the answer is {length} bytes, over the limit of {_human(limit)}")
    read = getattr(resp.raw, "read1", resp.raw.read)
    parts: list[bytes] = []
    size = 0
    while not deadline.passed():
        try:
            chunk = read(_CHUNK, decode_content=True)
        except (_Urllib3Error, http.client.HTTPException, OSError) as e:
            if deadline.passed():
                break
            raise PackageIndexError(f"{url}: the answer broke off ({_one_line(e)})") from None
        if not chunk:
            if deadline.passed():  # the end of a socket the deadline shut down is no end of the answer
                break
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise PackageIndexError(f"{url}: the answer is over the limit of {_human(limit)}")
        parts.append(chunk)
    raise _late(url, deadline)


def _attempts(resp: requests.Response) -> int:
    """How many HTTP requests an answer took: its redirects, and each one's retries."""
    n = 0
    for r in (*resp.history, resp):
        retries = getattr(r.raw, "retries", None)
        n += 1 + len(getattr(retries, "history", ()) or ())
    return n


def _read_page_entry(f: Path | None) -> dict[str, Any] | None:
    """A cached listing, or None when there is none or it is not one (a damaged cache is no error)."""
    if f is None or not f.exists():
        return None
    try:
        entry = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str)
                                              for k in ("final_url", "content_type", "body")):
        return None
    return entry


def _read_cached(f: Path | None) -> bytes | None:
    try:
        return f.read_bytes() if f is not None else None
    except OSError:  # not there, or not readable: read it from the index again
        return None


_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError, struct.error,
               NotImplementedError, RuntimeError, OverflowError, IndexError, KeyError, OSError)


class IndexClient:
    """A small, polite client: one ``requests.Session``, timeouts, urllib3's retries, bounded answers."""

    def __init__(self, simple_url: str, *, timeout: float = 30.0, retries: int = 3,
                 session: requests.Session | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 offline: bool = False, limits: Limits | None = None) -> None:
        self.simple_url = simple_url.rstrip("/") + "/"
        self.timeout = timeout
        self.retries = retries
        self.limits = limits or Limits()
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "vresolve (matrix refresh)")
        adapter = _Adapter(max_retries=_Retry(
            total=retries, connect=retries, read=retries, status=retries, backoff_factor=0.25,
            status_forcelist=_RETRY_STATUS, allowed_methods=frozenset({"GET"}), raise_on_status=False))
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.hooks["response"].append(_drop_redirect_body)
        self.cache = Path(cache_dir) if cache_dir is not None else None
        self.offline = offline
        if offline and self.cache is None:
            raise UsageError("--offline needs the cache (VRESOLVE_CACHE_DIR is empty)")
        self.requests = 0  # how many HTTP requests were sent (for reports)
        self.cache_hits = 0  # answers from the cache (fresh by validators, or immutable files)
        self.skipped: list[str] = []  # listed files that were not used, and why (also logged as warnings)
        self._cache_broken = False

    # ------------------------------------------------------------------ cache
    def _cache_file(self, kind: str, key: str) -> Path | None:
        if self.cache is None or self._cache_broken:
            return None
        return self.cache / "http" / kind / hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()

    def _store(self, path: Path, data: bytes) -> None:
        """Keep an answer in the cache. A cache that cannot be written is no error: it only saves requests."""
        from ._atomic import write_bytes_atomic

        try:
            write_bytes_atomic(path, data)
        except OSError as e:
            self._cache_broken = True
            _log.warning("cannot write the index cache under %s (%s); going on without it", self.cache,
                         e.strerror or e)

    def _cached_page(self, url: str, accept: str) -> tuple[str, str, str]:
        """(final URL, content type, body) of a listing, revalidated with ETag / Last-Modified."""
        f = self._cache_file("pages", f"{accept}\n{url}")
        entry = _read_page_entry(f)
        if self.offline:
            if entry is None:
                raise PackageIndexError(f"{url}: not in the cache (--offline)")
            self.cache_hits += 1
            return entry["final_url"], entry["content_type"], entry["body"]
        headers = {"Accept": accept}
        for field, header in (("etag", "If-None-Match"), ("last_modified", "If-Modified-Since")):
            if entry is not None and isinstance(entry.get(field), str) and entry[field]:
                headers[header] = entry[field]
        ans = self._fetch(url, headers, allow=(200, 304) if entry is not None else (200,), limit=self.limits.page)
        if ans.status == 304 and entry is not None:
            self.cache_hits += 1
            return entry["final_url"], entry["content_type"], entry["body"]
        ctype = ans.headers.get("Content-Type", "")
        mime = ctype.split(";")[0].strip()
        result = (ans.url, mime, _decode_page(url, ans.content, ctype, mime))
        if f is not None:  # kept for --offline; revalidated online only where the index gave validators
            self._store(f, json.dumps({"url": url, "final_url": result[0], "content_type": result[1],
                                       "etag": ans.headers.get("ETag"), "last_modified": ans.headers.get("Last-Modified"),
                                       "body": result[2]}).encode())
        return result

    # ------------------------------------------------------------------ HTTP
    def _fetch(self, url: str, headers: Mapping[str, str] | None = None, *, limit: int,
               allow: tuple[int, ...] = (200,), refuse: Mapping[int, str] | None = None) -> _Answer:
        """GET ``url`` (urllib3 retries what is worth retrying) and read its answer within the limits."""
        with _Deadline(self.limits.deadline) as deadline:
            try:
                resp = self.session.get(url, headers=dict(headers or {}), timeout=self.timeout, stream=True)
            except (requests.ConnectionError, requests.Timeout) as e:
                self.requests += self.retries + 1
                if deadline.passed():
                    raise _late(url, deadline) from None
                raise PackageIndexError(
                    f"{url}: gave up after {self.retries + 1} attempts ({type(e).__name__}: {_one_line(e)})") from None
            except requests.RequestException as e:
                self.requests += 1
                raise PackageIndexError(f"{url}: {type(e).__name__}: {_one_line(e)}") from None
            with resp:
                self.requests += _attempts(resp)
                if resp.status_code not in allow:
                    raise self._status_error(url, resp.status_code, refuse)
                body = b"" if resp.status_code == 304 else _read_body(resp, url, limit, deadline)
                return _Answer(resp.url or url, resp.status_code, resp.headers, body)

    def _status_error(self, url: str, status: int, refuse: Mapping[int, str] | None) -> PackageIndexError:
        if refuse and status in refuse:
            return PackageIndexError(f"{url}: {refuse[status]}")
        if status in _RETRY_STATUS:
            return PackageIndexError(f"{url}: gave up after {self.retries + 1} attempts (HTTP {status})")
        return PackageIndexError(f"{url}: HTTP {status}")

    # ------------------------------------------------------------------ listing
    def project_files(self, name: str) -> list[IndexFile]:
        """Every usable file of project ``name`` (PEP 691 JSON, or PEP 503 HTML).

        A listed file that cannot be used (see :func:`_unusable`; or listed twice) is left out, and
        reported in :attr:`skipped` and as a warning.
        """
        url = simple_to_project_url(self.simple_url, name)
        base, ctype, body = self._cached_page(url, _ACCEPT)
        listed = _json_listing(url, base, body) if ctype == _JSON_V1 else _html_listing(base, body)
        counts: dict[str, int] = {}
        for f in listed:
            counts[f.filename] = counts.get(f.filename, 0) + 1
        files, skipped = [], []
        for f in listed:
            why = _unusable(f, name) or ("listed more than once" if counts[f.filename] > 1 else None)
            if why is None:
                files.append(f)
            else:
                skipped.append(f"{_one_line(repr(f.filename[:_MAX_FILENAME]))}: {why}")
        if skipped:
            self.skipped += [f"{url}: {s}" for s in skipped]
            _log.warning("%s: skipped %d listed file(s) that cannot be used: %s%s", url, len(skipped),
                         "; ".join(skipped[:3]), "; ..." if len(skipped) > 3 else "")
        return files

    # ------------------------------------------------------------------ metadata
    def read_metadata(self, f: IndexFile) -> tuple[bytes, str]:
        """A wheel's METADATA bytes, and how they were read (``pep658``, ``range`` or ``cache``).

        A released file never changes, so its METADATA is cached for good, keyed by the file's URL
        and hash.
        """
        key = f"{f.url}#{sorted(f.hashes.items())}"
        cached = self._cache_file("metadata", key)
        data = _read_cached(cached)
        if data is not None:
            self.cache_hits += 1
            return data, "cache"
        if self.offline:
            raise PackageIndexError(f"{f.filename}: its METADATA is not in the cache (--offline)")
        if f.metadata:
            data, how = self._pep658(f), "pep658"
        else:
            data, how = self._member_metadata(f), "range"
        if cached is not None:
            self._store(cached, data)
        return data, how

    def _pep658(self, f: IndexFile) -> bytes:
        """The ``.metadata`` file the index offers, checked against the hash it announced for it."""
        url = f.url + ".metadata"
        data = self._fetch(url, limit=self.limits.metadata).content
        if isinstance(f.metadata, dict):
            _verify(url, data, f.metadata)
        return data

    @contextlib.contextmanager
    def _wheel_zip(self, f: IndexFile) -> Iterator[zipfile.ZipFile]:
        """The remote wheel as a ZipFile over range requests; what is not a readable zip is an index error."""
        try:
            with zipfile.ZipFile(_RangeReader(self, f.url)) as zf:
                yield zf
        except _ZIP_ERRORS as e:
            raise PackageIndexError(f"{f.url}: not a readable wheel (zip): {type(e).__name__}: {_one_line(e)}") from None

    def _member_metadata(self, f: IndexFile) -> bytes:
        with self._wheel_zip(f) as zf:
            infos = [i for i in zf.infolist() if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")]
            if len(infos) != 1:
                raise PackageIndexError(f"{f.filename}: expected one *.dist-info/METADATA, found {len(infos)}")
            return _read_member(zf, infos[0], f.url, self.limits.metadata)

    def read_members(self, f: IndexFile) -> list[str]:
        """The member names of a wheel's zip (its central directory, read with range requests).

        Cached for good like METADATA: a released file never changes.
        """
        cached = self._cache_file("members", f"{f.url}#{sorted(f.hashes.items())}")
        if cached is not None and cached.exists():
            try:
                names = json.loads(cached.read_text())
                if isinstance(names, list) and all(isinstance(n, str) for n in names):
                    self.cache_hits += 1
                    return names
            except (OSError, ValueError):
                pass
        if self.offline:
            raise PackageIndexError(f"{f.filename}: its file list is not in the cache (--offline)")
        with self._wheel_zip(f) as zf:
            names = zf.namelist()
        if cached is not None:
            self._store(cached, json.dumps(names).encode())
        return names


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, url: str, limit: int) -> bytes:
    """One member's bytes: its size in the central directory at most ``limit``, and its output bounded.

    zipfile inflates with ``zlib``'s ``max_length`` (never more output than asked for) and stops at
    the size the directory gives, so neither a deflate bomb nor a directory that lies about the
    size costs more than ``limit``.
    """
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise PackageIndexError(f"{url}: {info.filename} is compressed with method {info.compress_type} "
                                "(a wheel's METADATA is stored or deflated)")
    if info.file_size > limit:
        raise PackageIndexError(f"{url}: {info.filename} is {info.file_size} bytes uncompressed, "
                                f"over the limit of {_human(limit)}")
    with zf.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:  # pragma: no cover - zipfile stops at file_size, checked above
        raise PackageIndexError(f"{url}: {info.filename} is over the limit of {_human(limit)}")
    return data


class _RangeReader(io.RawIOBase):
    """A seekable, read-only file over HTTP range requests, for ``zipfile``.

    Keeps what it fetched; every miss fetches at least ``_MIN_READ`` bytes. Every answer must be
    exactly the range asked for (its ``Content-Range`` and its length), and all of them together at
    most ``Limits.wheel_reads`` bytes: a read past that is refused before anything is fetched.
    """

    def __init__(self, client: IndexClient, url: str) -> None:
        super().__init__()
        self.client, self.url = client, url
        self.budget = client.limits.wheel_reads
        ans = self._range(f"bytes=-{_TAIL}", _TAIL)
        start, _end, self.size = self._content_range(ans, None)
        self._chunks: list[tuple[int, bytes]] = [(start, ans.content)]
        self._pos = 0

    def _range(self, spec: str, length: int) -> _Answer:
        if length > self.budget:
            raise PackageIndexError(f"{self.url}: reading it needs more than {_human(self.client.limits.wheel_reads)} "
                                    "of range requests (the limit for one wheel)")
        ans = self.client._fetch(
            self.url, {"Range": spec, "Accept-Encoding": "identity"}, allow=(206,), limit=length,
            refuse={200: "the server ignores HTTP range requests; refusing to download the whole wheel"})
        self.budget -= len(ans.content)
        return ans

    def _content_range(self, ans: _Answer, want: tuple[int, int] | None) -> tuple[int, int, int]:
        """(first, last, total) of a range answer: the range asked for (``want``; None: the file's tail)."""
        header = ans.headers.get("Content-Range", "")
        m = _CONTENT_RANGE_RE.fullmatch(header.strip())
        if m is None:
            raise PackageIndexError(f"{self.url}: range answer without a usable Content-Range header")
        start, end, total = (int(g) for g in m.groups())
        ok = start <= end < total and end - start + 1 == len(ans.content)
        if want is None:
            ok = ok and end == total - 1 and start == max(0, total - _TAIL)
        else:
            ok = ok and (start, end) == want
        if not ok:
            raise PackageIndexError(f"{self.url}: inconsistent range answer (Content-Range {_one_line(header)!r} "
                                    f"with {len(ans.content)} bytes)")
        return start, end, total

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

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        start = self._pos
        if end <= start:
            return b""
        data = self._cached(start, end)
        if data is None:
            stop = min(self.size, max(end, start + _MIN_READ))
            ans = self._range(f"bytes={start}-{stop - 1}", stop - start)
            self._content_range(ans, (start, stop - 1))
            self._chunks.append((start, ans.content))
            data = ans.content[:end - start]
        self._pos = end
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
