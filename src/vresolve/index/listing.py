"""A project's listing (PEP 691 JSON, PEP 503 HTML) read into IndexFile rows, checked where it enters: names, URLs and hashes that are not plain are skipped and reported; hashes of downloaded files verified."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import msgspec
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from ..errors import PackageIndexError
from .transport import _one_line

_JSON_V1 = "application/vnd.pypi.simple.v1+json"


_ACCEPT = f"{_JSON_V1}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


_MAX_FILENAME = 255  # NAME_MAX of Linux file systems: no distribution file can have a longer name


_MAX_URL = 8192


_HASH_RE = re.compile(r"[0-9a-f]+")


_FIXED_HASHES = frozenset(hashlib.algorithms_guaranteed) - {"shake_128", "shake_256"}


class IndexFile(msgspec.Struct, frozen=True):
    """One file of a project as the simple API lists it."""

    filename: str
    url: str
    hashes: dict[str, str]
    requires_python: str | None
    yanked: bool
    metadata: bool | dict[str, str]  # PEP 658/714: whether a .metadata file is offered (and its hashes)
    size: int | None = None


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
