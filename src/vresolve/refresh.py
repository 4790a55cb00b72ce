"""Generate the index-derived part of the matrix (``compat_matrix/wheels/*.yaml``).

For each package it lists the index's files, keeps the Linux wheels of the releases the
matrix covers, reads each wheel's own METADATA (:mod:`vresolve.index`), and derives:
``Requires-Python``; the ``Requires-Dist`` pins that matter for compatibility, with their
markers evaluated for the wheel's platform; and, for torch, the CUDA version its
``nvidia-*-cuXX`` / ``cuda-toolkit`` requirements name. The output is deterministic (sorted
releases and wheels), so that re-running it on an unchanged index changes nothing.

The whole-matrix ``vresolve matrix refresh`` builds on :func:`generate`; it prints a diff
and, with ``--apply``, writes the files with :func:`apply_files`: all or none, and only when the
matrix they give validates.

A METADATA that does not parse (a malformed ``Requires-Dist``, a field that is not text, the
METADATA of another release) is a :class:`~vresolve.errors.PackageIndexError` naming the wheel.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
from packaging.markers import Marker
from packaging.metadata import Metadata, parse_email
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from .errors import MatrixError, PackageIndexError, UsageError
from .index import IndexClient, IndexFile
from .index.transport import _one_line
from .matrix import wheel_platform
from .matrix.dump import dump_yaml
from .values import EXTENSION_FILE_PATTERN

__all__ = ["PACKAGES", "Progress", "generate", "merge_since", "torch_index_variants", "derive_cuda", "pins_for_platform", "diff_files",
           "render_wheels_doc", "apply_files", "unseen_rows"]


class _Spec(msgspec.Struct, frozen=True):
    first: Version  # oldest release the matrix covers
    keep: tuple[str, ...]  # Requires-Dist names to record
    one_per_platform: bool  # read one wheel per platform (torch*: one per Python tag otherwise)
    members: bool = False  # also read the zip's file list: the compiled extension modules it ships


PACKAGES: dict[str, _Spec] = {
    "vllm": _Spec(Version("0.4.0"), ("torch", "torchvision", "torchaudio", "xformers", "flashinfer-python",
                                     "triton"), False, members=True),
    "torch": _Spec(Version("2.0.0"), ("triton",), True),
    "torchvision": _Spec(Version("0.15.0"), ("torch",), True),
    "torchaudio": _Spec(Version("2.0.0"), ("torch",), True),
    # companions vLLM pins: only the releases some vLLM wheel pins (``versions`` from wheels/vllm.yaml)
    "xformers": _Spec(Version("0.0.20"), ("torch",), True),
    "flashinfer-python": _Spec(Version("0.1.0"), ("torch", "cuda-python"), True),
}
_LINUX = ("linux-x86_64", "linux-aarch64", "any")
_PYTHONS = tuple(f"3.{m}" for m in range(8, 16))

Progress = Callable[[str, int, int], None]  # (package, done, total)


def pins_for_platform(reqs: Iterable[Requirement], keep: tuple[str, ...], platform: str,
                      pythons: Iterable[str]) -> dict[str, str]:
    """The specifiers of the kept requirements that apply on ``platform`` for some Python.

    Markers are evaluated for Linux on the platform's machine, for each Python in
    ``pythons``; ``extra`` requirements are skipped.

    >>> pins_for_platform([Requirement('xformers==0.0.28; platform_machine == "x86_64"'),
    ...                    Requirement('torch==2.5.1')], ("torch", "xformers"), "linux-aarch64", ["3.12"])
    {'torch': '==2.5.1'}
    """
    machine = platform.split("-", 1)[1] if "-" in platform else "x86_64"  # "any": read as x86_64 Linux
    envs = [{"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix",
             "platform_machine": machine, "python_version": py, "python_full_version": f"{py}.0",
             "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
            for py in pythons]
    out: dict[str, str] = {}
    for req in reqs:
        name = canonicalize_name(req.name)
        if name not in keep or name in out:
            continue
        if req.marker is None or any(_applies(req.marker, env) for env in envs):
            out[name] = str(req.specifier)
    return dict(sorted(out.items()))


def _applies(marker: Marker, env: dict[str, str]) -> bool:
    return marker.evaluate(env)  # type: ignore[arg-type]


def derive_cuda(reqs: Iterable[Requirement], platform: str = "linux-x86_64") -> str | None:
    """The CUDA version a torch wheel was built for, from its CUDA runtime requirement.

    ``nvidia-cuda-runtime-cu12==12.4.127`` -> ``12.4``; ``cuda-toolkit[cudart]==13.0.2`` or
    ``nvidia-cuda-runtime==13.0.96`` -> ``13.0``; a CPU wheel has none -> None. Requirements
    whose marker is false on ``platform`` do not count (torch 2.1's aarch64 wheel lists the
    x86_64-only CUDA packages).
    """
    machine = platform.split("-", 1)[1] if "-" in platform else "x86_64"
    env = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": machine, "extra": "",
           "python_version": "3.12", "python_full_version": "3.12.0", "os_name": "posix"}
    candidates: dict[str, str] = {}
    for req in reqs:
        if req.marker is not None and not _applies(req.marker, env):
            continue
        name = canonicalize_name(req.name)
        if name.startswith("nvidia-cuda-runtime") or name == "cuda-toolkit":
            for spec in req.specifier:
                if spec.operator in ("==", "===", "~=", ">="):
                    v = Version(spec.version.rstrip(".*"))
                    candidates[name] = f"{v.major}.{v.minor}"
    for pref in ("nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu13",
                 "nvidia-cuda-runtime", "cuda-toolkit"):
        if pref in candidates:
            return candidates[pref]
    return None


class _Pick(msgspec.Struct, frozen=True):
    version: Version
    platform: str
    file: IndexFile
    pythons: tuple[str, ...]  # CPython versions with a wheel on this platform (torch*)


def _select(files: list[IndexFile], spec: _Spec, versions: set[Version] | None) -> list[_Pick]:
    """The wheels to read: every Linux wheel (vllm), or one per platform and release (torch*)."""
    groups: dict[tuple[Version, str], list[tuple[IndexFile, str, str]]] = {}
    for f in files:
        try:
            _, version, _build, tags = parse_wheel_filename(f.filename)
        except InvalidWheelFilename:
            continue  # sdists and oddities
        if version.is_prerelease or version.is_devrelease or version < spec.first:
            continue
        if versions is not None and version not in versions:
            continue
        tag = next(iter(tags))
        plat = wheel_platform(tag.platform)
        if plat is None or plat[0] not in _LINUX:
            continue
        if version.local:  # local versions never come from the default index
            continue
        groups.setdefault((version, plat[0]), []).append((f, tag.interpreter, tag.abi))
    picks = []
    for (version, where), items in sorted(groups.items()):
        if not spec.one_per_platform:
            picks += [_Pick(version, where, f, ()) for f, _, _ in sorted(items, key=lambda x: x[0].filename)]
            continue
        cp = sorted({int(i[2:]) for _, i, abi in items if i.startswith("cp") and not abi.endswith("t")})
        pythons = tuple(f"{str(n)[0]}.{str(n)[1:]}" for n in cp)  # 310 -> "3.10"
        # read the newest CPython's wheel that is not free-threaded
        best = max(items, key=lambda x: (not x[2].endswith("t"), int(x[1][2:]) if x[1][2:].isdigit() else 0,
                                         x[0].filename))
        picks.append(_Pick(version, where, best[0], pythons))
    return picks


_EXTENSION_RE = re.compile(EXTENSION_FILE_PATTERN)
_PACKAGE_DIR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def extension_modules(members: Iterable[str]) -> list[str]:
    """The importable compiled modules among a wheel's members, as dotted names, sorted.

    ``vllm/_C.abi3.so`` -> ``vllm._C``; ``vllm/third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so``
    -> ``vllm.third_party.deep_gemm._C`` (one name for every Python's copy). Shared libraries that
    auditwheel vendors (``vllm.libs/libfoo-1a2b.so.1``) are not modules and are left out.

    >>> extension_modules(["vllm/_C.abi3.so", "vllm/x.py", "vllm.libs/libgomp-a34b3233.so.1",
    ...                    "vllm/a/_m.cpython-311-x86_64-linux-gnu.so", "vllm/a/_m.cpython-312-x86_64-linux-gnu.so"])
    ['vllm._C', 'vllm.a._m']
    """
    out = set()
    for name in members:
        *dirs, base = name.split("/")
        m = _EXTENSION_RE.match(base)
        if m and dirs and all(_PACKAGE_DIR_RE.match(d) for d in dirs):
            out.add(".".join((*dirs, m[1])))
    return sorted(out)


#: what a wheel can do, known by a file it ships (observed in the wheels' zip directories)
FEATURE_FILES = {
    "download-kernels": "vllm/entrypoints/cli/download_kernels.py",  # `vllm download-kernels` (FlashInfer cubins)
}


_READ_FIELDS = frozenset({"name", "version", "requires-dist", "requires-python"})


def _read_metadata(package: str, pick: _Pick, metadata: bytes) -> tuple[list[Requirement], SpecifierSet | None]:
    """(Requires-Dist, Requires-Python) of a wheel's METADATA; anything malformed is an index error.

    A field that does not parse is an error, never a field left out: packaging puts what it cannot
    read into its "unparsed" part (one undecodable ``Requires-Dist`` line sends every one there),
    which would drop the wheel's pins without a word.
    """
    where = f"{pick.file.url}: its METADATA"
    try:
        raw, unparsed = parse_email(metadata)
        meta = Metadata.from_raw(raw, validate=False)
        reqs, rp = list(meta.requires_dist or []), meta.requires_python
        name, version = canonicalize_name(meta.name), meta.version
    except (ValueError, TypeError) as e:  # packaging's InvalidMetadata, InvalidRequirement, ... are ValueErrors
        raise PackageIndexError(f"{where}: {_one_line(e)}") from None
    bad = sorted(_READ_FIELDS & set(unparsed))
    if bad:
        raise PackageIndexError(f"{where}: cannot read its {', '.join(bad)} (not valid text)")
    if name != canonicalize_name(package) or version != pick.version:
        raise PackageIndexError(f"{where} is the METADATA of {name} {version}, not of {package} {pick.version}")
    return reqs, rp


def _requirement_facts(package: str, spec: _Spec, pick: _Pick, reqs: list[Requirement],
                       pythons: list[str]) -> dict[str, Any]:
    """The row's ``requires`` pins and, for torch, its ``cuda``; a marker that cannot be evaluated is an index error."""
    out: dict[str, Any] = {}
    try:
        pins = pins_for_platform(reqs, spec.keep, pick.platform, pythons)
        # vLLM: only where its METADATA names a CUDA runtime itself (no release so far does)
        cuda = derive_cuda(reqs, pick.platform) if package in ("torch", "vllm") else None
    except ValueError as e:  # packaging's UndefinedEnvironmentName, InvalidVersion, ... are ValueErrors
        raise PackageIndexError(f"{pick.file.url}: its METADATA: {_one_line(e)}") from None
    if pins:
        out["requires"] = pins
    if pick.pythons:
        out["pythons"] = list(pick.pythons)
    if cuda is not None:
        out["cuda"] = cuda
    return out


def _wheel_row(package: str, spec: _Spec, pick: _Pick, metadata: bytes,
               members: list[str] | None = None) -> dict[str, Any]:
    reqs, rp = _read_metadata(package, pick, metadata)
    pythons = [p for p in _PYTHONS if rp is None or rp.contains(p + ".0", prereleases=True)]
    if pick.pythons:
        pythons = [p for p in pythons if p in pick.pythons] or list(pick.pythons)
    row: dict[str, Any] = {"filename": pick.file.filename}
    if rp is not None:
        row["requires_python"] = str(rp)
    row.update(_requirement_facts(package, spec, pick, reqs, pythons))
    if members is not None:
        row.update(_member_facts(members))
    if "sha256" in pick.file.hashes:
        row["sha256"] = pick.file.hashes["sha256"]
    if pick.file.yanked:
        row["yanked"] = True
    dist = f"{canonicalize_name(package).replace('-', '_')}-{pick.version}.dist-info/METADATA"
    # extensions and features are read off the zip's central directory: the row names both sources
    row["source"] = f"{pick.file.filename}:{dist}" if members is None else [
        f"{pick.file.filename}:{dist}", f"{pick.file.filename}:(zip central directory)"]
    row["verified"] = "observed"
    return row


def _member_facts(members: list[str]) -> dict[str, Any]:
    """What a wheel's file list tells: its compiled extension modules, and its features."""
    out: dict[str, Any] = {"extensions": extension_modules(members)}
    names = set(members)
    features = [k for k, f in FEATURE_FILES.items() if f in names]
    if features:
        out["features"] = features
    return out


def generate(client: IndexClient, package: str, *, versions: set[Version] | None = None,
             workers: int = 8, progress: Progress | None = None, since: Version | None = None) -> dict[str, Any]:
    """The ``wheels/<package>.yaml`` document for ``package``, read from the index.

    ``since``: only releases from that version on (see :func:`merge_since` to keep the rest).
    """
    spec = PACKAGES[package]
    picks = [p for p in _select(client.project_files(package), spec, versions) if since is None or p.version >= since]
    done = 0

    def read(pick: _Pick) -> dict[str, Any]:
        nonlocal done
        data, _how = client.read_metadata(pick.file)
        members = client.read_members(pick.file) if spec.members else None
        row = _wheel_row(package, spec, pick, data, members)
        done += 1
        if progress:
            progress(package, done, len(picks))
        return row

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        rows = list(pool.map(read, picks))
    releases: dict[Version, list[dict[str, Any]]] = {}
    for pick, row in zip(picks, rows, strict=True):
        releases.setdefault(pick.version, []).append(row)
    return {"package": package, "releases": [
        {"version": str(v), "wheels": sorted(ws, key=lambda w: w["filename"])}
        for v, ws in sorted(releases.items())]}


def diff_files(old: str, new: str, name: str) -> str:
    """A unified diff a maintainer can review ('' when nothing changed)."""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


HEADER = ("# Generated by `vresolve matrix refresh --apply` from each wheel's own METADATA on the\n"
          "# package index (see src/vresolve/refresh.py). Do not edit by hand: regenerate.\n")


def render_wheels_doc(doc: dict[str, Any]) -> str:
    return HEADER + dump_yaml(doc)


def merge_since(old: dict[str, Any], new: dict[str, Any], since: Version) -> dict[str, Any]:
    """``old``'s releases before ``since``, then ``new``'s (a ``--since`` refresh keeps the rest of the file)."""
    kept = [r for r in old.get("releases") or () if Version(str(r["version"])) < since]
    return {"package": new["package"], "releases": kept + list(new["releases"])}


def torch_index_variants(base_url: str, variants: Iterable[str], make_client: Callable[[str], IndexClient]
                         ) -> tuple[dict[str, set[str]], list[str]]:
    """Which variants each torch release has on the PyTorch index (``<base>/<variant>/torch/``).

    Returns ({release: {variants}}, problems); an unreachable variant index is a problem, not an error.
    """
    found: dict[str, set[str]] = {}
    problems = []
    for variant in variants:
        client = make_client(f"{base_url.rstrip('/')}/{variant}/")
        try:
            files = client.project_files("torch")
        except Exception as e:  # noqa: BLE001 - report and go on: the index may be out of reach
            problems.append(f"{variant}: {e}")
            continue
        for f in files:
            try:
                _, version, _, tags = parse_wheel_filename(f.filename)
            except InvalidWheelFilename:
                continue
            plat = wheel_platform(next(iter(tags)).platform)
            if plat is None or plat[0] not in _LINUX or version.local != variant:
                continue
            found.setdefault(str(Version(version.public)), set()).add(variant)
    return found, problems


def apply_files(root: Path, files: Mapping[str, str]) -> None:
    """Write refreshed files (name relative to ``root`` -> text) into the matrix: all of them or none.

    The matrix as it would be afterwards (these files over the ones on disk) must validate first,
    read by the matrix's own reader; if it does not, nothing is written and it is a
    PackageIndexError (what the index answered does not make a valid matrix). Then each file is
    written to a temporary file beside it and flushed to disk; only when every one is, each is
    renamed over its file. A write that fails (a full disk, an unwritable directory) removes the
    temporary files, leaves the matrix as it was, and is a UsageError naming the file.
    """
    if not files:
        return
    _check_staged(root, files)
    staged: list[tuple[str, Path]] = []
    replaced = 0
    target = root
    try:
        for name, text in files.items():
            target = root / name
            staged.append((_stage(target, text.encode("utf-8")), target))
        for tmp, dest in staged:
            target = dest
            os.replace(tmp, dest)
            replaced += 1
        _sync_dirs({dest.parent for _, dest in staged})
    except OSError as e:
        state = "the matrix is unchanged" if not replaced else f"{replaced} of {len(files)} files were replaced"
        raise UsageError(f"--matrix: cannot write {str(target)!r} ({e.strerror or e}); {state}") from None
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # gone already once renamed


def _check_staged(root: Path, files: Mapping[str, str]) -> None:
    """The matrix that ``files`` over ``root`` would give validates (else PackageIndexError, one line)."""
    from .matrix.load import parse_matrix
    from .matrix.model import FILES

    raw: dict[str, bytes | None] = {}
    for name in FILES:
        if name in files:
            raw[name] = files[name].encode("utf-8")
            continue
        try:
            raw[name] = (root / name).read_bytes()
        except FileNotFoundError:
            raw[name] = None
        except OSError as e:
            raise UsageError(f"--matrix: cannot read {str(root / name)!r} ({e.strerror or e})") from None
    try:
        parse_matrix(root, raw, "staged")
    except MatrixError as e:
        n = len(e.problems)
        first = _one_line(str(e.problems[0])) if e.problems else ""
        raise PackageIndexError(f"the refreshed matrix would not validate, so nothing was written: {n} "
                                f"problem{'s' if n != 1 else ''}, the first: {first}") from None


def _stage(dest: Path, data: bytes) -> str:
    """``data`` in a new temporary file beside ``dest`` (with dest's mode), flushed to disk; its path."""
    from ._atomic import _mode

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), _mode(dest))
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _sync_dirs(dirs: Iterable[Path]) -> None:
    """Flush the renames to disk (where the file system lets a directory be opened and synced)."""
    for d in dirs:
        with contextlib.suppress(OSError):
            fd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


# --- rows for releases the curated files have not seen ------------------------------------------------------------

_CURATED = {"vllm": "vllm.yaml", "torch": "torch.yaml"}


def unseen_rows(root: Path, new: Mapping[str, str]) -> dict[str, str]:
    """``vllm.yaml`` / ``torch.yaml`` with a row for each release the refreshed ``wheels/*.yaml`` (``new``)
    names and the curated file has no row for (file name -> text; only the files that change).

    Each new row is ``verified: unverified``: it holds what the wheels tell (version; for torch, the Pythons,
    the CUDA of PyPI's wheel per platform, the companions that pin it; for vLLM, the CUDA where its METADATA
    names a CUDA runtime) and carries the rest from the newest older release's row, naming it and the
    fields in ``carried_from``. The text is inserted into the file as it is (comments and anchors kept).
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, str] = {}
    for package, file in _CURATED.items():
        gen_text = new.get(f"wheels/{package}.yaml")
        path = root / file
        if gen_text is None or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        doc = yaml.load(text, Loader=loader) or {}
        gen = yaml.load(gen_text, Loader=loader) or {}
        rows = {Version(str(r["version"])): r for r in doc.get("releases") or ()
                if isinstance(r, dict) and "version" in r}
        added = text
        for rel in gen.get("releases") or ():
            version = Version(str(rel["version"]))
            older = [v for v in rows if v < version]
            if version in rows or not older:
                continue  # a release older than every row has nothing to carry from: validate names it
            prev = rows[max(older)]
            row = (_new_vllm_row if package == "vllm" else _new_torch_row)(version, rel, prev, root, new)
            added = _insert_row(added, row, version)
            rows[version] = row
        if added != text:
            out[file] = added
    return out


def _plain(value: Any) -> Any:
    """A deep copy with no shared parts (the dumper would write YAML anchors for them)."""
    import json

    return json.loads(json.dumps(value))


def _linux_wheels(rel: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Platform -> the release's first wheel for it."""
    out: dict[str, dict[str, Any]] = {}
    for w in rel.get("wheels") or ():
        try:
            tags = parse_wheel_filename(w["filename"])[3]
        except InvalidWheelFilename:
            continue
        plat = wheel_platform(next(iter(tags)).platform)
        if plat is not None and plat[0].startswith("linux"):
            out.setdefault(plat[0], w)
    return out


def _wheel_sources(rel: Mapping[str, Any]) -> list[str]:
    srcs = [w.get("source") for w in rel.get("wheels") or ()]
    return [s[0] if isinstance(s, list) else str(s) for s in srcs if s]


def _carried_copy(item: Mapping[str, Any], prev: str) -> dict[str, Any]:
    """A row part carried from release ``prev``: its facts and sources, marked unverified."""
    out = {k: v for k, v in _plain(item).items() if k not in ("verified", "note")}
    out["verified"] = "unverified"
    out["note"] = f"carried from {prev}'s row by `vresolve matrix refresh --apply`: not checked for this release"
    return out


def _finish(row: dict[str, Any], prev: str, carried: list[str], rel: Mapping[str, Any], what: str) -> dict[str, Any]:
    if carried:
        row["carried_from"] = {"version": prev, "fields": carried}
    row["source"] = _wheel_sources(rel) or [f"compat_matrix/wheels/{what}.yaml"]
    row["verified"] = "unverified"
    row["note"] = ("Written by `vresolve matrix refresh --apply` from the wheels' METADATA; "
                   + (f"{', '.join(carried)} carried from {prev}, not read for this release. " if carried else "")
                   + "Review against the release's sources, then set verified and remove carried_from")
    return row


def _new_vllm_row(version: Version, rel: Mapping[str, Any], prev: Mapping[str, Any], root: Path,
                  new: Mapping[str, str]) -> dict[str, Any]:
    """A vllm.yaml row: CUDA from the x86_64 wheel's METADATA where it names one; kernels, source build and
    variants carried (a variant whose facts are per release, its own torch pins or a download URL, is not)."""
    p = str(prev["version"])
    wheels = _linux_wheels(rel)
    row: dict[str, Any] = {"version": str(version)}
    carried: list[str] = []
    cuda = (wheels.get("linux-x86_64") or {}).get("cuda")
    if cuda is not None:
        row["cuda"] = str(cuda)
    elif prev.get("cuda") is not None:
        row["cuda"] = str(prev["cuda"])
        carried.append("cuda")
    if prev.get("kernels") is not None:
        row["kernels"] = _plain(prev["kernels"])
        carried.append("kernels")
    if isinstance(prev.get("build"), dict):
        row["build"] = _carried_copy(prev["build"], p)
        carried.append("build")
    variants = []
    for v in prev.get("variants") or ():
        if not isinstance(v, dict) or v.get("torch_pins") or v.get("asset"):
            continue
        plats = [x for x in v.get("platforms") or () if v.get("where") != "pypi" or x in wheels]
        if plats:
            variants.append({**_carried_copy(v, p), "platforms": plats})
    if variants:
        row["variants"] = variants
        carried.append("variants")
    return _finish(row, p, carried, rel, "vllm")


def _new_torch_row(version: Version, rel: Mapping[str, Any], prev: Mapping[str, Any], root: Path,
                   new: Mapping[str, str]) -> dict[str, Any]:
    """A torch.yaml row: Pythons and PyPI's CUDA per platform from the wheels, companions from the wheels that
    pin this release (triton: torch's own pin), variants and their arch lists carried."""
    p = str(prev["version"])
    wheels = _linux_wheels(rel)
    pythons = sorted({str(x) for w in rel.get("wheels") or () for x in w.get("pythons") or ()}, key=Version)
    variants = [{k: x for k, x in _carried_copy(v, p).items() if k != "pypi_default"}
                for v in prev.get("variants") or () if isinstance(v, dict)]
    old_default = {plat: v for v in prev.get("variants") or () if isinstance(v, dict)
                   for plat, on in (v.get("pypi_default") or {}).items() if on}
    for plat, w in sorted(wheels.items()):
        _mark_default(variants, plat, w.get("cuda"), old_default.get(plat), p)
    row: dict[str, Any] = {"version": str(version), "python": pythons,
                           "companions": _companions_of(version, wheels, root, new), "variants": variants}
    return _finish(row, p, ["variants"] if variants else [], rel, "torch")


def _mark_default(variants: list[dict[str, Any]], plat: str, cuda: Any, old: Mapping[str, Any] | None,
                  prev: str) -> None:
    """The variant whose CUDA PyPI's wheel for ``plat`` requires is PyPI's default there (a new variant, its
    archs carried from the previous default's, when no carried one has that CUDA)."""
    want = Version(str(cuda)) if cuda is not None else None
    name = "cpu" if want is None else f"cu{want.major}{want.minor}"
    v = next((x for x in variants if x.get("variant") == name), None)
    if v is None:
        archs = (old or {}).get("archs") or {}
        if plat not in archs:
            return  # nothing to carry the platform's arch lists from: the row names no default there
        v = _carried_copy({"variant": name, **({"cuda": f"{want.major}.{want.minor}"} if want else {}),
                           "archs": {}, "source": (old or {}).get("source", [])}, prev)
        variants.append(v)
    if plat not in (v.get("archs") or {}):
        archs = (old or {}).get("archs") or {}
        if plat not in archs:
            return
        v.setdefault("archs", {})[plat] = _plain(archs[plat])
    v["pypi_default"] = {**(v.get("pypi_default") or {}), plat: True}
    _reorder(v)


def _reorder(v: dict[str, Any]) -> None:
    """The house order of a torch variant's fields."""
    order = ("variant", "cuda", "pypi_default", "archs", "source", "verified", "note")
    items = sorted(v.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    v.clear()
    v.update(items)


def _companions_of(version: Version, wheels: Mapping[str, Mapping[str, Any]], root: Path,
                   new: Mapping[str, str]) -> dict[str, str]:
    """triton from torch's own pin; torchvision and torchaudio: their newest release whose wheels pin this torch."""
    import yaml

    from .values import exact_pin

    out: dict[str, str] = {}
    pin = exact_pin(SpecifierSet(((wheels.get("linux-x86_64") or {}).get("requires") or {}).get("triton", "")))
    if pin is not None:
        out["triton"] = str(pin)
    for comp in ("torchvision", "torchaudio"):
        name = f"wheels/{comp}.yaml"
        text = new.get(name)
        if text is None and (root / name).is_file():
            text = (root / name).read_text(encoding="utf-8")
        doc = yaml.load(text or "", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        found = [Version(str(r["version"])) for r in doc.get("releases") or ()
                 if any(exact_pin(SpecifierSet(str((w.get("requires") or {}).get("torch", "")))) == version
                        for w in r.get("wheels") or ())]
        if found:
            out[comp] = str(max(found))
    return {k: out[k] for k in ("torchvision", "torchaudio", "triton") if k in out}


def _insert_row(text: str, row: dict[str, Any], version: Version) -> str:
    """``text`` with ``row`` rendered into its ``releases`` list: before the first row of a newer release, else
    after the last row (before any comment that trails the list)."""
    import yaml

    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert root is not None  # the file has releases: the caller read them
    seq = next(v for k, v in root.value if k.value == "releases")
    lines = text.splitlines(keepends=True)
    at = None
    for item in seq.value:
        vnode = next((v for k, v in item.value if k.value == "version"), None)
        if vnode is not None and Version(vnode.value) > version:
            at = item.start_mark.line
            break
    if at is None:
        at = seq.end_mark.line if seq.end_mark.column == 0 else seq.end_mark.line + 1
        while at > 0 and (not lines[at - 1].strip() or lines[at - 1].lstrip().startswith("#")):
            at -= 1
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    indent = " " * seq.start_mark.column
    block = "".join(indent + line if line.strip() else line for line in dump_yaml([row]).splitlines(True))
    return "".join(lines[:at]) + block + "".join(lines[at:])
