"""Lockfiles: the plan plus the whole transitive closure, with hashes (the lock layer: it runs uv).

:func:`compile_lock` runs ``uv pip compile`` once, for the target Python and platform, with
``--generate-hashes`` and the indexes the plan needs (the user's configured index; PyTorch's
``/whl/<variant>`` through uv's ``--torch-backend``; vLLM's variant index), and writes its answer
as a PEP 751 ``pylock.toml``. Everything else derives from that one answer, so the files agree
and a lock costs little more than the compile:

- ``pylock.toml``: uv's lock read and validated through ``packaging.pylock``, with the machine
  assumptions under ``[tool.vresolve]``;
- ``requirements.txt``: every package ``==`` its version with every artifact's hash (ready for
  ``pip install --require-hashes``), and the extra indexes the plan needs;
- ``environment.yml``: a conda environment of the plan's Python and pip, the same pins through pip;
- ``env.sh``: the plan's exports.

Each file starts with a header recording the machine assumptions (minimum driver, GPUs and
their capabilities, driver policy), the matrix revision and vresolve's version, one JSON line
(``# vresolve-lock: {...}``) that :func:`read_lock_header` reads back for ``doctor --lock`` and
``lock --check``. No timestamps: the same inputs give byte-identical files, up to what the
index itself changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace
from packaging.version import Version

from . import __version__
from ._atomic import write_files_atomic
from ._proc import dies_with_us, stop_group, uv_bin
from .errors import EXIT_USAGE, PackageIndexError, UsageError, VresolveError
from .matrix import Matrix
from .plan import InstallPlan
from .render.json import stack_view
from .render.lockfiles import HEADER_KEY, env_sh, environment_yml, header_text, requirements_text

__all__ = ["FORMATS", "LockFiles", "OutputError", "compile_lock", "lock_header", "read_lock_header", "write_lock", "foreign_files", "foreign_message",
           "check_lock"]

FORMATS = ("requirements", "pylock", "conda", "env")
FILE_NAMES = {"requirements": "requirements.txt", "pylock": "pylock.toml", "conda": "environment.yml",
              "env": "env.sh"}
_NETWORK_ERRORS = ("Failed to fetch", "error sending request", "timed out", "Connection reset", "dns error",
                   "tcp connect error", "Network unreachable", "Request failed after")
# uv's words for a package with no wheel for the platform (with --no-build): a newer manylinux may have one
_NO_WHEEL = ("has no usable wheels", "have no usable wheels", "no wheels with a matching platform tag")
# the glibc versions uv's --python-platform names for manylinux (`uv pip compile --help`, uv 0.13): the ladder a
# lock for a machine of unknown glibc climbs, and the newest of them at or below a known glibc is what uv targets
MANYLINUX_RUNGS = tuple(Version(f"2.{minor}") for minor in (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40))


class OutputError(VresolveError):
    """The lock files could not be written (a full disk, a read-only directory); none was changed. Exit 2."""

    code = "output-error"
    exit_code = EXIT_USAGE


class LockFiles(msgspec.Struct, frozen=True, kw_only=True):
    """The text of every lock file, by format; and how the closure was computed."""

    files: Mapping[str, str]  # format -> text
    header: Mapping[str, Any]
    uv_seconds: float  # the wall time of the uv pip compile run
    uv_argv: tuple[str, ...]
    packages: int
    # set when the target's glibc was not known and the closure needed more than the plan's floor:
    # "no wheel of llguidance for manylinux_2_28; locked for glibc >= 2.31"
    glibc_note: str | None = None


class _NoWheel(PackageIndexError):
    """uv found no wheel of some package of the closure for the platform (``--no-build``)."""

    def __init__(self, message: str, packages: Sequence[str]) -> None:
        super().__init__(message)
        self.packages = tuple(packages)


def _target_glibc(plan: InstallPlan, glibc: Version | None = None) -> str:
    """The glibc a lock is for: the host's when known, else ``glibc`` (the rung it was locked at), else the
    planned wheels' manylinux floor (2.28 when none is known)."""
    r = plan.resolution
    v = r.host.platform.glibc or glibc or r.glibc_floor or Version("2.28")
    return f"{v.major}.{v.minor}"


def _ladder(plan: InstallPlan) -> tuple[Version, ...]:
    """The manylinux glibc versions to try, in order (the first whose closure has every wheel wins).

    A known glibc (``--glibc``, detected) is one rung: the newest uv names at or below it. Else the rungs uv
    names from the planned wheels' manylinux floor (2.28 when none is known) upward: the plan's floor is the
    vLLM and torch wheels' own, and their dependencies may need more (vLLM 0.33.0's llguidance: 2.31).
    """
    known = plan.resolution.host.platform.glibc
    if known is not None:
        below = [v for v in MANYLINUX_RUNGS if v <= known]
        if not below:
            raise UsageError(f"glibc {known}: older than any manylinux uv can lock for (the oldest: "
                             f"{MANYLINUX_RUNGS[0]})")
        return (below[-1],)
    floor = Version(_target_glibc(plan))
    return tuple(v for v in MANYLINUX_RUNGS if v >= floor) or (floor,)


def _platform_triple(plan: InstallPlan, glibc: Version) -> str:
    """uv's --python-platform for the target at one rung of :func:`_ladder`.

    Every package of the closure is then locked at a version with a wheel for that platform
    (``--no-build``): a package whose only wheels need a newer glibc is an error, not an sdist.
    """
    return f"{plan.resolution.host.platform.machine}-manylinux_{glibc.major}_{glibc.minor}"


def lock_header(plan: InstallPlan, matrix: Matrix, glibc: Version | None = None) -> dict[str, Any]:
    """The machine assumptions a lock records (also what ``doctor --lock`` checks); ``glibc``: the manylinux
    rung the closure was locked at, when the host's glibc is not known."""
    r = plan.resolution
    gpus: dict[str, Any] = {}
    for g in r.host.gpus:
        if g.compute_capability is not None:
            gpus[g.name] = str(g.compute_capability)
    return {
        "vresolve": __version__, "matrix_revision": matrix.revision,
        "stack": stack_view(r.stack),  # the plan's own ``stack`` object: one record of a stack everywhere
        "machine": {"gpus": gpus, "min_driver": str(r.min_driver) if r.min_driver else None,
                    "driver_policy": r.request.driver_policy, "cuda": str(r.cuda) if r.cuda else None,
                    "python": str(r.host.python_minor), "platform": r.host.platform.tag,
                    "glibc": _target_glibc(plan, glibc)},
    }


def read_lock_header(text: str, *, strict: bool = False) -> dict[str, Any] | None:
    """The ``# vresolve-lock: {...}`` record of a lock file's text, or None when it has none.

    A record that is not a JSON object is None too, or with ``strict`` a ValueError saying why.
    """
    for line in text.splitlines():
        line = line.lstrip("# ").strip()
        if line.startswith(HEADER_KEY):
            try:
                value = json.loads(line[len(HEADER_KEY):])
            except (ValueError, RecursionError) as e:  # RecursionError: [[[[...]]]] nested past the stack
                if strict:
                    raise ValueError(f"its '{HEADER_KEY}' line is not valid JSON ({str(e)[:100]})") from None
                return None
            if isinstance(value, dict):
                return value
            if strict:
                raise ValueError(f"its '{HEADER_KEY}' line is not a JSON object")
            return None
    return None


def _inputs(plan: InstallPlan, matrix: Matrix) -> tuple[list[str], list[str]]:
    """(requirement lines, index options) for uv pip compile."""
    from .plan.wheels import vllm_index_url, wheel_requirements

    _torch_pins, vllm_pins = wheel_requirements(matrix, plan.resolution)
    options: list[str] = []
    t = plan.resolution.torch
    if not t.pypi:
        options += ["--torch-backend", t.variant.variant]
    vidx = vllm_index_url(matrix, plan.resolution.vllm)
    if vidx:
        options += ["--extra-index-url", vidx]
    if plan.resolution.vllm.where == "release-assets":
        raise UsageError(f"vLLM {plan.resolution.vllm.version}'s {plan.resolution.vllm.variant} build is a GitHub "
                         "release asset, not on an index: uv cannot lock it; choose another with --vllm or --pypi-only")
    return vllm_pins, options


def _index_urls(options: Sequence[str], matrix: Matrix) -> list[str]:
    """The ``--extra-index-url`` lines of a lock's requirements.txt, from uv's index options."""
    index_urls = []
    it = iter(options)
    for opt in it:
        value = next(it)
        if opt == "--torch-backend":
            index_urls.append(f"{matrix.torch_index}/{value}")
        elif opt == "--extra-index-url":
            index_urls.append(value)
    return index_urls


def lock_index_urls(plan: InstallPlan, matrix: Matrix) -> list[str]:
    """The indexes vresolve writes (``--extra-index-url``) into the requirements.txt of ``plan``'s lock: the
    only option lines ``apply --lock`` installs without ``--allow-lock-options``."""
    try:
        return _index_urls(_inputs(plan, matrix)[1], matrix)
    except UsageError:  # a stack vresolve cannot lock has no lock of vresolve's
        return []


def compile_lock(plan: InstallPlan, matrix: Matrix, *, index_url: str | None = None, offline: bool = False,
                 timeout: float = 600.0, retries: int | None = None, progress: Callable[[str], None] | None = None
                 ) -> LockFiles:
    """Resolve the closure with ``uv pip compile`` and derive every lock format from its answer.

    For a known glibc uv runs once. For an unknown one (a plan for another machine, no ``--glibc``) it runs
    once per rung of the manylinux ladder (:func:`_ladder`), from the plan's floor up, until the closure has
    a wheel of every package: the lock is for the lowest such glibc, recorded in its header and said in
    ``glibc_note``. Only a missing wheel climbs; an index that cannot be read or a conflict fails at once.
    uv has ``timeout`` seconds in all; it retries its own failed requests (``retries``, when given,
    sets how often: ``UV_HTTP_RETRIES``). Interrupted (Ctrl-C, SIGTERM under vresolve's entry point), uv
    is stopped and the temporary directory removed before the interrupt goes on.
    """
    if plan.resolution.host.platform.os != "linux":
        raise UsageError(f"--platform: locks are for Linux, not {plan.resolution.host.platform.tag}")
    from .index import index_for_uv

    reqs, options = _inputs(plan, matrix)
    default_index = index_for_uv(index_url)  # the index matrix refresh reads, where uv would not find it
    rungs = _ladder(plan)
    missed: list[tuple[Version, tuple[str, ...]]] = []
    deadline = time.monotonic() + timeout
    for i, glibc in enumerate(rungs):
        try:
            left = deadline - time.monotonic() if missed else timeout  # the rungs share --timeout
            pylock_text, seconds, argv = _compile(plan, reqs, options, glibc, default_index=default_index, offline=offline,
                                                  timeout=left, retries=retries, progress=progress)
        except _NoWheel as e:
            missed.append((glibc, e.packages))
            if i + 1 == len(rungs):
                raise PackageIndexError(f"{e}{_no_wheel_hint(plan, missed)}") from None
            if progress:
                progress(f"{_missing(missed[-1:])}: trying manylinux_{rungs[i + 1].major}_{rungs[i + 1].minor}")
            continue
        lock = _derive(plan, matrix, pylock_text, seconds, argv, options, glibc)
        return replace(lock, glibc_note=f"{_missing(missed)}; locked for glibc >= {glibc}" if missed else None)
    raise AssertionError("unreachable: the last rung returns or raises")


def _missing(missed: Sequence[tuple[Version, tuple[str, ...]]]) -> str:
    """'no wheel of llguidance for manylinux_2_28' (to the last rung that failed, when several did)."""
    names = ", ".join(dict.fromkeys(n for _, packages in missed for n in packages)) or "a package of the closure"
    first, last = missed[0][0], missed[-1][0]
    span = f"manylinux_{first.major}_{first.minor}" + (f" to manylinux_{last.major}_{last.minor}" if last != first
                                                       else "")
    return f"no wheel of {names} for {span}"


def _no_wheel_hint(plan: InstallPlan, missed: Sequence[tuple[Version, tuple[str, ...]]]) -> str:
    platform = _platform_triple(plan, missed[-1][0])
    if plan.resolution.host.platform.glibc is not None:
        return (f"\nA package of the closure has no wheel for {platform} (the lock installs with "
                "--no-build: wheels only). If the target machine's glibc is newer, say so with --glibc X.Y; "
                "otherwise that package must be built from source there.")
    missing = _missing(missed)
    return (f"\n{missing[0].upper()}{missing[1:]}: every manylinux uv can lock for was tried, from the plan's floor "
            f"up ({len(missed)} runs of uv; the lock installs with --no-build: wheels only), so that package must be "
            "built from source on the target machine.")


def _compile(plan: InstallPlan, reqs: Sequence[str], options: Sequence[str], glibc: Version, *,
             default_index: str | None, offline: bool, timeout: float, retries: int | None,
             progress: Callable[[str], None] | None) -> tuple[str, float, tuple[str, ...]]:
    """(uv's pylock.toml, the seconds uv took, its argv) for the closure at one manylinux rung."""
    python = str(plan.resolution.host.python_minor)
    platform = _platform_triple(plan, glibc)
    if timeout <= 0:
        raise PackageIndexError(f"uv pip compile took longer than --timeout in all, trying the manylinux rungs up to "
                                f"{platform}")
    with tempfile.TemporaryDirectory(prefix="vresolve-lock-") as tmp:
        src = Path(tmp) / "requirements.in"
        src.write_text("".join(f"{r}\n" for r in reqs))
        out = Path(tmp) / "pylock.toml"
        argv = [uv_bin(), "pip", "compile", str(src), "--python-version", python,
                "--python-platform", platform, "--generate-hashes", "--no-header", "--no-build",
                "--output-file", str(out), *options]
        if default_index:  # (uv reads UV_DEFAULT_INDEX, UV_INDEX_URL and its files itself, not pip's)
            argv += ["--default-index", default_index]
        if offline:
            argv.append("--offline")
        what = f"vLLM {plan.resolution.vllm.version}'s closure for Python {python} on {platform}"
        stderr, seconds = _run_uv(argv, what, timeout, retries, progress)
        if progress:
            progress(next((line for line in stderr.splitlines() if line.startswith("Resolved")),
                          "resolved") + f" ({seconds:.1f} s)")
        return out.read_text(), seconds, tuple(argv)


def _without_wheels(stderr: str) -> list[str]:
    """The packages uv found no wheel of, by name, as its answer says."""
    names = re.findall(r"Wheels are (?:required|available) for `([^`\s]+)`", stderr)
    # "llguidance{platform_machine == ...}>=1.7.0,<=1.7.6 has no usable wheels": the name, never a version
    names += re.findall(r"(?:^|[\s(])([A-Za-z0-9][A-Za-z0-9._-]*)(?:\{[^}]*\})?(?:[=<>!~]\S*)? (?:has|have) no "
                        r"(?:usable wheels|wheels with a matching platform tag)", stderr, flags=re.M)
    return list(dict.fromkeys(names))


def _run_uv(argv: list[str], what: str, timeout: float, retries: int | None,
            progress: Callable[[str], None] | None) -> tuple[str, float]:
    """(uv's stderr, the seconds it took), from one run of uv: it retries its own requests."""
    # no Python download: --python-version needs no interpreter of that version (uv would try to fetch one)
    env = dict(os.environ, UV_HTTP_TIMEOUT=str(max(1, int(min(timeout, 300)))), NO_COLOR="1",
               UV_PYTHON_DOWNLOADS="never")
    if retries is not None:
        env["UV_HTTP_RETRIES"] = str(retries)
    if progress:
        progress(f"uv pip compile: resolving {what}")
    t0 = time.perf_counter()
    # its own process group: stopped as a whole, by vresolve, whatever signal vresolve gets
    # and it dies with vresolve, even when vresolve is killed
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=dies_with_us())
    try:
        _warm_up()  # while uv works: import what reading its answer needs (the CPU is otherwise idle)
        _, stderr = proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
    except subprocess.TimeoutExpired:
        stop_group(proc)
        raise PackageIndexError(f"uv pip compile took longer than {timeout:g} s (--timeout)") from None
    except BaseException:
        stop_group(proc)
        raise
    if proc.returncode == 0:
        return stderr, time.perf_counter() - t0
    if any(e in stderr for e in _NETWORK_ERRORS):
        last = (stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PackageIndexError(f"uv pip compile could not read the package index: {last}")
    message = f"uv pip compile could not resolve the closure: {stderr.strip()[-1500:]}"
    if any(e in stderr for e in _NO_WHEEL):
        raise _NoWheel(message, _without_wheels(stderr))
    raise PackageIndexError(message)


def _without_none(d: Mapping[str, Any]) -> dict[str, Any]:
    """TOML has no null: the header's unknown values are left out of pylock.toml's [tool.vresolve]."""
    return {k: _without_none(v) if isinstance(v, Mapping) else v for k, v in d.items() if v is not None}


def _warm_up() -> None:
    import tomli_w  # noqa: F401
    from packaging import pylock  # noqa: F401

    if sys.version_info >= (3, 11):
        import tomllib  # noqa: F401


def _derive(plan: InstallPlan, matrix: Matrix, uv_pylock: str, seconds: float, argv: tuple[str, ...],
            options: Sequence[str], glibc: Version | None = None) -> LockFiles:
    import tomli_w
    from packaging.pylock import Pylock, PylockValidationError

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found, no-redef]
    header = lock_header(plan, matrix, glibc)
    try:
        # uv's answer with vresolve's record added, validated by packaging.pylock exactly as it is written
        # (Pylock.from_dict checks the whole document against PEP 751)
        doc = {**tomllib.loads(uv_pylock), "created-by": "vresolve", "tool": {"vresolve": _without_none(header)}}
        lock = Pylock.from_dict(doc)
    except (PylockValidationError, ValueError) as e:
        raise PackageIndexError(f"uv wrote a pylock.toml that does not validate: {e}") from None
    pylock = header_text(header) + tomli_w.dumps(doc)
    pins = [(pkg.name, str(pkg.version),
             sorted({f"{algo}:{h}" for art in [*(pkg.wheels or ()), *((pkg.sdist,) if pkg.sdist else ())]
                     for algo, h in art.hashes.items()}))
            for pkg in sorted(lock.packages, key=lambda p: p.name)]
    index_urls = _index_urls(options, matrix)
    r = plan.resolution
    try:
        files = {"requirements": requirements_text(header, index_urls, pins), "pylock": pylock,
                 "conda": environment_yml(header, f"vllm-{r.vllm.version}", str(r.host.python_minor), index_urls, pins),
                 "env": env_sh(header, plan.env)}
    except ValueError as e:
        raise PackageIndexError(f"the lock cannot be written: {e}") from None
    return LockFiles(files=files, header=header, uv_seconds=seconds, uv_argv=argv, packages=len(lock.packages))


def foreign_files(out_dir: Path, formats: Sequence[str]) -> list[Path]:
    """The files of ``formats`` in ``out_dir`` that vresolve did not write (no ``# vresolve-lock:`` header in their
    first 64 KiB; a link, a directory or an unreadable file counts as foreign too)."""
    import stat

    out = []
    for fmt in formats:
        path = out_dir / FILE_NAMES[fmt]
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            out.append(path)
            continue
        if not stat.S_ISREG(st.st_mode) or not _has_header(path):
            out.append(path)
    return out


def _has_header(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(64 << 10).decode("utf-8", errors="replace")
    except OSError:
        return False
    return read_lock_header(head) is not None


def write_lock(lock: LockFiles, out_dir: Path, formats: Sequence[str], *, force: bool = False) -> list[Path]:
    """Write the chosen formats into ``out_dir``: all of them, or none (:func:`write_files_atomic`).

    OutputError (exit 2) when they cannot be written, or when one would replace a file vresolve did not write
    (without ``force``); then every old file is as it was, and a directory made for them is removed again.
    """
    made = not out_dir.is_dir()
    paths = [out_dir / FILE_NAMES[fmt] for fmt in formats]
    foreign = [] if force else foreign_files(out_dir, formats)
    if foreign:
        raise OutputError(foreign_message(foreign))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_files_atomic([(p, lock.files[fmt].encode("utf-8")) for p, fmt in zip(paths, formats, strict=True)])
    except OSError as e:
        if made:
            try:
                out_dir.rmdir()
            except OSError:
                pass
        raise OutputError(f"cannot write the lock into '{out_dir}' ({e.strerror or e}): no file was changed") \
            from None
    return paths


def foreign_message(found: Sequence[Path]) -> str:
    """One line: the files a lock would replace that vresolve did not write."""
    names = ", ".join(f"'{f}'" for f in found)
    return (f"would replace {names}, which vresolve did not write (no '# {HEADER_KEY}' header): pass --force to "
            "replace them, or choose another -o DIR; nothing was written")


def check_lock(lock: LockFiles, out_dir: Path, formats: Sequence[str]) -> list[str]:
    """The files in ``out_dir`` that differ from a fresh lock (missing ones included)."""
    stale = []
    for fmt in formats:
        path = out_dir / FILE_NAMES[fmt]
        try:
            current = path.read_text()
        except OSError:
            stale.append(f"{path}: missing")
            continue
        if current != lock.files[fmt]:
            old = read_lock_header(current)
            why = ("the plan changed" if old and old.get("stack") != lock.header["stack"] else
                   "the matrix changed" if old and old.get("matrix_revision") != lock.header["matrix_revision"] else
                   "the index's answer changed")
            stale.append(f"{path}: out of date ({why})")
    return stale
