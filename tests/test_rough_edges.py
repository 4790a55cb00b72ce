"""Rough edges of issue 26: each a one-line error naming the input (exit 2), or the right behaviour."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from vresolve.cli import main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line_error(got: tuple[int, str, str], *words: str) -> str:
    code, _, err = got
    assert code == 2, err
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    for w in words:
        assert w in line, line
    return line


@pytest.mark.parametrize(("var", "value", "words"), [
    ("VRESOLVE_DRIVER", "garbage", ("invalid driver version", "'garbage'")),
    ("VRESOLVE_DRIVER", "9" * 5000, ("invalid driver version", "at most 32 characters")),
    ("VRESOLVE_PLATFORM", "windows-arm", ("invalid platform", "linux-x86_64 or linux-aarch64")),
    ("VRESOLVE_PYTHON", "2.7", ("invalid Python version", "'2.7'")),
    ("VRESOLVE_CUDA_DRIVER", "abc", ("invalid CUDA version", "'abc'")),
    ("VRESOLVE_GPUS", "H100,\x1b[31mred", ("GPU name", "is not one")),
    ("VRESOLVE_GPUS", ",".join(["H100"] * 1100), ("more than 1024 GPUs",)),
])
@pytest.mark.parametrize("argv", [["plan", "--gpu", "auto"], ["detect", "--json"], ["plan", "--gpu", "H100"]])
def test_env_overrides_are_checked_like_their_flags(monkeypatch: pytest.MonkeyPatch, var: str, value: str,
                                                    words: tuple[str, ...], argv: list[str]) -> None:
    monkeypatch.setenv("VRESOLVE_NO_NVML", "1")
    monkeypatch.setenv(var, value)
    code, out, err = run(argv)
    if "--json" in argv:  # the error as JSON on stdout, as for a bad flag
        assert code == 2 and var in out and "Traceback" not in out + err
        return
    assert one_line_error((code, out, err), f"{var}:", *words).startswith(f"vresolve: error: {var}:")


def test_good_env_overrides_still_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"VRESOLVE_NO_NVML": "1", "VRESOLVE_GPUS": "NVIDIA H100 80GB HBM3", "VRESOLVE_DRIVER": "580.65.06",
                 "VRESOLVE_CUDA_DRIVER": "13.0", "VRESOLVE_PYTHON": "3.12", "VRESOLVE_PLATFORM": "linux-x86_64"}.items():
        monkeypatch.setenv(k, v)
    code, out, err = run(["plan", "--gpu", "auto"])
    assert code == 0, err


@pytest.mark.parametrize("epoch", ["99999999999999999", "253402300800", "abc", "-5", "1e9", "１２３"])
def test_site_malformed_source_date_epoch_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      epoch: str) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    one_line_error(run(["site", "-o", str(tmp_path / "site"), "--python", "3.12"]), "SOURCE_DATE_EPOCH:",
                   "invalid time")
    assert not (tmp_path / "site").exists()


def test_source_date_epoch_in_range_is_the_build_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from vresolve.cli.grid import _built

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "253402300799")  # the last second of the year 9999
    assert _built() == "9999-12-31 23:59 UTC"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert _built() == "1970-01-01 00:00 UTC"


@pytest.mark.parametrize("where", ["file/site", "/proc/vresolve-site/x", "ro/site"])
def test_site_output_unwritable_fails_before_planning(tmp_path: Path, where: str) -> None:
    """-o into a place that cannot be written: refused at once (one line on stderr: no plan's progress before it)."""
    (tmp_path / "file").write_text("x")
    ro = tmp_path / "ro"
    ro.mkdir()
    if where.startswith("ro"):
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only mode directory")
        ro.chmod(0o500)
    out = where if where.startswith("/") else str(tmp_path / where)
    try:
        one_line_error(run(["site", "-o", out, "--python", "3.12"]), f"-o '{out}': cannot write there")
    finally:
        ro.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "ro"] and not list(ro.iterdir())


@pytest.mark.parametrize(("text", "words"), [
    ("a: " + "[" * 50_000 + "]" * 50_000 + "\n", ("nested too deeply",)),
    ("a: " + "{x: " * 20_000 + "1" + "}" * 20_000 + "\n", ("nested too deeply",)),
    (None, ("more than 1 MiB",)),
])
def test_lock_profiles_hostile_yaml_is_one_line(tmp_path: Path, text: str | None, words: tuple[str, ...]) -> None:
    """A profiles file nested thousands deep (YAML's reader recursed into a traceback), or an endless one."""
    path = "/dev/zero"
    if text is not None:
        (tmp_path / "profiles.yaml").write_text(text)
        path = str(tmp_path / "profiles.yaml")
    one_line_error(run(["lock", "--profiles", path, "-o", str(tmp_path / "out")]), "--profiles:", *words)
    assert not (tmp_path / "out").exists()
