"""``vresolve doctor --format markdown``: the findings as a short Markdown comment, for answering a
bug report (the facts read, each cause with its evidence and fix).

Every text from the machine or a paste is inert in Markdown: evidence sits in code blocks fenced
longer than any run of backticks it holds, and prose has its Markdown characters escaped, so a
log line cannot add a link, an image, a heading or HTML to the comment; a word of prose that GitHub would make
live (a URL, a www. name, an e-mail address, an @mention, a #123 reference, a commit hash) becomes a code span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .shell import escape_controls
from .text import likely_words

# what can start emphasis, code, a link or image, HTML, a table cell or strikethrough anywhere in a line
_SPECIAL_RE = re.compile(r"([\\`*_\[\]<>|~!&])")
# what can start a heading, a list, a quote or a rule at the start of a line
_LEADING_RE = re.compile(r"^([#>+=-]|\d+[.)])")


# what GitHub turns into a link, a ping or a reference in prose: URLs (any scheme), www. names, e-mail addresses and
# @mentions (an @ anywhere), #123 / GH-123 / owner/repo#123 references, commit hashes (7 to 40 hex digits)
_LIVE_RE = re.compile(r"://|www\.|@|#[0-9]|\bGH-[0-9]|(?<![0-9A-Za-z])(?=[0-9a-f]{0,39}[a-f])(?=[0-9a-f]{0,39}[0-9])"
                      r"[0-9a-f]{7,40}(?![0-9A-Za-z])", re.IGNORECASE)


def _code_span(word: str) -> str:
    """``word`` as an inline code span: shown as it is, never a link, a mention or a reference."""
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", word)), default=0) + 1)
    pad = " " if word.startswith("`") or word.endswith("`") else ""
    return f"{ticks}{pad}{word}{pad}{ticks}"


def _prose(text: str) -> str:
    """One line of Markdown that shows ``text`` as it is: a word GitHub would make live (a link, a ping, a
    reference) becomes an inline code span, other words have their Markdown characters escaped."""
    words = [_code_span(w) if _LIVE_RE.search(w) else _SPECIAL_RE.sub(r"\\\1", w)
             for w in escape_controls(text).split()]
    return _LEADING_RE.sub(r"\\\1", " ".join(words))


def _block(lines: Sequence[str]) -> list[str]:
    """A fenced code block of ``lines``, its fence longer than any backtick run inside."""
    body = [escape_controls(x) for x in lines]
    longest = max((len(m) for x in body for m in re.findall(r"`+", x)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *body, fence]


def doctor_markdown(findings: Sequence[Any], observed: Sequence[str], unclear: Sequence[Any] = (),
                    nothing: str | None = None) -> str:
    """The comment: what was read, then each finding (cause, severity, evidence, fix), then the errors whose cause
    the text does not settle."""
    out = ["### vresolve doctor", "", "**Facts read**", ""]
    out += [f"- {_prose(x)}" for x in observed] or ["- (none)"]
    out.append("")
    if nothing:
        out += [f"**{_prose(nothing)}**", ""]
    elif not findings and not unclear:
        out.append("**No problem found.**")
    for f in findings:
        out += [f"**{f.severity}: {_prose(f.title)}** (`{f.cause}`)", "", _prose(f.explanation), ""]
        if f.evidence:
            out += ["Evidence:", "", *_block(f.evidence), ""]
        out += ["Fix:", "", *_block(f.fix.splitlines()), ""]
    for u in unclear:
        out += [f"**error, cause not named:** {_prose(u.error)}", "", f"Not shown: {_prose(u.missing)}.", ""]
        if u.evidence:
            out += ["Evidence:", "", *_block(u.evidence), ""]
        out += [f"To name it, paste {_prose(u.paste)}.", ""]
        if u.likely is not None:
            out += [_prose(likely_words(u.likely)), ""]
    return "\n".join(out).rstrip("\n") + "\n"
