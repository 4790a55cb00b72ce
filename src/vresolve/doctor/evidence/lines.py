"""Pasted text as lines, in bounded memory: a str, bytes, or a text or binary stream of any size.

Each line is cut at :data:`LINE_LIMIT` characters (its start is kept; the rest is skipped without being held),
NUL bytes are dropped, invalid UTF-8 becomes U+FFFD, ANSI escape sequences are removed and other control
characters become spaces, full-width forms of ASCII (CJK input) become ASCII, so that nothing a reader keeps can drive a terminal. A line that is mostly binary
garbage is read as empty (its number still counts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import IO, AnyStr, cast

import msgspec

from ...values import INVISIBLE

__all__ = ["LINE_LIMIT", "Line", "Source", "iter_lines", "clean", "strip_prefix", "split_lines", "bodies", "Relayed"]

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


#: the full-width forms of ASCII (U+FF01-FF5E) and the ideographic space, as CJK input methods type them in pastes
#: ("CUDA Version：11.3", "显卡：RTX 4090（24G）"): read as their ASCII letters, so that every reader sees one form
_FULL_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
#: typographic quotes (a web page's or a word processor's "don’t", “...”) read as ASCII ones, as programs print them
_QUOTES = {0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'}
_ASCII_FORMS = str.maketrans({**{chr(k): chr(v) for k, v in _FULL_WIDTH.items()}, **{chr(k): v for k, v in _QUOTES.items()}})
#: a CJK character touching a Latin letter or digit ("提示bus error", "显卡RTX4090"): a space between them, so that a word
#: boundary is read where the writer saw one
_CJK_LATIN_RE = re.compile(r"(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])(?=[A-Za-z0-9])"
                           r"|(?<=[A-Za-z0-9])(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])")


def clean(line: str) -> str:
    """A line without ANSI escapes, NUL bytes or other controls (TAB kept), full-width ASCII forms and typographic
    quotes read as ASCII, a CJK character and a Latin one spaced apart; garbage lines become ``""``."""
    if not line.isascii():
        line = _CJK_LATIN_RE.sub(" ", line.translate(_ASCII_FORMS))
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


# log prefixes cut off before a line is read, each recognised by its shape at the line's start (never a word inside
# a line), as many as a relay stacked (docker compose's prefix before kubectl's timestamp before Ray's...), each with
# the one space after it (the indentation of what it carried stays):
#   ci       a runner's, `kubectl logs --timestamps`' or `docker logs -t`' RFC 3339 time ("2024-05-01T10:00:00.1Z ")
#   journal  journald's and syslog's "May 01 10:00:00 host python3[1234]: "
#   compose  docker compose's "service-1  | "
#   ray      Ray's (and vLLM's worker processes') "(RayWorkerWrapper pid=1234, ip=10.0.0.1) ", "(raylet) "
#   vllm     vLLM's logger ("ERROR 05-01 10:00:00 [engine.py:123] ", NIM's with the year); uvicorn's ("ERROR:    ")
#   logging  Python logging's default format ("ERROR:root:", "WARNING:__main__:")
#   tag      "[tag] " brackets (not pip's and conda's "[pip3]"/"[conda]", nor NGC's "[[ ... ]]"), torchrun's "[rank0]: " and c10's
#            "[rank3]:[W501 10:00:00.1 ProcessGroupNCCL.cpp:1234] "
#   quote    e-mail/markdown quotes ("> ", not ">>>")
#   relay    a program relaying another's stderr line by line ("ComfyUI error: Traceback ...", ComfyUI's "!!! Exception
#            during processing !!! "): only before a traceback's lines or an exception, so "CUDA error: out of memory"
#            keeps its words
# A logger's level in a prefix cut off is still read (:mod:`.failures` reads the cut-off head). A shell's prompt is no
# relay's: its folder may be a fact ("C:\Python37-32\Scripts>pip install ..."), so it stays.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("ci", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s"),
    ("journal", r"(?:[A-Z][a-z]{2} {1,2}\d{1,2}|\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d(?:\.\d+)? [\w.-]+ "
                r"[\w.@/()-]{1,60}?(?:\[\d+\])?: "),
    # (not a row of conda's table of downloads, "pytorch-cuda-11.7  |  h778d358_3  7 KB  pytorch": its build string
    # holds an underscore or is a number; "vllm-1  | 1050ti 4 GB" is a service's line)
    ("compose", r"(?![\w.-]*-\d[\w.+]*\s*\|\s*(?:\S*_\S*|\d+)\s+\d[\d.]*\s[KMG]B\b)[A-Za-z0-9][\w.-]*\s+\|(?:\s?(?=\S|\s+\S)|\s*$)"),
    ("ray", r"\((?:[\w.-]+(?: [\w.=-]+)*? )?pid=\d+(?:, ip=[\w.:-]+)?\)(?: |$)"
            r"|\((?:raylet|gcs_server|dashboard\w*|autoscaler|monitor|log_monitor)\b[^()\n]{0,40}\)(?: |$)"),
    ("vllm", r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
             r"(?:\[[^\]]{1,80}\]|[\w.]+:\d+\])\s?"),
    ("uvicorn", r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s{2,}(?=\S)"),
    ("logging", r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):[\w.<>-]+:(?!//)"),
    ("tag", r"(?:\[(?![\[\]])(?!(?:pip3?|conda|uv)\])[^\]\n]{1,80}\]:? ?)+(?=.)"),
    ("quote", r"(?:>(?!>>)\s?)+"),
    ("relay", r"!!! Exception during processing !!!\s*"
              r"|(?!(?:CUDA|NCCL|CUBLAS|cuBLAS|cuDNN|CUDNN|HIP|Triton|NVRTC|NVML)\b)[A-Z][\w.-]{1,30} (?:error|stderr):\s"
              r"(?=Traceback \(|\s+\S|[\w.]*(?:Error|Exception)\b)"),
)
_PREFIX_RE = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _PREFIXES))
#: the most prefixes cut off one line (a relay of a relay of ...)
_MOST_PREFIXES = 8


def strip_prefix(text: str) -> tuple[tuple[str, ...], str]:
    """(the kinds of prefix cut off, the line without them): ``"ERROR 01-11 13:09:40 engine.py:366] RuntimeError: x"``
    -> ``(("vllm",), "RuntimeError: x")``."""
    kinds: tuple[str, ...] = ()
    while len(kinds) < _MOST_PREFIXES and (m := _PREFIX_RE.match(text)) and m.end():
        text, kinds = text[m.end():], (*kinds, m.lastgroup or "")
    return kinds, text


class Margin:
    """The indentation a whole paste was shifted by (an indented code block, a tab before every line), cut off each
    line: the first line's, while every line that is not blank starts with it (a paste that starts at a traceback's
    frame keeps the frame's own two spaces)."""

    __slots__ = ("margin",)

    def __init__(self) -> None:
        self.margin: str | None = None

    def cut(self, text: str) -> str:
        margin = self.margin
        if margin is None:
            body = text.lstrip()
            if not body:
                return text
            margin = text[:len(text) - len(body)]
            if body.startswith('File "') and margin.endswith("  "):
                margin = margin[:-2]
            self.margin = margin
        if not margin:
            return text
        if text.startswith(margin):
            return text[len(margin):]
        if text.strip():
            self.margin = ""
        return text


# IPython's (Jupyter's) traceback, read as Python's: its header "RuntimeError    Traceback (most recent call last)",
# its frames "File /env/site-packages/torch/x.py:123, in f(a)" (older: "/env/.../x.py in f(a)" is left as it is), the
# source line behind its arrow "---> 123 return f(x)"
_IPYTHON_HEADER_RE = re.compile(r"^[A-Za-z_][\w.]*\s{2,}Traceback \(most recent call last\)\s*$")
_IPYTHON_FRAME_RE = re.compile(r"^(?P<indent>\s*)File (?P<path>[^\s\"][^\"]*?\.pyx?):(?P<no>\d+)(?:, in (?P<func>.+))?$")
_IPYTHON_ARROW_RE = re.compile(r"^(?P<indent>\s*)-*> ?\d+ (?P<code>.*)$")


def _ipython(body: str) -> str:
    """An IPython traceback's line as Python's (see above); any other line as it is."""
    if "Traceback (most" in body and _IPYTHON_HEADER_RE.match(body):
        return "Traceback (most recent call last):"
    if "File " in body and (m := _IPYTHON_FRAME_RE.match(body)):
        return f'{m["indent"]}  File "{m["path"]}", line {m["no"]}' + (f", in {m['func']}" if m["func"] else "")
    if "> " in body and (m := _IPYTHON_ARROW_RE.match(body)):
        return f'{m["indent"]}    {m["code"]}'
    return body


class Relayed:
    """Each line of one paste as its writer wrote it: without the paste's margin (:class:`Margin`) or the log
    prefixes a relay put before it (:func:`strip_prefix`), nor the margin of what the relay carried; IPython's
    traceback lines as Python's."""

    __slots__ = ("outer", "inner")

    def __init__(self) -> None:
        self.outer, self.inner = Margin(), Margin()

    def read(self, text: str) -> tuple[tuple[str, ...], str]:
        """(the kinds of prefix cut off, the line as written)."""
        kinds, body = strip_prefix(self.outer.cut(text))
        return kinds, _ipython(self.inner.cut(body) if kinds else body)


def bodies(text: str) -> str:
    """``text`` as the lines a reader reads: each clean (see :func:`clean`), without CR or the log prefixes a relay
    put before it (see :func:`strip_prefix`); line for line, so that line numbers stay."""
    relayed = Relayed()
    return "\n".join(relayed.read(clean(line.rstrip("\r")))[1] for line in text.split("\n"))
