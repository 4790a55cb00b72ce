"""The support grid: every GPU capability in the matrix x every driver branch x Python -> what ``vresolve
plan`` answers. ``vresolve matrix grid`` draws it; ``vresolve site`` writes a static page of the plans.

Every cell is the answer of the plan command itself (:func:`plan_answer` runs ``vresolve plan --json``
in-process), so the grid and the page say what ``vresolve plan`` says, not what a second table says.
Rows are the compute capabilities of ``gpus.yaml``'s architectures that have a GPU on the platform;
columns are the NVIDIA driver branches of the matrix's driver floors (each CUDA toolkit's and update's
minimum driver and each major's minor-version-compatibility floor), each at the newest floor the matrix
records in that branch: a driver of that branch at least that new.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError

__all__ = ["Row", "Column", "Answer", "Grid", "rows", "columns", "pythons", "plan_answer", "compute_answers",
           "grid_from_answers"]


@dataclass(frozen=True)
class Row:
    """One compute capability of one architecture; ``names``: its GPUs, the first one planned for."""

    family: str
    capability: str
    names: tuple[str, ...]
    jetpack: str | None = None  # a Jetson on L4T's own CUDA: planned for this JetPack, from the Jetson index


@dataclass(frozen=True)
class Column:
    """A driver branch (``570``) at ``driver``, the newest floor the matrix records in it; ``cuda``:
    the toolkits (and minor-compatibility majors) whose floors lie in the branch."""

    branch: int
    driver: str
    cuda: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """``vresolve plan --json`` for one input: its exit code, its object and (bash) exports."""

    argv: tuple[str, ...]
    code: int
    plan: dict[str, Any]
    exports: str = ""


@dataclass(frozen=True)
class Grid:
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    python: str
    platform: str
    policy: str
    revision: str
    #: (capability, driver) -> (vLLM version or None, "wheel" | "source" | "none")
    cells: dict[tuple[str, str], tuple[str | None, str]] = field(default_factory=dict)

    def releases(self) -> list[str]:
        """The vLLM releases in the grid, oldest first."""
        from packaging.version import Version

        return sorted({v for v, _ in self.cells.values() if v}, key=Version)


def rows(m: Any, platform: str, families: Sequence[str] | None = None) -> tuple[Row, ...]:
    """The capabilities with a GPU on ``platform`` (Jetson modules only on linux-aarch64), by architecture;
    ``families``: only these architectures."""
    out = []
    for arch in m.architectures:
        if families is not None and arch.family not in families:
            continue
        for cc in arch.compute_capabilities:
            names = tuple(g.name for g in m.gpus if g.compute_capability == cc
                          and (platform == "linux-aarch64" or g.segment != "jetson"))
            # the GPU planned for: one whose name --gpu takes as one name (no comma); one the family's first driver
            # covers before a later part with its own (an L4 or an RTX PRO 6000 is not the first of its family)
            own = {g.name for g in m.gpus if g.driver is not None}
            plannable = sorted((n for n in names if "," not in n), key=lambda n: n in own)
            if plannable:
                out.append(Row(arch.family, str(cc), (plannable[0], *[n for n in names if n != plannable[0]]),
                               _jetson_index_jetpack(m, plannable[0])))
    if not out:
        raise UsageError(f"no GPU of {', '.join(families or ('the matrix',))} runs on {platform}")
    return tuple(out)


def _jetson_index_jetpack(m: Any, gpu: str) -> str | None:
    """For a Jetson module on L4T's own CUDA (Orin), the newest JetPack whose path of the Jetson index has vLLM wheels
    for it (its row is planned for that JetPack, driver aside: a Jetson's driver is L4T's); None otherwise."""
    row = m.find_gpu(gpu)
    if row is None or row.segment != "jetson":
        return None
    found = [v for w in m.jetson_wheels if row.name in w.modules for v in w.jetpacks]
    return str(max(found)) if found else None


def columns(m: Any) -> tuple[Column, ...]:
    """Driver branches from the matrix's floors (Linux), each at its newest recorded floor: those of the CUDA majors
    some torch build of the matrix is built for (older toolkits, CUDA 9 and 10, are there for doctor's judgement of
    old environments, not for plans)."""
    floors: list[tuple[Any, str]] = []
    built = [v.cuda.major for r in m.torch for v in r.variants if v.cuda is not None]
    for t in (t for t in m.toolkits if not built or t.version.major >= min(built)):
        label = f"{t.version.major}.{t.version.minor}"
        if t.min_driver.linux is not None:
            floors.append((t.min_driver.linux, label))
        floors.extend((u.min_driver.linux, label) for u in t.updates if u.min_driver.linux is not None)
    floors.extend((c.minor_compat_driver.linux, f"{c.major}.x") for c in m.cuda_majors
                  if c.minor_compat_driver.linux is not None)
    branches: dict[int, list[tuple[Any, str]]] = {}
    for d, label in floors:
        branches.setdefault(d.key[0], []).append((d, label))
    out = []
    for b in sorted(branches):
        newest = max(d for d, _ in branches[b])
        labels = tuple(dict.fromkeys(label for _, label in sorted(branches[b], key=lambda x: x[0])))
        out.append(Column(b, str(newest), labels))
    return tuple(out)


def pythons(m: Any) -> tuple[str, ...]:
    """The Pythons (X.Y) that torch ships wheels for and some vLLM release accepts, oldest first."""
    from packaging.version import Version

    found = {Version(f"{p.major}.{p.minor}") for t in m.torch for p in t.python}
    ok = [p for p in found if any(v.requires_python is None or Version(f"{p}.0") in v.requires_python
                                  for v in m.vllm)]
    return tuple(str(p) for p in sorted(ok))


# the index a Jetson row is planned with: only the plan's stack is read, never this URL (.invalid: RFC 2606)
_NO_INDEX = "https://jetson-index.invalid"


def plan_argv(gpu: str, driver: str, python: str, *, installer: str, platform: str, policy: str,
              matrix: str | None, jetpack: str | None = None) -> tuple[str, ...]:
    argv = ["plan", "--gpu", gpu, "--driver", driver, "--python", python, "--platform", platform,
            "--installer", installer, "--driver-policy", policy]
    if jetpack is not None:
        argv += ["--jetpack", jetpack, "--jetson-index", _NO_INDEX]
    if matrix:
        argv += ["--matrix", matrix]
    return tuple(argv)


def _run(argv: Sequence[str]) -> tuple[int, str, str]:
    from .commands import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def plan_answer(argv: Sequence[str], *, exports: bool = False) -> Answer:
    """``vresolve ARGV --json`` run in this process (the plan command itself), and with ``exports`` its
    ``--shell bash`` output too; a usage error (exit 2) is raised as one."""
    code, out, err = _run([*argv, "--json"])
    if code not in (0, 1):
        raise UsageError(f"vresolve {' '.join(argv)}: exit {code}: {err.strip() or out.strip()}")
    shell = ""
    if exports and code == 0:
        scode, shell, serr = _run([*argv, "--shell", "bash"])
        if scode != 0:
            raise UsageError(f"vresolve {' '.join(argv)} --shell bash: exit {scode}: {serr.strip()}")
    return Answer(tuple(argv), code, json.loads(out), shell)


def _answer_exports(argv: Sequence[str]) -> Answer:
    return plan_answer(argv, exports=True)


def _answer_plain(argv: Sequence[str]) -> Answer:
    return plan_answer(argv)


def pool_size(workers: int | None, count: int) -> int:
    """The processes :func:`compute_answers` runs ``count`` plans on (1: in this one)."""
    n = workers or os.cpu_count() or 1
    return 1 if n <= 1 or count < 8 else n


def compute_answers(argvs: Iterable[Sequence[str]], *, exports: bool = False, workers: int | None = None,
                    progress: Callable[[int], None] | None = None) -> list[Answer]:
    """Every plan answer, in the order given; in ``workers`` processes (default: one per core). ``progress``:
    called with the number of answers so far, as they come."""
    from .shared import sharing

    with sharing():
        return _compute(argvs, exports=exports, workers=workers, progress=progress)


def _compute(argvs: Iterable[Sequence[str]], *, exports: bool, workers: int | None,
             progress: Callable[[int], None] | None) -> list[Answer]:
    todo = [tuple(a) for a in argvs]
    fn = _answer_exports if exports else _answer_plain
    n = pool_size(workers, len(todo))
    out: list[Answer] = []
    if n == 1:
        for a in map(fn, todo):
            out.append(a)
            if progress:
                progress(len(out))
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the workers start with the matrix already loaded and vresolve imported
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        for a in pool.map(fn, todo, chunksize=max(1, len(todo) // (n * 8))):
            out.append(a)
            if progress:
                progress(len(out))
    return out


def _answers_shown(argvs: Iterable[Sequence[str]], *, exports: bool, workers: int | None, quiet: bool
                   ) -> list[Answer]:
    """:func:`compute_answers` with its progress on stderr (none when ``quiet``)."""
    from ..render.progress import Ticker

    todo = [tuple(a) for a in argvs]
    n = pool_size(workers, len(todo))
    label = f"computing {len(todo)} plans on {n} worker{'s' if n != 1 else ''}"
    with Ticker(label, len(todo), quiet=quiet) as tick:
        return compute_answers(todo, exports=exports, workers=workers, progress=tick)


def cell_of(a: Answer) -> tuple[str | None, str]:
    """(vLLM version, kind) of one answer: a wheel, only a source build, or nothing (exit 1)."""
    if a.code != 0:
        return None, "none"
    stack = a.plan.get("stack") or {}
    return stack.get("vllm"), "source" if stack.get("install_kind") == "source" else "wheel"


def grid_from_answers(m: Any, rs: Sequence[Row], cs: Sequence[Column], answers: dict[tuple[str, str], Answer], *,
                      python: str, platform: str, policy: str) -> Grid:
    g = Grid(tuple(rs), tuple(cs), python, platform, policy, m.revision)
    for key, a in answers.items():
        g.cells[key] = cell_of(a)
    return g


def compute_grid(m: Any, *, python: str, platform: str, policy: str, matrix: str | None,
                 workers: int | None = None, families: Sequence[str] | None = None, quiet: bool = True) -> Grid:
    rs, cs = rows(m, platform, families), columns(m)
    keys = [(r, c) for r in rs for c in cs]
    argvs = [plan_argv(r.names[0], c.driver, python, installer="uv", platform=platform, policy=policy, matrix=matrix,
                       jetpack=r.jetpack) for r, c in keys]
    answers = _answers_shown(argvs, exports=False, workers=workers, quiet=quiet)
    return grid_from_answers(m, rs, cs, {(r.capability, c.driver): a for (r, c), a in zip(keys, answers, strict=True)},
                             python=python, platform=platform, policy=policy)


def _python_default() -> str:
    import sys

    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _checked_python(text: str) -> str:
    from .targets import parse_python

    v = parse_python(text)  # UsageError naming --python for anything else
    return f"{v.major}.{v.minor}"


def _write(path: str, data: bytes) -> None:
    from pathlib import Path

    from .._atomic import write_bytes_atomic

    try:
        write_bytes_atomic(Path(path), data)
    except OSError as e:
        raise UsageError(f"-o {path}: cannot write it ({e.strerror or e})") from None


def _built() -> str:
    """When the output was built: ``SOURCE_DATE_EPOCH`` when set (reproducible builds), else now (UTC)."""
    import time

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not epoch:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(int(time.time())))
    try:  # malformed: an error, as the reproducible-builds specification asks
        if not (epoch.isascii() and epoch.isdigit()) or len(epoch) > 12:
            raise ValueError
        built = time.gmtime(int(epoch))
        if built.tm_year > 9999:
            raise ValueError
    except (ValueError, OverflowError, OSError):
        from .args import shown

        raise UsageError(f"SOURCE_DATE_EPOCH: invalid time {shown(epoch)} (expected seconds since 1970-01-01 UTC, "
                         "a whole number up to the year 9999)") from None
    return time.strftime("%Y-%m-%d %H:%M UTC", built)


def _check_writable(out: Any, flag: str) -> None:
    """UsageError, before any work, when ``out`` (a directory to write into, made if missing) cannot be written:
    its nearest existing folder is not one, or a file cannot be made there (tried, not guessed from modes)."""
    import tempfile
    from pathlib import Path

    from .args import shown

    at = Path(out).absolute()
    while not at.exists() and at != at.parent:
        at = at.parent
    if not at.is_dir():
        raise UsageError(f"{flag} {shown(str(out), 200)}: cannot write there ({shown(str(at), 200)} is not a directory)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".vresolve-probe-", dir=at)
    except OSError as e:
        raise UsageError(f"{flag} {shown(str(out), 200)}: cannot write there ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)


def cmd_grid(args: Any) -> int:
    """``vresolve matrix grid``: the grid as PNG/SVG (matplotlib), HTML, a terminal table or JSON."""
    from ..render import envelope, to_json
    from ..render.grid import MissingExtra, grid_html, grid_image, grid_text_rows, grid_view
    from .args import _load, _opt

    out = _opt(args, "output")
    fmt = out.rsplit(".", 1)[-1].lower() if out and "." in out else None
    if out and fmt not in ("png", "svg", "html"):
        raise UsageError(f"-o {out}: expected a file name ending in .png, .svg or .html")
    if fmt in ("png", "svg"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(f"-o {out}: drawing {fmt.upper()} needs matplotlib: pip install 'vresolve[grid]' "
                             "(or write .html)") from None
    python = _checked_python(args.python) if args.python is not None else _python_default()
    m = _load(args)
    g = compute_grid(m, python=python, platform=args.platform, policy=args.driver_policy,
                     matrix=_opt(args, "matrix"), workers=args.workers, families=_families(m, args.family),
                     quiet=bool(_opt(args, "quiet") or _opt(args, "json")))
    if fmt == "html":
        _write(out, grid_html(g, built=_built()).encode())
    elif fmt in ("png", "svg"):
        try:
            _write(out, grid_image(g, fmt))
        except MissingExtra as e:
            raise UsageError(f"-o {out}: {e}") from None
    if _opt(args, "json"):
        import sys

        sys.stdout.write(to_json(envelope("grid", grid_view(g))) + "\n")
    elif not out:
        from ..render.shell import escape_controls

        header, body = grid_text_rows(g)
        widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
        print(f"newest vLLM by GPU capability and driver branch: Python {python}, {args.platform}, "
              f"driver policy {args.driver_policy} (src: only a source build; -: nothing)")
        for r in (header, *body):
            print(escape_controls("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()))
    return 0


def _list_flag(flag: str, text: str | None, default: Sequence[str], allowed: Sequence[str] | None = None
               ) -> tuple[str, ...]:
    """A comma-separated flag's values (``default`` when the flag is not given); only ``allowed`` ones."""
    if text is None:
        return tuple(default)
    items = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [x for x in items if allowed is not None and x not in allowed]
    if bad or not items:
        from .args import shown

        expected = f"any of: {', '.join(allowed)}" if allowed is not None else "a comma-separated list"
        raise UsageError(f"{flag}: invalid value {shown(','.join(bad) or text)} (expected {expected})")
    return items


def _families(m: Any, text: str | None) -> tuple[str, ...] | None:
    """``--family``: known architecture names, or None for all."""
    if text is None:
        return None
    return _list_flag("--family", text, (), [a.family for a in m.architectures])


def site_data(m: Any, *, pys: Sequence[str], installers: Sequence[str], platform: str, policy: str,
              matrix: str | None, workers: int | None, built: str,
              families: Sequence[str] | None = None, quiet: bool = True) -> dict[str, Any]:
    """The page's data: the choices, and every plan (numbered strings, shared plans stored once)."""
    from packaging.version import Version

    from ..render.grid import _dark, release_colours
    from ..render.site import GPU_TOKEN, StringTable, slim_plan

    rs, cs = rows(m, platform, families), columns(m)
    keys = [(r, c, py, inst) for r in rs for c in cs for py in pys for inst in installers]
    answers = _answers_shown([plan_argv(r.names[0], c.driver, py, installer=inst, platform=platform, policy=policy,
                                        matrix=matrix) for r, c, py, inst in keys], exports=True, workers=workers,
                             quiet=quiet)
    st = StringTable()
    plans: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    index: dict[str, int] = {}
    for (r, c, py, inst), a in zip(keys, answers, strict=True):
        slim = slim_plan(a.code, a.plan, a.exports, r.names[0], st)
        text = json.dumps(slim, sort_keys=True)
        if text not in seen:
            seen[text] = len(plans)
            plans.append(slim)
        index["|".join((r.capability, c.driver, py, inst))] = seen[text]
    releases = sorted({v for v, _ in map(cell_of, answers) if v is not None}, key=Version)
    colours = release_colours([str(v) for v in releases])
    archs = []
    for fam in dict.fromkeys(r.family for r in rs):
        caps = [r.capability for r in rs if r.family == fam]
        archs.append({"family": fam, "caps": caps,
                      "gpus": [[n, r.capability] for r in rs if r.family == fam for n in r.names]})
    def plan_of(cap: str, driver: str, py: str, inst: str) -> dict[str, Any]:
        return plans[index["|".join((cap, driver, py, inst))]]

    return {"token": GPU_TOKEN, "platform": platform, "policy": policy, "revision": m.revision, "built": built,
            "initial": _initial(rs, cs, pys, installers, plan_of),
            "unsupported": _unsupported(rs, cs, pys, installers, plan_of, GPU_TOKEN),
            "archs": archs, "caps": {r.capability: r.names[0] for r in rs},
            "drivers": [{"branch": c.branch, "driver": c.driver, "cuda": list(c.cuda)} for c in cs],
            "pythons": list(pys), "installers": list(installers), "strings": st.strings, "plans": plans,
            "index": index, "colours": colours, "dark": [v for v, col in colours.items() if _dark(col)]}


#: the row the page opens on when it has a wheel there: Hopper (H100), the datacenter GPU most vLLM installs run on
_OPENS_ON = "9.0"


def _initial(rs: Sequence[Row], cs: Sequence[Column], pys: Sequence[str], installers: Sequence[str], plan_of: Any
             ) -> dict[str, str]:
    """What the page opens on: the newest driver branch, Python 3.12 (else the newest), the first installer, and
    Hopper's first GPU when a wheel runs there, else the newest row with a wheel (else the newest row)."""
    driver, inst = cs[-1].driver, installers[0]
    python = "3.12" if "3.12" in pys else pys[-1]

    def wheel(r: Row) -> bool:
        p = plan_of(r.capability, driver, python, inst)
        return "stack" in p and p["stack"].get("install_kind") != "source"

    with_wheel = [r for r in rs if wheel(r)]
    pick = next((r for r in with_wheel if r.capability == _OPENS_ON), with_wheel[-1] if with_wheel else rs[-1])
    return {"gpu": pick.names[0], "driver": driver, "python": python, "installer": inst}


def _unsupported(rs: Sequence[Row], cs: Sequence[Column], pys: Sequence[str], installers: Sequence[str],
                 plan_of: Any, token: str) -> dict[str, str]:
    """Capability -> what the page says instead of the plan's hints, for a GPU on which no plan of the page (any
    driver, Python, installer) runs vLLM: no other choice on the page would help. ``token`` stands for its name."""
    def runs(r: Row) -> bool:
        return any("stack" in plan_of(r.capability, c.driver, py, inst)
                   for c in cs for py in pys for inst in installers)

    supported = [r for r in rs if runs(r)]
    oldest = min(supported, key=lambda r: _cc_key(r.capability), default=None)
    out = {}
    for r in rs:
        if r in supported:
            continue
        sm = "sm_" + r.capability.replace(".", "")
        if oldest is not None and _cc_key(r.capability) < _cc_key(oldest.capability):
            out[r.capability] = (f"{token} ({sm}) is too old for vLLM: its compute capability {r.capability} is below "
                                 "what every vLLM build supports (the oldest GPUs with a vLLM on this page are "
                                 f"sm_{oldest.capability.replace('.', '')}, {oldest.family}); no driver, Python or "
                                 "installer changes that")
        else:
            out[r.capability] = (f"no vLLM build runs on {token} ({sm}) with any driver, Python or installer on this "
                                 "page")
    return out


def _cc_key(cap: str) -> tuple[int, ...]:
    return tuple(int(x) for x in cap.split("."))


def cmd_site(args: Any) -> int:
    """``vresolve site -o DIR``: DIR/index.html, the page of every plan (written atomically)."""
    import sys
    import time
    from pathlib import Path

    from .. import __version__
    from ..names import INSTALLERS
    from ..render.site import page_html
    from .args import _load, _opt

    t0 = time.perf_counter()
    m = _load(args)
    pys = tuple(_checked_python(p) for p in _list_flag("--python", args.python, pythons(m)))
    installers = _list_flag("--installer", args.installer, INSTALLERS, INSTALLERS)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {args.output}: not a directory")
    _check_writable(out, "-o")  # before every plan is computed, not after
    built = _built()
    data = site_data(m, pys=pys, installers=installers, platform=args.platform, policy=args.driver_policy,
                     matrix=_opt(args, "matrix"), workers=args.workers, built=built,
                     families=_families(m, args.family), quiet=bool(_opt(args, "quiet") or _opt(args, "json")))
    page = page_html(data, title="Which vLLM runs on my GPU and driver?", revision=m.revision, built=built,
                     version=__version__).encode()
    _write(str(out / "index.html"), page)
    seconds = time.perf_counter() - t0
    summary = {"output": str(out / "index.html"), "bytes": len(page), "seconds": round(seconds, 2),
               "plans": len(data["index"]), "distinct_plans": len(data["plans"]), "strings": len(data["strings"]),
               "matrix_revision": m.revision}
    if _opt(args, "json"):
        from ..render import envelope, to_json

        sys.stdout.write(to_json(envelope("site", summary)) + "\n")
    elif not _opt(args, "quiet"):
        from ..render.shell import escape_controls

        print(escape_controls(f"wrote {out / 'index.html'}: {len(page) / 1e6:.2f} MB, {summary['plans']} plans "
                              f"({summary['distinct_plans']} distinct) in {seconds:.1f} s"))
    return 0
