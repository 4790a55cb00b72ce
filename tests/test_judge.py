"""The one judgement path: known-issues rows name doctor's predicates (``when:``), and validate holds both ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vresolve.cli import main
from vresolve.doctor.predicates import PREDICATES
from vresolve.matrix import load_matrix

ROOT = Path(__file__).resolve().parent.parent


def _rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc["issues"] if r.get("when")]


def test_every_predicate_judges_a_row_of_the_shipped_matrix() -> None:
    m = load_matrix(ROOT / "compat_matrix", cache=False)
    named = {k.when for k in m.known_issues if k.when}
    assert named == set(PREDICATES)
    for k in m.known_issues:
        if k.when:
            assert k.provenance.source, k.id  # a judgement carries its sources like any row


@pytest.mark.parametrize(("edit", "message"), [
    (lambda doc: _rows(doc)[0].update(when="no-such-predicate"), "unknown predicate 'no-such-predicate'"),
    (lambda doc: doc.update(issues=[r for r in doc["issues"] if r.get("when") != "gpu-below-ampere"]),
     "no row names predicate 'gpu-below-ampere'"),
    (lambda doc: next(r for r in _rows(doc) if r["when"] == "gpu-below-ampere").update(title="{gpus} lack bf16"),
     "placeholder(s) gpus not filled by predicate 'gpu-below-ampere'"),
])
def test_validate_refuses_rows_and_predicates_that_do_not_match(
        tiny_copy: Callable[..., Path], edit: Callable[[dict[str, Any]], None], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tiny_copy({"known_issues.yaml": edit})
    assert main(["matrix", "validate", "--matrix", str(root)]) == 2
    assert message in capsys.readouterr().err


def test_a_row_says_the_finding(tiny_copy: Callable[..., Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """The finding's title, explanation and fix are its row's, placeholders filled by the predicate."""
    def edit(doc: dict[str, Any]) -> None:
        row = next(r for r in _rows(doc) if r["when"] == "torch-cpu-build-beside-gpus")
        row.update(title="CPU torch {torch} here", explanation="Row's words.", fix="Row's fix.")
    root = tiny_copy({"known_issues.yaml": edit})
    paste = tmp_path / "env.txt"
    paste.write_text("PyTorch version: 2.5.1+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\n"
                     "GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB\n"
                     "Nvidia driver version: 550.54.15\n")
    main(["doctor", "--no-env", "--log", str(paste), "--matrix", str(root), "--json"])
    import json

    findings = json.loads(capsys.readouterr().out)["findings"]
    mine = [f for f in findings if f["title"] == "CPU torch 2.5.1+cpu here"]
    assert mine and mine[0]["explanation"] == "Row's words." and mine[0]["fix"].startswith("Row's fix.")
