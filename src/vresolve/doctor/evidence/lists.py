"""Package lists: ``pip list`` / ``uv pip list`` tables, ``pip freeze``, collect_env's ``[pip3]`` and ``[conda]``
lines, and ``conda list``.

Input::

    Package            Version       Editable project location
    ------------------ ------------- -------------------------
    torch              2.5.1+cu121
    vllm               0.6.4.dev1    /home/me/vllm
    [pip3] torch==2.9.0+cu128
    [conda] pytorch                   2.5.1           py3.11_cuda12.4_cudnn9.1.0_0    pytorch
    torch @ file:///wheels/torch-2.1.2%2Bcu121-cp310-cp310-linux_x86_64.whl
    # Name                    Version                   Build  Channel
    pytorch-cuda              12.4                 hc786d27_7    pytorch
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from .collect import Collector
from .lines import Line
from .model import DERIVED, PROSE, REPORT, Dist
from .tokens import dist_name, python_minor, version_token

__all__ = ["ListReader", "read_conda_build", "wheel_version"]

_BRACKET_RE = re.compile(r"^\s*\[(pip3?|conda|uv)\]\s+(.*)$")
_FREEZE_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[\w,.-]*\])?\s*===?\s*(\S+)\s*$")
_DIRECT_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[\w,.-]*\])?\s+@\s+(\S+)\s*$")
_EDITABLE_RE = re.compile(r"^\s*-e\s+(\S+?)#egg=([A-Za-z0-9._-]+)")
_ROW_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\S+)(?:\s+(\S.*?))?\s*$")
_WHEEL_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*)-(\d[^-]*?)(?:-[^-/]+)*\.(?:whl|tar\.gz|zip|tar\.bz2|conda)$")
# a conda build string: py3.11_cuda12.4_cudnn9.1.0_0, h955ad1f_0, py311h06a4308_0, pypi_0, cuda
_CONDA_BUILD_RE = re.compile(r"^(?:py\d[\w.]*|h[0-9a-f]{7}_\d+|pypi_0|cuda|cpu|\w+_\d+)$")
_CONDA_CUDA_RE = re.compile(r"(?:^|_)cuda(\d+\.\d+)")
#: a build string's compact CUDA (Anaconda's ``cuda100py37h53c1284_0``, conda-forge's ``cuda118_py311h...``): 10.0, 11.8
_CONDA_CUDA_COMPACT_RE = re.compile(r"(?:^|_)cuda(\d\d?)(\d)(?:py|_|$)")
_CONDA_PY_RE = re.compile(r"^py(\d)\.?(\d{1,2})")


def wheel_version(url: str) -> tuple[str, str] | None:
    """(name, version) of a wheel or sdist file name in a path or URL (``torch-2.1.2%2Bcu121-cp310-...whl``)."""
    m = _WHEEL_RE.search(unquote(url).rstrip("/").rsplit("/", 1)[-1])
    return (dist_name(m[1]), m[2]) if m else None


def _conda_rest(rest: str | None) -> list[str]:
    """A conda row's build and channel, without old conda's features column (``[cpuonly]``) and a paste's markdown
    (``**``) after the build."""
    return [w.rstrip("*") for w in (rest or "").split() if not (w.startswith("[") and w.endswith("]"))]


def _conda_row(m: re.Match[str]) -> bool:
    """A ``conda list`` row without its header: ``pytorch  2.5.1  py3.11_cuda12.4_cudnn9.1.0_0  pytorch``."""
    rest = _conda_rest(m[3])
    return 1 <= len(rest) <= 2 and bool(_CONDA_BUILD_RE.match(rest[0])) and version_token(m[2]) == m[2]


def read_conda_build(name: str, build: str, line: Line, out: Collector, rank: int = DERIVED,
                     how: str = "conda list") -> None:
    """What a conda build string says: pytorch's ``py3.11_cuda12.4_cudnn9.1.0_0`` (CUDA 12.4, Python 3.11),
    ``cuda100py37h53c1284_0`` (CUDA 10.0), ``py3.11_cpu_0`` or conda-forge's ``cpu_py311h...`` (a CPU build).
    ``rank``: a plan's packages were to be installed (DOWNLOAD), a list's are (DERIVED)."""
    if name != "torch":
        return
    m = _CONDA_CUDA_RE.search(build)
    compact = _CONDA_CUDA_COMPACT_RE.search(build)
    if m:
        out.add("torch_cuda", m[1], line, rank, how)
    elif compact:
        out.add("torch_cuda", f"{compact[1]}.{compact[2]}", line, rank, how)
    elif "cpu" in build.split("_"):
        out.add("torch_cuda", None, line, rank, how)
    m = _CONDA_PY_RE.match(build)
    if m:
        out.add("python", f"{m[1]}.{m[2]}", line, max(rank, DERIVED), how)


class ListReader:
    """Rows of package lists, and the headers that say a table of them follows."""

    def __init__(self) -> None:
        self._table = ""  # "pip" | "conda" while a table's rows follow its header
        self._shown = ""  # the distribution `pip show` named on the line before

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if "[" in body and (m := _BRACKET_RE.match(body)):
            return self._bracket(m[1], m[2], line, out)
        if self._header(line.lower, out):
            return True
        if (m := _ROW_RE.match(body)) and (self._table or _conda_row(m)):
            return self._row(m, line, out, self._table or "conda")
        self._table = ""
        return self._pip_show(body, line, out) or self._freeze(body, line, out)

    def _pip_show(self, body: str, line: Line, out: Collector) -> bool:
        """``pip show torch``: ``Name: torch`` then ``Version: 2.1.0+cu121``."""
        if body.startswith("Name: "):
            self._shown = body[6:].strip()
            return bool(self._shown)
        if body.startswith("Version: ") and self._shown and (version := version_token(body[9:])):
            out.kinds.add("pip_list")
            out.add_dist(Dist(name=dist_name(self._shown), version=version), line, REPORT, "pip show")
            self._shown = ""
            return True
        return False

    def _header(self, lower: str, out: Collector) -> bool:
        words = lower.split()
        if words[:2] == ["package", "version"] or words[:3] == ["#", "name", "version"]:
            self._table = "conda" if words[0] == "#" else "pip"
            out.kinds.add("conda_list" if self._table == "conda" else "pip_list")
            return True
        if lower.startswith("# packages in environment at"):
            self._table = "conda"
            out.kinds.add("conda_list")
            return True
        return bool(self._table) and bool(words) and set(lower.replace(" ", "")) == {"-"}

    def _bracket(self, tool: str, rest: str, line: Line, out: Collector) -> bool:
        if tool == "conda":
            row = _ROW_RE.match(rest)
            return row is not None and self._row(row, line, out, "conda")
        m = _FREEZE_RE.match(rest)
        if not m:
            return False
        out.kinds.add("pip_list")
        self._dist(m[1], m[2], line, out, REPORT, "pip list")
        return True

    def _row(self, m: re.Match[str], line: Line, out: Collector, table: str) -> bool:
        name, version, rest = m[1], m[2], _conda_rest(m[3]) if table == "conda" else (m[3] or "").split()
        if version_token(version) != version.lstrip("v"):
            return False
        how = "conda list" if table == "conda" else "pip list"
        out.kinds.add("conda_list" if table == "conda" else "pip_list")
        canonical = dist_name(name)
        if table == "conda" and canonical == "python":
            out.add("python", version, line, REPORT, how)
            return True
        location = rest[0] if rest and rest[0][:1] in ("/", "~", ".") or rest and rest[0][1:3] == ":\\" else None
        build = rest[0] if rest and not location else None
        out.add_dist(Dist(name=canonical, version=version, build=build, location=location), line, REPORT, how)
        if build:
            read_conda_build(canonical, build, line, out)
        return True

    def _freeze(self, body: str, line: Line, out: Collector) -> bool:
        if "==" in body and (m := _FREEZE_RE.match(body)):
            rank = REPORT if re.search(r"\S==\S", body) else PROSE
            out.kinds.add("pip_list")
            self._dist(m[1], m[2], line, out, rank, "pip freeze")
            return True
        if " @ " in body and (m := _DIRECT_RE.match(body)):
            wheel = wheel_version(m[2])
            version = wheel[1] if wheel and wheel[0] == dist_name(m[1]) else None
            out.kinds.add("pip_list")
            out.add_dist(Dist(name=dist_name(m[1]), version=version, location=m[2]), line, REPORT, "pip freeze")
            return True
        if body.lstrip().startswith("-e ") and (m := _EDITABLE_RE.match(body)):
            out.kinds.add("pip_list")
            out.add_dist(Dist(name=dist_name(m[2]), location=m[1]), line, REPORT, "pip freeze")
            return True
        return False

    @staticmethod
    def _dist(name: str, version: str, line: Line, out: Collector, rank: int, how: str) -> None:
        canonical = dist_name(name)
        token = version_token(version)
        if canonical == "python" and token:
            out.add("python", python_minor(token) if len(token.split(".")) > 3 else token, line, rank, how)
        elif token:
            out.add_dist(Dist(name=canonical, version=token), line, rank, how)
