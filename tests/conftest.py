from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

DATA = Path(__file__).parent / "data"
TINY = DATA / "matrix" / "tiny"
ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "compat_matrix"

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def tiny_copy(tmp_path: Path) -> Callable[..., Path]:
    """A copy of the tiny matrix with edits applied: ``tiny_copy({"gpus.yaml": fn, ...})``."""

    def make(edits: dict[str, Edit | str | None] | None = None) -> Path:
        dest = tmp_path / "matrix"
        shutil.copytree(TINY, dest)
        for name, edit in (edits or {}).items():
            f = dest / name
            if edit is None:
                f.unlink()
            elif isinstance(edit, str):
                f.write_text(edit)
            else:
                doc = yaml.safe_load(f.read_text())
                edit(doc)
                f.write_text(yaml.safe_dump(doc, sort_keys=False))
        return dest

    return make


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own matrix cache, so no test depends on another's or on ~/.cache."""
    monkeypatch.setenv("VRESOLVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def doctor_paste(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    """``vresolve doctor --no-env --log PATH --json`` in process: its exit code and its JSON object."""
    import json

    from vresolve.cli import main

    code = main(["doctor", "--no-env", "--log", str(path), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def doctor_answer(tmp_path: Path, text: str) -> dict[str, Any]:
    """``vresolve doctor --no-env --log PASTE --json``'s answer for ``text`` written to a file in ``tmp_path``, its
    output captured here (no capsys needed)."""
    import io
    import json
    from contextlib import redirect_stderr, redirect_stdout

    from vresolve.cli import main

    log = tmp_path / "paste.txt"
    log.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["doctor", "--no-env", "--log", str(log), "--json"])
    answer: dict[str, Any] = json.loads(out.getvalue())
    return answer


def doctor_text(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """:func:`doctor_paste` of a text written to a file in ``tmp_path``."""
    log = tmp_path / "paste.txt"
    log.write_text(text, encoding="utf-8")
    return doctor_paste(log, capsys)


def excerpt(directory: Path, number: str) -> Path:
    """The one excerpt numbered ``number`` in a corpus directory."""
    (path,) = directory.glob(f"{number}-*.txt")
    return path


def worst_severities(doc: dict[str, Any]) -> dict[str, str]:
    """Each cause of a doctor answer with its most severe finding's severity."""
    order = ("info", "warning", "error")
    out: dict[str, str] = {}
    for f in doc.get("findings", []):
        if order.index(f["severity"]) >= order.index(out.get(f["cause"], "info")):
            out[f["cause"]] = f["severity"]
    return out


def error_causes(doc: dict[str, Any]) -> list[str]:
    """The causes of a doctor answer's error findings, in order."""
    return [f["cause"] for f in doc["findings"] if f["severity"] == "error"]
