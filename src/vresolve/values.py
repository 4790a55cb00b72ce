"""Small value types shared by every layer: compute capabilities, arch lists, variants.

Pure; parse at the boundary (``Capability.parse``, ``parse_variant``) and pass real
types around afterwards.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

# EXTENSION_FILE_PATTERN (a compiled extension module's file name) and EXTENSION_HELPERS (the code that finds and
# loads them inside an environment) live with the check programs, which run there (checks/verify.py, stdlib only)
from .checks.verify import EXTENSION_FILE_PATTERN, EXTENSION_HELPERS  # noqa: F401 (EXTENSION_HELPERS: re-exported)

__all__ = [
    "DriverVersion",
    "PLATFORMS",
    "VERIFIED_LEVELS",
    "Capability",
    "ArchList",
    "parse_variant",
    "exact_pin",
    "public_version",
    "variant_for_cuda",
    "EXTENSION_FILE_PATTERN",
    "core_extension",
]

#: vLLM's main kernel library: ``_C`` up to 0.23.x, ``_C_stable_libtorch`` (torch's stable ABI) from 0.19.0 on
#: (both in 0.19.0-0.23.x, only the second from 0.24.0); read off each wheel's file list.
CORE_EXTENSIONS = ("vllm._C", "vllm._C_stable_libtorch")


def core_extension(extensions: Sequence[str]) -> str:
    """The module that holds vLLM's main kernels in a build shipping ``extensions`` (``vllm._C`` if unknown)."""
    return next((c for c in CORE_EXTENSIONS if c in extensions), CORE_EXTENSIONS[0])

PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")
VERIFIED_LEVELS = ("primary", "observed", "secondary", "unverified")

#: the characters no name, version, message or artefact line may carry as they are (a regex class body):
#: C0 and C1 controls (line breaks, ESC), DEL, and the invisible format characters that reorder or hide
#: text (soft hyphen, bidi marks, overrides and isolates, zero-width, line and paragraph separators, BOM)
INVISIBLE = ("\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
             "\ufff9-\ufffb")


_CC_RE = re.compile(
    r"""^\s*(?:
        (?P<maj>\d{1,2})\.(?P<min>\d)          # 8.6, 12.0
      | (?:sm_|compute_)?(?P<packed>\d{2,3})   # sm_86, compute_90, 120
    )(?P<suffix>[af]?)\s*$""",
    re.VERBOSE | re.IGNORECASE,
)


# Positional: these values are pickled thousands of times in the matrix cache, and a positional Struct unpickles
# as one call of its class (a keyword-only one goes through a Python-level rebuild per object)
class Capability(msgspec.Struct, frozen=True, order=True):
    """A CUDA compute capability such as 8.6 or 9.0a (arch-specific suffix ``a``/``f``).

    >>> Capability.parse("sm_90a")
    Capability(major=9, minor=0, suffix='a')
    >>> str(Capability.parse("12.0"))
    '12.0'
    """

    major: int
    minor: int
    suffix: str = ""

    @classmethod
    def parse(cls, text: str) -> Capability:
        """Parse ``8.6``, ``sm_86``, ``compute_86``, ``86`` or ``9.0a``; ValueError otherwise."""
        m = _CC_RE.match(str(text))
        if not m:
            raise ValueError(
                f"invalid compute capability {text!r} (expected MAJOR.MINOR such as '8.6', or 'sm_86')"
            )
        if m["packed"]:
            packed = m["packed"]
            major, minor = int(packed[:-1]), int(packed[-1])
        else:
            major, minor = int(m["maj"]), int(m["min"])
        return cls(major, minor, m["suffix"].lower())

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}"

    @property
    def sm(self) -> str:
        """The nvcc spelling, ``sm_90a``."""
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @property
    def base(self) -> Capability:
        """The capability without its arch-specific suffix."""
        return Capability(self.major, self.minor) if self.suffix else self


class ArchList(msgspec.Struct, frozen=True):
    """What a CUDA build contains: SASS (cubins) and PTX, as compute capabilities.

    A GPU of capability ``cc`` runs the build when there is SASS of the same major whose
    minor is not above the GPU's (``sm_80`` runs on 8.6), or PTX for a capability not
    above the GPU's (which the driver JIT-compiles). Arch-specific cubins (``sm_90a``)
    run only on exactly that capability.
    """

    sass: tuple[Capability, ...] = ()
    ptx: tuple[Capability, ...] = ()

    def sass_for(self, cc: Capability) -> Capability | None:
        """The best SASS in the build that runs on ``cc``, or None."""
        fits = [
            s
            for s in self.sass
            if s.major == cc.major
            and (s.minor <= cc.minor if not s.suffix else s.base == cc.base)
        ]
        return max(fits, default=None)

    def ptx_for(self, cc: Capability) -> Capability | None:
        """The newest PTX in the build that the driver can JIT for ``cc``, or None."""
        fits = [p for p in self.ptx if not p.suffix and p <= cc.base]
        return max(fits, default=None)

    def covers(self, cc: Capability) -> bool:
        return self.sass_for(cc) is not None or self.ptx_for(cc) is not None

    @property
    def lowest(self) -> Capability | None:
        return min((*self.sass, *self.ptx), default=None)

    @classmethod
    def from_torch(cls, arch_list: Sequence[str]) -> ArchList:
        """``torch.cuda.get_arch_list()`` (``sm_90``, ``sm_90a``, ``compute_90``) as an ArchList."""
        sass: list[Capability] = []
        ptx: list[Capability] = []
        for a in arch_list:
            kind, _, num = a.partition("_")
            try:
                cc = Capability.parse(num)
            except ValueError:
                continue
            (sass if kind == "sm" else ptx if kind == "compute" else []).append(cc)
        return cls(sass=tuple(sorted(set(sass))), ptx=tuple(sorted(set(ptx))))

    def __str__(self) -> str:
        parts = [str(s) for s in self.sass] + [f"{p}+PTX" for p in self.ptx]
        return ";".join(parts) if parts else "(none)"


_DRIVER_RE = re.compile(r"^\s*(\d+(?:\.\d+){0,3})\s*$")


@functools.total_ordering
class DriverVersion:
    """An NVIDIA driver version, compared numerically but printed as NVIDIA prints it.

    ``packaging.version.Version("580.159.04")`` prints ``580.159.4``; this keeps ``580.159.04``.

    >>> DriverVersion.parse("580.159.04") > DriverVersion.parse("580.65.06")
    True
    >>> str(DriverVersion.parse("580.159.04"))
    '580.159.04'
    """

    __slots__ = ("text", "key", "_cmp")

    def __init__(self, text: str, key: tuple[int, ...]) -> None:
        self.text = text
        self.key = key
        self._cmp = key + (0,) * (4 - len(key))  # 580.65 == 580.65.0

    @classmethod
    def parse(cls, text: str) -> DriverVersion:
        m = _DRIVER_RE.match(str(text))
        if not m:
            raise ValueError(f"invalid driver version {text!r} (expected a version such as '580.65.06')")
        return cls(m[1], tuple(int(p) for p in m[1].split(".")))

    def __reduce__(self) -> tuple[type, tuple[str, tuple[int, ...]]]:
        return (DriverVersion, (self.text, self.key))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DriverVersion) and self._cmp == other._cmp

    def __lt__(self, other: DriverVersion) -> bool:
        return self._cmp < other._cmp

    def __hash__(self) -> int:
        return hash(self._cmp)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"DriverVersion({self.text!r})"

    @property
    def major(self) -> int:
        return self.key[0]


_VARIANT_RE = re.compile(r"^cu(?P<major>1\d)(?P<minor>\d)$")


def parse_variant(text: str) -> Version | None:
    """The CUDA version a variant name stands for: ``cu128`` -> 12.8, ``cpu`` -> None.

    Raises ValueError on anything else.
    """
    if text == "cpu":
        return None
    m = _VARIANT_RE.match(text)
    if not m:
        raise ValueError(f"invalid variant {text!r} (expected 'cpu' or 'cuXYZ' such as 'cu128')")
    return Version(f"{m['major']}.{m['minor']}")


def exact_pin(spec: SpecifierSet | None) -> Version | None:
    """The version an ``==X`` specifier pins (local tag kept), else None.

    >>> exact_pin(SpecifierSet("==2.14.0")), exact_pin(SpecifierSet(">=2.13"))
    (<Version('2.14.0')>, None)
    """
    items = list(spec) if spec is not None else []
    if len(items) == 1 and items[0].operator in ("==", "===") and "*" not in items[0].version:
        try:
            return Version(items[0].version)
        except InvalidVersion:
            return None
    return None


def public_version(text: str | None) -> Version | None:
    """``2.11.0+cu130`` -> 2.11.0; None for nothing or an invalid version."""
    try:
        return Version(Version(text).public) if text else None
    except InvalidVersion:
        return None


def variant_for_cuda(cuda: Version) -> str:
    """The variant name of a CUDA version: 12.8 -> ``cu128``."""
    return f"cu{cuda.major}{cuda.minor}"
