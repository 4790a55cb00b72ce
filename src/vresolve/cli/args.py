"""The parser and every flag: the only module that knows flag names. Flags become values here
(a Host, a Request, versions); a bad one is a one-line UsageError naming the flag (exit 2).
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import UsageError
from ..names import INSTALLERS, POLICIES, SHELLS, SOURCE_BUILD_MODES, TABLES
from .common import shown
from .shared import shared

TYPE_CHECKING = False  # typing is not imported at run time: --help stays cheap
if TYPE_CHECKING:
    from typing import Any


def _columns() -> int:
    """The columns ``shutil.get_terminal_size()`` gives (``$COLUMNS``, else the terminal behind stdout, else 80),
    found as it finds them without importing shutil, which with bz2, lzma and fnmatch costs more than building the
    parser (argparse imports it for the width of every formatter, and every ``add_argument`` makes one)."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, as wide as argparse makes it (:func:`_columns` less 2)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 2, one line) instead of printing usage and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        # a subcommand's parser names itself ("vresolve plan: ..."); the top one is the "vresolve: error:" already
        raise UsageError(f"{self.prog}: {message}" if " " in self.prog else message)


class _ProfileParser(_Parser):
    """For the flags of a ``--profiles`` entry: help and version flags (``-h``, ``--he``, ``-vh``,
    ``--version``) are refused, not printed (argparse prints, then calls exit)."""

    def _print_message(self, message: str, file: object = None) -> None:
        pass

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise UsageError("help and version flags are not plan flags")


MAX_SECONDS = 7 * 24 * 3600.0  # a week: past any real wait, and within what poll() and select() accept
PROBE_TIMEOUT = 10.0  # seconds nvidia-smi may take (detect's and plan's --timeout; lock and apply: at most this)


def seconds(text: str) -> float:
    """A ``--timeout`` value: a finite number of seconds, more than 0 and at most a week."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_SECONDS:  # also false for nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 and at most {MAX_SECONDS:g}, "
                                         f"got {shown(text)}")
    return value


def path(text: str) -> str:
    """A path flag: what the operating system can take as a path (no NUL byte, at most 4096 bytes)."""
    if "\0" in text or len(text.encode("utf-8", "surrogateescape")) > 4096 or not text:
        raise argparse.ArgumentTypeError(f"expected a path, got {shown(text)}"
                                         + (" (it holds a NUL byte)" if "\0" in text else ""))
    return text


def dir_path(text: str) -> str:
    """``--venv``, ``--src-dir``: a path (see :func:`path`) that no command reads as an option (no leading '-') and
    that is not the root directory."""
    import os

    text = path(text)
    if text.startswith("-"):
        raise argparse.ArgumentTypeError(f"{shown(text)} begins with '-', which uv and git would read as an option: "
                                         f"write {shown('./' + text)}")
    if os.path.normpath(os.path.abspath(text)) == os.path.abspath(os.sep):
        raise argparse.ArgumentTypeError(f"{shown(text)} is the root directory: expected a directory of its own")
    return text


def workers(text: str) -> int:
    """``--workers``: 1 to 64 parallel requests."""
    try:
        value = int(text) if len(text) < 10 else 0
    except ValueError:
        value = 0
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 64, got {shown(text)}")
    return value


def index_url(text: str) -> str:
    """``--index-url``: an http, https or file URL with a valid host and port (parsed by urllib.parse)."""
    from urllib.parse import urlsplit

    expected = "expected an http://, https:// or file:// URL such as 'https://example.org/simple/'"
    try:
        u = urlsplit(text)
        bad = (len(text) > 2048 or u.scheme not in ("http", "https", "file") or not text.isprintable()
               or any(c.isspace() for c in text)
               or (u.scheme != "file" and (not u.hostname or u.port == 0)) or (u.scheme == "file" and not u.path))
    except ValueError:  # an unclosed '[', a port that is not a number or past 65535
        bad = True
    if bad:
        raise argparse.ArgumentTypeError(f"invalid URL {shown(text)} ({expected})")
    return text


def _common() -> _Parser:
    p = _Parser(add_help=False)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print one JSON object (its \"schema\" names its shape: README's JSON section) on stdout")
    p.add_argument("--matrix", metavar="DIR", default=argparse.SUPPRESS, type=path,
                   help="use the compatibility matrix in DIR (default: $VRESOLVE_MATRIX, else the packaged one)")
    return p


def _quiet(p: argparse.ArgumentParser, what: str) -> None:
    """``-q``, on the commands where it leaves something out (``what``: what it leaves out)."""
    p.add_argument("-q", "--quiet", action="count", default=0, help=what)


def _verbose(p: argparse.ArgumentParser, what: str) -> None:
    """``-v``, on the commands where it adds something (``what``: what it adds)."""
    p.add_argument("-v", "--verbose", action="count", default=0, help=what)


COMMANDS = {  # name -> help; each command's flags are added by its function below
    "plan": "the newest vLLM stack that works on a machine, and how to install it",
    "lock": "the plan plus its whole transitive closure, with hashes (uv pip compile)",
    "apply": "run the plan (or a lock) on this machine: a new environment, verified, doctored and locked",
    "doctor": "diagnose this environment and/or an error log",
    "detect": "what this machine has, and which source answered each fact",
    "matrix": "check, browse and update the compatibility matrix",
    "fleet": "a cluster: its nodes (Ray, Kubernetes, detect files), one stack for all, its locks, its doctor",
    "site": "write a static page where one picks GPU, driver, Python and installer and sees the plan",
    "completion": "print a shell completion script: bash, zsh or fish",
}


def command_of(argv: list[str]) -> str | None:
    """The command named in ``argv`` (the first word that is one), or None."""
    words = iter(argv)
    for a in words:
        if a == "--matrix":  # the only option before the command that takes a value
            next(words, None)
        elif a in COMMANDS:
            return a
    return None


def build_parser(only: str | None = "*", *, profile: bool = False) -> argparse.ArgumentParser:
    """The parser; ``only``: the command whose flags are added (None: none, for ``vresolve --help``;
    ``"*"``: every command's). Adding every flag of every command costs more than the rest of --help.
    ``profile``: for the flags of a ``--profiles`` entry (help and version flags refused)."""
    common = _common()
    cls = _ProfileParser if profile else _Parser
    parser = cls(prog="vresolve", parents=[common],
                 description="Resolve a working NVIDIA driver / CUDA / PyTorch / vLLM stack.")
    parser.add_argument("-V", "--version", action="version", version=f"vresolve {__version__}")
    sub: _Commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=cls,  # type: ignore[assignment]
                                           action=_Commands)
    for name, help_text in COMMANDS.items():
        if only in ("*", name):
            _FLAGS[name](sub.add_parser(name, parents=[common], help=help_text), common)
        else:  # listed, not parsed: its flags are added only when it is the command at hand
            sub.list_only(name, help_text)
    return parser


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The commands: one only listed (not the command at hand, :func:`command_of`) gets its bare parser only when
    parsing reaches it, which it does not (``vresolve --help`` makes no parser but the top one: a parser costs as
    much to make as the rest of the help)."""

    def list_only(self, name: str, help_text: str) -> None:
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help_text))
        self._name_parser_map[name] = None

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        name = values[0]
        if name in self._name_parser_map and self._name_parser_map[name] is None:
            # the parser add_parser(name) makes (of no flags of its own), in its place: the choices keep their order
            self._name_parser_map[name] = self._parser_class(prog=f"{self._prog_prefix} {name}")
        super().__call__(parser, namespace, values, option_string)


def _plan_command(pl: argparse.ArgumentParser, common: _Parser) -> None:
    _add_plan_flags(pl)
    pl.add_argument("--timeout", type=seconds, default=PROBE_TIMEOUT,
                    help=f"--gpu auto: seconds to wait for nvidia-smi (default {PROBE_TIMEOUT:g})")
    pl.add_argument("--shell", choices=SHELLS, help="print only the environment exports")
    _quiet(pl, "print only what to run (the commands and exports), not the table, reasons and warnings")


def _lock_command(lk: argparse.ArgumentParser, common: _Parser) -> None:
    _add_plan_flags(lk)
    lk.add_argument("-o", "--output", metavar="DIR", default=".", type=path,
                    help="where to write the files (default: .); every file is replaced only once all are written: "
                         "when DIR cannot be written (not a directory, read-only, full) nothing changes, exit 2")
    lk.add_argument("--format", default=",".join(("requirements", "pylock", "conda", "env")),
                    help="requirements,pylock,conda,env (default: all four)")
    lk.add_argument("--check", action="store_true", help="exit 1 when the lock in DIR is out of date; write nothing")
    lk.add_argument("--force", action="store_true",
                    help="replace files in DIR that vresolve did not write (without it, lock replaces only its own "
                         "files, those with its '# vresolve-lock:' header, and refuses the rest, exit 2)")
    lk.add_argument("--index-url", type=index_url,
                    help="the index to resolve from (default: your pip/uv configuration)")
    lk.add_argument("--offline", action="store_true", help="only what uv's cache holds")
    lk.add_argument("--timeout", type=seconds, default=600.0, help="seconds uv may take (default 600)")
    lk.add_argument("--profiles", metavar="FILE", type=path,
                    help="lock every profile of FILE (name: [plan flags]) into DIR/<name>/ (see lockfiles/)")
    _quiet(lk, "no progress lines on stderr")


def _apply_command(ap: argparse.ArgumentParser, common: _Parser) -> None:
    _add_plan_flags(ap)
    ap.add_argument("--lock", metavar="FILE", dest="apply_lock", type=path,
                    help="install this lock (requirements.txt of vresolve lock) instead of planning, after checking "
                         "this machine against the machine it records (doctor --lock)")
    ap.add_argument("--allow-lock-options", action="store_true",
                    help="--lock: install a lock that holds lines other than pinned, hashed requirements (indexes, "
                         "links, other files, URLs, paths), shown before asking (default: refused)")
    ap.add_argument("-y", "--yes", action="store_true",
                    help="do not ask before changing anything (without it, apply asks on a terminal and fails "
                         "elsewhere)")
    ap.add_argument("--force", action="store_true",
                    help="replace an existing environment at --venv that vresolve made (its .vresolve-env marker; "
                         "it is put back if the new one fails); nothing else is ever replaced")
    ap.add_argument("--keep-failed", action="store_true",
                    help="keep the new environment when a step or a check fails (default: removed)")
    ap.add_argument("--lock-dir", metavar="DIR", type=path,
                    help="where to write the lock of what was installed (default: the environment's path + .lock)")
    ap.add_argument("--timeout", type=seconds, default=600.0,
                    help="seconds each check and doctor's import of the stack may take (default 600); nvidia-smi "
                         f"may take the lesser of this and {PROBE_TIMEOUT:g}")
    _quiet(ap, "no plan preview and no progress on stderr: only the outcome")
    _verbose(ap, "the installer's own output, line by line, on stderr")


def _doctor_command(doc: argparse.ArgumentParser, common: _Parser) -> None:
    doc.add_argument("--log", metavar="FILE", type=path, help="an error log or traceback to read ('-': standard input)")
    doc.add_argument("--interpreter", metavar="EXE", dest="env_python", type=path,
                     help="the environment's interpreter (default: $VIRTUAL_ENV's, else $CONDA_PREFIX's, "
                          "else this one)")
    doc.add_argument("--python", dest="doctor_python", help=argparse.SUPPRESS)  # refused: see _cmd_doctor
    doc.add_argument("--no-env", action="store_true", help="read only the log; do not import the stack")
    doc.add_argument("--lock", metavar="FILE", dest="lock_file", type=path,
                     help="check this machine against a lock's assumptions (requirements.txt, pylock.toml, ...)")
    doc.add_argument("--timeout", type=seconds, default=180.0,
                     help="seconds the import checks may take (default 180)")
    doc.add_argument("--format", choices=("text", "markdown"), default="text", dest="doctor_format",
                     help="markdown: a short comment to answer a bug report with (--json for JSON)")
    _quiet(doc, "leave out the list of what was checked: only the findings (or 'no problems found')")


def _detect_command(det: argparse.ArgumentParser, common: _Parser) -> None:
    det.add_argument("--torch", action="store_true",
                     help="also ask torch itself (import torch in a subprocess: its CUDA and arch list)")
    det.add_argument("--nvidia-smi", metavar="PATH", type=path, help="the nvidia-smi to run (default: the one on PATH)")
    det.add_argument("--timeout", type=seconds, default=PROBE_TIMEOUT,
                     help=f"seconds to wait for nvidia-smi (default {PROBE_TIMEOUT:g})")
    det.add_argument("--require-gpu", action="store_true",
                     help="exit 3 when no working NVIDIA GPU is found (none, or a driver installed but not working)")


def _matrix_command(mx: argparse.ArgumentParser, common: _Parser) -> None:
    msub = mx.add_subparsers(dest="matrix_command", metavar="ACTION", parser_class=_Parser)
    _quiet(msub.add_parser("validate", parents=[common],
                           help="check every row's schema and the cross-references; exit 2 on any problem"),
           "print nothing when the matrix is valid (the exit code says so)")
    show = msub.add_parser("show", parents=[common], help="print a table of the matrix, or a summary")
    show.add_argument("table", nargs="?", choices=TABLES, help="the table to print (default: a summary)")
    ref = msub.add_parser("refresh", parents=[common],
                          help="re-read wheel METADATA from the package index; print the diff")
    ref.add_argument("--package", action="append",
                     choices=("vllm", "torch", "torchvision", "torchaudio", "flashinfer-python", "xformers"),
                     help="only this package (repeatable; default: all)")
    ref.add_argument("--index-url", type=index_url,
                     help="the simple-API URL to read (default: from your pip/uv configuration)")
    ref.add_argument("--apply", action="store_true", help="write the changed files (atomically)")
    ref.add_argument("--workers", type=workers, default=8, help="parallel metadata reads (1 to 64; default 8)")
    ref.add_argument("--torch-variants", action="store_true",
                     help="also read PyTorch's index (/whl/<variant>) and compare its variants with torch.yaml")
    ref.add_argument("--since", metavar="VERSION", help="only releases from VERSION on (the rest of the file is kept)")
    ref.add_argument("--offline", action="store_true", help="only what the cache holds (no network)")
    ref.add_argument("--timeout", type=seconds, default=30.0, help="seconds per HTTP request (default 30)")
    _quiet(ref, "no progress and no summary on stderr (the diff still goes to stdout), and no index warnings")
    _grid_flags(msub.add_parser("grid", parents=[common], help="the newest vLLM per GPU capability and driver "
                                                                 "branch, as a picture, an HTML table or text"))


def _grid_flags(p: argparse.ArgumentParser) -> None:
    """``matrix grid`` and (with ``site``) ``site``: the support grid's flags."""
    site = p.prog.endswith(" site")
    p.add_argument("-o", "--output", metavar="DIR" if site else "FILE", type=path, required=site,
                   help="the directory to write index.html into" if site else
                        "FILE.png, FILE.svg (matplotlib: the extra vresolve[grid]) or FILE.html (default: a table "
                        "on stdout)")
    p.add_argument("--python", metavar="X.Y[,X.Y...]" if site else "X.Y",
                   help="the Pythons to plan for (default: every one the matrix has wheels for)" if site else
                        "the Python to plan for (default: this interpreter's)")
    if site:
        p.add_argument("--installer", default=",".join(INSTALLERS),
                       help=f"the installers to offer (default: {','.join(INSTALLERS)})")
    p.add_argument("--platform", choices=("linux-x86_64", "linux-aarch64"), default="linux-x86_64",
                   help="default: linux-x86_64")
    p.add_argument("--policy", "--driver-policy", dest="driver_policy", choices=POLICIES, default="minor-compat",
                   help="the driver policy (default: minor-compat)")
    p.add_argument("--family", metavar="NAME[,NAME...]",
                   help="only these architectures (gpus.yaml's families: hopper, ampere, ...; default: all)")
    p.add_argument("--workers", type=workers, help="processes computing the plans (default: one per core)")
    _quiet(p, "no progress on stderr" + (" and no summary line" if site else ""))


def _site_command(st: argparse.ArgumentParser, common: _Parser) -> None:
    _grid_flags(st)


def _fleet_command(fl: argparse.ArgumentParser, common: _Parser) -> None:
    fsub = fl.add_subparsers(dest="fleet_command", metavar="ACTION", parser_class=_Parser)
    det = fsub.add_parser("detect", parents=[common], help="an inventory (vresolve.fleet/1) of a cluster's nodes")
    src = det.add_mutually_exclusive_group(required=True)
    src.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                     help="run detect on every alive node of a Ray cluster (default address: RAY_ADDRESS or auto)")
    src.add_argument("--k8s", nargs="?", const="", metavar="FILE|-",
                     help="read nodes' GPU Feature Discovery labels: kubectl get nodes -o json output (FILE or -), "
                          "or the live cluster of your kubeconfig when no FILE is given")
    src.add_argument("--from", dest="from_files", nargs="+", metavar="FILE", type=path,
                     help="vresolve detect --json files (or inventories) collected by other means")
    det.add_argument("--timeout", type=seconds, default=60.0, help="seconds each Ray node may take (default 60)")
    det.add_argument("--python", metavar="X.Y", help="--k8s: the Python the nodes' images run (default: this one's)")
    det.add_argument("-o", "--output", metavar="FILE", type=path, help="write the inventory to FILE")
    for name, what in (("plan", "the newest stack valid on every node, per group, and what holds it back"),
                       ("lock", "the common stack's lock per CPU architecture, and a Ray runtime_env")):
        sp = fsub.add_parser(name, parents=[common], help=what)
        sp.add_argument("inventory", nargs="+", metavar="INVENTORY", type=path,
                        help="vresolve.fleet/1 inventories or vresolve detect --json files")
        sp.add_argument("--vllm", metavar="SPEC", help="a vLLM version or range")
        sp.add_argument("--torch", metavar="SPEC", help="a torch version or range")
        sp.add_argument("--variant", metavar="cuXYZ|cpu", help="torch's CUDA variant")
        sp.add_argument("--python", metavar="X.Y", help="the one Python of the fleet (default: the one most nodes run)")
        sp.add_argument("--glibc", metavar="X.Y",
                        help="the one glibc of the fleet, its image's (default: each node's as detected; Kubernetes "
                             "nodes record none: lock then finds the lowest manylinux with every wheel)")
        sp.add_argument("--driver-policy", choices=POLICIES, default="minor-compat", help="as for plan")
        sp.add_argument("--pypi-only", action="store_true", help="as for plan")
        sp.add_argument("--allow-unknown-glibc", action="store_true", help="as for plan")
        sp.add_argument("--jetson-index", metavar="URL",
                        help="the index of NVIDIA's JetPack-specific wheels, for the fleet's Jetsons (planned apart)")
    lk = fsub.choices["lock"]
    lk.add_argument("-o", "--output", metavar="DIR", default=".", type=path,
                    help="DIR/<platform>/ gets each lock, DIR/runtime_env.json the Ray runtime_env (default: .)")
    lk.add_argument("--index-url", type=index_url, help="the index to resolve from (default: your pip/uv configuration)")
    lk.add_argument("--offline", action="store_true", help="only what uv's cache holds")
    lk.add_argument("--timeout", type=seconds, default=600.0, help="seconds uv may take per lock (default 600)")
    _quiet(lk, "no progress lines on stderr")
    doc = fsub.add_parser("doctor", parents=[common], help="doctor's environment checks on every node of a Ray cluster")
    doc.add_argument("--ray", nargs="?", const="", required=True, metavar="ADDRESS", help="the Ray cluster")
    doc.add_argument("--lock", metavar="FILE|DIR", dest="lock_file", type=path,
                     help="a lock every node must match (a requirements.txt of vresolve lock), or fleet lock's "
                          "DIR: each node against DIR/<its platform>/requirements.txt")
    doc.add_argument("--timeout", type=seconds, default=180.0, help="seconds each node may take (default 180)")


def _completion_command(c: argparse.ArgumentParser, common: _Parser) -> None:
    c.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete vresolve in")


_FLAGS = {"plan": _plan_command, "lock": _lock_command, "apply": _apply_command, "doctor": _doctor_command, "detect": _detect_command,
          "matrix": _matrix_command, "fleet": _fleet_command,
          "site": _site_command, "completion": _completion_command}


def _add_plan_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", default="auto", metavar="auto|none|NAME[,NAME...]|sm_XY",
                   help="auto: detect this machine (default); none: the CPU backend; names or sm_XY: another machine")
    p.add_argument("--driver", metavar="VER", help="the NVIDIA driver to plan for (default: detected, or unknown)")
    p.add_argument("--python", metavar="X.Y", help="the Python to plan for (default: this interpreter's)")
    p.add_argument("--platform", choices=("linux-x86_64", "linux-aarch64"), help="default: this machine's")
    p.add_argument("--glibc", metavar="X.Y",
                   help="the glibc to plan for (default: detected with --gpu auto, else unknown); wheels whose "
                        "manylinux floor is newer are rejected")
    p.add_argument("--allow-unknown-glibc", action="store_true",
                   help="with a known glibc, also use builds whose glibc floor the matrix does not record (vLLM's "
                        "and PyTorch's own indexes) as first choice; the plan otherwise sets them aside and says so")
    p.add_argument("--vllm", metavar="SPEC", help="a vLLM version or range: 0.10.1, '>=0.9,<0.11'")
    p.add_argument("--torch", metavar="SPEC", help="a torch version or range")
    p.add_argument("--variant", metavar="cuXYZ|cpu", help="torch's CUDA variant")
    p.add_argument("--installer", choices=INSTALLERS, default="uv", help="default: uv")
    p.add_argument("--driver-policy", choices=POLICIES, default="minor-compat",
                   help="minor-compat (default): CUDA minor-version compatibility with the PTX rule; "
                        "toolkit: each CUDA's own minimum driver")
    p.add_argument("--source-build", choices=SOURCE_BUILD_MODES, default="auto",
                   help="auto (default): wheels, or a source build when no wheel covers the GPU; never; always")
    p.add_argument("--keep-torch", action="store_true",
                   help="keep the torch installed in this environment: a vLLM wheel that pins exactly that torch "
                        "(same CUDA major) when one does, else a source build against it")
    p.add_argument("--src-dir", default="vllm-src", metavar="DIR", type=dir_path, help="where a source build clones vLLM")
    p.add_argument("--precompiled", action="store_true",
                   help="a checkout for changing vLLM's Python code only: VLLM_USE_PRECOMPILED=1, editable install")
    p.add_argument("--pypi-only", action="store_true",
                   help="only wheels from your configured index (when PyTorch's and vLLM's own indexes are out of reach)")
    p.add_argument("--venv", metavar="DIR", type=dir_path, help="the environment to create (default: .venv-vllm; conda: vllm-VERSION)")
    # Jetson (resolve/jetson.py): the JetPack of a board named with --gpu, and the index of NVIDIA's JetPack wheels
    p.add_argument("--jetpack", metavar="X.Y", help="a Jetson's JetPack (default: from its L4T release, detected)")
    p.add_argument("--jetson-index", metavar="URL",
                   help="the index of NVIDIA's JetPack-specific wheels, written into a Jetson's instructions")


def _opt(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def _spec(flag: str, text: str | None) -> Any:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not text:
        return SpecifierSet()
    raw = text.strip()
    if raw[:1].isdigit():
        raw = "==" + raw
    expected = "expected e.g. '0.10.1' or '>=0.9,<0.11'"
    if len(raw) > 200:  # versions of thousands of digits: int() refuses them, and no release is one
        raise UsageError(f"{flag}: invalid version or range {shown(text)} ({expected}, at most 200 characters)")
    try:
        return SpecifierSet(raw)
    except InvalidSpecifier:
        raise UsageError(f"{flag}: invalid version or range {shown(text)} ({expected})") from None


def plan_inputs(args: argparse.Namespace, detected: Any = None) -> tuple[Any, Any, Any, str]:
    """(matrix, host, request, detected_by) from the plan flags; detection only for --gpu auto (``detected``: the
    machine :func:`kept_auto_plan` already probed)."""
    from msgspec.structs import replace

    from ..detect import detect_interpreter
    from ..resolve import Request
    from .targets import parse_glibc, target_host

    m = _load(args)
    _check_values(args)
    glibc = parse_glibc(args.glibc) if args.glibc else None
    request = Request(vllm=_spec("--vllm", args.vllm), torch=_spec("--torch", args.torch), variant=args.variant,
                      driver_policy=args.driver_policy, pypi_only=args.pypi_only, own_index=True,
                      allow_unknown_glibc=getattr(args, "allow_unknown_glibc", False), **_jetson_flags(args))
    if request.jetpack is not None:
        from ..resolve.jetson import find_jetpack

        if find_jetpack(m, request.jetpack) is None:
            known = ", ".join(str(j.version) for j in m.jetpacks) or "none"
            raise UsageError(f"--jetpack: JetPack {shown(request.jetpack)} is not in the matrix (expected one of: "
                             f"{known})")
    gpu = args.gpu.strip()
    if gpu.lower() == "auto":
        host, detected_by = _this_machine(args, m, glibc, detected)
        from ..resolve.jetson import named_by_capability, with_board_gpu

        host = with_board_gpu(host, m)  # a Jetson without NVML: its module, named by the board
        host = named_by_capability(host, m)  # a GPU of a capability only a Jetson has, by a name the matrix lacks
        if not host.gpus:
            request = replace(request, cpu=True)
        return m, host, request, detected_by
    if args.keep_torch:
        raise UsageError("--keep-torch: keeps the torch of this machine's environment, so it needs --gpu auto")
    host = target_host(m, gpus=gpu if gpu.lower() != "none" else "none", driver=args.driver, python=args.python,
                       platform=args.platform, base=shared(("interpreter",), detect_interpreter), glibc=glibc)
    if not host.gpus:
        return m, host, replace(request, cpu=True), "--gpu none: the CPU backend"
    return m, host, request, "given on the command line"


def _jetson_flags(args: argparse.Namespace) -> dict[str, Any]:
    """--jetpack and --jetson-index, checked: a JetPack version, an http(s) URL (both land in hints and commands)."""
    import re

    jetpack, index = _opt(args, "jetpack"), _opt(args, "jetson_index")
    if jetpack is not None and not re.fullmatch(r"\d{1,2}\.\d{1,2}(?:\.\d{1,2})?", jetpack):
        raise UsageError(f"--jetpack: invalid JetPack version {shown(jetpack)} (expected X.Y such as '6.2')")
    if index is not None and not re.fullmatch(r"https?://[A-Za-z0-9.-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~%/+-]*)?", index):
        raise UsageError(f"--jetson-index: invalid URL {shown(index)} (expected an http(s) URL of a package index)")
    return {"jetpack": jetpack, "jetson_index": index.rstrip("/") if index else None}


def _check_values(args: argparse.Namespace) -> None:
    """Every value flag parsed up front, so a bad one is a one-line error before anything runs."""
    from ..values import parse_variant
    from .targets import parse_driver, parse_platform, parse_python

    if args.variant:
        try:
            parse_variant(args.variant)
        except ValueError:
            raise UsageError(f"--variant: invalid variant {shown(args.variant)} (expected 'cpu' or 'cuXYZ' such as "
                             "'cu128')") from None
    if args.driver:
        parse_driver(args.driver)
    if args.python:
        parse_python(args.python)
    if args.platform:
        parse_platform(args.platform)


def probe_timeout(args: argparse.Namespace) -> float:
    """Seconds nvidia-smi may take: plan's ``--timeout``; lock's and apply's ``--timeout`` (uv's, the checks') only
    when it is less than the default."""
    given = _opt(args, "timeout")
    if given is None:
        return PROBE_TIMEOUT
    return float(given) if _opt(args, "command") == "plan" else min(float(given), PROBE_TIMEOUT)


def refuse_broken_driver(host: Any) -> None:
    """``--gpu auto`` on a machine whose driver is installed but not working, or whose GPUs have no driver: exit 3
    with the cause and what to do, never a plan for the CPU backend."""
    from ..errors import DetectionError

    d = host.driver
    if not d.broken:
        return
    said = d.failure or "no probe answered"
    timed_out = "timed out after" in said
    if d.state == "not-installed":
        head = f"NVIDIA GPUs are present but no NVIDIA driver is installed ({said})"
        fix = ["install the NVIDIA driver (your distribution's driver package, or NVIDIA's), reboot, and run this "
               "again; check with nvidia-smi"]
    elif d.nvml_library_mismatch:
        kernel = d.version if d.source in ("/sys/module/nvidia/version", "/proc/driver/nvidia/version") else None
        versions = ", ".join(x for x in (f"kernel module {kernel}" if kernel else "",
                                         f"library {d.library_version}" if d.library_version else "") if x)
        head = (f"the NVIDIA driver is installed but not working: driver/library version mismatch"
                f"{f' ({versions})' if versions else ''}: {said}")
        fix = ["reboot after a driver update (the running kernel module is the old one), or reload the modules: "
               "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"]
    else:
        head = f"the NVIDIA driver is installed but not working: {said}"
        fix = (["nvidia-smi hangs: the driver or a GPU is stuck (dmesg shows Xid errors); reboot, or raise --timeout "
                "if it is only slow"] if timed_out else
               ["load the module (sudo modprobe nvidia; dmesg says why it does not load), or reboot after a driver or "
                "kernel update (the module is rebuilt for the new kernel by DKMS)"])
    if host.platform.container and d.state == "broken":
        fix.append(f"in a container ({host.platform.container}): start it with the GPUs (docker run --gpus all, "
                   "the NVIDIA container toolkit)")
    lines = [head]
    if d.evidence:
        lines.append("evidence: " + "; ".join(d.evidence[:6]) + ("; ..." if len(d.evidence) > 6 else ""))
    lines += [f"to fix: {f}" for f in fix]
    lines.append("or plan anyway: --gpu NAME --driver VER (this machine once its driver works), or --gpu none "
                 "(vLLM's CPU backend); vresolve detect shows what was found")
    raise DetectionError("\n  ".join(lines))


def kept_auto_plan(args: argparse.Namespace) -> tuple[Any, int | None]:
    """``plan --gpu auto`` from the plan output cache, keyed by the machine detected: (the detected host, for the
    plan to use on a miss, or None; the exit code of the kept answer, written out, or None). Only when vresolve's
    entry point keeps answers (:func:`vresolve._cache.late_key_expected`), never with ``--keep-torch`` (it reads
    the installed environment), and a machine is keyed only when detection needed nothing from the matrix (every
    GPU's capability probed) and its driver is not broken (exit 3): else it is computed, never kept."""
    from .._cache import late_key_expected, late_plan_output, replay

    if args.gpu.strip().lower() != "auto" or args.keep_torch or not late_key_expected():
        return None, None
    from ..detect import detect_host

    try:
        host = detect_host(_overrides(args), installed=False)
    except Exception:  # noqa: BLE001  # a flag or variable refused: the usual path says so, in its order
        return None, None
    if host.driver.broken or any(g.compute_capability is None for g in host.gpus):
        return host, None
    hit = late_plan_output(repr(host))  # a frozen Struct's repr: every fact detection found
    if hit is None:
        return host, None
    code, out, err = hit
    replay(out, err)
    return host, code


def _overrides(args: argparse.Namespace) -> Any:
    """What ``--gpu auto`` detection takes from the environment and the flags that name a fact."""
    from msgspec.structs import replace

    from ..detect import Overrides

    return replace(Overrides.from_env(driver=args.driver, python=args.python, platform=args.platform),
                   smi_timeout=probe_timeout(args))


def _this_machine(args: argparse.Namespace, m: Any, glibc: Any, detected: Any = None) -> tuple[Any, str]:
    """``--gpu auto``: the detected machine (the flags override what they name), and who said so."""
    from msgspec.structs import replace

    from ..detect import detect_host, fill_capabilities
    from .targets import parse_python

    host = detected if detected is not None else detect_host(_overrides(args), installed=args.keep_torch)
    host = fill_capabilities(host, m)
    refuse_broken_driver(host)
    if args.python:
        host = replace(host, python=parse_python(args.python))
    if glibc is not None:
        host = replace(host, platform=replace(host.platform, glibc=glibc))
    if not host.gpus:
        return host, "no NVIDIA GPU found: planning the CPU backend (vresolve detect says why)"
    if any(g.compute_capability is None for g in host.gpus):
        unknown = ", ".join(g.name for g in host.gpus if g.compute_capability is None)
        raise UsageError(f"--gpu auto: the compute capability of {unknown} is unknown; name it: --gpu sm_XY")
    sources = sorted({g.source for g in host.gpus if g.source} | ({host.driver.source} if host.driver.source else set()))
    return host, "detected: " + (", ".join(sources) or "no source recorded")


def _load(args: argparse.Namespace) -> Any:
    from ..matrix import load_matrix

    path = _opt(args, "matrix")
    return shared(("matrix", path), lambda: load_matrix(path))
