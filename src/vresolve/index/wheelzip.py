"""A remote wheel's zip read with HTTP range requests: the central directory and one member, inflated with a bounded output."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from typing import TYPE_CHECKING, Any

from ..errors import PackageIndexError
from .transport import _Answer, _human, _one_line

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Protocol

    from .transport import Limits

    class _Client(Protocol):
        """What of the index's client (:class:`.client.IndexClient`, which reads wheels through this module) a
        range reader uses: its limits and its one GET."""

        limits: Limits

        def _fetch(self, url: str, headers: Mapping[str, str] | None = None, *, limit: int,
                   allow: tuple[int, ...] = (200,), refuse: Mapping[int, str] | None = None) -> _Answer: ...

_TAIL = 64 * 1024  # first range read: the end of central directory and, usually, the directory


_MIN_READ = 64 * 1024  # later reads are at least this large, to save round trips


_CONTENT_RANGE_RE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError, struct.error,
               NotImplementedError, RuntimeError, OverflowError, IndexError, KeyError, OSError)


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

    def __init__(self, client: _Client, url: str) -> None:
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
