"""The exceptions of vresolve: one root, data on attributes, no printing.

Each error has a stable kebab-case ``code`` (used in ``--json`` envelopes) and the
process exit code the CLI maps it to.
"""

from __future__ import annotations

__all__ = [
    "EXIT_OK",
    "EXIT_NO_STACK",
    "EXIT_USAGE",
    "EXIT_DETECTION",
    "VresolveError",
    "UsageError",
    "MatrixProblem",
    "MatrixError",
    "PackageIndexError",
    "DetectionError",
]

EXIT_OK = 0
EXIT_NO_STACK = 1  # no compatible stack; doctor found errors
EXIT_USAGE = 2  # usage or input error
EXIT_DETECTION = 3  # detection failed where it was required


class VresolveError(Exception):
    """Root of every error vresolve raises on purpose."""

    code = "error"
    exit_code = EXIT_USAGE

    @property
    def message(self) -> str:
        return str(self)


class UsageError(VresolveError, ValueError):
    """Bad input on the command line or in a file the user named.

    >>> raise UsageError("--gpu: unknown GPU 'H1000' (did you mean 'H100'?)")
    """

    code = "usage"


class MatrixProblem(tuple[str, str, str, str]):
    """One thing wrong with the matrix: the file, the row, the field, and what is wrong.

    An immutable 4-tuple (not a dataclass: this module is imported by every command, ``--help`` too,
    and importing dataclasses costs more than all of it).

    >>> str(MatrixProblem("gpus.yaml", "gpus[3] 'NVIDIA H100 80GB HBM3'", "compute_capability",
    ...                   "invalid compute capability '9.x'"))
    "gpus.yaml: gpus[3] 'NVIDIA H100 80GB HBM3': compute_capability: invalid compute capability '9.x'"
    """

    __slots__ = ()

    def __new__(cls, file: str, row: str, field: str, message: str) -> MatrixProblem:
        return super().__new__(cls, (file, row, field, message))

    @property
    def file(self) -> str:
        return self[0]

    @property
    def row(self) -> str:
        return self[1]

    @property
    def field(self) -> str:
        return self[2]

    @property
    def message(self) -> str:
        return self[3]

    def __repr__(self) -> str:
        return f"MatrixProblem{tuple(self)!r}"

    def __str__(self) -> str:
        return ": ".join(p for p in (self.file, self.row, self.field, self.message) if p)


class MatrixError(VresolveError, ValueError):
    """The compatibility matrix is malformed or inconsistent; every problem at once.

    Its message lists every problem, one per line, after a count.
    """

    code = "invalid-matrix"

    def __init__(self, problems: list[MatrixProblem] | tuple[MatrixProblem, ...]) -> None:
        self.problems = tuple(problems)
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the matrix:"
        super().__init__("\n  ".join([head, *map(str, self.problems)]))


class PackageIndexError(VresolveError):
    """The package index could not be read (network, HTTP status, malformed answer)."""

    code = "index-error"
    exit_code = EXIT_NO_STACK


class DetectionError(VresolveError):
    """This machine could not be read where a command needed it: ``--gpu auto`` on a machine whose NVIDIA
    driver is installed but not working, or whose GPUs have no driver."""

    code = "detection-failed"
    exit_code = EXIT_DETECTION
