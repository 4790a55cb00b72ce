"""Hostile input to the matrix and to the log matcher: each test reproduces one attack.

Matrix files that are not regular files, YAML alias bombs, catastrophic regular expressions, duplicate
rows, and a planted or corrupted matrix cache. Each must end in a one-line problem (or a cache miss),
never a traceback, a hang or unbounded memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.errors import EXIT_USAGE, MatrixError
from vresolve.matrix import load_matrix


def problems(path: Path) -> list[str]:
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    return [str(p) for p in info.value.problems]


# -- matrix files that are not regular files ------------------------------------------------------------------


def _replace(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        f = root / name
        f.unlink()
        make(f)

    return edit


NOT_REGULAR = [
    pytest.param(_replace("gpus.yaml", lambda f: f.mkdir()), "gpus.yaml: not a regular file (a directory)",
                 id="directory"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to("/nonexistent/gpus.yaml")),
                 "gpus.yaml: a symbolic link to a file that does not exist", id="dangling-symlink"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to(f.name)),
                 "gpus.yaml: cannot be read (Too many levels of symbolic links)", id="symlink-loop"),
    pytest.param(_replace("gpus.yaml", lambda f: f.symlink_to("/dev/zero")),
                 "gpus.yaml: not a regular file (a character device)", id="dev-zero"),
    pytest.param(_replace("gpus.yaml", lambda f: os.mkfifo(f)), "gpus.yaml: not a regular file (a FIFO)", id="fifo"),
    pytest.param(_replace("gpus.yaml", lambda f: os.truncate(f.touch() or f, 17 * 2**20)),
                 "gpus.yaml: larger than 16 MiB (17.0 MiB): a matrix file is a few hundred KB", id="too-large"),
]


@pytest.mark.parametrize(("edit", "expected"), NOT_REGULAR)
def test_matrix_file_that_is_not_a_regular_file(tiny_copy: Callable[..., Path], edit: Callable[[Path], None],
                                                expected: str) -> None:
    root = tiny_copy()
    edit(root)
    assert problems(root) == [expected]


def test_wheels_folder_that_is_a_file(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy()
    for f in (root / "wheels").iterdir():
        f.unlink()
    (root / "wheels").rmdir()
    (root / "wheels").write_text("not a folder\n")
    assert problems(root) == [f"wheels/{p}.yaml: cannot be read (Not a directory)"
                              for p in ("torch", "torchvision", "torchaudio", "vllm", "xformers", "flashinfer-python")]


def test_optional_file_that_is_not_a_regular_file_is_not_skipped(tiny_copy: Callable[..., Path]) -> None:
    root = tiny_copy()
    (root / "wheels" / "xformers.yaml").mkdir()  # optional when absent; a folder there is a mistake
    assert problems(root) == ["wheels/xformers.yaml: not a regular file (a directory)"]


def test_cli_fifo_matrix_file_is_one_line_exit_2(tiny_copy: Callable[..., Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tiny_copy()
    (root / "gpus.yaml").unlink()
    os.mkfifo(root / "gpus.yaml")  # reading it would wait for a writer forever
    code = main(["matrix", "validate", "--matrix", str(root)])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "vresolve: error: 1 problem in the matrix:\n  gpus.yaml: not a regular file (a FIFO)\n"
