from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from vresolve._atomic import write_atomic
from vresolve.errors import MatrixError, UsageError
from vresolve.matrix import dump_yaml, load_matrix, matrix_to_dicts
from vresolve.values import Capability

from .conftest import SHIPPED, TINY


def problems(path: Path) -> list[str]:
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    return [str(p) for p in info.value.problems]


def test_tiny_matrix_loads_into_typed_objects() -> None:
    m = load_matrix(TINY)
    assert [str(t.version) for t in m.toolkits] == ["12.8", "13.0"]
    h200 = m.find_gpu("nvidia  h200")
    assert h200 is not None and h200.compute_capability == Capability(9, 0)
    assert m.find_gpu("a100").name == "NVIDIA A100-SXM4-80GB"
    v = m.vllm_release(Version("0.33.0"))
    assert str(v.pins("linux-x86_64")["torch"]) == "==2.14.0"
    assert v.pins("linux-aarch64") == {}
    assert str(v.requires_python) == "<3.15,>=3.11"
    t = m.torch_release(Version("2.14.0"))
    assert t.variant("cu130").pypi_default == frozenset({"linux-x86_64"})
    assert t.wheels[0].cuda == Version("13.0")
    assert m.known_issues[0].patterns()[0].search("ModuleNotFoundError: No module named 'vllm._C'")


def _round_trip(path: Path, tmp_path: Path) -> None:
    first = load_matrix(path)
    out = tmp_path / "dumped"
    for name, doc in matrix_to_dicts(first).items():
        write_atomic(out / name, dump_yaml(doc))
    second = load_matrix(out)
    assert second == first
    assert matrix_to_dicts(second) == matrix_to_dicts(first)


def test_round_trip_tiny(tmp_path: Path) -> None:
    _round_trip(TINY, tmp_path)


def test_round_trip_shipped(tmp_path: Path) -> None:
    _round_trip(SHIPPED, tmp_path)


def test_missing_directory() -> None:
    with pytest.raises(UsageError, match="matrix directory '/nonexistent' does not exist"):
        load_matrix("/nonexistent")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit that sets ``doc[a][b]...`` (ints index lists) to ``value``; ``...`` deletes."""
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]

    def edit(doc: dict[str, Any]) -> None:
        node: Any = doc
        for k in keys[:-1]:
            node = node[k]
        if value is ...:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value

    return edit


BROKEN = [
    pytest.param({"gpus.yaml": _set("gpus.0.compute_capability", "9.x")},
                 ["gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: invalid compute capability '9.x' "
                  "(expected MAJOR.MINOR such as '8.6')"], id="bad-capability"),
    pytest.param({"gpus.yaml": _set("gpus.0.compute_capability", 9.0)},
                 ["gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: expected str, got float 9.0 "
                  "(quote it: YAML reads 12.10 as a number)"], id="unquoted-capability"),
    pytest.param({"gpus.yaml": _set("gpus.1.source", ...)},
                 ["gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': source: missing"], id="no-source"),
    pytest.param({"gpus.yaml": _set("gpus.1.verified", "checked")},
                 ["gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': verified: invalid value 'checked' "
                  "(expected one of: primary, observed, secondary, unverified)"], id="bad-verified"),
    pytest.param({"gpus.yaml": _set("gpus.1.aliases", ["H200"])},
                 ["gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': aliases: 'H200' also names 'NVIDIA H200'"],
                 id="duplicate-alias"),
    pytest.param({"gpus.yaml": _set("gpus.1.family", "hopper")},
                 ["gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': compute_capability: 8.0 is not a capability "
                  "of the hopper family (9.0)"], id="family-mismatch"),
    pytest.param({"gpus.yaml": _set("gpus.1.sorce", "x")},
                 ["gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': sorce: unknown field (expected one of: name, "
                  "names, aliases, compute_capability, family, segment, memory_gib, driver, source, verified, note)"],
                 id="unknown-field"),
    pytest.param({"cuda.yaml": _set("toolkits.1.min_driver.linux", "580.x")},
                 ["cuda.yaml: toolkits[1] '13.0': min_driver.linux: invalid driver version '580.x' "
                  "(expected a version such as '580.65.06')"], id="bad-driver"),
    pytest.param({"cuda.yaml": _set("toolkits.0.nvcc_archs.lowest", "12.1")},
                 ["cuda.yaml: toolkits[0] '12.8': nvcc_archs: lowest 12.1 is above highest 12.0"],
                 id="nvcc-range"),
    pytest.param({"cuda.yaml": _set("toolkits.1.nvcc_archs.highest", "8.9"),
                  "gpus.yaml": _set("gpus.0.compute_capability", "9.0")},
                 [], id="gpu-capability-still-known-to-12.8"),
    pytest.param({"cuda.yaml": _set("toolkits.0.version", "12.9")},
                 ["cuda.yaml: toolkits[0] '12.9': updates: update 12.8.1 is not an update of 12.9",
                  "torch.yaml: releases[0] '2.14.0': variants 'cu128'.cuda: CUDA 12.8 is not in cuda.yaml's toolkits",
                  "vllm.yaml: releases[0] '0.33.0': variants 'cu128'.cuda: CUDA 12.8 is not in cuda.yaml's toolkits"],
                 id="variant-cuda-unknown"),
    pytest.param({"cuda.yaml": _set("majors", [])},
                 ["cuda.yaml: toolkits[0] '12.8': version: CUDA 12 has no row in 'majors'",
                  "cuda.yaml: toolkits[1] '13.0': version: CUDA 13 has no row in 'majors'"], id="no-major"),
    pytest.param({"torch.yaml": _set("releases.0.variants.1.cuda", "12.6")},
                 ["torch.yaml: releases[0] '2.14.0': variants[1].cuda: 12.6 does not match variant 'cu128' (CUDA 12.8)"],
                 id="variant-name-vs-cuda"),
    pytest.param({"torch.yaml": _set("releases.0.variants.0.archs.linux-x86_64.sass", ["9.0", "8.0"])},
                 ["torch.yaml: releases[0] '2.14.0' variants[0]: archs.linux-x86_64.sass: expected ascending "
                  "capabilities without repeats"], id="unsorted-archs"),
    pytest.param({"torch.yaml": _set("releases.0.companions.torchvision", "0.28.0"),
                  "wheels/torchvision.yaml": _set("releases.0.version", "0.28.0")},
                 ["wheels/torchvision.yaml: releases[0] '0.28.0': wheels[0].filename: is not a wheel of "
                  "torchvision 0.28.0"], id="wheel-filename-version"),
    pytest.param({"wheels/vllm.yaml": _set("releases.0.wheels.0.requires.torch", "==2.13.0")},
                 ["wheels/vllm.yaml: releases[0] '0.33.0': vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
                  ".requires.torch: torch 2.13.0 is not in torch.yaml's releases"], id="vllm-pin-unknown-torch"),
    pytest.param({"wheels/vllm.yaml": _set("releases.0.wheels.0.requires.torch", ">=2.13")},
                 ["wheels/vllm.yaml: releases[0] '0.33.0': vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
                  ".requires.torch: expected an exact pin, got '>=2.13'"], id="vllm-pin-not-exact"),
    pytest.param({"wheels/torchvision.yaml": _set("releases.0.wheels.0.requires.torch", "==2.13.0")},
                 ["torch.yaml: releases[0] '2.14.0': companions.torchvision: torchvision 0.29.0's wheels require "
                  "torch ==2.13.0, which excludes 2.14.0"], id="companion-pin"),
    pytest.param({"wheels/vllm.yaml": _set("releases.0.version", "0.32.0")},
                 ["wheels/vllm.yaml: releases[0] '0.32.0': wheels[0].filename: is not a wheel of vllm 0.32.0",
                  "vllm.yaml: releases[0] '0.33.0': version: no such release in wheels/vllm.yaml "
                  "(regenerate it, or remove the row)",
                  "wheels/vllm.yaml: release '0.32.0': version: the release has no row in vllm.yaml"],
                 id="generated-vs-curated"),
    pytest.param({"known_issues.yaml": _set("issues.16.cause", "gremlins")},  # the one row of its cause
                 ["known_issues.yaml: issues[16] 'tiny-glibc-too-old': cause: invalid value 'gremlins' "
                  "(expected one of: "
                  "source-tree-shadowing, cpu-only-build, torch-abi-mismatch, cuda-variant-mismatch, "
                  "arch-not-in-build, driver-too-old, ptx-toolchain-too-new, optional-kernel-missing, "
                  "toolkit-mismatch, build-isolation, build-oom, installer-replaced-torch, library-not-found, "
                  "nvml-driver-mismatch, gpu-too-old-for-feature, python-unsupported, glibc-too-old, "
                  "companion-mismatch, gpu-not-visible, incomplete-install, shared-memory-too-small, "
                  "nccl-misconfigured, fabric-manager-not-running, gpu-fallen-off-bus, c-compiler-missing, program-limit)",
                  # the row is dropped, so its cause has none left: doctor explains each cause from this table
                  "known_issues.yaml: issues: cause: no row for cause 'glibc-too-old' (doctor explains every "
                  "cause from this table)"], id="unknown-cause"),
    pytest.param({"known_issues.yaml": _set("issues.0.signatures", ["No module named ('vllm"])},
                 ["known_issues.yaml: issues[0] 'vllm-c-missing': signatures[0]: invalid regular expression "
                  "\"No module named ('vllm\": missing ), unterminated subpattern at position 16"], id="bad-regex"),
    pytest.param({"wheels/xformers.yaml": (
        "package: xformers\nreleases:\n- version: '0.0.33'\n  wheels:\n"
        "  - filename: xformers-0.0.33-cp39-abi3-manylinux_2_28_x86_64.whl\n    requires: {torch: ==2.9.0}\n"
        "    source: xformers-0.0.33-cp39-abi3-manylinux_2_28_x86_64.whl:xformers-0.0.33.dist-info/METADATA\n"
        "    verified: observed\n"), "wheels/vllm.yaml": _set("releases.0.wheels.0.requires.xformers", "==0.0.33")},
                 ["wheels/vllm.yaml: releases[0] '0.33.0': vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
                  ".requires.xformers: xformers 0.0.33 requires torch ==2.9.0, but this wheel pins torch 2.14.0"],
                 id="companion-built-for-another-torch"),
    pytest.param({"vllm.yaml": None},
                 ["vllm.yaml: file missing"], id="file-missing"),
    pytest.param({"gpus.yaml": "gpus: [\n"},
                 ["gpus.yaml: line 2: not valid YAML: did not find expected node content"], id="bad-yaml"),
    pytest.param({"gpus.yaml": "- a\n"},
                 ["gpus.yaml: expected a mapping at the top, got list"], id="top-not-mapping"),
]


@pytest.mark.parametrize(("edits", "expected"), BROKEN)
def test_broken_matrix_reports_exact_errors(tiny_copy: Callable[..., Path], edits: dict[str, Any],
                                            expected: list[str]) -> None:
    path = tiny_copy(edits)
    if not expected:
        load_matrix(path)
        return
    assert problems(path) == expected


def test_all_errors_at_once(tiny_copy: Callable[..., Path]) -> None:
    def many(doc: dict[str, Any]) -> None:
        doc["gpus"][0]["compute_capability"] = "9.x"
        doc["gpus"][1]["segment"] = "gaming"
        del doc["gpus"][1]["verified"]

    found = problems(tiny_copy({"gpus.yaml": many, "cuda.yaml": _set("toolkits.0.released", "Jan 2025")}))
    assert found == [
        "cuda.yaml: toolkits[0] '12.8': released: invalid date 'Jan 2025' (expected YYYY-MM-DD or YYYY-MM)",
        "gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: invalid compute capability '9.x' "
        "(expected MAJOR.MINOR such as '8.6')",
        "gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': segment: invalid value 'gaming' "
        "(expected one of: datacenter, workstation, consumer, jetson, superchip)",
        "gpus.yaml: gpus[1] 'NVIDIA A100-SXM4-80GB': verified: missing",
    ]


def test_validated_matrix_is_cached_by_content(tiny_copy: Callable[..., Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "c"
    monkeypatch.setenv("VRESOLVE_CACHE_DIR", str(cache))
    path = tiny_copy()
    first = load_matrix(path)
    (entry,) = cache.iterdir()
    again = load_matrix(path)
    assert again == first and again.revision == first.revision
    # an edited file misses the cache and is validated again
    (path / "gpus.yaml").write_text((path / "gpus.yaml").read_text().replace('"9.0"\n    family: hopper',
                                                                             '"9.x"\n    family: hopper', 1))
    with pytest.raises(MatrixError, match="invalid compute capability '9.x'"):
        load_matrix(path)
    # a corrupt cache entry is only a miss
    entry.write_bytes(b"not a pickle")
    monkeypatch.setenv("VRESOLVE_CACHE_DIR", str(cache))
    assert load_matrix(TINY) == first
    # the same content at another path answers with that path
    assert load_matrix(TINY).path == str(TINY)
