"""Hostile input to the matrix and to the log matcher: each test reproduces one attack.

Matrix files that are not regular files, YAML alias bombs, catastrophic regular expressions, duplicate
rows, and a planted or corrupted matrix cache. Each must end in a one-line problem (or a cache miss),
never a traceback, a hang or unbounded memory.
"""

from __future__ import annotations

import copy
import os
import pickle
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vresolve.cli import main
from vresolve.doctor.logs import MAX_LINE, bounded_lines, match_log
from vresolve.errors import EXIT_USAGE, MatrixError
from vresolve.matrix import cache, load_matrix
from vresolve.matrix.checks import _targetable
from vresolve.matrix.files import read_files
from vresolve.matrix.patterns import backtracking_problem
from vresolve.values import Capability

from .conftest import DATA, SHIPPED, TINY


def problems(path: Path) -> list[str]:
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    return [str(p) for p in info.value.problems]


# -- matrix files that are not regular files ------------------------------------------------------------------


def _replace(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        f = root / name
        f.unlink()
        make(f)

    return edit


NOT_REGULAR = [
    pytest.param(_replace("gpus.yaml", lambda f: f.mkdir()), "gpus.yaml: not a regular file (a directory)",
                 id="directory"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to("/nonexistent/gpus.yaml")),
                 "gpus.yaml: a symbolic link to a file that does not exist", id="dangling-symlink"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to(f.name)),
                 "gpus.yaml: cannot be read (Too many levels of symbolic links)", id="symlink-loop"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to("/dev/zero")),
                 "gpus.yaml: not a regular file (a character device)", id="dev-zero"),
    pytest.param(_replace("gpus.yaml", lambda f: os.mkfifo(f)), "gpus.yaml: not a regular file (a FIFO)", id="fifo"),
    pytest.param(_replace("gpus.yaml", lambda f: os.truncate(f.touch() or f, 17 * 2**20)),
                 "gpus.yaml: larger than 16 MiB (17.0 MiB): a matrix file is a few hundred KB", id="too-large"),
]


@pytest.mark.parametrize(("edit", "expected"), NOT_REGULAR)
def test_matrix_file_that_is_not_a_regular_file(tiny_copy: Callable[..., Path], edit: Callable[[Path], None],
                                                expected: str) -> None:
    root = tiny_copy()
    edit(root)
    assert problems(root) == [expected]


def test_wheels_folder_that_is_a_file(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy()
    for f in (root / "wheels").iterdir():
        f.unlink()
    (root / "wheels").rmdir()
    (root / "wheels").write_text("not a folder\n")
    assert problems(root) == [f"wheels/{p}.yaml: cannot be read (Not a directory)"
                              for p in ("torch", "torchvision", "torchaudio", "vllm", "xformers", "flashinfer-python")]


def test_optional_file_that_is_not_a_regular_file_is_not_skipped(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy()
    (root / "wheels" / "xformers.yaml").mkdir()  # optional when absent; a folder there is a mistake
    assert problems(root) == ["wheels/xformers.yaml: not a regular file (a directory)"]


def test_cli_fifo_matrix_file_is_one_line_exit_2(tiny_copy: Callable[..., Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tiny_copy()
    (root / "gpus.yaml").unlink()
    os.mkfifo(root / "gpus.yaml")  # reading it would wait for a writer forever
    code = main(["matrix", "validate", "--matrix", str(root)])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "vresolve: error: 1 problem in the matrix:\n  gpus.yaml: not a regular file (a FIFO)\n"


# -- the matrix cache ------------------------------------------------------------------------------------------


class _Touch:
    """Unpickled, it runs ``touch PATH``: what a planted cache file could do to a plain pickle.load."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.path}",))


def _plan(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["plan", "--gpu", "H200", "--driver", "580.159.04", "--python", "3.12", "--matrix", str(root),
                 "--json"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("sealed", [False, True], ids=["bare-pickle", "pickle-with-valid-checksum"])
def test_planted_cache_runs_no_code(tiny_copy: Callable[..., Path], tmp_path: Path, sealed: bool,
                                    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VRESOLVE_PLAN_CACHE", "0")  # every plan loads the matrix
    root = tiny_copy()
    want = _plan(root, capsys)
    m = load_matrix(root)
    cfile = cache.cache_file(m.revision)
    assert cfile is not None and cfile.is_file()
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Touch(marker), protocol=pickle.HIGHEST_PROTOCOL)
    # with a checksum that matches (anyone who can write the file can compute one), the unpickler must refuse
    cfile.write_bytes(cache.seal(payload) if sealed else payload)
    assert load_matrix(root) == load_matrix(root, cache=False)
    assert _plan(root, capsys) == want
    assert not marker.exists()


def test_cache_with_a_flipped_byte_is_a_miss(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy()
    m = load_matrix(root)
    cfile = cache.cache_file(m.revision)
    assert cfile is not None
    good = cfile.read_bytes()
    at = good.index(b"NVIDIA H200")
    for offset in (at + 10, 0, len(good) // 2, len(good) - 1):  # H200 -> H201 would be a silently other matrix
        bad = bytearray(good)
        bad[offset] ^= 0x01
        cfile.write_bytes(bytes(bad))
        again = load_matrix(root)
        assert again == m and again.gpus[0].name == "NVIDIA H200"
        assert cfile.read_bytes() == good  # the miss wrote the cache again


@pytest.mark.parametrize("plant", ["fifo", "dev-zero", "directory", "truncated"])
def test_cache_file_that_is_not_a_cache_is_a_miss(tiny_copy: Callable[..., Path], plant: str) -> None:
    root = tiny_copy()
    m = load_matrix(root)
    cfile = cache.cache_file(m.revision)
    assert cfile is not None
    good = cfile.read_bytes()
    cfile.unlink()
    if plant == "fifo":
        os.mkfifo(cfile)  # reading it would wait for a writer forever
    elif plant == "dev-zero":
        cfile.symlink_to("/dev/zero")
    elif plant == "directory":
        cfile.mkdir()
    else:
        cfile.write_bytes(good[: len(good) // 2])
    assert load_matrix(root) == m


def test_cache_holds_every_class_of_the_shipped_matrix() -> None:
    """The restricted unpickler allows each class the shipped matrix holds: a second load is a hit."""
    m = load_matrix(SHIPPED)
    cfile = cache.cache_file(m.revision)
    assert cfile is not None
    hit = cache.read(cfile, m.revision, SHIPPED)
    assert hit is not None and hit == m


def test_matrix_validate_never_answers_from_the_cache(tiny_copy: Callable[..., Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    good = load_matrix(TINY)
    root = tiny_copy({"gpus.yaml": lambda doc: doc["gpus"][0].update(compute_capability="9.x")})
    _, revision = read_files(root)
    cfile = cache.cache_file(revision)
    assert cfile is not None
    cache.write(cfile, msgspec.structs.replace(good, revision=revision))  # a cache entry that says "valid"
    code = main(["matrix", "validate", "--matrix", str(root)])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert "gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: invalid compute capability '9.x'" in err


# -- YAML: alias bombs, values that cannot be read, huge values in messages ------------------------------------


def _bomb(levels: int) -> str:
    """A 'billion laughs' gpus.yaml: ``levels`` anchors of 9 aliases each, a name made of 9**levels strings."""
    lines = ["x-anchors:", '  a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, "architectures: []", "gpus:", f"  - name: *a{levels}", ""])


def test_yaml_alias_bomb_is_one_short_problem(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy({"gpus.yaml": _bomb(8)})  # 9**9 strings once expanded: its repr alone would be ~3 GB
    assert problems(root) == ["gpus.yaml: its aliases expand it to more than 100,000 values (an alias bomb?): "
                              "a matrix file needs at most a few thousand values; write them out"]


def test_yaml_merge_key_bomb_is_one_short_problem(tiny_copy: Callable[..., Path]) -> None:
    # merge keys copy the merged pairs while the document is built: 9**12 pairs before any check could run
    lines = ["x-anchors:", "  m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}"]
    lines += [f"  m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}" for i in range(1, 13)]
    root = tiny_copy({"gpus.yaml": "\n".join([*lines, "architectures: []", "gpus: []", ""])})
    assert problems(root) == ["gpus.yaml: its aliases expand it to more than 100,000 values (an alias bomb?): "
                              "a matrix file needs at most a few thousand values; write them out"]


def test_yaml_duplicate_key_is_a_problem(tiny_copy: Callable[..., Path]) -> None:
    """A key given twice in one mapping (a merge's leftover ``verified:``): YAML would keep the last one silently."""
    gpus = ("architectures: []\ngpus:\n  - name: NVIDIA H200\n    compute_capability: \"9.0\"\n"
            "    compute_capability: \"8.0\"\n")
    root = tiny_copy({"gpus.yaml": gpus})
    assert problems(root) == ["gpus.yaml: line 5: the key 'compute_capability' is given twice in one mapping (YAML "
                              "would keep the last silently)"]


def test_yaml_alias_cycle_is_one_short_problem(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy({"gpus.yaml": "architectures: &a [*a]\ngpus: []\n"})
    assert problems(root) == ["gpus.yaml: an alias names a value that contains it (a cycle): a matrix file "
                              "needs none"]


def test_yaml_aliases_that_expand_little_are_read(tiny_copy: Callable[..., Path]) -> None:
    """The shipped torch.yaml and vllm.yaml share arch lists through anchors: the same matrix as written out."""
    text = (TINY / "gpus.yaml").read_text()
    shared = text.replace('compute_capabilities: ["9.0"]', 'compute_capabilities: &hopper ["9.0"]', 1)
    shared = shared.replace('compute_capability: "9.0"', "compute_capability: *hopper", 1)
    assert shared.count("&hopper") == shared.count("*hopper") == 1
    assert problems(tiny_copy({"gpus.yaml": shared})) == [
        "gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: expected str, got list ['9.0']"]  # read as what it names


def test_stars_and_ampersands_inside_strings_are_not_aliases(tiny_copy: Callable[..., Path]) -> None:
    def sigs(doc: dict[str, list[dict[str, object]]]) -> None:
        doc["issues"][0]["signatures"] = ["No module named 'vllm\\._C' [*] & more", "x &y *z"]
        doc["issues"][0]["title"] = "*bold* & [*] {*}"

    load_matrix(tiny_copy({"known_issues.yaml": sigs}))


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("architectures: []\ngpus: " + "9" * 5000 + "\n",
                 "gpus.yaml: not valid YAML: Exceeds the limit (4300 digits) for integer string conversion: "
                 "value has 5000 digits", id="5000-digit-integer"),
    pytest.param("architectures: []\ngpus:\n  - released: 2025-13-45\n",
                 "gpus.yaml: not valid YAML: month must be in 1..12", id="impossible-date"),
])
def test_yaml_values_python_cannot_make(tiny_copy: Callable[..., Path], text: str, expected: str) -> None:
    assert problems(tiny_copy({"gpus.yaml": text})) == [expected]


def test_huge_values_are_cut_short_in_problems(tiny_copy: Callable[..., Path]) -> None:
    def huge(doc: dict[str, list[dict[str, object]]]) -> None:
        doc["gpus"][0]["compute_capability"] = [["9.0"] * 300 for _ in range(300)]
        doc["gpus"][0]["segment"] = "x" * 2**20
        doc["gpus"][0]["y" * 5000] = 1
        doc["gpus"][1]["name"] = "A100 " * 100_000
        doc["gpus"][1]["segment"] = "gaming"

    found = problems(tiny_copy({"gpus.yaml": huge}))
    assert len(found) == 4 and all(len(p) < 600 for p in found), [len(p) for p in found]
    unknown, cc, segment, row = found
    assert unknown.startswith("gpus.yaml: gpus[0] 'NVIDIA H200': yyyyyyyy") and "yyy...yyy" in unknown and unknown.endswith(
        "yyy: unknown field (expected one of: name, names, aliases, compute_capability, family, segment, "
        "memory_gib, driver, source, verified, note)")
    assert cc.startswith("gpus.yaml: gpus[0] 'NVIDIA H200': compute_capability: expected str, got list "
                         "[['9.0', '9.0', '9.0', '9.0', '9.0', '9.0', ...], ")
    assert segment.startswith("gpus.yaml: gpus[0] 'NVIDIA H200': segment: invalid value 'xxxxxx")
    assert row.startswith("gpus.yaml: gpus[1] 'A100 A100 A100") and row.endswith(
        "A100 ': segment: invalid value 'gaming' (expected one of: datacenter, workstation, consumer, jetson, "
        "superchip)")


# -- duplicate rows --------------------------------------------------------------------------------------------


def _again(table: str, index: int = 0, within: str | None = None) -> Callable[[dict[str, Any]], None]:
    """An edit that appends a copy of ``doc[table][index]`` (or of item 0 of its list ``within``) to its list."""

    def edit(doc: dict[str, Any]) -> None:
        rows = doc[table] if within is None else doc[table][index][within]
        rows.append(copy.deepcopy(rows[index if within is None else 0]))

    return edit


# the tiny matrix's known issues: a row appended again is listed at this index
_TINY_ISSUES = re.findall(r"(?m)^  - id: ", (TINY / "known_issues.yaml").read_text())

DUPLICATES = [
    pytest.param({"cuda.yaml": _again("majors")},
                 ["cuda.yaml: majors[2]: major: CUDA major 12 listed twice (also majors[0])"], id="cuda-major"),
    pytest.param({"cuda.yaml": _again("toolkits")},
                 ["cuda.yaml: toolkits[2] '12.8': version: toolkit listed twice (also toolkits[0] '12.8')"],
                 id="toolkit"),
    pytest.param({"cuda.yaml": _again("toolkits", 0, "updates")},
                 ["cuda.yaml: toolkits[0] '12.8': updates[1].version: update 12.8.1 listed twice (also updates[0])"],
                 id="toolkit-update"),
    pytest.param({"gpus.yaml": _again("architectures")},
                 ["gpus.yaml: architectures[2] 'hopper': family: family listed twice (also architectures[0] 'hopper')"],
                 id="architecture"),
    pytest.param({"gpus.yaml": _again("gpus")},
                 ["gpus.yaml: gpus[2] 'NVIDIA H200': name: GPU listed twice (also gpus[0] 'NVIDIA H200')"],
                 id="identical-gpu-row"),
    pytest.param({"gpus.yaml": _again("gpus", 0, "aliases")},
                 ["gpus.yaml: gpus[0] 'NVIDIA H200': aliases[1]: 'H200' listed twice"], id="alias-in-its-row"),
    pytest.param({"torch.yaml": _again("releases")},
                 ["torch.yaml: releases[1] '2.14.0': version: release listed twice (also releases[0] '2.14.0')"],
                 id="torch-release"),
    pytest.param({"vllm.yaml": _again("releases")},
                 ["vllm.yaml: releases[1] '0.33.0': version: release listed twice (also releases[0] '0.33.0')"],
                 id="vllm-release"),
    pytest.param({"vllm.yaml": _again("releases", 0, "variants")},
                 ["vllm.yaml: releases[0] '0.33.0': variants[1].variant: variant 'cu128' for linux-x86_64 listed "
                  "twice (also variants[0])"], id="vllm-variant"),
    pytest.param({"known_issues.yaml": _again("issues")},
                 [f"known_issues.yaml: issues[{len(_TINY_ISSUES)}] 'vllm-c-missing': id: id listed twice (also "
                  "issues[0] 'vllm-c-missing')"], id="known-issue"),
    pytest.param({"known_issues.yaml": _again("issues", 0, "signatures")},
                 ["known_issues.yaml: issues[0] 'vllm-c-missing': signatures[1]: \"No module named 'vllm\\\\._C'\" "
                  "listed twice"], id="signature"),
    pytest.param({"wheels/vllm.yaml": _again("releases")},
                 ["wheels/vllm.yaml: releases[1] '0.33.0': version: release listed twice (also releases[0] "
                  "'0.33.0')"], id="wheels-release"),
    pytest.param({"wheels/vllm.yaml": _again("releases", 0, "wheels")},
                 ["wheels/vllm.yaml: releases[0] '0.33.0': wheels[1].filename: wheel listed twice (also wheels[0])"],
                 id="wheel"),
]


@pytest.mark.parametrize(("edits", "expected"), DUPLICATES)
def test_duplicate_rows_are_problems(tiny_copy: Callable[..., Path], edits: dict[str, Any],
                                     expected: list[str]) -> None:
    assert problems(tiny_copy(edits)) == expected


# -- regular expressions: the signatures, the static check, the log matcher ------------------------------------

# the shipped signatures before they were rewritten: each is quadratic (or worse) on a long line
SLOW_SIGNATURES = {
    "kernel-symbol": r"\.so: undefined symbol: _Z\d+\w*?(?:_sm\d{2,3}[af]?|cutlass_|nvfp4)",
    "killed": r"^\s*(?:#\d+ [\d.]+\s+)?Killed\s*$",
    "shadowing-warning": r"^(?!.*(?:site|dist)-packages)[^\n]*/vllm/[\w/]*\.py:\d+: RuntimeWarning: Failed to read "
                         r"commit hash",
    "shadowing-traceback": r"""\A(?=[\s\S]*?No module named ['"]vllm\._C(?:_stable_libtorch)?['"])[\s\S]*?File "(?![^"]*"""
                           r"""(?:site|dist)-packages)[^"]*/vllm/[\w/]+\.py\"""",
    "pip-build-env": r"pip-build-env-\w+/overlay/[^\n]*torch/utils/cpp_extension\.py[^\n]*_check_cuda_version",
    "flash-attn": r"flash_attn_2_cuda[\w.-]*\.so: undefined symbol",
    "macos-symbol": r"Symbol not found: __ZNK?(?:3c10|2at|5torch)\w*(?:\\n|\s)+Referenced from: [^\n]*?vllm/"
                    r"(?:[\w-]+/)?_\w*C[\w.-]*\.so",
    "python-version": r"(?:current|requested) Python version \([^)]*\) does not satisfy Python",
    "torch-symbol": r"(?:\bvllm/(?:[\w-]+/)?(?:_\w*C|\w+_ops|cuda_utils)[\w.-]*\.so|(?<![\w/.-])_C\.abi3\.so): undefined "
                    r"symbol: _ZNK?(?:3c10|2at|5torch)",
}

# where each now lives in the shipped matrix: (issue id, index in its signatures)
REWRITTEN = {
    "kernel-symbol": ("vllm-kernel-symbol-missing-for-arch", 0),
    "flash-attn": ("flash-attn-built-for-other-torch", 0),
    "macos-symbol": ("vllm-c-undefined-torch-symbol", 1), "python-version": ("python-version-unsupported", 2),
    "torch-symbol": ("vllm-c-undefined-torch-symbol", 0),
}
#: the ones whose context is now judged from the paste's facts (vllm_paths, import failures, build environments; a
#: bare `Killed` is a build's only where the paste shows a build: the typed build-out-of-memory predicate)
MOVED_TO_FACTS = {"shadowing-warning", "shadowing-traceback", "pip-build-env", "killed"}

# a line that makes each of them backtrack: a fragment of what it looks for, repeated
ADVERSARIAL = {
    "kernel-symbol": (".so: undefined symbol: _Z1", "0"),
    "killed": ("", "\n"),
    "shadowing-warning": ("", "a/vllm/"),
    "shadowing-traceback": ("No module named 'vllm._C'\nFile \"", "a/vllm/"),
    "pip-build-env": ("", "pip-build-env-a/overlay/torch/utils/cpp_extension.py"),
    "flash-attn": ("", "flash_attn_2_cuda"),
    "macos-symbol": ("", "Symbol not found: __ZN3c10 Referenced from: vllm/"),
    "python-version": ("", "current Python version ("),
    "torch-symbol": ("vllm/_", "C"),
    "torch-symbol-ops": ("vllm/x", "x_ops"),
    "macos-symbol-name": ("Symbol not found: __ZN3c10 Referenced from: vllm/_", "C"),
}


@pytest.mark.parametrize("name", sorted(SLOW_SIGNATURES))
def test_static_check_refuses_the_slow_shipped_signatures(name: str) -> None:
    assert backtracking_problem(SLOW_SIGNATURES[name]) is not None


@pytest.mark.parametrize("pattern", [
    r"^(a+)+$", r"(a*)*", r"(.*)*", r"(\s*x?)+", r"(?:\d+\.)+x", r"(a|aa)*x", r"x(a?b?)*y",  # exponential
    r"x.*\s*.*y", r"x\s+\s+y", r"x\d+\w*y", r"x(?:ab)*(?:ab)*c",  # adjacent
    r"\s*foo", r"foo.*bar", r"\A[\s\S]*?foo.*bar", r"^\s*x", r"x(?:(?=.*y)z)*",  # a restart per start
])
def test_static_check_refuses_catastrophic_patterns(pattern: str) -> None:
    assert backtracking_problem(pattern) is not None


@pytest.mark.parametrize("pattern", [
    r"libnccl\.so(?:\.\d+)*: cannot open", r"vllm/(?:[\w-]+/)?_C", r"x\d+\.\d+", r"foo(?:(?!foo).)*bar", r"^[^\S\n]*x$",
    r"Attempting uninstall: torch\b(?![\w-])", r"nvcc error\s*:\s*'x'", r"\A(?=[\s\S]*?a)[\s\S]*?b",
    r"version [`']GLIBC_2\.\d+' not found", r"x[^x]*y", r"x(?:a|ab)*c",
])
def test_static_check_allows_linear_patterns(pattern: str) -> None:
    assert backtracking_problem(pattern) is None


@pytest.mark.parametrize("pattern", [
    r"\A(?![\s\S]*?(?:^(?!.*site-packages)x))y", r"(?=a(?!b))c", r"x(?:(?<=y(?=z))w)", r"(a|(?=b(?=c)))"])
def test_signatures_keep_one_level_of_lookaround(pattern: str) -> None:
    """A lookaround inside another is refused: such context is judged from facts, or written as two signatures."""
    assert "inside another" in (backtracking_problem(pattern) or "")


def test_validate_refuses_a_catastrophic_signature(tiny_copy: Callable[..., Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = tiny_copy({"known_issues.yaml": lambda doc: doc["issues"][0].update(signatures=["^(a+)+$"])})
    code = main(["matrix", "validate", "--matrix", str(root)])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert err == ("vresolve: error: 1 problem in the matrix:\n  known_issues.yaml: issues[0] 'vllm-c-missing': "
                   "signatures[0]: invalid regular expression '^(a+)+$': an unbounded quantifier inside a repeated "
                   "group, as in (a+)+: exponential backtracking\n")


@pytest.mark.parametrize("pattern", ["(" * 499 + "a" + ")" * 499, "x" * 1001])
def test_validate_refuses_a_signature_too_deep_or_too_long(tiny_copy: Callable[..., Path], pattern: str) -> None:
    root = tiny_copy({"known_issues.yaml": lambda doc: doc["issues"][0].update(signatures=[pattern])})
    (found,) = problems(root)
    assert found.startswith("known_issues.yaml: issues[0] 'vllm-c-missing': signatures[0]: invalid regular "
                            "expression ") and found.endswith(("nested too deeply", "longer than 1000 characters"))
    assert len(found) < 600


def test_rewritten_signatures_match_what_the_old_ones_matched() -> None:
    """Every real log, and each adversarial line, is matched by the new signature exactly where the old one
    matched it (the old ones only on short adversarial lines: they are slow)."""
    issues = {k.id: k for k in load_matrix(SHIPPED).known_issues}
    new = {name: issues[ident].signatures[i] for name, (ident, i) in REWRITTEN.items()}
    assert sorted(new) == sorted(set(SLOW_SIGNATURES) - MOVED_TO_FACTS)
    assert all(new[n] != SLOW_SIGNATURES[n] for n in new)
    texts = [p.read_text(encoding="utf-8") for p in sorted((DATA / "logs").glob("*.txt"))]
    texts += [head + body * 20 for head, body in ADVERSARIAL.values()]
    for name, old in SLOW_SIGNATURES.items():
        if name in MOVED_TO_FACTS:
            continue
        a, b = re.compile(old, re.MULTILINE), re.compile(new[name], re.MULTILINE)
        for text in texts:
            ma, mb = a.search(text), b.search(text)
            assert (ma is None) == (mb is None), (name, text[:80])
            if ma is not None and mb is not None:  # the same line of the log is the evidence
                assert text.count("\n", 0, ma.start()) == text.count("\n", 0, mb.start()), name


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_doctor_log_with_a_1_mib_adversarial_line(name: str) -> None:
    """Finishes (in a fraction of a second; the old signatures took minutes on 96 KB) and finds what is there:
    no signature; and, judged as a paste, vLLM's missing _C (whose path never ends in .py) as an error whose
    cause the text does not show."""
    head, body = ADVERSARIAL[name]
    text = head + body * (2**20 // len(body))
    assert [k.id for k, _ in match_log(text, load_matrix(SHIPPED).known_issues)] == []
    if name == "shadowing-traceback":
        from vresolve.doctor.evidence import read_evidence
        from vresolve.doctor.pasted import judge_pasted

        findings, unclear = judge_pasted(read_evidence(text), load_matrix(SHIPPED))
        assert findings == [] and [u.error for u in unclear] == ["No module named 'vllm._C'"]


def test_doctor_log_finds_a_signature_deep_inside_a_long_line() -> None:
    issues = load_matrix(SHIPPED).known_issues
    needle = "pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch."
    for offset in (0, 50_000, MAX_LINE - 10, 2 * (MAX_LINE - 512) - 30, 200_000 - len(needle)):
        text = "x" * offset + needle + "y" * (200_000 - offset - len(needle))
        hits = match_log(text, issues)
        assert [k.cause for k, _ in hits] == ["nvml-driver-mismatch"], offset
        assert all(len(line) <= 300 for line in hits[0][1])


def test_doctor_log_with_short_lines_is_matched_as_it_is() -> None:
    text = (DATA / "logs" / "library-not-found__vllm-image-missing-libnccl.txt").read_text(encoding="utf-8")
    assert bounded_lines(text) is text


# -- fuzzing: whatever a file holds, one-line problems; whatever a signature is, an answer -------------------

_YAMLISH = st.lists(st.sampled_from([*"ab9.-:[]{},&*!|>'\"#\n ", "gpus", "- ", "name: ", "&x ", "*x",
                                      "!!python/object ", "<<: "]), max_size=60).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(_YAMLISH, st.text(max_size=200)), raw=st.binary(max_size=64))
def test_any_gpus_yaml_is_a_matrix_or_one_line_problems(tmp_path: Path, text: str, raw: bytes) -> None:
    root = tmp_path / "matrix"
    if not root.exists():
        shutil.copytree(TINY, root)
    for data in (text.encode("utf-8", "surrogatepass"), raw):
        (root / "gpus.yaml").write_bytes(data)
        try:
            load_matrix(root, cache=False)
        except MatrixError as e:
            assert e.problems and all("\n" not in str(p) and len(str(p)) < 2000 for p in e.problems)


@settings(max_examples=500, deadline=None)
@given(pattern=st.lists(st.sampled_from([*"ab.*+?|()[]^$\\sdw{}0,1-!=:<>", "(?:", "(?!", "(?=", "\\A"]),
                        max_size=30).map("".join))
def test_any_pattern_gets_a_one_line_answer(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": re's own warning
        try:
            re.compile(pattern, re.MULTILINE)
        except (re.error, RecursionError, OverflowError):
            return
        why = backtracking_problem(pattern)
    assert why is None or (why and "\n" not in why)


# -- checks that grew with the square of the file ----------------------------------------------------------------


def test_gpu_toolkit_lookup_answers_as_each_toolkit_would() -> None:
    """GPUs x toolkits made an 8 MB gpus.yaml + cuda.yaml take 211 s; the lookup must agree with the toolkits."""
    m = load_matrix(SHIPPED)
    can = _targetable(m.toolkits)
    caps = {g.compute_capability for g in m.gpus} | {Capability.parse(f"{a}.{b}") for a in range(1, 15) for b in range(10)}
    assert {c for c in caps if can(c)} == {c for c in caps if any(t.can_target(c) for t in m.toolkits)}
    assert {c for c in caps if can(c)} != caps  # some capabilities are out of reach: the test can tell
