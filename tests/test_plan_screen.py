"""A plan that fits a screen: the H200 plan in at most 40 lines, each check in one line, the next step said, a uv
that exists; the checks' code shipped as one standard-library script (vresolve/checks/verify.py) that the
environment's own Python runs by path, without vresolve installed there, and that runs exactly the programs of the
plan's ``--json`` commands."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from vresolve.checks import verify
from vresolve.plan import build_plan
from vresolve.resolve import Request, resolve

from .test_extensions import _host

SCRIPT = Path(verify.__file__)
H200 = ["plan", "--gpu", "H200", "--driver", "580.159.04"]


def _vresolve(argv: list[str], path: str | None = None) -> subprocess.CompletedProcess[str]:
    """vresolve in a child, its stdout a pipe, 80 columns, as a user's ``| less`` sees it."""
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "vresolve", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


def _verify_section(lines: list[str]) -> list[str]:
    start = next(i for i, x in enumerate(lines) if x.startswith("Verify"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    return lines[start + 1:end]


@pytest.mark.parametrize("extra", [[], ["--python", "3.12"]])
def test_the_h200_plan_fits_a_screen_names_each_check_in_a_line_and_says_the_next_step(extra: list[str]) -> None:
    p = _vresolve([*H200, *extra])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) <= 40, p.stdout
    checks = json.loads(_vresolve([*H200, *extra, "--json"]).stdout)["verify"]
    assert len(checks) == 4
    section = _verify_section(lines)
    assert len(section) == len(checks), section  # one line per check, nothing else
    for line, c in zip(section, checks, strict=True):
        assert line.startswith(f"  - {c['name']}") and line.endswith(f": {c['expect']!r}"), line
    assert "find_extensions" not in p.stdout and "import torch" not in p.stdout
    assert lines[-1] == f"Next: vresolve apply {' '.join(H200[1:] + extra)} runs this plan, then its checks"


def test_the_json_plan_keeps_its_commands_and_names_uv_as_uv(tmp_path: Path) -> None:
    d = json.loads(_vresolve([*H200, "--json"], path=str(tmp_path)).stdout)
    assert [s["argv"][0] for s in d["steps"]][:2] == ["uv", "uv"]
    for c in d["verify"]:  # self-contained commands: the environment's Python and the whole program
        assert c["argv"][1] == "-c" and c["argv"][0] == ".venv-vllm/bin/python"
    assert "def find_extensions" in d["verify"][0]["argv"][2]


def test_the_human_plan_names_a_uv_that_exists(tmp_path: Path) -> None:
    """After ``pip install .`` uv is not on PATH: the plan names the uv vresolve installed, by its path; with a uv
    on PATH, plain ``uv``."""
    no_uv = tmp_path / "empty"
    no_uv.mkdir()
    p = _vresolve(H200, path=str(no_uv))
    first = next(x for x in p.stdout.splitlines() if x.strip().endswith("--seed .venv-vllm"))
    program = first.split()[0]
    assert program != "uv" and os.path.isabs(program) and os.access(program, os.X_OK), first
    assert subprocess.run([program, "--version"], capture_output=True, text=True).stdout.startswith("uv ")
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "uv").write_text("#!/bin/sh\n")
    (on_path / "uv").chmod(stat.S_IRWXU)
    p = _vresolve(H200, path=str(on_path))
    assert "\n  uv venv --python 3.11 --seed .venv-vllm\n" in p.stdout, [x for x in p.stdout.splitlines() if "venv" in x]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An environment's Python with neither vresolve nor torch nor vLLM installed."""
    env = tmp_path_factory.mktemp("target") / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env)
    python = str(env / "bin" / "python")
    assert subprocess.run([python, "-c", "import vresolve"], capture_output=True).returncode != 0
    return python


_FAKE_TORCH = """\
__version__ = "2.14.0+cu130"
class version:
    cuda = "13.0"
class cuda:
    @staticmethod
    def is_available(): return True
    @staticmethod
    def device_count(): return 1
    @staticmethod
    def get_arch_list(): return ARCHS
    @staticmethod
    def get_device_capability(i): return (9, 0)
ARCHS = {archs!r}
"""


def _site(tmp_path: Path, archs: list[str]) -> Path:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "__init__.py").write_text(_FAKE_TORCH.format(archs=archs))
    (site / "vllm").mkdir(exist_ok=True)
    (site / "vllm" / "__init__.py").write_text("__version__ = '0.33.0'\n")
    return site


def _run(python: str, argv: list[str], site: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([python, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def _h200_checks() -> list:  # type: ignore[type-arg]
    from vresolve.matrix import load_matrix

    from .conftest import SHIPPED

    m = load_matrix(SHIPPED)
    return list(build_plan(m, resolve(_host("3.12"), m, Request())).verify)


def test_the_check_script_runs_under_a_bare_python_to_a_one_line_failure(bare_python: str, tmp_path: Path) -> None:
    for name in ("arch-list", "torch-cuda", "gpus"):
        p = _run(bare_python, [str(SCRIPT), name], None, tmp_path)
        assert p.returncode == 1 and p.stderr == "", p.stderr
        assert p.stdout == f"check {name}: ModuleNotFoundError: No module named 'torch' (in the environment of " \
                           f"{bare_python})\n"
    p = _run(bare_python, [str(SCRIPT), "no-such-check"], None, tmp_path)
    assert p.returncode == 2 and "no check 'no-such-check'" in p.stderr
    p = _run(bare_python, [str(SCRIPT), "--list"], None, tmp_path)
    assert p.returncode == 0 and set(verify.PROGRAMS) <= {x.split()[0] for x in p.stdout.splitlines()[1:]}


def test_every_check_of_the_plan_runs_by_the_script_and_prints_what_the_plan_expects(bare_python: str,
                                                                                        tmp_path: Path) -> None:
    """Against a stand-in torch that reports what an H200 install would: each check, run by the shipped script,
    prints exactly what its ``-c`` command prints; the torch checks pass, the extension check finds the modules the
    wheel ships MISSING (the stand-in vllm has none)."""
    site = _site(tmp_path, ["sm_80", "sm_90", "sm_100"])
    checks = _h200_checks()
    assert [c.program[0] for c in checks] == ["extensions", "torch-cuda", "gpus", "arch-list"]
    for c in checks:
        assert c.argv[1:] == ("-c", verify.program(c.program[0], c.program[1:]))  # the same program, two ways
        by_script = _run(bare_python, [str(SCRIPT), *c.program], site, tmp_path)
        inline = _run(bare_python, list(c.argv[1:]), site, tmp_path)
        assert by_script.returncode == inline.returncode == 0, by_script.stdout + by_script.stderr
        assert by_script.stdout == inline.stdout
        if c.program[0] == "extensions":
            assert c.expect not in by_script.stdout
            assert "MISSING vllm._C_stable_libtorch: the wheel ships it" in by_script.stdout
            assert "vllm 0.33.0: compiled extensions DO NOT ALL LOAD (0)" in by_script.stdout
        else:
            assert c.expect in by_script.stdout, (c.name, by_script.stdout)
    arch = next(c for c in checks if c.program == ("arch-list",))
    site = _site(tmp_path, ["sm_80", "compute_80"])  # PTX 8.0 covers 9.0: JIT-compiled
    assert arch.expect in _run(bare_python, [str(SCRIPT), "arch-list"], site, tmp_path).stdout
    site = _site(tmp_path, ["sm_80", "sm_100"])
    assert _run(bare_python, [str(SCRIPT), "arch-list"], site, tmp_path).stdout == "not covered: 9.0\n"


def test_the_check_script_does_not_import_from_its_own_directory(bare_python: str, tmp_path: Path) -> None:
    """Run by path, the script's directory leads sys.path; a module there must not shadow the environment's."""
    copy = tmp_path / "checks"
    copy.mkdir()
    shutil.copy(SCRIPT, copy / "verify.py")
    (copy / "torch.py").write_text("raise SystemExit('the script imported torch from its own directory')\n")
    site = _site(tmp_path, ["sm_90"])
    p = _run(bare_python, [str(copy / "verify.py"), "torch-cuda"], site, tmp_path)
    assert p.returncode == 0 and p.stdout == "torch CUDA 13.0\n", p.stdout + p.stderr


def test_a_recipe_names_the_uv_that_exists_and_ends_with_the_apply_line(tmp_path: Path) -> None:
    """A source build's recipe, printed: uv by its path when none is on PATH, the checks' code inline (the recipe is
    a script to save and run standalone), then the apply line; its --json script keeps ``uv``."""
    argv = [*H200, "--source-build", "always"]
    p = _vresolve(argv, path=str(tmp_path))
    lines = p.stdout.splitlines()
    assert lines[-1] == f"# Next: vresolve apply {' '.join(argv[1:])} runs the recipe, then its checks"
    venv_line = next(x for x in lines if "venv --python" in x)
    assert venv_line.split()[0] != "uv" and os.access(venv_line.split()[0], os.X_OK)
    assert "silu_and_mul" in p.stdout  # the kernel check, inline
    d = json.loads(_vresolve([*argv, "--json"], path=str(tmp_path)).stdout)
    assert "\nuv venv --python" in d["script"] and venv_line.split()[0] not in d["script"]
