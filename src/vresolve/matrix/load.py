"""Reading the matrix: every file once (PyYAML's C loader), each row checked against the schema.

Problems are collected, not raised one by one: :func:`load_matrix` raises one MatrixError listing
every problem, each naming its file, row and field. Nothing after this module sees a raw string.
Each table has its reader (:mod:`.hardware`: cuda, gpus, jetson; :mod:`.releases`: torch, vllm, wheels;
:mod:`.issues`: known issues), all reading rows through :mod:`.rows`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from ..errors import MatrixError, MatrixProblem
from .checks import cross_check, cut, problem
from .features import _read_features
from .hardware import _read_cuda, _read_gpus, _read_jetson
from .issues import _read_known_issues
from .model import (
    FILES,
    OPTIONAL_FILES,
    WHEEL_PACKAGES,
    KnownIssue,
    Matrix,
    Provenance,
)
from .pythons import _read_pythons
from .releases import _read_torch, _read_vllm, _read_wheels
from .rows import _kind, _Rows


def _yaml_loader() -> Any:
    """PyYAML's C loader (about 10x faster), or the pure-Python one where libyaml is missing."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)





def _parse_yaml(name: str, tables: tuple[str, ...], data: bytes | str | None, problems: list[MatrixProblem]
                ) -> dict[str, Any] | None:
    """One file's YAML document, or None (and a problem) when it is missing, unreadable, malformed or not a
    mapping. ``data`` is the file's bytes, None when it is absent, or why it was not read."""
    import yaml

    if data is None:
        if name not in OPTIONAL_FILES:
            problems.append(MatrixProblem(name, "", "", "file missing"))
        return None
    if isinstance(data, str):
        problems.append(problem(name, "", "", data))
        return None
    try:
        doc = _load_yaml(data)
    except (_AliasBomb, _DuplicateKey) as e:
        problems.append(problem(name, "", "", str(e)))
        return None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problems.append(problem(name, where, "", f"not valid YAML: {getattr(e, 'problem', e)}"))
        return None
    except (ValueError, OverflowError, RecursionError) as e:  # a value Python cannot make (a 5000-digit int, a 13th month)
        problems.append(problem(name, "", "", f"not valid YAML: {str(e).split(';')[0]}"))
        return None
    if not isinstance(doc, dict):
        problems.append(MatrixProblem(name, "", "", f"expected a mapping at the top, got {_kind(doc)}"))
        return None
    for k in doc:
        if k not in tables:
            problems.append(problem(name, "", cut(str(k)), f"unknown table (expected: {', '.join(tables)})"))
    return doc


class _AliasBomb(ValueError):
    """YAML aliases that expand a small file into a huge document."""


def _load_yaml(data: bytes) -> Any:
    """The document (PyYAML's C loader): composed first, and when it has aliases (a ``*``), its size with every
    alias expanded is bounded before anything is built from it."""

    loader = _yaml_loader()(data)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _no_duplicate_keys(node)
        if b"*" in data:
            limit = max(100_000, 4 * len(data))
            if _expanded_size(node, limit) > limit:
                raise _AliasBomb(f"its aliases expand it to more than {limit:,} values (an alias bomb?): a matrix "
                                 "file needs at most a few thousand values; write them out")
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _DuplicateKey(ValueError):
    """A mapping that names one key twice (YAML keeps the last silently: a fact overwritten unseen)."""


def _no_duplicate_keys(root: Any) -> None:
    """Raise _DuplicateKey where a mapping of the document names a key twice (``verified:`` written twice in one row,
    a merge leftover, would otherwise keep only the second)."""
    import yaml

    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                    if key.value in keys:
                        raise _DuplicateKey(f"line {key.start_mark.line + 1}: the key {key.value!r} is given twice in "
                                            "one mapping (YAML would keep the last silently)")
                    keys.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _expanded_size(root: Any, limit: int) -> int:
    """How many nodes the document has with every alias (a shared node) and merge key counted where it is used,
    up to ``limit + 1``: each node is visited once, so aliases of aliases (a "billion laughs") cost no more than
    the file's own nodes. An alias inside the value it names (a cycle) is an _AliasBomb."""
    import yaml

    sizes: dict[int, int] = {}
    entered: set[int] = set()  # expanded, not finished: the nodes on the path from the root
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in sizes:
            stack.pop()
            continue
        kids = _children(node, yaml.MappingNode, yaml.ScalarNode)
        if id(node) not in entered:
            entered.add(id(node))
            pending = [k for k in kids if not isinstance(k, yaml.ScalarNode) and id(k) not in sizes]
            if any(id(k) in entered for k in pending):
                raise _AliasBomb("an alias names a value that contains it (a cycle): a matrix file needs none")
            if pending:
                stack.extend(pending)
                continue
        stack.pop()
        size = sizes[id(node)] = 1 + sum(1 if isinstance(k, yaml.ScalarNode) else sizes[id(k)] for k in kids)
        if size > limit:
            return size
    return sizes.get(id(root), 1)


def _children(node: Any, mapping: type, scalar: type) -> list[Any]:
    """A node's children: a mapping's keys and values, a sequence's items; a scalar has none."""
    value: Any = node.value
    if isinstance(node, scalar):
        return []
    return [n for pair in value for n in pair] if isinstance(node, mapping) else list(value)


def _with_index(issues: tuple[KnownIssue, ...], torch_index: str) -> tuple[KnownIssue, ...]:
    """Known issues whose fixes name PyTorch's package index by ``{torch_index}``, filled with torch.yaml's ``index``
    (one place for the index's address; a matrix pointed at a mirror gives fixes that name the mirror)."""
    if not torch_index:
        return issues
    return tuple(msgspec.structs.replace(i, fix=i.fix.replace(_INDEX, torch_index),
                                         explanation=i.explanation.replace(_INDEX, torch_index))
                 if _INDEX in i.fix or _INDEX in i.explanation else i for i in issues)


_INDEX = "{torch_index}"


def parse_matrix(root: Path, raw: Mapping[str, bytes | str | None], revision: str) -> Matrix:
    """The validated matrix from its files' bytes, or MatrixError listing every problem."""
    problems: list[MatrixProblem] = []
    shared: dict[Any, Any] = {}
    docs = {name: _parse_yaml(name, tables, raw[name], problems) for name, tables in FILES.items()}

    def read(name: str, reader: Callable[..., Any], *extra: Any, empty: Any) -> Any:
        doc = docs[name]
        return empty if doc is None else reader(doc, _Rows(name, problems, shared), *extra)

    wheels = {pkg: read(f"wheels/{pkg}.yaml", _read_wheels, pkg, empty={}) for pkg in WHEEL_PACKAGES}
    majors, toolkits = read("cuda.yaml", _read_cuda, empty=((), ()))
    archs, gpus = read("gpus.yaml", _read_gpus, empty=((), ()))
    torch_index, torch = read("torch.yaml", _read_torch, wheels["torch"], empty=(None, ()))
    vllm_index, vllm = read("vllm.yaml", _read_vllm, wheels["vllm"], empty=(None, ()))
    issues = _with_index(read("known_issues.yaml", _read_known_issues, empty=()), torch_index[0] if torch_index else "")
    jetpacks, jetson_wheels = read("jetson.yaml", _read_jetson, empty=((), ()))
    pythons = read("pythons.yaml", _read_pythons, empty=())
    features, library_sms = read("features.yaml", _read_features, empty=((), ()))
    # rows of a file that could not be read are not "missing" again in the cross-references
    unreadable = {name for name, doc in docs.items() if doc is None}
    if "torch.yaml" in unreadable:
        wheels["torch"] = {}
    if "vllm.yaml" in unreadable:
        wheels["vllm"] = {}

    missing_prov = Provenance(source=("",), verified="unverified")
    m = Matrix(
        path=str(root), revision=revision,
        cuda_majors=majors, toolkits=toolkits, architectures=archs, gpus=gpus,
        torch_index=torch_index[0] if torch_index else "", torch_index_provenance=torch_index[1] if torch_index else missing_prov,
        torch=torch,
        vllm_index=vllm_index[0] if vllm_index else "", vllm_index_provenance=vllm_index[1] if vllm_index else missing_prov,
        vllm=vllm, known_issues=issues,
        extra_wheels={k: wheels[k] for k in ("torchvision", "torchaudio", "xformers", "flashinfer-python")},
        jetpacks=jetpacks, jetson_wheels=jetson_wheels, pythons=pythons, features=features, library_sms=library_sms,
    )
    cross_check(m, wheels, docs, problems)
    if problems:
        raise MatrixError(problems)
    return m
