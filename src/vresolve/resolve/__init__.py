"""The resolver: the newest vLLM stack that really works on a Host, on resolvelib.

- :mod:`.candidates`: builds (a vLLM release x one wheel build, a torch release x variant), requirements,
  the driver rules and why a build was turned down (:class:`Rejection`), as data;
- :mod:`.provider`: the host's facts as candidate filters, resolvelib's provider, and :func:`resolve`;
- :mod:`.explain`: a failure in hardware terms (:class:`NoCompatibleStack`, its causes as data with a
  kind each) and the stacks worth knowing about that were not chosen.

Preference (deterministic): the newest vLLM that meets the request; then PyPI wheels over other
indexes; then the newest CUDA the driver serves; then trusted facts over ``unverified`` ones.
Driver policy (:func:`driver_floor`): ``minor-compat`` (default) needs the minor-version-compatibility
floor of the build's CUDA major, or the toolkit's own floor where a GPU runs the build only through
PTX; ``toolkit`` always needs the toolkit's own floor.
"""

from __future__ import annotations

from ..names import POLICIES
from .candidates import Rejection, Request, TorchBuild, VllmBuild, driver_floor, driver_serves, vllm_builds
from .explain import Cause, NoCompatibleStack, alternatives
from .provider import Resolution, Stack, resolve, resolve_kept_torch

__all__ = ["POLICIES", "Request", "VllmBuild", "TorchBuild", "Rejection", "Resolution", "Stack", "Cause", "NoCompatibleStack",
           "driver_floor", "driver_serves", "vllm_builds", "resolve", "resolve_kept_torch", "alternatives"]
