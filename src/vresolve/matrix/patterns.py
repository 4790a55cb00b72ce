"""Regular expressions that can take super-linear time, found before they run (the known issues' signatures).

Python's ``re`` backtracks, and ``doctor --log`` searches every signature through logs that anyone can
paste: a signature must take time in proportion to the line it reads. The pattern's tree (``re``'s own
parser) is walked for the shapes that make a search exponential or quadratic, and a signature with one
is refused when the matrix is read. Conservative: a shape that only might backtrack is refused too.

- nested: an unbounded quantifier inside a repeated group (``(a+)+``, ``(\\s*x?)+``), a repeated group that
  can match nothing (``(a?b?)*``), or whose iterations can split the same text two ways (``(a|aa)*``):
  exponential. A group that starts or ends with a character nothing else in it matches (``(?:\\.\\d+)*``)
  splits one way only, and is allowed.
- adjacent: two unbounded quantifiers that can match the same character with nothing required between
  them (``.*\\s*.*``, ``\\s+\\s+``, ``\\d+\\w*``): quadratic on a run of that character.
- restart: an unbounded quantifier that can run over the start of another match (``foo.*bar`` on a line of
  ``foofoofoo...``, ``^\\s*x`` on a run of blank lines): each start scans to the end again, quadratic.
  Allowed when something before it on the way from the match's start (``\\A``, ``^``, a character) cannot
  be matched by it, or when it is tempered against that start (``foo(?:(?!foo)[\\w.-])*\\.so``).
"""

from __future__ import annotations

import functools
import importlib
import operator
import re
import sys
from typing import Any

import msgspec

__all__ = ["backtracking_problem"]

_p: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")

_SINGLE = (_p.LITERAL, _p.NOT_LITERAL, _p.ANY, _p.IN)
_REPEATS = tuple(getattr(_p, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_p, n))
_ATOMIC = getattr(_p, "ATOMIC_GROUP", None)
_LOOKAROUND = (_p.ASSERT, _p.ASSERT_NOT)

# the characters a class is tested on: ASCII, a few others of each kind, and the pattern's own
_SAMPLE = "".join(map(chr, range(128))) + "\x85\xa0\xb2\xe9\xdf\u0130\u0663\u1680\u2028\u3000\u4e2d\uff10\U0001f600"
_CATEGORIES = {name: re.compile(rx) for name, rx in (
    ("CATEGORY_DIGIT", r"\d"), ("CATEGORY_NOT_DIGIT", r"\D"), ("CATEGORY_SPACE", r"\s"),
    ("CATEGORY_NOT_SPACE", r"\S"), ("CATEGORY_WORD", r"\w"), ("CATEGORY_NOT_WORD", r"\W"),
    ("CATEGORY_LINEBREAK", r"\n"), ("CATEGORY_NOT_LINEBREAK", r"[^\n]"))}

_DOTALL, _IGNORECASE = int(re.DOTALL), int(re.IGNORECASE)
_SAMPLE_SET = frozenset(_SAMPLE)


@functools.cache
def _sample_category(name: str) -> frozenset[str]:
    """The characters of the sample in a category (``\\d``, ``\\s``...)."""
    rx = _CATEGORIES.get(name)
    return frozenset(c for c in _SAMPLE if rx is None or rx.match(c))

_NESTED = "an unbounded quantifier inside a repeated group, as in (a+)+: exponential backtracking"
_EMPTY = "a repeated group that can match nothing, as in (a?b?)*: exponential backtracking"
_SPLIT = "a repeated group whose iterations can split the same text two ways, as in (a|aa)*: exponential backtracking"


class _Refused(Exception):
    pass


# Sets of characters are bit masks over the walker's alphabet (sorted: ASCII first, so '\n' is bit 10).
_NEWLINE = 1 << 10


# an unbounded quantifier that can still end where the walk is: its characters, whether a '^' lies between,
# and the required characters between (mask and node each): \w*C\w* splits at every C of a run of them
_Bridge = tuple[tuple[int, Any], ...]
_Open = tuple[int, bool, _Bridge]


class _Head(msgspec.Struct, frozen=True):
    """An unbounded quantifier that can begin (or end) what a node matches."""

    first: int  # what an iteration can start with
    chars: int  # every character it can match
    after_line_start: bool = False  # a '^' must match just before it
    stop: tuple[Any, ...] = ()  # tempered, (?:(?!T)x)*: T, which it never runs over


class _Info(msgspec.Struct, frozen=True):
    nullable: bool
    first: int
    last: int
    chars: int
    heads: tuple[_Head, ...] = ()
    tails: tuple[tuple[int, _Bridge], ...] = ()  # quantifiers that can end it, with what lies after them
    loops: bool = False  # holds an unbounded quantifier (lookarounds apart: they never backtrack into)


_ZERO_WIDTH = _Info(True, 0, 0, 0)



def backtracking_problem(pattern: str, flags: int = re.MULTILINE) -> str | None:
    """Why searching ``pattern`` can take super-linear time, in words; None when it cannot (as far as the
    checks tell). ``pattern`` must compile."""
    try:
        tree = _p.parse(pattern, flags)
    except RecursionError:
        return "nested too deeply"
    if _nested_lookaround(list(tree), False):
        return "a look-ahead or look-behind inside another (write the context as two signatures, or as facts)"
    walker = _Walker(pattern, int(tree.state.flags))
    try:
        walker.sequence(list(tree))
        walker.restarts(list(tree), [], walker.flags)
    except _Refused as e:
        return str(e)
    except RecursionError:
        return "nested too deeply"
    return None


def _nested_lookaround(items: list[tuple[Any, Any]], inside: bool) -> bool:
    """Whether a lookaround holds another (signatures stay readable: one level of context at most)."""
    for op, av in items:
        if op in _LOOKAROUND:
            if inside or _nested_lookaround(list(av[1]), True):
                return True
        elif any(_nested_lookaround(seq, inside) for seq, _ in _inside(op, av, 0)):
            return True
    return False


class _Walker:
    def __init__(self, pattern: str, flags: int) -> None:
        self.letters = _SAMPLE + "".join(sorted(set(pattern) - _SAMPLE_SET))  # ASCII first: '\n' is bit 10
        self.alphabet = frozenset(self.letters)
        self.index = {c: i for i, c in enumerate(self.letters)}
        self.everything = (1 << len(self.letters)) - 1
        self.flags = flags
        self.memo: dict[tuple[int, int], _Info] = {}  # sequences already walked, by their node
        self.categories: dict[str, frozenset[str]] = {}
        self.charsets: dict[tuple[int, int, int], int] = {}

    # -- the characters a node can match ---------------------------------------------------------------------

    def charset(self, op: Any, av: Any, flags: int) -> int:
        key = (int(op), av if isinstance(av, int) else id(av), flags)
        mask = self.charsets.get(key)
        if mask is None:
            mask = self.charsets[key] = sum(1 << self.index[c] for c in self._charset(op, av, flags) if c in self.index)
        return mask

    def sample(self, mask: int) -> str:
        """One character of ``mask``, a readable one where there is one."""
        for c in " a0_\t.-/":
            if mask >> self.index[c] & 1:
                return repr(c)
        return repr(self.letters[(mask & -mask).bit_length() - 1])

    def _charset(self, op: Any, av: Any, flags: int) -> frozenset[str]:
        if op is _p.LITERAL:
            cs = frozenset((chr(av),))
        elif op is _p.NOT_LITERAL:
            cs = self.alphabet - {chr(av)}
        elif op is _p.ANY:
            cs = self.alphabet if flags & _DOTALL else self.alphabet - {"\n"}
        else:
            cs = self._in(av)
        if flags & _IGNORECASE:
            cs = cs | {v for c in cs for v in (c.lower(), c.upper(), c.swapcase()) if len(v) == 1}
        return cs

    def _in(self, items: list[tuple[Any, Any]]) -> frozenset[str]:
        members: set[str] = set()
        negate = False
        for op, av in items:
            if op is _p.NEGATE:
                negate = True
            elif op is _p.LITERAL:
                members.add(chr(av))
            elif op is _p.RANGE:
                members |= {c for c in self.alphabet if av[0] <= ord(c) <= av[1]} | {chr(av[0]), chr(av[1])}
            elif op is _p.CATEGORY:
                members |= self._category(str(av))
        return self.alphabet - members if negate else frozenset(members)

    def _category(self, name: str) -> frozenset[str]:
        if name not in self.categories:
            rx = _CATEGORIES.get(name)
            extra = self.letters[len(_SAMPLE):]
            self.categories[name] = _sample_category(name) | {c for c in extra if rx is None or rx.match(c)}
        return self.categories[name]

    # -- nested and adjacent quantifiers ---------------------------------------------------------------------

    def sequence(self, items: list[tuple[Any, Any]], flags: int | None = None) -> _Info:
        """What a sequence can match, checking each unbounded quantifier against those that can end just
        before it (``open``: their characters, and whether a '^' lies between)."""
        flags = self.flags if flags is None else flags
        nullable, anchored, line_start = True, False, False
        first = last = chars = 0
        heads: list[_Head] = []
        open_: list[_Open] = []
        loops = False
        for op, av in items:
            if op is _p.AT:
                open_, anchored, line_start = self._at(av, open_, anchored, line_start, nullable)
                continue
            info = self.item(op, av, flags)
            for head in info.heads:
                self._adjacent(head, open_)
            if nullable and not anchored:
                heads += [_Head(h.first, h.chars, h.after_line_start or line_start) for h in info.heads]
                first |= info.first
            if op in _LOOKAROUND:
                continue
            last = info.last | (last if info.nullable else 0)
            if op in _SINGLE:  # a quantifier that can match this character too can still split with the next one
                open_ = [(t, s, (*b, (info.chars, _canon((op, av))))) for t, s, b in open_ if t & info.chars]
            else:
                open_ = [(t, False, b) for t, b in info.tails] + (open_ if info.nullable else [])
            nullable = nullable and info.nullable
            chars |= info.chars
            loops = loops or info.loops
        return _Info(nullable, first, last, chars, tuple(heads), tuple((t, b) for t, _, b in open_), loops)

    def part(self, sub: Any, flags: int) -> _Info:
        """:meth:`sequence` of a node's items, walked once."""
        key = (id(sub), flags)
        info = self.memo.get(key)
        if info is None:
            info = self.memo[key] = self.sequence(_unwrap(list(sub)), flags)
        return info

    @staticmethod
    def _at(av: Any, open_: list[_Open], anchored: bool, line_start: bool, nullable: bool
            ) -> tuple[list[_Open], bool, bool]:
        if av in (_p.AT_BEGINNING_STRING, _p.AT_END_STRING):  # one position: nothing runs across it
            return [], anchored or nullable, line_start
        if av is _p.AT_BEGINNING:  # a line's start (the signatures are compiled with re.MULTILINE)
            return [(t, True, b) for t, _, b in open_], anchored, line_start or nullable
        if av is _p.AT_END:  # a quantifier without '\n' ends at most once before a line's end
            return [(t, s, b) for t, s, b in open_ if t & _NEWLINE], anchored, line_start
        return open_, anchored, line_start

    def _adjacent(self, head: _Head, open_: list[_Open]) -> None:
        for tail, line_start, bridge in open_:
            if (line_start or head.after_line_start) and not head.chars & _NEWLINE:
                continue  # it starts at a line's start and cannot cross one: one way to split
            if bridge and (not all(mask & head.chars for mask, _ in bridge)
                           or head.stop and _within(head.stop, [c for _, c in bridge])):
                continue  # what lies between cannot be matched by the second one: one way to split
            common = head.first & (tail | functools.reduce(operator.or_, (mask for mask, _ in bridge), 0))
            if common:
                between = "only what both can match" if bridge else "nothing"
                raise _Refused(f"two unbounded quantifiers can match the same character {self.sample(common)} with "
                               f"{between} between them, as in \\s*\\s* or \\w*C\\w*: quadratic backtracking")

    def item(self, op: Any, av: Any, flags: int) -> _Info:
        if op in _SINGLE:
            cs = self.charset(op, av, flags)
            return _Info(False, cs, cs, cs)
        if op in _REPEATS:
            return self.repeat(av, flags)
        if op is _p.SUBPATTERN:
            return self.part(av[3], (flags | int(av[1])) & ~int(av[2]))
        if op is _ATOMIC:
            return self.part(av, flags)
        if op is _p.BRANCH:
            return _merge([self.part(alt, flags) for alt in av[1]])
        if op in _LOOKAROUND:
            inner = self.part(av[1], flags)
            return _Info(True, 0, 0, 0, inner.heads if av[0] == 1 else ())
        if op is _p.GROUPREF_EXISTS:
            return _merge([self.part(av[1], flags), self.part(av[2], flags) if av[2] is not None else _ZERO_WIDTH])
        if op is _p.GROUPREF:  # the text a group matched: anything
            return _Info(True, self.everything, self.everything, self.everything)
        return _ZERO_WIDTH

    def repeat(self, av: Any, flags: int) -> _Info:
        lo, hi, sub = av
        items = _unwrap(list(sub))
        body = self.part(sub, flags)
        nullable = lo == 0 or body.nullable
        if (hi == _p.MAXREPEAT or hi > 1) and body.loops and not self._separated(items, flags):
            raise _Refused(_NESTED)
        if hi != _p.MAXREPEAT:
            return _Info(nullable, body.first, body.last, body.chars, body.heads, body.tails, body.loops)
        if body.nullable:
            raise _Refused(_EMPTY)
        if self._splits_two_ways(items, body, flags):
            raise _Refused(_SPLIT)
        stop = tuple(_canon(i) for i in items[0][1][1]) if _is_tempered(items) else ()
        loop = _Head(body.first, body.chars, stop=stop)
        return _Info(nullable, body.first, body.last, body.chars, (loop,), ((body.chars, ()),), True)

    def _separated(self, items: list[tuple[Any, Any]], flags: int) -> bool:
        """Each iteration starts (or ends) with one character that nothing else in it can match."""
        for edge, rest in ((items[:1], items[1:]), (items[-1:], items[:-1])):
            if edge and edge[0][0] in _SINGLE:
                if not self.charset(edge[0][0], edge[0][1], flags) & self.sequence(rest, flags).chars:
                    return True
        return False

    def _splits_two_ways(self, items: list[tuple[Any, Any]], body: _Info, flags: int) -> bool:
        """Alternatives that can start alike (``(\\w|\\d)+``), or an optional end that the next iteration could
        start with (``(a|aa)*``: ``a(?:|a)`` to the parser), or an optional start the last could end with."""
        if len(items) == 1 and items[0][0] is _p.BRANCH:
            alts = [self.part(alt, flags).first for alt in items[0][1][1]]
            if any(a & b for i, a in enumerate(alts) for b in alts[i + 1:]):
                return True
        infos = [self.item(op, av, flags) for op, av in items if op is not _p.AT]
        trailing = _optional_edge(infos[::-1])
        leading = _optional_edge(infos)
        return bool(trailing & body.first or leading & body.last)

    # -- restarts ----------------------------------------------------------------------------------------------

    def restarts(self, items: list[tuple[Any, Any]], path: list[tuple[Any, Any]], flags: int) -> None:
        """Each unbounded quantifier, with the items on the way to it from the start of the match."""
        for i, (op, av) in enumerate(items):
            before = path + items[:i]
            if op in _REPEATS and av[1] == _p.MAXREPEAT:
                self._restart(av, before, flags)
                for lop, lav in _unwrap(list(av[2])):  # a lookahead in a loop is tried at every iteration
                    if lop in _LOOKAROUND and lav[0] == 1:
                        self.restarts(list(lav[1]), [], flags)
                continue
            for inner, inner_flags in _inside(op, av, flags):
                self.restarts(inner, before, inner_flags)

    def _restart(self, av: Any, before: list[tuple[Any, Any]], flags: int) -> None:
        body = _unwrap(list(av[2]))
        chars = self._chars(av[2], flags)
        # after a quantifier that can stop wherever this one runs, what follows is tried at each of those places
        cut = max((i + 1 for i, (op, a) in enumerate(before)
                   if op in _REPEATS and a[1] == _p.MAXREPEAT and not chars & ~self._chars(a[2], flags)), default=0)
        prefix = before[cut:]
        if any(self._escapes(op, a, chars, flags) for op, a in prefix) or self._tempered(body, prefix):
            return
        consuming = [(op, a) for op, a in prefix if op not in (_p.AT, *_LOOKAROUND)]
        loops = [a for op, a in consuming if op in _REPEATS and a[1] == _p.MAXREPEAT]
        if all(op in _REPEATS and (a[1] == _p.MAXREPEAT or a[0] == 0) for op, a in consuming):  # nothing required
            if loops or cut:
                return  # it follows other quantifiers directly: the adjacency check has judged them
            raise _Refused("the pattern starts with an unbounded quantifier that can match where the match could "
                           "start, as in \\s*foo: quadratic on a long line")
        raise _Refused("an unbounded quantifier can run over the start of another match, as in foo.*bar on "
                       "'foofoofoo...': quadratic on a long line; exclude a character of what comes before it "
                       "([^f]*), or temper it: (?:(?!foo).)*")

    def _chars(self, sub: Any, flags: int) -> int:
        """Every character a loop's body can match."""
        return self.part(sub, flags).chars

    def _escapes(self, op: Any, av: Any, chars: int, flags: int) -> bool:
        """Every match of this item needs a character outside ``chars`` (or it anchors the start)."""
        if op in _SINGLE:
            return not self.charset(op, av, flags) & chars
        if op is _p.AT:
            return av is _p.AT_BEGINNING_STRING or (av is _p.AT_BEGINNING and not chars & _NEWLINE)
        if op is _p.SUBPATTERN:
            return any(self._escapes(o, a, chars, (flags | int(av[1])) & ~int(av[2])) for o, a in av[3])
        if op is _ATOMIC:
            return any(self._escapes(o, a, chars, flags) for o, a in av)
        if op is _p.BRANCH:
            return all(any(self._escapes(o, a, chars, flags) for o, a in alt) for alt in av[1])
        if op in _REPEATS and av[0] >= 1:
            return any(self._escapes(o, a, chars, flags) for o, a in av[2])
        return False

    @staticmethod
    def _tempered(body: list[tuple[Any, Any]], prefix: list[tuple[Any, Any]]) -> bool:
        """``(?:(?!T)x)*`` where T is a stretch of what comes before: it cannot run over another start."""
        return _is_tempered(body) and _within(tuple(_canon(i) for i in body[0][1][1]), [_canon(i) for i in prefix])


def _inside(op: Any, av: Any, flags: int) -> list[tuple[list[tuple[Any, Any]], int]]:
    """The sequences inside a node other than an unbounded repeat, each with its flags, on the match's way."""
    if op in _REPEATS:
        return [(list(av[2]), flags)]
    if op is _p.SUBPATTERN:
        return [(list(av[3]), (flags | int(av[1])) & ~int(av[2]))]
    if op is _ATOMIC:
        return [(list(av), flags)]
    if op is _p.BRANCH:
        return [(list(alt), flags) for alt in av[1]]
    if op is _p.GROUPREF_EXISTS:
        return [(list(alt), flags) for alt in av[1:] if alt is not None]
    if op in _LOOKAROUND and av[0] == 1:
        return [(list(av[1]), flags)]
    return []


def _is_tempered(body: list[tuple[Any, Any]]) -> bool:
    """A loop's body of the form ``(?!T)x``: it stops where T starts."""
    return len(body) == 2 and body[0][0] is _p.ASSERT_NOT and body[0][1][0] == 1 and len(body[0][1][1]) > 0


def _within(stretch: tuple[Any, ...], items: list[Any]) -> bool:
    """``stretch`` is a run of consecutive ``items``."""
    n = len(stretch)
    return any(tuple(items[i:i + n]) == stretch for i in range(len(items) - n + 1))


def _merge(infos: list[_Info]) -> _Info:
    first = last = chars = 0
    for i in infos:
        first, last, chars = first | i.first, last | i.last, chars | i.chars
    return _Info(any(i.nullable for i in infos), first, last, chars, tuple(h for i in infos for h in i.heads),
                 tuple(t for i in infos for t in i.tails), any(i.loops for i in infos))


def _optional_edge(infos: list[_Info]) -> int:
    """The characters of the optional items at one edge of a sequence (up to its first required item)."""
    out = 0
    for info in infos:
        if not info.nullable:
            break
        out |= info.chars
    return out


def _unwrap(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """A repeated group's items: ``(?:...)*`` and ``(...)*`` alike."""
    while len(items) == 1 and items[0][0] is _p.SUBPATTERN and not items[0][1][1] and not items[0][1][2]:
        items = list(items[0][1][3])
    return items


def _canon(node: Any) -> Any:
    """A node as plain tuples, without group numbers, to compare two stretches of a pattern."""
    if isinstance(node, _p.SubPattern):
        return tuple(_canon(i) for i in node.data)
    if isinstance(node, (list, tuple)):
        if len(node) == 2 and node[0] is _p.SUBPATTERN:
            return ("group", node[1][1], node[1][2], _canon(node[1][3]))
        return tuple(_canon(i) for i in node)
    return node
