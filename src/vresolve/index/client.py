"""IndexClient: listings and METADATA from the index, with the answers cached on disk."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from ..errors import PackageIndexError, UsageError
from .config import credentials, simple_to_project_url
from .listing import (
    _ACCEPT,
    _JSON_V1,
    _MAX_FILENAME,
    IndexFile,
    _decode_page,
    _html_listing,
    _json_listing,
    _unusable,
    _verify,
)
from .transport import (
    _RETRY_STATUS,
    Limits,
    _Adapter,
    _Answer,
    _attempts,
    _Deadline,
    _drop_redirect_body,
    _failure,
    _HostAuth,
    _late,
    _log,
    _one_line,
    _read_body,
    _Retry,
)
from .wheelzip import _ZIP_ERRORS, _RangeReader, _read_member


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


class IndexClient:
    """A small, polite client: one ``requests.Session``, timeouts, urllib3's retries, bounded answers."""

    def __init__(self, simple_url: str, *, timeout: float = 30.0, retries: int = 3,
                 session: requests.Session | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 offline: bool = False, limits: Limits | None = None) -> None:
        simple_url, auth = credentials(simple_url)
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
        if auth is not None:
            self.session.auth = _HostAuth(urlsplit(self.simple_url).netloc, *auth)
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
        from .._atomic import write_bytes_atomic

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
                    f"{url}: {_failure(e)} (gave up after {self.retries + 1} attempts)") from None
            except requests.RequestException as e:
                self.requests += 1
                raise PackageIndexError(f"{url}: {_failure(e)}") from None
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
