"""Progress of long commands goes to stderr, never stdout: ``matrix grid`` and ``site`` say how many plans they
compute and on how many workers; ``-q`` and ``--json`` keep stderr quiet. And the small untruths of issue 27: the
plan's table spells each index one way, ``--keep-torch``'s help says it may plan a wheel.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.render.progress import Ticker

ROOT = Path(__file__).resolve().parents[1]
# a small grid: one architecture, one Python (23 driver branches: 23 plans, in this process)
SMALL = ("--family", "hopper", "--python", "3.12")


def vresolve(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "VRESOLVE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-m", "vresolve", *argv], capture_output=True, text=True, env=env,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return p


def test_matrix_grid_says_what_it_computes_on_stderr(tmp_path: Path) -> None:
    p = vresolve("matrix", "grid", *SMALL, "--workers", "2", cache=tmp_path)
    lines = p.stderr.splitlines()
    assert re.fullmatch(r"computing \d+ plans on \d+ workers? \.\.\.", lines[0]), p.stderr
    assert re.fullmatch(r"computing \d+ plans on \d+ workers?: done in [0-9.]+ s", lines[-1]), p.stderr
    n = int(lines[0].split()[1])
    # stdout: the title, the header and one row per capability of the family, nothing else
    out = p.stdout.splitlines()
    assert out[0].startswith("newest vLLM by GPU capability and driver branch") and "computing" not in p.stdout
    assert [r.split()[:2] for r in out[2:]] == [["hopper", "sm_90"]] and len(out[1].split()) - 1 == n


@pytest.mark.parametrize("flag", ["-q", "--json"])
def test_quiet_and_json_keep_stderr_quiet(tmp_path: Path, flag: str) -> None:
    p = vresolve("matrix", "grid", *SMALL, flag, cache=tmp_path)
    assert p.stderr == ""
    if flag == "--json":
        assert json.loads(p.stdout)["schema"] == "vresolve.grid/1"
    else:
        assert p.stdout.startswith("newest vLLM")


def test_site_says_what_it_computes_and_json_stays_alone(tmp_path: Path) -> None:
    p = vresolve("site", "-o", str(tmp_path / "site"), *SMALL, "--installer", "uv", cache=tmp_path)
    assert p.stderr.startswith("computing 23 plans on ") and "done in" in p.stderr
    assert p.stdout.startswith(f"wrote {tmp_path / 'site' / 'index.html'}") and "computing" not in p.stdout
    q = vresolve("site", "-o", str(tmp_path / "site"), *SMALL, "--installer", "uv", "--json", cache=tmp_path)
    assert q.stderr == "" and json.loads(q.stdout)["plans"] == 23


def test_plain_lines_at_most_every_few_seconds() -> None:
    """Off a terminal: the start, percentages no closer than ``every`` seconds apart, the end."""
    out = io.StringIO()
    with Ticker("computing 4 plans on 1 worker", 4, every=0.0, stream=out) as tick:
        for i in range(1, 5):
            tick(i)
    lines = out.getvalue().splitlines()
    assert lines[:4] == ["computing 4 plans on 1 worker ...", "computing 4 plans on 1 worker ... 25%",
                         "computing 4 plans on 1 worker ... 50%", "computing 4 plans on 1 worker ... 75%"]
    assert lines[4].startswith("computing 4 plans on 1 worker: done in ") and len(lines) == 5
    out = io.StringIO()
    with Ticker("x", 4, every=3600.0, stream=out) as tick:  # an hour apart: only the first and last lines
        for i in range(1, 5):
            tick(i)
    assert [line.split(":")[0] for line in out.getvalue().splitlines()] == ["x ...", "x"]
    out = io.StringIO()
    with Ticker("x", 4, quiet=True, stream=out) as tick:
        tick(4)
    assert out.getvalue() == ""


def _plan_table(capsys: pytest.CaptureFixture[str], driver: str) -> dict[str, str]:
    assert main(["plan", "--gpu", "H200", "--driver", driver, "--python", "3.12", "--platform", "linux-x86_64"]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if len(cells) == 3 and cells[0] in ("vllm", "torch"):
            rows[cells[0]] = cells[2]
    return rows


def test_the_plan_table_spells_each_index_one_way(capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan_table(capsys, "580.159.04") == {"vllm": "cu130, PyPI", "torch": "cu130, PyPI"}
    older = _plan_table(capsys, "570.124.06")  # vLLM's own index and the PyTorch index
    assert older["vllm"].endswith(", vLLM's index") and older["torch"].endswith(", PyTorch index"), older


def test_keep_torch_help_says_it_may_plan_a_wheel(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--keep-torch keep")
    keep = text[start:text.index("--src-dir DIR", start)]
    assert "wheel that pins exactly that torch" in keep and "else a source build" in keep
