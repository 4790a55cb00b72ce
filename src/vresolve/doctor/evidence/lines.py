"""Pasted text as lines, in bounded memory: a str, bytes, or a text or binary stream of any size.

Each line is cut at :data:`LINE_LIMIT` characters (its start is kept; the rest is skipped without being held),
NUL bytes are dropped, invalid UTF-8 becomes U+FFFD, ANSI escape sequences are removed and other control
characters become spaces, so that nothing a reader keeps can drive a terminal. A line that is mostly binary
garbage is read as empty (its number still counts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import IO, AnyStr, cast

import msgspec

from ...values import INVISIBLE

__all__ = ["LINE_LIMIT", "Line", "Source", "iter_lines", "clean", "strip_prefix", "split_lines"]

#: the longest line kept, in characters (bytes for binary input); longer lines keep their start
LINE_LIMIT = 4096
_CHUNK = 1 << 20

Source = str | bytes | bytearray | IO[str] | IO[bytes]

# CSI (colours, cursor), OSC (titles, hyperlinks; ended by BEL or ST), and the two-character escapes
_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)|\x9b[0-?]*[ -/]*[@-~]?")
# every control character but TAB, and the invisible format characters that reorder or hide text
_CONTROL_RE = re.compile(f"(?!\t)[{INVISIBLE}]")
_GARBAGE_RE = re.compile("[\ufffd\x00-\x08\x0e-\x1f\x7f-\x9f]")


class Line(msgspec.Struct, frozen=True):
    """One line: its number, its text (clean, with any log prefix), its body (the prefix cut off), lower-cased body."""

    no: int
    text: str
    body: str
    lower: str
    prefixes: tuple[str, ...] = ()  # the log prefixes cut off: "ci", "compose", "vllm", "tag", "quote"


def clean(line: str) -> str:
    """A line without ANSI escapes, NUL bytes or other controls (TAB kept); garbage lines become ``""``."""
    if line.isprintable() and "\ufffd" not in line:
        return line  # the usual case, at C speed
    if "\x00" in line:
        line = line.replace("\x00", "")
    if "\x1b" in line or "\x9b" in line:
        line = _ANSI_RE.sub("", line)
    if len(_GARBAGE_RE.findall(line)) * 4 > len(line):
        return ""
    return _CONTROL_RE.sub(" ", line)


def split_lines(data: AnyStr, limit: int = LINE_LIMIT) -> Iterator[tuple[AnyStr, bool]]:
    """(line, cut) for each line of an in-memory text, each at most ``limit`` long, without copying the text."""
    nl = "\n" if isinstance(data, str) else b"\n"
    start, size = 0, len(data)
    while start < size:
        end = data.find(nl, start)  # type: ignore[arg-type]
        if end < 0:
            end = size
        stop = min(end, start + limit)
        yield data[start:stop], end > stop
        start = end + 1


def _split_stream(read: Callable[[int], AnyStr], empty: AnyStr, limit: int) -> Iterator[tuple[AnyStr, bool]]:
    """(line, cut) for each line of a stream read in chunks: at most one chunk and one cut line are held."""
    nl = "\n" if isinstance(empty, str) else b"\n"
    buf, skipping = empty, False
    while chunk := read(_CHUNK):
        start = 0
        while (end := chunk.find(nl, start)) >= 0:  # type: ignore[arg-type]
            if not skipping:
                yield (buf + chunk[start:end])[:limit], len(buf) + end - start > limit
            buf, skipping, start = empty, False, end + 1
        if not skipping:
            buf += chunk[start:]
            if len(buf) > limit:
                yield buf[:limit], True
                buf, skipping = empty, True
    if buf and not skipping:
        yield buf, False


def _decode(raw: str | bytes) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


def iter_lines(source: Source, limit: int = LINE_LIMIT) -> Iterator[tuple[str, bool]]:
    """(clean line, whether it was cut) for each line of ``source``, CR LF and CR-less alike."""
    pieces: Iterator[tuple[str, bool]] | Iterator[tuple[bytes, bool]]
    if isinstance(source, str):
        pieces = split_lines(source, limit)
    elif isinstance(source, (bytes, bytearray)):
        pieces = split_lines(bytes(source), limit)
    elif isinstance(source.read(0), str):
        pieces = _split_stream(cast("Callable[[int], str]", source.read), "", limit)
    else:
        pieces = _split_stream(cast("Callable[[int], bytes]", source.read), b"", limit)
    for raw, cut in pieces:
        yield clean(_decode(raw).rstrip("\r")), cut


# log prefixes cut off before a line is read: CI timestamps, docker compose's "service  | ", vLLM's logger,
# "[tag] " brackets (not pip's and conda's "[pip3]"/"[conda]"), e-mail/markdown quotes ("> ", not ">>>"), and a
# program's relay of another's stderr
_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ci", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\s")),
    ("compose", re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?(?=\S|\s+\S)")),
    ("vllm", re.compile(r"^(?:\([\w.-]+(?: pid=\d+)?(?:, ip=[\d.]+)?\)\s+)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+"
                        r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+(?:\[[^\]]{1,80}\]|[\w.]+:\d+\])\s?")),
    ("uvicorn", re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s{2,}(?=\S)")),
    ("tag", re.compile(r"^(?:\[(?!(?:pip3?|conda|uv)\])[^\]\n]{1,80}\]\s*)+(?=\S)")),
    ("quote", re.compile(r"^(?:>(?!>>)\s?)+")),
    # a program relaying another's stderr line by line ("ComfyUI error: Traceback ...", "Backend stderr:   File ..."):
    # only before a traceback's lines or an exception, so "CUDA error: out of memory" keeps its words
    ("relay", re.compile(r"^(?!(?:CUDA|NCCL|CUBLAS|cuBLAS|cuDNN|CUDNN|HIP|Triton|NVRTC|NVML)\b)[A-Z][\w.-]{1,30} (?:error|stderr):\s(?=Traceback \(|\s+\S|[\w.]*(?:Error|Exception)\b)")),
)


def strip_prefix(text: str) -> tuple[tuple[str, ...], str]:
    """(the kinds of prefix cut off, the line without them): ``"ERROR 01-11 13:09:40 engine.py:366] RuntimeError: x"``
    -> ``(("vllm",), "RuntimeError: x")``."""
    kinds: tuple[str, ...] = ()
    for name, pattern in _PREFIXES:
        m = pattern.match(text)
        if m:
            text, kinds = text[m.end():], (*kinds, name)
    return kinds, text
