from __future__ import annotations

import pytest
from packaging.version import Version

from vresolve.values import ArchList, Capability, parse_variant, variant_for_cuda


@pytest.mark.parametrize(("text", "expected"), [
    ("8.6", Capability(8, 6)), ("sm_86", Capability(8, 6)), ("compute_90", Capability(9, 0)),
    ("120", Capability(12, 0)), ("sm_90a", Capability(9, 0, "a")), ("12.0f", Capability(12, 0, "f")),
    (" 7.5 ", Capability(7, 5)),
])
def test_capability_parse(text: str, expected: Capability) -> None:
    assert Capability.parse(text) == expected


@pytest.mark.parametrize("text", ["9.x", "", "sm_", "8.66", "1234", "9.0b"])
def test_capability_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid compute capability"):
        Capability.parse(text)


def test_capability_str_and_order() -> None:
    assert str(Capability.parse("sm_100a")) == "10.0a"
    assert Capability.parse("sm_100a").sm == "sm_100a"
    assert sorted(map(Capability.parse, ["12.0", "8.6", "9.0", "10.0", "7.5"])) == [
        Capability(7, 5), Capability(8, 6), Capability(9, 0), Capability(10, 0), Capability(12, 0)]


def _archs(sass: str, ptx: str = "") -> ArchList:
    return ArchList(sass=tuple(map(Capability.parse, sass.split())), ptx=tuple(map(Capability.parse, ptx.split())))


@pytest.mark.parametrize(("archs", "gpu", "covered"), [
    (_archs("8.0 9.0"), "8.6", True),       # SASS of the same major, lower minor
    (_archs("8.6"), "8.0", False),          # SASS of a higher minor does not run
    (_archs("9.0"), "10.0", False),         # SASS does not cross majors
    (_archs("8.0 9.0", "9.0"), "12.0", True),  # PTX older than the GPU is JIT-compiled
    (_archs("8.0 9.0", "9.0"), "8.6", True),
    (_archs("7.5", "7.5"), "7.0", False),   # PTX newer than the GPU cannot run
    (_archs("9.0a"), "9.0", True),          # arch-specific cubins run on exactly that capability
    (_archs("10.0a"), "10.3", False),
    (_archs(""), "9.0", False),             # a CPU build covers nothing
])
def test_archlist_covers(archs: ArchList, gpu: str, covered: bool) -> None:
    assert archs.covers(Capability.parse(gpu)) is covered


def test_archlist_str() -> None:
    assert str(_archs("8.0 9.0", "9.0")) == "8.0;9.0;9.0+PTX"


def test_variants() -> None:
    assert parse_variant("cu128") == Version("12.8")
    assert parse_variant("cu118") == Version("11.8")
    assert parse_variant("cpu") is None
    assert variant_for_cuda(Version("13.0")) == "cu130"
    with pytest.raises(ValueError, match="invalid variant 'rocm6.2'"):
        parse_variant("rocm6.2")
