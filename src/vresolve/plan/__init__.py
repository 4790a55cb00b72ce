"""Install plans: a Resolution -> the steps that install it, the exports, the checks. Pure.

- :mod:`.steps`: the one Step and Check types and the verification scripts, shared by wheel plans and
  source builds;
- :mod:`.wheels`: the wheel plan (:func:`build_plan`), into a fresh environment or, keeping its torch,
  an existing one;
- :mod:`.source`: the source-build recipe (:func:`plan_source_build`); ``--precompiled`` is a mode of it.

Steps are argv tuples; shell text is made only by :mod:`vresolve.render.shell`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .steps import Check, Step, extension_check
from .wheels import InstallPlan, build_plan, planned_extensions

if TYPE_CHECKING:
    from .source import GIB_PER_NVCC_THREAD, SourcePlan, build_parallelism, plan_source_build

__all__ = ["Step", "Check", "InstallPlan", "build_plan", "extension_check", "planned_extensions",
           "SourcePlan", "plan_source_build", "build_parallelism", "GIB_PER_NVCC_THREAD"]


def __getattr__(name: str) -> object:  # source builds: imported only when one is planned
    if name in ("GIB_PER_NVCC_THREAD", "SourcePlan", "build_parallelism", "plan_source_build"):
        from . import source

        return getattr(source, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
