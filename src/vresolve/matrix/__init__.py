"""The compatibility matrix: YAML under ``compat_matrix/`` -> frozen typed objects.

- :mod:`.files`: where the matrix lives and :func:`load_matrix` (the cache first, else the reader);
- :mod:`.model`: the objects (CUDA toolkits, GPUs, torch and vLLM releases, wheels, known issues);
- :mod:`.load`: the YAML reader, which checks every row against ``compat_matrix/SCHEMA.md`` and
  collects every problem (file, row, field) into one :class:`~vresolve.errors.MatrixError`;
- :mod:`.checks`: the cross-references between the tables;
- :mod:`.patterns`: the known issues' signatures checked for super-linear backtracking;
- :mod:`.cache`: the validated matrix kept as a checksummed pickle that only the matrix's classes can come
  out of, keyed by the files' bytes and the code;
- :mod:`.dump`: the inverse, so that ``load(dump(load(x))) == load(x)``.
"""

from __future__ import annotations

from .files import default_matrix_path, load_matrix
from .model import (
    CAUSE_CODES,
    FILES,
    Architecture,
    Asset,
    CudaMajor,
    CudaToolkit,
    DriverFloor,
    DriverSupport,
    Gpu,
    Kernels,
    KnownIssue,
    Matrix,
    Provenance,
    SourceBuild,
    TorchRelease,
    TorchVariant,
    VllmRelease,
    VllmVariant,
    Wheel,
    wheel_platform,
)

__all__ = ["CAUSE_CODES", "FILES", "Provenance", "DriverFloor", "DriverSupport", "CudaMajor", "CudaToolkit", "Architecture", "Gpu",
           "TorchVariant", "TorchRelease", "Kernels", "Asset", "VllmVariant", "Wheel", "SourceBuild", "VllmRelease",
           "KnownIssue", "Matrix", "default_matrix_path", "wheel_platform", "dump_yaml", "load_matrix",
           "matrix_to_dicts"]


def __getattr__(name: str) -> object:  # the writer, imported only by those who write (refresh, tests)
    if name in ("dump_yaml", "matrix_to_dicts"):
        from . import dump

        return getattr(dump, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
