"""Output that is pasted somewhere stays inert there (issue 26): ``doctor --format markdown`` makes no live link, ping
or reference on GitHub, and every line of a recipe that is not a command is a comment."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from vresolve.cli import main

LIVE = ("https://evil.example/x", "www.evil.example", "admin@evil.example", "@octocat", "#123", "GH-45",
        "octo/repo#7", "a5c3785ed8d6a35868bc169f07e40e889087fd2e", "ftp://evil.example", "`@tick`")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _outside_code(markdown: str) -> str:
    """The text GitHub renders as prose: every inline text token, not code spans or fenced blocks."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(markdown)
    return "\n".join(c.content for t in tokens if t.type == "inline" for c in t.children or () if c.type == "text")


def test_doctor_markdown_leaves_no_autolink_mention_or_reference(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   f"RuntimeError: CUDA error: see {' and '.join(LIVE)}, then (www.evil.example).\n")
    code, out, err = run(["doctor", "--no-env", "--log", str(log), "--format", "markdown"])
    assert code == 1, err
    assert "cause not named:**" in out  # the error line, quoted in prose
    prose = _outside_code(out)
    assert "RuntimeError: CUDA error: see" in prose
    assert not re.search(r"://|www\.|@|#[0-9]|GH-[0-9]|[0-9a-f]{7,40}", prose, re.IGNORECASE), prose
    for word in LIVE:  # each still shown, as it was
        assert word in out


def test_markdown_prose_keeps_ordinary_words_as_they_were() -> None:
    from vresolve.render.markdown import _prose

    assert _prose("torch 2.8.0+cu128 on sm_90 (8 GPUs)") == r"torch 2.8.0+cu128 on sm\_90 (8 GPUs)"
    assert _prose("mail a@b.example now") == "mail `a@b.example` now"
    assert _prose("x ``@y`` z") == "x ``` ``@y`` ``` z"
    assert _prose("0x7f3a2b1c4d5e deadbeef 1234567") == "0x7f3a2b1c4d5e deadbeef 1234567"


HOSTILE_GPU = "NVIDIA H100 $(touch pwned1) `touch pwned2` > pwned3; touch pwned4 #"


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_recipe_human_view_runs_nothing_but_its_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A detected GPU name holding shell syntax (a fake nvidia-smi reports it): the source-build recipe's whole
    human view, piped into bash, runs none of it; every line before the first command is a comment."""
    import os
    import subprocess

    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stub(bindir / "nvidia-smi", 'case "$1" in --query-gpu=*) echo \'0, ' + HOSTILE_GPU.replace("'", "") +
          ", GPU-1, 9.0, 580.65.06, 81559, 00000000:01:00.0'; exit 0;; esac\nexit 0")
    # the recipe's first command is uv's: a stub that says it ran, and fails (set -e ends the recipe there)
    _stub(bindir / "uv", f"echo uv-ran > {tmp_path}/uv-ran; exit 1")
    monkeypatch.setenv("VRESOLVE_NO_NVML", "1")
    monkeypatch.setenv("VRESOLVE_NVIDIA_SMI", str(bindir / "nvidia-smi"))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    code, out, err = run(["plan", "--gpu", "auto", "--source-build", "always"])
    assert code == 0, err
    assert "touch pwned1" in out  # the hostile name is shown ...
    first = next(i for i, x in enumerate(out.splitlines()) if x.startswith("uv "))
    assert all(x.startswith("#") or not x.strip() or x == "set -euo pipefail" for x in out.splitlines()[:first])
    recipe = tmp_path / "recipe.txt"
    recipe.write_text(out)
    assert subprocess.run(["bash", "-n", str(recipe)], capture_output=True).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run(["bash"], input=out, text=True, capture_output=True, cwd=work, timeout=60,
                       env={"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert (tmp_path / "uv-ran").exists(), r.stderr  # ... bash read the recipe up to its first command ...
    assert list(work.iterdir()) == [] and not list(tmp_path.glob("**/pwned*")), r.stderr  # ... and ran no name
    assert "command not found" not in r.stderr
