"""``pythons.yaml``: which CPython versions each release of a binary-only package (torch, tensorflow) ships wheels
for, per platform where they differ. doctor's facts for pip's "from versions" answers, not a resolver input; for
torch, a release ``torch.yaml`` has is read from its ``python`` list unless a row here names its platform.
"""

from __future__ import annotations

from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .checks import cut
from .model import Matrix, PackagePythons, Provenance, WheelPythons
from .rows import _PROV, _Rows

#: the platforms a row may name; ``all``: every platform the row does not name itself
PYTHON_PLATFORMS = ("all", "linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-x86_64", "macos-arm64")


def _release_spec(text: Any) -> SpecifierSet:
    """``1.13.1`` (that release: ``==1.13.1``) or a specifier (``==2.13.*``, ``>=2.3``)."""
    if not isinstance(text, str):
        raise ValueError(text)
    text = text.strip()
    if text[:1].isdigit():
        Version(text)
        text = f"=={text}"
    return SpecifierSet(text)


def _minor(text: str) -> Version:
    v = Version(text)
    if len(v.release) != 2 or v.pre or v.post or v.dev or v.local:
        raise ValueError(text)
    return v


def _read_row(d: dict[str, Any], row: str, r: _Rows) -> WheelPythons | None:
    r.known(d, row, ("releases", "python", *_PROV))
    releases = r.list_of(d, "releases", row, _release_spec, "release or specifier")
    by_platform = r.get(d, "python", row, dict)
    python: dict[str, tuple[Version, ...]] = {}
    for plat in by_platform or {}:
        fld = f"python.{cut(str(plat))}"
        if plat not in PYTHON_PLATFORMS:
            r.problem(row, fld, f"unknown platform (expected one of: {', '.join(PYTHON_PLATFORMS)})")
            continue
        pys = r.list_of(by_platform, plat, row, _minor, "Python version (MAJOR.MINOR)", fld=fld)
        if pys is not None:
            if list(pys) != sorted(pys):
                r.problem(row, fld, "expected ascending Python versions")
            python[plat] = pys
    if by_platform is not None and not by_platform:
        r.problem(row, "python", "expected at least one platform")
    prov = r.provenance(d, row)
    if releases is None or by_platform is None or prov is None:
        return None
    return WheelPythons(releases=releases, python=python, provenance=prov)


def _read_pythons(doc: dict[str, Any], r: _Rows) -> tuple[PackagePythons, ...]:
    out = []
    for row, d in r.rows(doc, "packages", "name"):
        r.known(d, row, ("name", "wheels_only", "releases", *_PROV))
        name = r.get(d, "name", row, str)
        if name is not None:
            name = canonicalize_name(name)
            r.once(("package", name), "package", row, "name")
        wheels_only = r.get(d, "wheels_only", row, bool)
        rows = []
        for i, rd in enumerate(r.get(d, "releases", row, list) or ()):
            sub = r.mapping(rd, row, f"releases[{i}]")
            if sub is not None:
                read = _read_row(sub, f"{row} releases[{i}]", r)
                if read is not None:
                    rows.append(read)
        prov = r.provenance(d, row)
        if name is not None and wheels_only is not None and prov is not None:
            out.append(PackagePythons(name=name, wheels_only=wheels_only, rows=tuple(rows), provenance=prov))
    return tuple(out)


# --------------------------------------------------------------------------------------------------------------
# lookups (pure): what doctor asks of these facts
# --------------------------------------------------------------------------------------------------------------

def package_pythons(m: Matrix, package: str) -> PackagePythons | None:
    key = canonicalize_name(package)
    return next((p for p in m.pythons if p.name == key), None)


def _version(text: str | Version) -> Version | None:
    try:
        return text if isinstance(text, Version) else Version(text)
    except InvalidVersion:
        return None


def known_release(m: Matrix, package: str, version: Version) -> bool:
    """Whether the matrix knows that this release exists: a torch.yaml row (torch), or an exact release of a
    pythons.yaml row."""
    return Version(version.public) in known_releases(m, package)


def wheel_pythons(m: Matrix, package: str, version: str | Version, platform: str
                  ) -> tuple[tuple[Version, ...], Provenance] | None:
    """The Pythons a release ships wheels for on a platform, and where that fact comes from: the last pythons.yaml
    row that names the release and the platform, else one that names it for ``all``, else (torch) torch.yaml's
    ``python`` (its releases' Pythons, the same on each platform unless a row here says otherwise). None: not
    known."""
    v = _version(version)
    if v is None:
        return None
    public = Version(v.public)
    p = package_pythons(m, package)
    found: tuple[tuple[Version, ...], Provenance] | None = None
    for key in (platform, "all"):
        for row in p.rows if p is not None else ():
            if key in row.python and any(s.contains(public, prereleases=True) for s in row.releases):
                found = (row.python[key], row.provenance)
        if found is not None:
            return found
    if canonicalize_name(package) == "torch":
        release = m.torch_release(public)
        if release is not None:
            return tuple(Version(f"{x.major}.{x.minor}") for x in release.python), release.provenance
    return None


def known_releases(m: Matrix, package: str) -> tuple[Version, ...]:
    """Every release of a package the matrix knows exists (see :func:`known_release`), ascending."""
    out = {r.version for r in m.torch} if canonicalize_name(package) == "torch" else set()
    p = package_pythons(m, package)
    for row in p.rows if p is not None else ():
        for s in row.releases:
            spec = next(iter(s)) if len(s) == 1 else None
            if spec is not None and spec.operator == "==" and "*" not in spec.version:
                try:
                    out.add(Version(spec.version))
                except InvalidVersion:
                    continue
    return tuple(sorted(out))


__all__ = ["PYTHON_PLATFORMS", "package_pythons", "known_release", "known_releases", "wheel_pythons"]
