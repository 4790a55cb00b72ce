"""``vresolve detect`` reads the matrix only for a GPU whose compute capability no probe gave (issue 28: the
matrix's load was most of detect's time on a GPU machine)."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest

from vresolve.cli import main

from .conftest import DATA, TINY

H200 = DATA / "probes" / "nvidia-h200"


def _machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, no_compute_cap: bool = False) -> None:
    """A real ``nvidia-smi`` script answering ``query`` (its CSV rows), no NVML, an empty probe root."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    rows = tmp_path / "rows.csv"
    rows.write_text(query)
    lines = ["#!/bin/sh"]
    if no_compute_cap:  # a driver before ~510
        lines.append('case "$1" in *compute_cap*) echo \'Field "compute_cap" is not a valid field to query.\'; '
                     "exit 2;; esac")
    lines.append(f'case "$1" in --query-gpu=*) cat {shlex.quote(str(rows))}; exit 0;; esac')
    lines.append(f"cat {shlex.quote(str(H200 / 'nvidia-smi.txt'))}")
    smi = bindir / "nvidia-smi"
    smi.write_text("\n".join(lines) + "\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "root").mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("VRESOLVE_NO_NVML", "1")
    monkeypatch.setenv("VRESOLVE_PROBE_ROOT", str(tmp_path / "root"))


def test_detect_with_every_capability_probed_reads_no_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _machine(tmp_path, monkeypatch, (H200 / "query-gpu.csv").read_text().split("\n", 1)[1])
    # a matrix that does not exist: not an error, since nothing needs it
    assert main(["detect", "--json", "--matrix", str(tmp_path / "no-such-matrix")]) == 0
    (gpu,) = json.loads(capsys.readouterr().out)["host"]["gpus"]
    assert (gpu["name"], gpu["compute_capability"], gpu["cc_source"]) == ("NVIDIA H200", "9.0", "nvidia-smi")


def test_detect_fills_a_missing_capability_from_the_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _machine(tmp_path, monkeypatch, "0, NVIDIA H200, GPU-1, 580.159.04, 143771, 00000000:00:06.0\n",
             no_compute_cap=True)
    assert main(["detect", "--json", "--matrix", str(TINY)]) == 0
    (gpu,) = json.loads(capsys.readouterr().out)["host"]["gpus"]
    assert (gpu["compute_capability"], gpu["cc_source"]) == ("9.0", "matrix")
    # the matrix is needed here: a missing one is the usual usage error
    assert main(["detect", "--json", "--matrix", str(tmp_path / "no-such-matrix")]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "usage" and "no-such-matrix" in error["message"]
