"""conda's install plan: what ``conda install`` / ``conda create`` (and mamba) will install, read into the same facts a
``conda list`` gives (each package with its version and build string; pytorch's build says its CUDA or CPU), and the
specs it was asked for (the command line, the plan's "added / updated specs").

Input::

    conda install pytorch torchvision pytorch-cuda=11.6 -c pytorch-nightly -c nvidia      (specs asked for)
      added / updated specs:
        - cudatoolkit=10.0                                                                 (a spec asked for)
    The following NEW packages will be INSTALLED:
      pytorch-nightly    pytorch/linux-64::pytorch-nightly-1.2.0.dev20190805+cpu-py3.7_cpu_0
      pytorch            pkgs/main::pytorch-1.4.0-py3.7_cuda101 --> pytorch::pytorch-1.5.0-py3.7_cpu_0   (UPDATED)
        pytorch-2.0.0.dev20221216  |      py3.8_cpu_0        84.2 MB  pytorch-nightly         (to be downloaded)

What a plan shows is what was to be installed (rank DOWNLOAD), not necessarily what is.
"""

from __future__ import annotations

import re

from .collect import Collector
from .lines import Line
from .lists import read_conda_build
from .model import DOWNLOAD, MESSAGE, Dist, InstallerEvent
from .tokens import dist_name, version_token

__all__ = ["CondaPlanReader"]

HOW = "conda plan"
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_HEADER_RE = re.compile(r"^\s*The following (?:NEW )?packages will be (?P<what>INSTALLED|UPDATED|DOWNGRADED|SUPERSEDED)")
_SPECS_RE = re.compile(r"^\s*added / updated specs:\s*$")
_SPEC_RE = re.compile(rf"^\s*-\s+(?P<name>{_NAME}?)(?P<spec>[=<>!~]\S*)?\s*$")
#: a plan's row: ``name  [channel/subdir::]name-version-build``, an update's ``name  old --> new``
_ROW_RE = re.compile(rf"^\s*(?P<name>{_NAME})\s+(?:\S+\s+-->\s+)?(?:[^\s:]+::)?(?P<spec>[^\s:]+)\s*$")
#: the table of what is to be downloaded: ``pytorch-2.0.0.dev20221216  |  py3.8_cpu_0  84.2 MB  pytorch-nightly``
_DOWNLOAD_RE = re.compile(r"^\s*(?P<name>[A-Za-z0-9][\w.-]*?)-(?P<version>\d[^\s|-]*)\s*\|\s*(?P<build>\S+)\s+"
                          r"\d[\d.]*\s*[KMG]?B\b")
#: a conda (mamba, micromamba) command that installs: the specs it names
_COMMAND_RE = re.compile(r"\b(?:conda|mamba|micromamba)\s+(?:install|create)\b(?P<args>.*)$")
#: a line a user put for rows they left out of a plan (``......``, ``…``, ``[...]``): the plan goes on after it
_ELIDED_RE = re.compile(r"^\s*(?:\[?(?:\.{3,}|…+)\]?\s*)$")
#: options of conda's command line that take a value (not a spec)
_VALUED = frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "--override-channels-from"})
#: conda's packages of pytorch under another name (the old nightly's)
_TORCH_NAMES = frozenset({"pytorch-nightly", "pytorch-nightly-cpu"})


def _asked(out: Collector, line: Line, name: str, spec: str | None) -> None:
    out.add("installer", InstallerEvent(action="asked", name=dist_name(name), detail=f"{name}{spec or ''}"), line,
            MESSAGE, HOW)


def _package(out: Collector, line: Line, name: str, version: str, build: str) -> None:
    canonical = "torch" if name in _TORCH_NAMES else dist_name(name)
    out.add_dist(Dist(name=canonical, version=version, build=build), line, DOWNLOAD, HOW)
    read_conda_build(canonical, build, line, out, DOWNLOAD, HOW)


class CondaPlanReader:
    """conda's plan and the specs asked for (see the module's docstring)."""

    def __init__(self) -> None:
        self._state = ""  # "plan" while a plan's rows follow its header, "specs" while the specs asked for do

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if "|" in body and (m := _DOWNLOAD_RE.match(body)) and version_token(m["version"]) == m["version"]:
            _package(out, line, m["name"], m["version"], m["build"])
            return True
        if "conda" in body or "mamba" in body:
            self._command(body, line, out)
        if _HEADER_RE.match(body):
            self._state = "plan"
            return True
        if _SPECS_RE.match(body):
            self._state = "specs"
            return True
        if self._state == "specs" and (m := _SPEC_RE.match(body)):
            _asked(out, line, m["name"], m["spec"])
            return True
        if self._state == "plan" and (m := _ROW_RE.match(body)) and self._row(m, line, out):
            return True
        if self._state == "plan" and _ELIDED_RE.match(body):
            return True
        self._state = ""
        return False

    @staticmethod
    def _row(m: re.Match[str], line: Line, out: Collector) -> bool:
        name, spec = m["name"], m["spec"]
        rest = spec[len(name) + 1:] if spec.startswith(name + "-") else spec
        version, _, build = rest.rpartition("-")
        if not build or version_token(version) != version:
            return False
        _package(out, line, name, version, build)
        return True

    @staticmethod
    def _command(body: str, line: Line, out: Collector) -> None:
        m = _COMMAND_RE.search(body)
        if m is None:
            return
        args = m["args"]
        if "`" in body[:m.start()]:  # a command quoted in a sentence ends where its quotes close
            args = args.split("`", 1)[0]
        words = args.replace("`", " ").split()
        skip = False
        for word in words:
            if skip or word.startswith("-"):
                skip = not skip and word in _VALUED
                continue
            spec = re.match(rf"^['\"]?(?P<name>{_NAME}?)(?P<spec>[=<>!~][^'\"]*)?['\"]?$", word)
            if spec is not None:
                _asked(out, line, spec["name"], spec["spec"])
