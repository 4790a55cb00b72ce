"""pip's "Could not find a version that satisfies the requirement PKG (from versions: LIST)" judged from facts.

pip offers an interpreter only the releases that have a wheel for its Python and platform (a binary-only package
publishes nothing else), so the list it prints is a fact about the interpreter: a release the matrix knows exists
but pip leaves out, or "from versions: none", is a release without a wheel for it. Set against the matrix's Python
lists (``pythons.yaml``, torch.yaml's ``python``) and the Python and platform the paste shows, it names
``python-unsupported``, says the platform is the limit, or says what it does not know. An index that did not answer
(a connection, proxy or TLS failure) says nothing of the interpreter: no judgement.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..matrix import Matrix
from ..matrix.pythons import known_releases, package_pythons, wheel_pythons
from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, Missing, predicate

if TYPE_CHECKING:
    from .evidence import Evidence, Seen

#: every platform a paste that does not show its own may be on
_ALL = ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-x86_64", "macos-arm64")
_NAMES = {"linux-x86_64": "Linux x86_64", "linux-aarch64": "Linux aarch64", "windows-x86_64": "Windows",
          "macos-x86_64": "macOS x86_64 (Intel)", "macos-arm64": "macOS arm64 (Apple silicon)"}
#: what to paste when pip's answer alone does not settle it
_PASTE = ("the output of `python -c \"import sys, platform; print(sys.version, platform.machine(), platform.system())\"` "
          "run with the interpreter pip runs for, and pip's whole output with `-v`")


class _Ask(msgspec.Struct, frozen=True):
    """One requirement pip could not satisfy: its line, the package, what it asked, what it was offered."""

    seen: Seen[Any]
    name: str
    spec: SpecifierSet
    offered: tuple[Version, ...] | None  # None: the paste does not show pip's list


def _asks(e: Evidence) -> list[_Ask]:
    """pip's unsatisfied requirements, the ones that show pip's list first (one per package)."""
    out: dict[str, _Ask] = {}
    for ev in sorted(e.installer, key=lambda s: s.value.offered is None):
        x = ev.value
        if x.action != "no-matching-distribution" or not x.name or x.name in out:
            continue
        m = re.match(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*(?P<spec>[^;]*)", x.detail or "")
        try:  # a local version (``==1.13.1+cu116``) names a build of the public release: judged as that release
            spec = SpecifierSet(re.sub(r"\+[\w.]+", "", (m["spec"] if m else "").strip()))
        except InvalidSpecifier:
            continue
        offered = None if x.offered is None else tuple(v for v in map(_version, x.offered) if v is not None)
        out[canonicalize_name(x.name)] = _Ask(seen=ev, name=canonicalize_name(x.name), spec=spec, offered=offered)
    return list(out.values())


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def exact_pin(spec: SpecifierSet) -> Version | None:
    """The one release an exact pin names (``==2.0.0``); None otherwise."""
    pins = [s.version for s in spec if s.operator in ("==", "===") and "*" not in s.version]
    try:
        return Version(pins[0]) if len(pins) == 1 and len(spec) == 1 else None
    except InvalidVersion:
        return None


def _minor(v: Version) -> Version:
    return Version(f"{v.major}.{v.minor}")


def _span(versions: Iterable[Version]) -> str:
    """Pythons as runs of minors: ``2.7, 3.3-3.7``."""
    runs: list[list[Version]] = []
    for v in sorted(set(versions)):
        if runs and v.major == runs[-1][-1].major and v.minor == runs[-1][-1].minor + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs) or "none"


def _listed(offered: tuple[Version, ...]) -> str:
    if not offered:
        return "none"
    vs = sorted(offered)
    return ", ".join(map(str, vs)) if len(vs) <= 4 else f"{vs[0]} to {vs[-1]} ({len(vs)} versions)"


def _platforms(e: Evidence) -> tuple[tuple[str, ...], Seen[Any] | None]:
    """The platforms the paste may be on (every one when it does not say), and the line that says it."""
    system, machine = e.best("system"), e.best("machine")
    name = system.value if system is not None else None
    seen = system
    if name is None:
        for os_seen in e.os:
            low = str(os_seen.value).lower()
            if "windows" in low or "macos" in low:
                name, seen = ("windows" if "windows" in low else "darwin"), os_seen
                break
    arch = machine.value if machine is not None else None
    if name == "windows":
        return ("windows-x86_64",), seen
    if name == "darwin":
        plats = {"arm64": ("macos-arm64",), "aarch64": ("macos-arm64",), "x86_64": ("macos-x86_64",)}
        return plats.get(arch or "", ("macos-x86_64", "macos-arm64")), seen
    if name == "linux":
        return ("linux-aarch64",) if arch == "aarch64" else ("linux-x86_64",), seen
    return _ALL, None


def _pythons(m: Matrix, name: str, version: Version, plats: tuple[str, ...]) -> dict[str, tuple[Version, ...]]:
    """The release's Pythons on each of these platforms that the matrix knows."""
    out = {}
    for plat in plats:
        found = wheel_pythons(m, name, version, plat)
        if found is not None:
            out[plat] = found[0]
    return out


def _unverified(m: Matrix, name: str, versions: Iterable[Version], plats: tuple[str, ...]) -> bool:
    return any((found := wheel_pythons(m, name, v, p)) is not None and found[1].verified == "unverified"
               for v in versions for p in plats)


def _supports(lists: dict[str, tuple[Version, ...]], python: Version) -> bool:
    return any(python in pys for pys in lists.values())


def _every(m: Matrix, name: str, plats: tuple[str, ...]) -> set[Version]:
    """Every Python some release the matrix knows has wheels for on these platforms."""
    return {p for v in known_releases(m, name) for pys in _pythons(m, name, v, plats).values() for p in pys}


def _first_with(m: Matrix, name: str, python: Version, plats: tuple[str, ...]) -> Version | None:
    """The oldest release the matrix knows with wheels for this Python on one of these platforms."""
    return next((v for v in known_releases(m, name) if _supports(_pythons(m, name, v, plats), python)), None)


def _inferred(m: Matrix, name: str, offered: tuple[Version, ...], plats: tuple[str, ...]) -> set[Version]:
    """The Pythons every offered release the matrix knows has wheels for (what pip's list says of the
    interpreter); empty when the matrix knows none of them."""
    common: set[Version] | None = None
    for v in offered:
        lists = _pythons(m, name, v, plats)
        if lists:
            have = {p for pys in lists.values() for p in pys}
            common = have if common is None else common & have
    return common or set()


def _where(plats: tuple[str, ...]) -> str:
    return f" on {_NAMES[plats[0]]}" if len(plats) == 1 else ""


def _use(supported: Iterable[Version], have: Version) -> str:
    """Which interpreter to use instead: the nearest the release supports."""
    vs = sorted(set(supported))
    if not vs:
        return "a Python the release supports"
    near = vs[-1] if have > vs[-1] else vs[0] if have < vs[0] else min(vs, key=lambda v: abs(v.minor - have.minor))
    return f"Python {near} (supported: {_span(vs)})"


def _fill(ask: _Ask, facts: str, advice: str, unverified: bool = False) -> dict[str, str]:
    """The row's placeholders; ``unverified``: the matrix's list the judgement rests on is believed, not checked
    against the release's files (said, not hidden)."""
    if unverified:
        facts += " (The matrix's Python list for this release is marked unverified: believed, not read off its files.)"
    return {"package": ask.name, "asked": f"{ask.name}{ask.spec}" if str(ask.spec) else ask.name,
            "facts": facts, "advice": advice}


def _index_unreachable(e: Evidence) -> Seen[Any] | None:
    return next((ev for ev in e.installer if ev.value.action == "index-unreachable"), None)


#: a PyTorch index of one build variant: ``.../whl/cu118``, ``.../whl/nightly/cu130``, ``.../whl/test/cpu``
_VARIANT_INDEX_RE = re.compile(r"/whl/(?:nightly/|test/)?(?P<variant>cu\d{2,3}|cpu)/?$")


def _index_gap(m: Matrix, e: Evidence, ask: _Ask) -> str | None:
    """Why the indexes pip looked in cannot carry the torch asked for, when every one is a PyTorch variant index:
    a CUDA variant no torch release is built for, or requested releases not built for those variants."""
    urls = list(dict.fromkeys(ev.value.detail or "" for ev in e.installer if ev.value.action == "index"))
    found = [_VARIANT_INDEX_RE.search(u) for u in urls]
    if ask.name != "torch" or not urls or not all(found):
        return None
    variants = [f["variant"] for f in found if f is not None]
    built = {v.variant for r in m.torch for v in r.variants}
    unknown = [v for v in variants if v not in built]
    if len(unknown) == len(variants):
        return (f"the index{'es' if len(urls) > 1 else ''} pip looked in ({', '.join(urls)}) serve"
                f"{'' if len(urls) > 1 else 's'} {', '.join(unknown)}, which no torch release the matrix knows is "
                "built for: pip's empty answer is the index's, not the interpreter's")
    asked = [r for r in m.torch if str(ask.spec) and ask.spec.contains(r.version, prereleases=True)]
    if asked and not any(r.variant(v) is not None for r in asked for v in variants):
        return (f"torch{ask.spec} is not built for {', '.join(variants)} (its builds: "
                f"{', '.join(sorted({v.variant for r in asked for v in r.variants}))}), the only variant"
                f"{'s' if len(variants) > 1 else ''} the index{'es' if len(urls) > 1 else ''} pip looked in carry")
    return None


def _judge_pinned(m: Matrix, e: Evidence, ask: _Ask) -> Hit | None:
    """A request for releases the matrix knows, set against what pip offered and the Python shown."""
    known = [v for v in known_releases(m, ask.name) if ask.spec.contains(v, prereleases=True)]
    offered = ask.offered or ()
    if not known:
        known = _series(m, ask, offered)
    plats, plat_seen = _platforms(e)
    plats = _cuda_index_platforms(e, ask, plats)
    python_seen = e.best("python")
    python = _version(str(python_seen.value)) if python_seen is not None else None
    said = f"pip was asked for {ask.name}{ask.spec} and offered this interpreter {_listed(offered)}"
    evidence = [pasted_line(ask.seen)]
    if not known:
        if not str(ask.spec) or package_pythons(m, ask.name) is None:
            return None
        return Hit(evidence=tuple(evidence), missing=Missing(
            error=ask.seen.text.strip(), paste=_PASTE, missing=_unknown_release(m, ask, said)))
    lists = {v: _pythons(m, ask.name, v, plats) for v in known}
    supported = sorted({p for ls in lists.values() for pys in ls.values() for p in pys})
    older = bool(offered) and max(known) < min(offered)
    if python is not None and python_seen is not None:
        evidence.append(pasted_line(python_seen))
        have = _minor(python)
        if supported and not any(_supports(ls, have) for ls in lists.values()):
            first = _first_with(m, ask.name, have, plats)
            facts = (f"{said}. {ask.name} {_span(known) if len(known) > 2 else ', '.join(map(str, known))} ships "
                     f"wheels for Python {_span(supported)}{_where(plats)} (the matrix); this Python is {python}.")
            if first is not None:
                facts += f" The first {ask.name} release with wheels for Python {have} is {first}."
            advice = f"Install {ask.name} {first} or later, or use {_use(supported, have)}." if first else \
                f"Use {_use(supported, have)}."
            return Hit(evidence=tuple(evidence), fill=_fill(ask, facts, advice, _unverified(m, ask.name, known, plats)))
        return _platform_limit(m, ask, said, lists, have, plats, plat_seen, evidence) if any(lists.values()) else None
    common = _inferred(m, ask.name, offered, plats)
    advice = f"Use a Python {_span(supported)} interpreter for {ask.name} {max(known)}, or ask for a release pip offers."
    unverified = _unverified(m, ask.name, known, plats)
    if common and not common & set(supported) and not older:
        facts = (f"{said}. {ask.name} {max(known)} ships wheels for Python {_span(supported)}{_where(plats)} (the "
                 f"matrix). The paste does not show the Python; every release offered has wheels for Python "
                 f"{_span(common)} only, none of which {ask.name} {max(known)} has a wheel for.")
        return Hit(evidence=tuple(evidence), fill=_fill(ask, facts, advice, unverified))
    if not older and any(not pys for ls in lists.values() for pys in ls.values()):
        return _platform_limit(m, ask, said, lists, None, plats, plat_seen, evidence)
    judged = _by_offered(ask, said, known, offered, common, supported, plats)
    if judged is not None:
        return Hit(evidence=tuple(evidence), fill=_fill(ask, judged, advice, unverified))
    return Hit(evidence=tuple(evidence), missing=Missing(
        error=ask.seen.text.strip(), paste=_PASTE,
        missing=f"the Python version pip runs for ({ask.name} {', '.join(map(str, known[-3:]))} ships wheels for "
                f"Python {_span(supported)}{_where(plats)})"))


def _by_offered(ask: _Ask, said: str, known: list[Version], offered: tuple[Version, ...], common: set[Version],
                supported: list[Version], plats: tuple[str, ...]) -> str | None:
    """The facts where pip offered only releases newer than the ones asked for (the interpreter is newer than they
    support), or only older ones whose Pythons include some the asked ones have none for (the interpreter is likely one
    of those: a Python the asked releases dropped); None otherwise."""
    guess = common - set(supported)
    if offered and max(known) < min(offered):
        return (f"{said}: only releases newer than {ask.name} {max(known)}, which ships wheels for Python "
                f"{_span(supported)}{_where(plats)} (the matrix). The paste does not show the Python"
                + (f"; every release offered has wheels for Python {_span(common)}, and of these {ask.name} "
                   f"{max(known)} has none for {_span(guess)}: the interpreter is likely Python {_span(guess)}."
                   if guess else "."))
    if not offered or max(offered) >= min(known) or not guess:
        return None
    return (f"{said}: only releases older than {ask.name} {min(known)}, which ships wheels for Python "
            f"{_span(supported)}{_where(plats)} (the matrix). The paste does not show the Python; every release "
            f"offered has wheels for Python {_span(common)}, and of these {ask.name} {min(known)} has none for "
            f"{_span(guess)}: the interpreter is likely Python {_span(guess)}, which the release dropped.")


def _cuda_index_platforms(e: Evidence, ask: _Ask, plats: tuple[str, ...]) -> tuple[str, ...]:
    """The platforms a torch request can be on when every index pip looked in is one of PyTorch's CUDA variant indexes
    (``.../whl/cu124``): those carry Linux and Windows wheels only (no macOS build has CUDA)."""
    urls = [ev.value.detail or "" for ev in e.installer if ev.value.action == "index"]
    found = [_VARIANT_INDEX_RE.search(u) for u in urls]
    if ask.name != "torch" or not urls or not all(f is not None and f["variant"] != "cpu" for f in found):
        return plats
    return tuple(p for p in plats if not p.startswith("macos")) or plats


def _series(m: Matrix, ask: _Ask, offered: tuple[Version, ...]) -> list[Version]:
    """A pinned release the matrix knows only by its minor series (a patch release of a series whose Pythons it
    knows), when pip offers nothing of that series: whether or not that patch release exists, no release of the
    series has a wheel for this interpreter, so the series' Pythons speak for it."""
    pins = [_version(x.version) for x in ask.spec if x.operator == "=="]
    if len(pins) != 1 or pins[0] is None:
        return []
    pin = pins[0]
    if any((v.major, v.minor) == (pin.major, pin.minor) for v in offered):
        return []
    series = f"=={pin.major}.{pin.minor}.*"
    p = package_pythons(m, ask.name)
    return [pin] if p is not None and any(str(s) == series for row in p.rows for s in row.releases) else []


def _unknown_release(m: Matrix, ask: _Ask, said: str) -> str:
    """What is missing when the matrix knows no release the request asks for: newer than it knows, or none such."""
    releases = known_releases(m, ask.name)
    pinned = [_version(x.version) for x in ask.spec if x.operator == "=="]
    if releases and pinned and all(v is not None and v > releases[-1] for v in pinned):
        return (f"{said}; the matrix knows {ask.name} releases up to {releases[-1]}, so it cannot say which Pythons "
                f"and platforms {ask.name}{ask.spec} has wheels for (the Python pip runs for, and the platform)")
    return (f"{said}; no {ask.name} release the matrix knows matches {ask.spec} (is it a release? pip lists the ones "
            "with a wheel for this interpreter)")


def _platform_limit(m: Matrix, ask: _Ask, said: str, lists: dict[Version, dict[str, tuple[Version, ...]]],
                    have: Version | None, plats: tuple[str, ...], plat_seen: Seen[Any] | None,
                    evidence: list[str]) -> Hit:
    """The requested releases do ship wheels for this Python: the platform (or something else) is the limit."""
    bare = sorted({p for ls in lists.values() for p, pys in ls.items() if not pys})
    if plat_seen is not None:
        evidence.append(pasted_line(plat_seen))
    release = max(lists)
    if bare:
        missing = (f"{said}. {ask.name} {release} has wheels" + (f" for Python {have}" if have else "") + ", but none for "
                   f"{' or '.join(_NAMES[p] for p in bare)}: there the platform, not the Python, is the limit (an Intel "
                   "Mac, or an x86_64 Python under Rosetta on Apple silicon, is offered only the older releases)")
    else:
        missing = (f"{said}. {ask.name} {release} has wheels for Python {have}{_where(plats)} (the matrix): something "
                   "else limits what the index offers this interpreter (a 32-bit or free-threaded Python, another "
                   "platform, an index URL that does not carry that release)")
    return Hit(evidence=tuple(evidence), missing=Missing(error=ask.seen.text.strip(), missing=missing, paste=_PASTE))


def _judge_none(m: Matrix, e: Evidence, ask: _Ask) -> Hit | None:
    """Nothing offered at all ("from versions: none") for a binary-only package: no wheel fits this interpreter."""
    plats, _ = _platforms(e)
    python_seen = e.best("python")
    python = _version(str(python_seen.value)) if python_seen is not None else None
    every = _every(m, ask.name, plats)
    elsewhere = ""
    if not every and plats != _ALL:  # the matrix knows no list of this platform: what it knows of the others
        known_on = sorted({p for v in known_releases(m, ask.name) for p in _pythons(m, ask.name, v, _ALL)})
        plats, every = _ALL, _every(m, ask.name, _ALL)
        elsewhere = f" (the matrix has lists for {', '.join(_NAMES[p] for p in known_on)} only)"
    asked = [v for v in known_releases(m, ask.name) if str(ask.spec) and ask.spec.contains(v, prereleases=True)]
    index = ", ".join(dict.fromkeys(ev.value.detail or "" for ev in e.installer if ev.value.action == "index"))
    said = (f"pip found no {ask.name} release at all for this interpreter (\"from versions: none\")"
            + (f", looking in {index}" if index else ""))
    evidence = [pasted_line(ask.seen)]
    also = ("A 32-bit Python, a platform without wheels, or an index URL that does not carry "
            f"{ask.name} give the same answer.")
    if python is None or python_seen is None:  # which of the readings holds is not shown: not named
        return Hit(evidence=tuple(evidence), missing=Missing(
            error=ask.seen.text.strip(), paste=_PASTE,
            missing=(f"which Python and platform pip installs for ({said}; {ask.name}'s releases in the matrix cover "
                     f"Python {_span(every)}{_where(plats)}; {also[0].lower()}{also[1:]})")))
    evidence.append(pasted_line(python_seen))
    have = _minor(python)
    pinned = {v: _pythons(m, ask.name, v, plats) for v in asked}
    if pinned and any(pinned.values()) and not any(_supports(ls, have) for ls in pinned.values()):
        supported = {p for ls in pinned.values() for pys in ls.values() for p in pys}
        facts = (f"{said}. {ask.name}{ask.spec} ships wheels for Python {_span(supported)}{_where(plats)} (the "
                 f"matrix); this Python is {python}.")
        first = _first_with(m, ask.name, have, plats)
        return Hit(evidence=tuple(evidence), fill=_fill(ask, facts + (f" The first {ask.name} release with wheels "
                   f"for Python {have} is {first}." if first else ""), f"Use {_use(supported, have)}"
                   + (f", or install {ask.name} {first} or later." if first else "."),
                   unverified=_unverified(m, ask.name, asked, plats)))
    if every and have not in every:
        facts = (f"{said}. No {ask.name} release the matrix knows ships wheels for Python {have}{_where(plats)}: they "
                 f"cover Python {_span(every)}{elsewhere}; this Python is {python}.")
        return Hit(evidence=tuple(evidence), fill=_fill(ask, facts, f"Use {_use(every, have)}."))
    first = _first_with(m, ask.name, have, plats)
    facts = (f"{said}. This Python is {python}; today {ask.name} has wheels for Python {have}{_where(plats)}"
             + (f" from {first} on" if first else "") + " (the matrix), so the index this paste used offered none to "
             f"it, or the paste predates those releases. {also}")
    advice = (f"Install {ask.name} {first} or later" if first else f"Install {ask.name}") + \
        " from an index that carries it, with a 64-bit CPython."
    return Hit(evidence=tuple(evidence), fill=_fill(ask, facts, advice))


def _thirty_two_bit(e: Evidence, ask: _Ask) -> Hit | None:
    """A 32-bit interpreter (a ``Python37-32`` directory, collect_env's "32-bit runtime"): no wheel fits it."""
    bits = e.best("python_bits")
    if bits is None or bits.value != 32:
        return None
    facts = (f"pip could not install {ask.name}: this Python is a 32-bit interpreter, and {ask.name} publishes 64-bit "
             "wheels only.")
    return Hit(evidence=(pasted_line(ask.seen), pasted_line(bits)), fill=_fill(ask, facts, "Install a 64-bit CPython "
               "(the Windows installer's \"64-bit\" build) and create the environment with it."))


def _judge(m: Matrix, e: Evidence, ask: _Ask) -> Hit | None:
    """One unsatisfied requirement: an index that cannot carry it, else a 32-bit interpreter, else nothing offered
    at all, else the releases asked for against what was offered."""
    gap = _index_gap(m, e, ask)
    if gap is not None:
        return Hit(evidence=(pasted_line(ask.seen),), missing=Missing(error=ask.seen.text.strip(), missing=gap,
                   paste="pip's output with an index that carries the build you need (the variant index of a CUDA "
                         "your driver serves), and `python --version`"))
    hit = _thirty_two_bit(e, ask)
    if hit is not None:
        return hit
    p = package_pythons(m, ask.name)
    if ask.offered == ():
        return _judge_none(m, e, ask) if p is None or p.wheels_only else None
    return _judge_pinned(m, e, ask) if str(ask.spec) else None


@predicate("pip-offers-no-wheel-for-interpreter", ("python", "system"), ("package", "asked", "facts", "advice"))
def _pip_offers_no_wheel(f: Facts) -> Iterator[Hit]:
    """pip's list of the versions it could install (or none) for a package the matrix knows the Pythons of, set
    against those Pythons and the Python and platform the paste shows (see the module's docstring)."""
    e = f.log
    if e is None:
        return
    asks = [a for a in _asks(e) if package_pythons(f.matrix, a.name) is not None or a.name == "torch"]
    if not asks:
        return
    down = _index_unreachable(e)
    if down is not None:
        yield Hit(evidence=(pasted_line(down), pasted_line(asks[0].seen)), missing=Missing(
            error=asks[0].seen.text.strip(), paste="pip's output again once the index answers (proxy, certificates, "
            "network), with `-v`",
            missing="an answer from the index: it did not answer (the line above), so pip's list says nothing of "
                    "this interpreter"))
        return
    for ask in asks:
        hit = _judge(f.matrix, e, ask)
        if hit is not None:
            yield hit
            return


@predicate("pip-pin-older-than-every-offered", ("python",), ("package", "asked", "first", "python"))
def _pip_pin_older_than_offered(f: Facts) -> Iterator[Hit]:
    """An exact release pip does not offer though it offers later ones only (``==1.13.1`` "from versions: 2.0.0,
    ..."), for any package: pip lists the releases it could install for this interpreter and platform (those with a
    matching wheel, or whose Requires-Python admits it), so a release older than every one offered predates this
    Python (or platform) for that package. Packages the matrix knows are judged by ``pip-offers-no-wheel-for-interpreter``
    first; an index that did not answer settles nothing."""
    e = f.log
    if e is None or _index_unreachable(e) is not None:
        return
    for ask in _asks(e):
        judged = _judge(f.matrix, e, ask) if package_pythons(f.matrix, ask.name) is not None or ask.name == "torch" \
            else None
        if judged is not None and judged.missing is None:
            continue  # (named from the matrix's own Python lists)
        pinned = exact_pin(ask.spec)
        if pinned is None or not ask.offered or pinned >= min(ask.offered):
            continue
        python = e.best("python")
        yield Hit(evidence=(pasted_line(ask.seen),), seen=(ask.seen,), fill={
            "package": ask.name, "asked": f"{ask.name}=={pinned}", "first": str(min(ask.offered)),
            "python": f"Python {python.value}" if python is not None else "this Python"})
        return


#: what a program says of the Pythons it runs on (the lines signals.py types "python-refused-said" and
#: "python-range-said"), its numbers named
_SAID_TOO_OLD_OR_NEW = re.compile(r"\b(?:incompatible|unsupported) python version\b|\bis not (?:supported|compatible)\b"
                                  r"|\bbut you have\b", re.IGNORECASE)
_SAID_HAVE = re.compile(r"\bpython (?:version )?(?P<have>3\.\d+(?:\.\d+)?) is not (?:supported|compatible)\b"
                        r"|\bbut you have (?P<had>3\.\d+(?:\.\d+)?)", re.IGNORECASE)
_SAID_FLOOR = re.compile(r"\bpython (?P<lo>3\.\d+(?:\.\d+)?) or (?:higher|newer|later|above)\b"
                         r"(?:\s*\((?:maximum|max\.?|up to) (?P<hi>3\.\d+(?:\.\d+)?)\))?", re.IGNORECASE)
_SAID_RANGE = re.compile(r"\bpython (?P<lo>3\.\d+) ?(?:-|to|through) ?(?P<hi>3\.\d+)\b", re.IGNORECASE)


def _within(have: Version, lo: str | None, hi: str | None) -> bool:
    """Whether ``have`` is within a range said as versions (``hi`` of two parts covers its whole minor series)."""
    top = Version(hi) if hi is not None else None
    if top is not None and len(top.release) == 2:
        have = Version(".".join(map(str, have.release[:2])))
    return (lo is None or have >= Version(lo)) and (top is None or have <= top)


def _said_refusal(text: str, python: Version | None) -> str | None:
    """The Python a program's statement refuses (its words or the Python shown), or None: the statement names none,
    or the Python shown is within what it says it runs on."""
    have = _SAID_HAVE.search(text)
    if have is not None:
        return have["have"] or have["had"]
    bounds = _SAID_FLOOR.search(text) or _SAID_RANGE.search(text)
    if bounds is not None:
        if python is None or _within(python, bounds["lo"], bounds["hi"]):
            return None
        return str(python)
    if _SAID_TOO_OLD_OR_NEW.search(text) and python is not None:
        return str(python)
    return None


@predicate("program-refuses-python", ("python",), ("python", "said"))
def _program_refuses_python(f: Facts) -> Iterator[Hit]:
    """A program's own statement that it does not run on this Python: "Python 3.13 is not supported", "tested with
    3.10.6 Python, but you have 3.11.2", or the range it says it needs ("Python 3.10.0 or higher (maximum 3.11.100)",
    "supports Python 3.9-3.12") with the Python the paste shows outside it. A range said beside a Python within it,
    or with no Python shown, settles nothing."""
    e = f.log
    if e is None:
        return
    statements = [s for s in e.signals if s.value.code in ("python-refused-said", "python-range-said")]
    # (the Python a statement names is what it asks for, not the interpreter: "requires Python 3.6 or higher")
    seen = min((p for p in e.python if p.line not in {s.line for s in statements}), key=lambda p: (p.rank, p.line),
               default=None)
    try:
        python = Version(str(seen.value)) if seen is not None else None
    except InvalidVersion:
        python = None
    for said in statements:
        refused = _said_refusal(said.text, python)
        if refused is not None:
            lines = (pasted_line(said), *((pasted_line(seen),) if seen is not None and seen.line != said.line else ()))
            yield Hit(evidence=lines, seen=(said,), fill={"python": f"Python {refused}", "said": said.text.strip()[:160]})
            return

