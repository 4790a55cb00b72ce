"""``apply --lock``: only vresolve's own lines install (pinned, hashed requirements; the indexes vresolve writes
for the recorded stack). Indexes, links, includes, URLs and paths are listed with their line numbers and refused
(exit 2) unless ``--allow-lock-options``; the format is decided by content; a ``fleet lock`` is accepted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vresolve.render.lockfiles import header_text

from .conftest import TINY
from .test_apply import _apply, _dead_url, _left

H = "a" * 64
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _header() -> str:
    header = {"vresolve": "0.1.0", "matrix_revision": "x",
              "stack": {"vllm": "0.33.0", "torch": "2.14.0", "variant": "cu130", "vllm_variant": "cu130",
                        "vllm_source": "pypi", "torch_source": "pypi"},
              "machine": {"gpus": {"NVIDIA H200": "9.0"}, "min_driver": "580.65.06", "driver_policy": "minor-compat",
                          "cuda": "13.0", "python": PY, "platform": "linux-x86_64", "glibc": "2.28"}}
    return header_text(header)


GOOD = f"tinydep==1.0 \\\n    --hash=sha256:{H}\nvllm==0.33.0 ; python_version >= '3.8' --hash=sha256:{H}\n"


@pytest.mark.parametrize("line", ["--extra-index-url http://127.0.0.1:9/simple/", "--index-url http://127.0.0.1:9/",
                                  "--find-links /tmp/wheels", "-r other.txt", "-c constraints.txt", "-e ./src",
                                  "evil @ file:///tmp/evil-1.0-py3-none-any.whl", "./evil-1.0-py3-none-any.whl",
                                  f"evil>=1.0 --hash=sha256:{H}", "evil==1.0", f"evil[x]==1.0 --hash=sha256:{H}"])
def test_a_line_that_is_not_a_pinned_hashed_requirement_is_listed_and_refused(line: str, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(_header() + GOOD + line + "\n")
    number = len((_header() + GOOD).splitlines()) + 1
    p = _apply(["--lock", "requirements.txt", "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 2, p.stderr
    assert "holds lines that are not pinned, hashed requirements" in p.stderr
    assert f"line {number}: {line}" in p.stderr and "--allow-lock-options" in p.stderr
    assert "Traceback" not in p.stderr and _left(tmp_path) == ["requirements.txt"]
    # with the flag: shown (here on stderr: --json has no preview), then installed as written
    p = _apply(["--lock", "requirements.txt", "--yes", "--venv", "env", "--json", "--allow-lock-options"], tmp_path,
               _dead_url())
    assert "installed as written (--allow-lock-options)" in p.stderr and f"line {number}: {line}" in p.stderr
    assert json.loads(p.stdout)["kind"] == "lock"


def test_vresolves_own_lines_install_and_unreadable_lines_never(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(_header() + GOOD)
    p = _apply(["--lock", "requirements.txt", "--yes", "--venv", "env", "--json"], tmp_path, _dead_url())
    out = json.loads(p.stdout)
    assert out["kind"] == "lock" and out["steps"][0]["argv"][:2] == ["uv", "venv"], p.stderr  # accepted, ran
    (tmp_path / "requirements.txt").write_text(_header() + GOOD + "name: vllm\ndependencies:\n")
    p = _apply(["--lock", "requirements.txt", "--yes", "--venv", "env", "--allow-lock-options"], tmp_path,
               _dead_url())
    assert p.returncode == 2 and "has lines that are not requirements" in p.stderr
    assert f"line {len((_header() + GOOD).splitlines()) + 1}: name: vllm" in p.stderr


@pytest.mark.parametrize("name", ["lock.TOML", "requirements.txt", "pylock.toml"])
def test_the_format_is_decided_by_content(name: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(_header() + 'lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nname = "a"\n')
    p = _apply(["--lock", name, "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 2 and "is a pylock.toml (TOML with lock-version)" in p.stderr, p.stderr
    (tmp_path / "r.TOML").write_text(_header() + GOOD + "--find-links /tmp\n")  # lines, whatever the name
    p = _apply(["--lock", "r.TOML", "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 2 and "--find-links /tmp" in p.stderr
    p = _apply(["--lock", "/dev/zero", "--yes", "--venv", "env"], tmp_path, _dead_url())
    assert p.returncode == 2 and "not a regular file" in p.stderr


def test_a_fleet_lock_is_accepted_by_apply_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet lock made by real uv against a loopback index, for nodes whose GPU the matrix does not name
    (detected by capability): apply --lock accepts it and runs its install."""
    from .test_fleet import detect_file, run
    from .test_index import _Server, make_wheel
    from .test_lock import _meta

    s = _Server()
    for name, (version, requires) in {"vllm": ("0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
                                      "torch": ("2.14.0", ["tinydep"]), "torchvision": ("0.29.0", ["torch==2.14.0"]),
                                      "tinydep": ("1.0", [])}.items():
        fn = f"{name}-{version}-py3-none-any.whl"
        s.add_project_json(name, {fn: make_wheel(_meta(name, version, requires), name, version, padding=1000)})
    try:
        monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
        monkeypatch.setenv("VRESOLVE_CACHE_DIR", "")
        files = [detect_file(tmp_path, monkeypatch, f"h200-{i}", "H200", "580.159.04") for i in range(2)]
        for f in files:  # a name the matrix does not know, with its capability (as NVML reports a new board)
            d = json.loads(f.read_text())
            d["host"]["gpus"][0]["name"] = "NVIDIA H200 Special Edition"
            f.write_text(json.dumps(d))
        for k in ("VRESOLVE_GPUS", "VRESOLVE_DRIVER", "VRESOLVE_PLATFORM", "VRESOLVE_PYTHON"):
            monkeypatch.delenv(k)
        code, _, err = run(["--matrix", str(TINY), "fleet", "lock", *map(str, files), "--python", PY,
                            "--index-url", s.url + "/simple/", "-o", str(tmp_path / "locks")])
        assert code == 0, err
        req = tmp_path / "locks" / "linux-x86_64" / "requirements.txt"
        assert "NVIDIA H200 Special Edition" in req.read_text()
        p = _apply(["--lock", str(req), "--yes", "--venv", "env", "--json"], tmp_path, _dead_url())
        out = json.loads(p.stdout)
        assert out["kind"] == "lock" and out["what"].endswith("from requirements.txt"), p.stderr
        assert out["steps"][0]["argv"][:2] == ["uv", "venv"]
    finally:
        s.close()
