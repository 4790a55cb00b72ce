"""Steps and checks, shared by wheel plans and source builds: one Step type, one Check type, the
environment an install goes into, the installer's argv, and the verification scripts. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
from packaging.version import Version

if TYPE_CHECKING:
    from ..names import Installer


class Expand(str):
    """A value the shell expands: vresolve's own text naming ``$PWD``, ``$CUDA_HOME`` or ``$PATH``
    (``$PWD/.cuda-13.0``). Every other string, whatever it holds, is written quoted, as a literal:
    a user's ``--src-dir '$PWD$(x)'`` stays those characters."""

    __slots__ = ()


class Step(msgspec.Struct, frozen=True, kw_only=True):
    tool: str  # "uv" | "pip" | "conda" | "python" | "git" | "vllm"
    argv: tuple[str, ...]
    why: str
    cwd: str | None = None  # run in this directory (relative to where the plan starts)
    needs_gpu: bool = False  # runs only on a machine with the planned GPUs (``apply`` skips it elsewhere)


class Check(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    argv: tuple[str, ...]
    expect: str  # a line the output must contain
    needs_gpu: bool = False  # passes only on a machine with the planned GPUs (``apply`` skips it elsewhere)
    # the check script's arguments that run the same program as argv (checks/verify.py); () for other commands
    program: tuple[str, ...] = ()


def program_check(python: Sequence[str], program: str, args: Sequence[str] = (), *, name: str, expect: str,
                  needs_gpu: bool = False) -> Check:
    """A check that runs one program of the check script (:mod:`vresolve.checks.verify`) under ``python``:
    its argv is ``python -c SOURCE`` (a command that needs nothing but that environment), its ``program`` the
    script's arguments that run the same source."""
    from ..checks.verify import program as source

    return Check(name=name, argv=(*python, "-c", source(program, tuple(args))), expect=expect, needs_gpu=needs_gpu,
                 program=(program, *args))


def extension_check(version: Version, extensions: Sequence[str]) -> tuple[str, str]:
    """(the Python of the check that vLLM's compiled extensions load, the line it prints on success).

    ``extensions``: the modules the planned wheel ships (empty when the matrix has no list for the build:
    then every module found in the installed package must load).
    """
    from ..checks.verify import program

    return program("extensions", sorted(extensions)), f"vllm {version.public}: compiled extensions load"


def fresh_environment(installer: Installer, python_minor: str, env_dir: str) -> Step:
    """The step that creates a fresh environment of this Python for the installer (wheel plans and
    source builds alike)."""
    py = python_minor
    if installer == "uv":
        return Step(tool="uv", argv=("uv", "venv", "--python", py, "--seed", env_dir),
                    why=f"a fresh environment with Python {py} (uv fetches that Python if it is missing)")
    if installer == "pip":
        return Step(tool="python", argv=(f"python{py}", "-m", "venv", env_dir),
                    why=f"a fresh environment with Python {py} (python{py} must be installed)")
    return Step(tool="conda", argv=("conda", "create", "-y", "-n", env_dir, f"python={py}", "pip"),
                why=f"a conda environment with Python {py} and pip; the wheels come through pip")


def pip_install(installer: Installer, python: tuple[str, ...]) -> tuple[str, ...]:
    """The argv that installs into the environment whose interpreter ``python`` runs (uv's or the environment's
    pip); ``python`` is a path, or for conda the ``conda run -n ENV python`` that runs it."""
    if installer == "uv":
        return ("uv", "pip", "install", "--python", *python)
    return (*python, "-m", "pip", "install")


def install_lock(installer: Installer, env_dir: str, lock_file: str) -> Step:
    """The step that installs a lock's ``requirements.txt`` (or uv: ``pylock.toml``) into a fresh environment:
    every package pinned with its hashes, wheels only."""
    python = f"{env_dir}/bin/python"
    if installer == "uv":
        argv: tuple[str, ...] = ("uv", "pip", "install", "--python", python, "--require-hashes", "--no-build",
                                 "-r", lock_file)
    else:
        argv = (python, "-m", "pip", "install", "--require-hashes", "--only-binary", ":all:", "-r", lock_file)
    return Step(tool=argv[0] if installer == "uv" else "pip", argv=argv,
                why="every package of the lock, at its version, checked against its hashes; wheels only")
