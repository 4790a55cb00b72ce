"""HTTP for the index: budgets (Limits), a per-request deadline that shuts a dripping answer's sockets, urllib3 Retry on the session's adapters, and bounded streamed reads."""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import requests
from requests.adapters import HTTPAdapter
from requests.auth import HTTPBasicAuth
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as _Urllib3Error
from urllib3.util.retry import Retry

from ..errors import PackageIndexError

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self
    from urllib3.connectionpool import ConnectionPool
    from urllib3.response import BaseHTTPResponse, HTTPResponse

_local = threading.local()  # the deadline of the request this thread is making

_log = logging.getLogger("vresolve.index")  # one logger for the package (its name before the split)


_CHUNK = 64 * 1024  # one read of a streamed answer


_MIB = 1024 * 1024


_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


_RETRY_AFTER_MAX = 30.0  # seconds: the longest wait a Retry-After gets


class Limits(msgspec.Struct, frozen=True):
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


class _Answer(msgspec.Struct, frozen=True):
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


class _HostAuth(HTTPBasicAuth):
    """The index URL's user and password, sent to the index's own host and port only (a file listed on
    another host gets none); the URLs vresolve requests, and names in messages, carry no credentials."""

    def __init__(self, netloc: str, user: str, password: str) -> None:
        super().__init__(user, password)
        self.netloc = netloc

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        from urllib.parse import urlsplit

        try:
            netloc = urlsplit(r.url or "").netloc
        except ValueError:
            return r
        return super().__call__(r) if netloc == self.netloc else r


def _drop_redirect_body(resp: requests.Response, *args: Any, **kwargs: Any) -> None:
    """A response hook: the body of a redirect is never read (requests reads all of it before following
    the redirect, so an endless one would stall the client); its connection is not reused."""
    if resp.is_redirect:
        resp.raw.close()


def _one_line(e: BaseException | str) -> str:
    """An exception's message on one line, without characters a terminal could misread."""
    text = " ".join(str(e).split())
    return text.encode("ascii", "backslashreplace").decode("ascii")[:400]


def _causes(e: BaseException) -> list[BaseException]:
    """``e`` and what it wraps (requests' args, urllib3's ``reason``, ``__cause__``/``__context__``), outermost first."""
    out: list[BaseException] = []
    todo = [e]
    while todo and len(out) < 32:
        x = todo.pop(0)
        if x in out:
            continue
        out.append(x)
        todo += [c for c in (*x.args, getattr(x, "reason", None), x.__cause__, x.__context__)
                 if isinstance(c, BaseException)]
    return out


def _failure(e: BaseException) -> str:
    """What a request that got no answer met, in a few words (never an exception's repr): the host name did
    not resolve, the connection was refused, reset or timed out, TLS failed; else the innermost message."""
    import ssl

    from urllib3.exceptions import NameResolutionError, NewConnectionError, ProtocolError, ReadTimeoutError
    from urllib3.exceptions import SSLError as _SSLError
    from urllib3.exceptions import TimeoutError as _Urllib3Timeout

    chain = _causes(e)

    def has(*kinds: type[BaseException]) -> BaseException | None:
        return next((x for x in chain if isinstance(x, kinds)), None)

    if has(NameResolutionError, socket.gaierror):
        return "the host name does not resolve (DNS)"
    if has(ConnectionRefusedError):
        return "connection refused"
    if has(ReadTimeoutError, TimeoutError, requests.Timeout) or any(
            isinstance(x, _Urllib3Timeout) and not isinstance(x, NewConnectionError) for x in chain):
        return "timed out"
    tls = has(ssl.SSLError, _SSLError, requests.exceptions.SSLError)
    if tls is not None:
        inner = has(ssl.SSLError)
        return f"TLS failed ({_one_line(getattr(inner, 'reason', None) or inner or tls)})"
    if has(ConnectionResetError):
        return "connection reset"
    if has(ProtocolError, http.client.HTTPException, ConnectionError):
        return "the connection closed without an answer"
    inner = chain[-1]
    return f"{type(inner).__name__}: {_one_line(inner)}"


def _human(n: int) -> str:
    return f"{n // _MIB} MiB" if n >= _MIB and n % _MIB == 0 else f"{n} bytes"


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
