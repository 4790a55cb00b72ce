"""Every command README.md shows runs as written.

The commands are read from the README (tests/readme.py: every line of its ```sh blocks) and run by bash, in the
README's order, in one scratch directory that holds what the README says a user has (a pasted log, ``kubectl get
nodes -o json``'s output, ``vresolve detect --json`` files, the repository's lockfiles/), with the vresolve of this
environment first on PATH. Each is listed below with the exit code it must give here (a machine without an NVIDIA
GPU) and a piece of what it must print; a command added to or dropped from the README without a line here fails.

- The Quickstart's two commands are what .ci/run runs (it reads them from the README too).
- Commands that need the package index (``lock``, ``matrix refresh``) run with VRESOLVE_NETWORK_TESTS=1, and
  ``apply --lock`` (GBs) with VRESOLVE_INSTALL_TESTS=1 as well; ``fleet lock`` of the Kubernetes fleet also needs
  PyTorch's own index (VRESOLVE_ALL_INDEXES=1 where it is reached).
- Commands that need a Ray cluster run, as written, inside tests/test_fleet_ray.py's cluster (``RAY``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .readme import commands

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
NETWORK, INSTALL, RAY, INDEXES = "network", "install", "ray", "indexes"

# command (as the README writes it, less its comment) -> (exit code here, text its output must hold, what it needs)
EXPECT: dict[str, tuple[int, str, str]] = {
    "vresolve detect": (0, "Python", ""),
    "vresolve detect --json --torch": (0, '"schema": "vresolve.detect/1"', ""),
    "vresolve plan --gpu auto": (0, "vLLM", ""),
    'vresolve plan --gpu "NVIDIA H100 80GB HBM3" --driver 550.54.15': (0, "NVIDIA H100 80GB HBM3", ""),
    "vresolve plan --gpu H100,A100 --driver 580.95.05 --installer pip": (0, "pip install", ""),
    "vresolve plan --gpu sm_120 --vllm '>=0.20' --python 3.12 --json": (0, '"schema": "vresolve.plan/1"', ""),
    "vresolve plan --gpu none": (0, "cpu", ""),
    "vresolve plan --gpu H100 --driver 580.95.05 --shell fish": (0, "set -gx TORCH_CUDA_ARCH_LIST", ""),
    'vresolve plan --gpu "RTX 5090" --driver 580.95.05 --source-build always': (0, "TORCH_CUDA_ARCH_LIST", ""),
    "vresolve plan --gpu auto --keep-torch": (1, "no torch is installed", ""),
    "vresolve plan --gpu V100 --driver 580.95.05 --glibc 2.28": (0, "V100", ""),
    "vresolve doctor": (1, "nothing to check here", ""),  # vresolve's own environment: no torch, no vLLM
    "vresolve doctor --no-env --log error.txt": (1, "arch-not-in-build", ""),
    "vresolve doctor --lock lockfiles/h100-driver580/requirements.txt": (1, "lock", ""),
    "vresolve lock --gpu H100 --driver 580.95.05 -o out/": (0, "", NETWORK),
    "vresolve apply --gpu auto": (2, "pass --yes", ""),  # no terminal to ask on: nothing runs
    "vresolve apply --lock out/requirements.txt --venv .venv2 --yes": (0, "", INSTALL),
    "vresolve matrix refresh --package vllm --since 0.33.0": (0, "", NETWORK),
    "vresolve fleet detect --ray -o cluster.json": (0, "", RAY),
    "vresolve fleet detect --k8s nodes.json -o cluster.json": (0, "", ""),
    "vresolve fleet detect --from a.json b.json -o cluster.json": (0, "", ""),
    "vresolve fleet plan cluster.json --python 3.12": (0, "vLLM", ""),
    # the Kubernetes fleet's x86 stack takes a cu126 torch from PyTorch's own index, beyond the configured one
    "vresolve fleet lock cluster.json -o locks/": (0, "", INDEXES),
    "vresolve fleet doctor --ray --lock locks/linux-x86_64/requirements.txt": (1, "", RAY),
    "vresolve matrix grid --python 3.12": (0, "sm_90", ""),
    "vresolve matrix grid -o grid.png": (0, "", ""),
    "vresolve matrix grid -o grid.html": (0, "", ""),
    "vresolve site -o site --python 3.12 --installer uv": (0, "", ""),
    "vresolve matrix validate": (0, "matrix OK", ""),
    "vresolve matrix show": (0, "revision", ""),
    "vresolve matrix show torch": (0, "2.14.0", ""),
    "vresolve matrix refresh": (0, "", NETWORK),
}
# what each command leaves behind that the README promises
WRITES = {"vresolve matrix grid -o grid.png": "grid.png", "vresolve matrix grid -o grid.html": "grid.html",
          "vresolve site -o site --python 3.12 --installer uv": "site/index.html",
          "vresolve lock --gpu H100 --driver 580.95.05 -o out/": "out/requirements.txt",
          "vresolve fleet detect --k8s nodes.json -o cluster.json": "cluster.json",
          "vresolve fleet lock cluster.json -o locks/": "locks/runtime_env.json"}


def command_of(line: str) -> str:
    """The command a README line runs, less its comment, in the spelling this file's keys use."""
    words = shlex.split(line, comments=True)
    for key in EXPECT:
        if shlex.split(key) == words:
            return key
    return shlex.join(words)


def readme_commands() -> list[str]:
    return [command_of(c) for s, c in commands() if s != "Quickstart"]


def ray_commands() -> list[str]:
    """The README's commands that need a Ray cluster (run by tests/test_fleet_ray.py inside its cluster)."""
    return [c for c in readme_commands() if EXPECT.get(c, (0, "", ""))[2] == RAY]


def test_every_readme_command_is_listed_here_and_nothing_else() -> None:
    shown = readme_commands()
    assert len(shown) == len(set(shown)), "a command is shown twice"
    assert sorted(set(shown) - set(EXPECT)) == [], "README commands without an expected outcome in this test"
    assert sorted(set(EXPECT) - set(shown)) == [], "commands listed here that the README no longer shows"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """What the README says a user has at hand, in a scratch directory."""
    cwd = tmp_path_factory.mktemp("readme")
    shutil.copy(next(iter(sorted((DATA / "logs").glob("arch-not-in-build__rtx5090d*.txt")))), cwd / "error.txt")
    shutil.copy(DATA / "k8s" / "nodes.json", cwd / "nodes.json")
    (cwd / "lockfiles").symlink_to(ROOT / "lockfiles")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    if "VRESOLVE_CACHE_DIR" in os.environ:
        env["VRESOLVE_CACHE_DIR"] = os.environ["VRESOLVE_CACHE_DIR"]
    for name in ("a.json", "b.json"):  # "vresolve detect --json files gathered any other way"
        with open(cwd / name, "w") as f:
            subprocess.run([sys.executable, "-m", "vresolve", "detect", "--json"], stdout=f, env=env, check=True)
    return cwd, env


def _skip_reason(needs: str) -> str | None:
    if needs == RAY:
        return "needs a Ray cluster: run as written by tests/test_fleet_ray.py"
    if needs in (NETWORK, INSTALL, INDEXES) and os.environ.get("VRESOLVE_NETWORK_TESTS") != "1":
        return "needs the package index (opt-in: VRESOLVE_NETWORK_TESTS=1)"
    if needs == INDEXES and os.environ.get("VRESOLVE_ALL_INDEXES") != "1":
        return "needs PyTorch's and vLLM's own indexes as well (opt-in: VRESOLVE_ALL_INDEXES=1 where they are reached)"
    if needs == INSTALL and os.environ.get("VRESOLVE_INSTALL_TESTS") != "1":
        return "installs GBs (opt-in: VRESOLVE_INSTALL_TESTS=1)"
    return None


@pytest.mark.parametrize("line", [c for s, c in commands() if s != "Quickstart"])
def test_readme_command_runs_as_written(line: str, scratch: tuple[Path, dict[str, str]]) -> None:
    cwd, env = scratch
    code, text, needs = EXPECT[command_of(line)]
    reason = _skip_reason(needs)
    if reason:
        pytest.skip(reason)
    p = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL)
    said = p.stdout + p.stderr
    assert "Traceback" not in said, said[-3000:]
    assert p.returncode == code, f"exit {p.returncode}, expected {code}\n{said[-3000:]}"
    assert text in said, said[-3000:]
    if command_of(line) in WRITES:
        assert (cwd / WRITES[command_of(line)]).stat().st_size > 0


def test_readme_pictures_are_current() -> None:
    """docs/grid.png and docs/site.png show what vresolve answers now (docs/pictures.json records what they were
    drawn from: the grid's cells and the page's picked plan)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "screenshots.py")
    assert spec and spec.loader
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    recorded = json.loads((ROOT / "docs" / "pictures.json").read_text())
    assert recorded == shots.made_from(), "docs/grid.png and docs/site.png are out of date: python docs/screenshots.py"
