"""The resolver: the newest vLLM stack that really works on a Host, on resolvelib.

- :mod:`.candidates`: builds (a vLLM release x one wheel build, a torch release x variant), requirements,
  the driver rules and why a build was turned down (:class:`Rejection`), as data;
- :mod:`.provider`: the host's facts as candidate filters, resolvelib's provider, and :func:`resolve`;
- :mod:`.explain`: a failure in hardware terms (:class:`NoCompatibleStack`, its causes as data with a
  kind each);
- :mod:`.jetson`: a Jetson's facts (its module, its JetPack, the wheel sets of its JetPack's path of the
  Jetson index), which :func:`resolve` checks: that index is a source of candidates like any other.

Preference (deterministic): the newest vLLM that meets the request; then PyPI wheels over other
indexes; then the newest CUDA the driver serves; then trusted facts over ``unverified`` ones.
Driver policy (:func:`driver_floor`): ``minor-compat`` (default) needs the minor-version-compatibility
floor of the build's CUDA major, or the toolkit's own floor where a GPU runs the build only through
PTX; ``toolkit`` always needs the toolkit's own floor.
"""

from __future__ import annotations

from ..names import POLICIES
from .candidates import Rejection, Request, TorchBuild, VllmBuild, driver_floor, driver_serves, vllm_builds
from .explain import Cause, NoCompatibleStack
from .provider import Resolution, Stack, alternatives, resolve, resolve_kept_torch

__all__ = ["POLICIES", "Request", "VllmBuild", "TorchBuild", "Rejection", "Resolution", "Stack", "Cause", "NoCompatibleStack",
           "driver_floor", "driver_serves", "vllm_builds", "resolve", "resolve_kept_torch", "alternatives"]
