"""What pip and uv say while they install: what they uninstalled and installed, what they could not find or
resolve, the Python they ran for, and what they put in an isolated build environment.

Input::

      Attempting uninstall: torch
        Found existing installation: torch 2.10.0+cu130
        Successfully uninstalled torch-2.10.0+cu130
     + torch==2.7.1+cu128                                       (uv)
    Requirement already satisfied: torch>=2.4.0 in /venv/lib/python3.12/site-packages (from -r r.txt (line 1)) (2.10.0)
    torchvision 0.15.2+cu118 requires torch==2.0.1, but you have torch 2.1.0 which is incompatible.
    ERROR: Ignored the following versions that require a different python version: 0.10.0 Requires-Python <3.13,>=3.9
    ERROR: No matching distribution found for vllm==0.10
      Running command pip subprocess to install build dependencies
      Collecting torch==2.3.0                                   (into the build environment)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .collect import Collector, apply_rules
from .lines import Line
from .lists import wheel_version
from .model import DOWNLOAD, MESSAGE, Dist, InstallerEvent
from .tokens import VERSION, dist_name, version_token

__all__ = ["InstallerReader"]

HOW = "installer"
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"

#: reads a match; False: the line is left to the other readers (not what the pattern took it for, or more in it)
Handler = Callable[[re.Match[str], Line, Collector], "bool | None"]


def _event(out: Collector, line: Line, action: str, name: str | None = None, version: str | None = None,
           detail: str | None = None) -> None:
    out.add("installer", InstallerEvent(action=action, name=dist_name(name) if name else None, version=version,
                                        detail=detail), line, MESSAGE, HOW)


def _context(m: re.Match[str], line: Line, out: Collector) -> None:
    """``Found existing installation: torch 2.4.1``, ``Attempting uninstall: torch``: what is about to go."""
    return None


def _uninstalled(m: re.Match[str], line: Line, out: Collector) -> None:
    _event(out, line, "uninstalled", m["name"], m["version"])


def _successfully_installed(m: re.Match[str], line: Line, out: Collector) -> None:
    for item in m["items"].split():
        name, _, version = item.rpartition("-")
        if name and version_token(version) == version:
            out.add_dist(Dist(name=dist_name(name), version=version), line, MESSAGE, HOW)
            _event(out, line, "installed", name, version)


def _uv_summary(m: re.Match[str], line: Line, out: Collector) -> bool:
    out.mark("uv", line)
    return False  # the line may say more (a command line's flags)


def _uv(m: re.Match[str], line: Line, out: Collector) -> bool:
    """`` + torch==2.7.1+cu128`` / `` - torch==2.7.0``; a "- x==1" is a list's bullet unless uv is talking."""
    if m["sign"] != "+" and not out.near("uv", line, 1000):
        return False
    if m["sign"] == "-":
        _event(out, line, "uninstalled", m["name"], m["version"])
        return True
    out.add_dist(Dist(name=dist_name(m["name"]), version=m["version"]), line, MESSAGE, "uv")
    _event(out, line, "installed", m["name"], m["version"])
    return True


def _satisfied(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add_dist(Dist(name=dist_name(m["name"]), version=m["version"]), line, MESSAGE, HOW)


def _you_have(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add_dist(Dist(name=dist_name(m["name"]), version=m["version"]), line, MESSAGE, HOW)
    out.add_dist(Dist(name=dist_name(m["have"]), version=m["have_version"]), line, MESSAGE, HOW)
    # pip's check: this package needs another version of ``have`` than the one installed
    _event(out, line, "conflict", m["name"], m["version"], dist_name(m["have"]))


def _no_match(m: re.Match[str], line: Line, out: Collector) -> None:
    _unsatisfied(m["req"], m.groupdict().get("offered"), line, out)


def _unsatisfied(req: str, offered: str | None, line: Line, out: Collector) -> None:
    """A requirement pip could not satisfy, and the versions it listed ("none": (); not shown: None)."""
    req = req.strip()
    name = re.match(_NAME, req)
    versions = None if offered is None else tuple(v.strip() for v in offered.split(",")
                                                   if v.strip() and v.strip() != "none")
    out.add("installer", InstallerEvent(action="no-matching-distribution", name=dist_name(name[0]) if name else None,
                                        detail=req, offered=versions), line, MESSAGE, HOW)


def _index(m: re.Match[str], line: Line, out: Collector) -> bool:
    """``Looking in indexes: URL, URL``, ``--index-url URL``, ``--extra-index-url URL``: the indexes pip asked."""
    for url in re.findall(r"https?://[^\s,'\"`]+", m["urls"]):
        _event(out, line, "index", None, None, url)
    return False  # the line may say more (a command line's requirements)


def _unreachable(m: re.Match[str], line: Line, out: Collector) -> bool:
    """An index that did not answer: pip's retries after a connection, proxy or TLS failure, a URL it could not
    fetch (then "from versions: none" says nothing of the interpreter)."""
    _event(out, line, "index-unreachable", None, None, m[0].strip())
    return False


def _ignored_python(m: re.Match[str], line: Line, out: Collector) -> None:
    _event(out, line, "requires-python", None, None, m["spec"].strip())


def _different_python(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", m["python"], line, MESSAGE, HOW)
    _event(out, line, "requires-python", m["name"], None, m["spec"])


def _uv_python(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", m["python"], line, MESSAGE, "uv")
    _event(out, line, "requires-python", None, None, m["spec"])


def _resolution(m: re.Match[str], line: Line, out: Collector) -> None:
    _event(out, line, "resolution-failed", None, None, m[0].strip())


def _requested(m: re.Match[str], line: Line, out: Collector) -> bool:
    """A resolver's account of a conflict: what the user asked for (pip's "The user requested torch==2.0.0", uv's
    "you require torch==2.0.0") and what a package depends on (pip's "xformers 0.0.20 depends on torch==2.0.1", uv's
    "xformers==0.0.20 depends on torch==2.0.1"), each a ``requested`` or ``depends`` event."""
    asked = rf"(?:[Tt]he user requested|you require) ({_NAME}(?:\[[^\]]*\])?\s*[<>=!~][^\s,]*)"
    for req in re.findall(asked, line.body):
        name = re.match(_NAME, req)
        _event(out, line, "requested", name[0] if name else None, None, req.strip().rstrip("."))
    for name, version, req in re.findall(rf"({_NAME})(?: |==)({VERSION}) depends on ({_NAME}\s*[<>=!~][^\s,]*)",
                                         line.body):
        _event(out, line, "depends", name, version, req.strip().rstrip("."))
    return False


def _no_wheel_for_python(m: re.Match[str], line: Line, out: Collector) -> bool:
    """uv's "Because vllm-flash-attn==2.5.9.post1 has no wheels with a matching Python ABI tag" (later uv: "Python
    version tag", with the tag in parentheses): no wheel of that release is built for this interpreter."""
    out.mark("uv", line)
    _event(out, line, "no-wheel-for-python", m["name"], m["version"], m["tag"])
    return False


def _uv_cpython(m: re.Match[str], line: Line, out: Collector) -> None:
    """uv's hint "You're using CPython 3.12 (`cp312`), but ..." names the interpreter."""
    out.add("python", m["python"], line, MESSAGE, "uv")


def _build_failed(m: re.Match[str], line: Line, out: Collector) -> None:
    out.in_build = True
    out.kinds.add("build_log")
    _event(out, line, "build-failed", m["name"])


def _uv_build_failed(m: re.Match[str], line: Line, out: Collector) -> None:
    """uv's "× Failed to build `flash-attn==2.8.2`" (older: "Failed to download and build `x==1`"): said by uv."""
    out.mark("uv", line)
    out.in_build = True
    out.kinds.add("build_log")
    out.add("installer", InstallerEvent(action="build-failed", name=dist_name(m["name"]), version=m["version"]),
            line, MESSAGE, "uv")


def _not_found(m: re.Match[str], line: Line, out: Collector) -> None:
    for name in m["names"].split(","):
        if name.strip():
            _event(out, line, "not-installed", name.strip())


def _pip_python(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", m["python"], line, MESSAGE, HOW)
    out.add("tools", ("pip", m["pip"]), line, MESSAGE, HOW)


def _build_deps(m: re.Match[str], line: Line, out: Collector) -> None:
    out.in_build = True
    out.kinds.add("build_log")
    if m["state"] is not None:
        out.mark("build-deps", line)
    else:
        out.marks.pop("build-deps", None)


def _collecting(m: re.Match[str], line: Line, out: Collector) -> None:
    """``Collecting torch==2.3.0``: into the build environment while pip installs build dependencies."""
    if "build-deps" in out.marks and m["version"]:
        out.mark("build-deps", line)
        out.add_dist(Dist(name=dist_name(m["name"]), version=m["version"]), line, MESSAGE, HOW, field="build_env")
    elif m["version"]:  # an exact version on its way in, and who asks for it: ``(from xformers==0.0.19)``
        _event(out, line, "collecting", m["name"], m["version"], m["by"])


def _download(m: re.Match[str], line: Line, out: Collector) -> None:
    """``Downloading torch-2.0.0-cp310-cp310-manylinux1_x86_64.whl``, ``Using cached flash_attn-2.7.4.tar.gz``."""
    wheel = wheel_version(m["file"])
    if wheel is None:
        return
    if "build-deps" in out.marks:
        out.add_dist(Dist(name=wheel[0], version=wheel[1]), line, MESSAGE, HOW, field="build_env")
    else:
        out.add_dist(Dist(name=wheel[0], version=wheel[1]), line, DOWNLOAD, "download")


#: an index that did not answer (a literal the line must hold, the pattern): pip's retries and what broke them
_UNREACHABLE = (
    ("Retrying (Retry(", r"Retrying \(Retry\(total=\d+"), ("Could not fetch URL", r"Could not fetch URL \S+"),
    ("new connection", r"Failed to establish a new connection"), ("ProxyError", r"ProxyError"),
    ("SSLError", r"SSLError"), ("CERTIFICATE_VERIFY_FAILED", r"CERTIFICATE_VERIFY_FAILED"),
    ("name resolution", r"Temporary failure in name resolution"), ("Max retries", r"Max retries exceeded with url"),
    ("Read timed out", r"Read timed out"))

#: (a literal that the line must hold, the pattern, what it says)
RULES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("uninstalled", re.compile(rf"Successfully uninstalled (?P<name>{_NAME}?)-(?P<version>{VERSION})\s*$"),
     _uninstalled),
    ("existing installation", re.compile(r"Found existing installation: "), _context),
    ("ninstall", re.compile(r"Attempting uninstall: |^\s*Uninstalling \S+:\s*$"), _context),
    ("Successfully installed", re.compile(r"Successfully installed (?P<items>.+)$"), _successfully_installed),
    ("package", re.compile(r"^\s*(?:Resolved|Prepared|Installed|Uninstalled|Audited) \d+ packages? in "), _uv_summary),
    ("uv pip", re.compile(r"\buv pip (?:install|sync)\b"), _uv_summary),
    ("==", re.compile(rf"^\s*(?P<sign>[-+~])\s+(?P<name>{_NAME})==(?P<version>\S+)\s*$"), _uv),
    ("already satisfied", re.compile(rf"Requirement already satisfied: (?P<name>{_NAME}).*\((?P<version>{VERSION})\)\s*$"),
     _satisfied),
    ("but you", re.compile(rf"(?P<name>{_NAME}) (?P<version>{VERSION}) (?:requires|has requirement) .*?, but you(?:'ll)? "
                           rf"have (?P<have>{_NAME}) (?P<have_version>{VERSION}) which is incompatible"), _you_have),
    ("matching distribution", re.compile(r"No matching distribution found for (?P<req>\S+)"), _no_match),
    ("satisfies the requirement", re.compile(r"[Cc]ould not find a version that satisfies the requirement (?P<req>\S+)"
                                             r"(?: \(from versions: (?P<offered>[^()]*)\))?"), _no_match),
    ("index", re.compile(r"(?:Looking in indexes:|--(?:extra-)?index-url[= ])(?P<urls>.*)$"), _index),
    # pip's find-links pages (``-f URL``): PyTorch's old ``torch_stable.html`` of its CUDA and CPU wheels
    ("links", re.compile(r"(?:Looking in links:|--find-links[= ])(?P<urls>.*)$"), _index),
    (" -f ", re.compile(r"\bpip3?(?:\.exe)? install\b.* -f (?P<urls>\S+)"), _index),
    *((needle, re.compile(pattern), _unreachable) for needle, pattern in _UNREACHABLE),
    ("different python version", re.compile(r"require a different python version: \S+ Requires-Python (?P<spec>[^;]+)"),
     _ignored_python),
    ("requires a different Python", re.compile(
        rf"Package '(?P<name>{_NAME})' requires a different Python: (?P<python>\d+\.\d+(?:\.\d+)?) not in "
        r"'(?P<spec>[^']+)'"), _different_python),
    ("Python version", re.compile(r"current Python version \((?P<python>\d+\.\d+(?:\.\d+)?)\) does not satisfy "
                                  r"Python(?P<spec>\S+)"), _uv_python),
    ("requ", re.compile(r"(?:[Tt]he user requested|you require) \S"), _requested),
    ("depends on", re.compile(r"\bdepends on \S"), _requested),
    # (uv wraps its message at 80 columns: "... with a matching Python ABI" may end the line, before "tag (e.g., ...")
    ("wheels", re.compile(
        rf"(?P<name>{_NAME})==(?P<version>{VERSION}) (?:has no wheels|is unusable because no wheels are available) "
        r"with a matching Python (?:ABI|version)\b(?: tag)?(?: \((?:e\.g\., )?`?(?P<tag>[\w.]+)`?\))?"),
     _no_wheel_for_python),
    ("CPython", re.compile(r"[Yy]ou(?:'re using| require) CPython (?P<python>\d+\.\d+(?:\.\d+)?)\b"), _uv_cpython),
    ("solution found", re.compile(r"No solution found when resolving dependencies.*"), _resolution),
    ("ResolutionImpossible", re.compile(r"ResolutionImpossible.*"), _resolution),
    ("conflicting dependencies", re.compile(r"Cannot install .* conflicting dependencies.*"), _resolution),
    ("unsatisfiable", re.compile(r".*requirements are unsatisfiable.*"), _resolution),
    ("building", re.compile(rf"(?:Failed building (?:wheel|editable) for|Could not build wheels for) (?P<name>{_NAME})"),
     _build_failed),
    ("... error", re.compile(r"^\s*(?:Getting requirements to build (?:wheel|editable)|Preparing (?:editable )?metadata "
                             r"\(pyproject\.toml\)|Building (?:wheel|editable) for (?P<name>[\w.-]+) \([\w.]+\)) \.\.\. error"),
     _build_failed),
    ("Failed to build", re.compile(rf"^\s*Failed to build (?P<name>{_NAME})\s*$"), _build_failed),
    # uv names what it failed to build in backticks: "× Failed to build `flash-attn==2.8.2`", uv before 0.5 "error:
    # Failed to download and build `flash-attn==2.5.8`", a direct reference "Failed to build `x @ git+https://...`"
    ("build `", re.compile(rf"Failed to (?:download and )?build:? `(?P<name>{_NAME}?)(?:==(?P<version>[^`\s]+))?"
                           r"(?:\s*@[^`]*)?`"), _uv_build_failed),
    # uv 0.4's "Caused by: Failed to fetch wheel: flash-attn==2.6.1" above its build backend's failure (a source
    # package it had to build: its wheel is what it failed to make)
    ("fetch wheel:", re.compile(rf"\bFailed to fetch wheel: (?P<name>{_NAME}?)(?:==(?P<version>\S+))?\s*$"),
     _uv_build_failed),
    # pip 25: "ERROR: Failed to build 'flash-attn' when getting requirements to build wheel"
    ("Failed to build", re.compile(rf"Failed to build '(?P<name>{_NAME})' when "), _build_failed),
    ("not found:", re.compile(r"Package\(s\) not found: (?P<names>.+)$"), _not_found),
    ("Using pip", re.compile(r"Using pip (?P<pip>\S+) from .* \(python (?P<python>\d+\.\d+)\)"), _pip_python),
    ("build dependencies", re.compile(
        r"(?:Running command pip subprocess to install build dependencies|Installing build dependencies: started)"
        r"(?P<state>)|(?:Installing build dependencies(?: \.\.\. |: finished)|Getting requirements to build)"
        r"(?P<stop>)"), _build_deps),
    ("Collecting", re.compile(rf"^\s*Collecting (?P<name>{_NAME})(?:==(?P<version>{VERSION}))?"
                              rf"(?: \(from (?P<by>{_NAME})[^)]*\))?"), _collecting),
    ("Downloading", re.compile(r"^\s*Downloading (?P<file>\S+\.(?:whl|tar\.gz|zip))\b"), _download),
    ("Using cached", re.compile(r"^\s*Using cached (?P<file>\S+\.(?:whl|tar\.gz|zip))\b"), _download),
)


#: pip's list of versions left open at the end of a line (a paste that wrapped it), and the lines that go on with it
_OPEN_LIST_RE = re.compile(r"[Cc]ould not find a version that satisfies the requirement (?P<req>\S+) \(from versions: "
                           r"(?P<versions>[^()]*)$")
_LIST_GOES_ON_RE = re.compile(r"^\s*(?P<versions>(?:\d[\w.+!-]*,\s*)*(?:\d[\w.+!-]*)?),?\s*(?P<close>\))?\s*$")


class InstallerReader:
    """pip's and uv's messages (see the module's docstring)."""

    def __init__(self) -> None:
        #: a "(from versions: ..." list that runs past its line: (its first line, the requirement, versions so far)
        self._open: tuple[Line, str, list[str]] | None = None
        self._last = 0

    def feed(self, line: Line, out: Collector) -> bool:
        if self._open is not None and self._goes_on(line, out):
            return True
        m = _OPEN_LIST_RE.search(line.body)
        if m is not None:
            self._open, self._last = (line, m["req"], [m["versions"]]), line.no
        return apply_rules(RULES, line, out)

    def _goes_on(self, line: Line, out: Collector) -> bool:
        """A line that carries on an open list of versions (the next line, versions only); when it closes the list,
        the requirement's event with every version offered, on the list's first line."""
        assert self._open is not None
        first, req, parts = self._open
        m = _LIST_GOES_ON_RE.match(line.body) if line.no == self._last + 1 else None
        if m is None:
            self._open = None  # not closed: the first line's event stands, without the list
            return False
        parts.append(m["versions"])
        self._last = line.no
        if m["close"]:
            self._open = None
            _unsatisfied(req, ", ".join(p.strip().strip(",") for p in parts if p.strip()), first, out)
        return True
