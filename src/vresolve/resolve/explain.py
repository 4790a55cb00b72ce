"""A failed resolution in hardware terms.

A cause is data (:class:`Cause`: a kind such as ``gpu`` or ``driver``, and its sentence); the
command line decides on a source build by the kinds, and the render layer prints the sentences.
The resolver calls :func:`explain` with its own ``resolve`` to try the relaxed requests its hints
name (this module never imports the resolver).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..errors import EXIT_NO_STACK, VresolveError
from ..host import Host, describe_gpus
from ..matrix import Matrix
from .candidates import Rejection, Request, Resolution, VllmBuild, served_memo

if TYPE_CHECKING:
    from ..names import Policy

    Resolve = Callable[[Host, Matrix, Request], Resolution]


class Cause(msgspec.Struct, frozen=True):
    """Why no stack fits, as data: a kind (a rejection kind: driver, gpu, python, platform, glibc; or
    "other") and its sentence in hardware terms, which the render layer prints."""

    kind: str
    text: str


class NoCompatibleStack(VresolveError):
    """No vLLM stack runs on this machine under the request; ``causes`` and ``hints`` say why.

    >>> raise NoCompatibleStack("no vLLM wheel runs here", causes=["driver 470.82 ..."], hints=["install ..."])
    """

    code = "no-compatible-stack"
    exit_code = EXIT_NO_STACK

    def __init__(self, message: str, *, causes: Sequence[Cause | str] = (), hints: Sequence[str] = ()) -> None:
        self.cause_list = tuple(c if isinstance(c, Cause) else Cause("other", c) for c in causes)
        self.causes = tuple(c.text for c in self.cause_list)
        self.hints = tuple(hints)
        self._headline = message
        super().__init__(self.format())

    def format(self, head: str = "", causes_head: str = "", hints_head: str = "", indent: str = "    ") -> str:
        """pip's shape: the headline, "The conflict is caused by:", then numbered "To fix this" hints."""
        lines = [head + self._headline]
        if self.causes:
            lines.append(causes_head + "The conflict is caused by:")
            lines += [f"{indent}{c}" for c in self.causes]
        if self.hints:
            lines.append(hints_head + "To fix this you could try to:")
            lines += [f"{indent}{i}. {h}" for i, h in enumerate(self.hints, 1)]
        return "\n".join(lines)

    @property
    def headline(self) -> str:
        return self._headline

    @property
    def cause_kinds(self) -> frozenset[str]:
        return frozenset(c.kind for c in self.cause_list)


def explain(host: Host, matrix: Matrix, request: Request, *, builds: Sequence[VllmBuild], platform: str,
            turned_down: Sequence[Rejection], retry: Resolve) -> NoCompatibleStack:
    """Turn the rejections into a hardware-terms explanation and concrete hints. ``builds``: the vLLM builds of
    the platform; ``turned_down``: every rejection; ``retry``: the resolver, for the hints' relaxed requests."""
    any_version = len(request.vllm) == 0
    wanted = [b for b in builds if request.cpu == (b.cuda is None)
              and (any_version or request.vllm.contains(b.version, prereleases=True))]
    if not wanted:
        what = f"vllm{request.vllm}" if str(request.vllm) else "vLLM"
        known = [f"known vLLM releases: {builds[-1].version} .. {builds[0].version}"] \
            if builds else []
        return NoCompatibleStack(
            f"the matrix has no {'CPU' if request.cpu else 'CUDA'} build of {what} for {platform}",
            causes=known, hints=["ask for a vLLM version the matrix knows (vresolve matrix show vllm)",
                                 "build vLLM from source (--source-build always)"])
    # only what the request asked about: the pool records every build it turned down
    rejections = [r for r in turned_down if not isinstance(r.build, VllmBuild)
                  or any_version or request.vllm.contains(r.build.version, prereleases=True)]
    headline = (f"no build of vLLM {request.vllm or ''}".rstrip() + f" runs on this machine "
                f"({_machine_text(host, request)})")
    return NoCompatibleStack(headline, causes=_causes(host, matrix, request, rejections, wanted[0].version),
                             hints=_hints(host, matrix, request, rejections, retry))


def _causes(host: Host, matrix: Matrix, request: Request, rejections: Sequence[Rejection],
            newest: Version) -> list[Cause]:
    """What rules the builds out: the driver's ceiling, then each other kind (the newest and the oldest
    release's reason: nothing between fits either), then the newest release's builds, one line each."""
    causes: list[Cause] = []
    driver_rj = [r for r in rejections if r.kind == "driver" and r.needs_driver is not None]
    if driver_rj and host.driver.version is not None:
        served = served_memo(matrix, host.driver.version, request.driver_policy)
        least = min(driver_rj, key=lambda r: r.needs_driver)  # type: ignore[arg-type, return-value]
        causes.append(Cause("driver", f"driver {host.driver.version} serves CUDA {served or 'none'} at most under "
                                      f"the {request.driver_policy} policy; the least demanding build that fits "
                                      f"otherwise, {least.candidate}, needs {least.needs_driver}"))
    for kind in ("gpu", "python", "platform", "glibc"):
        of_kind = [r for r in rejections if r.kind == kind and r.text is not None]
        if of_kind:
            causes.append(Cause(kind, of_kind[0].reason))
            if of_kind[-1].reason != of_kind[0].reason:
                causes.append(Cause(kind, of_kind[-1].reason))
    for rj in driver_rj:
        if len(causes) >= 6:
            break
        if isinstance(rj.build, VllmBuild) and rj.build.version == newest and rj.reason not in [c.text for c in causes]:
            causes.append(Cause("driver", rj.reason))
    return causes


def _hints(host: Host, matrix: Matrix, request: Request, rejections: Sequence[Rejection], retry: Resolve
           ) -> list[str]:
    """What would make a stack fit: a driver, the other policy, no vLLM constraint, a source build, ..."""
    from msgspec.structs import replace

    hints: list[str] = []
    driver_rj = any(r.kind == "driver" and r.needs_driver is not None for r in rejections)
    if driver_rj and host.driver.version is not None:
        # the smallest driver upgrade that lets the newest wanted release through
        relaxed = try_resolve(retry, host, matrix, request, driver=None)
        if relaxed is not None and relaxed.min_driver is not None:
            hints.append(f"install NVIDIA driver >= {relaxed.min_driver} (it serves vLLM {relaxed.vllm.version} "
                         f"with torch {relaxed.torch.version}+{relaxed.torch.variant.variant})")
    if request.driver_policy == "toolkit" and driver_rj:
        alt = try_resolve(retry, host, matrix, request, policy="minor-compat")
        if alt is not None:
            hints.append(f"use --driver-policy minor-compat: vLLM {alt.vllm.version} runs on this driver under "
                         "CUDA minor-version compatibility")
    if str(request.vllm):
        older = try_resolve(retry, host, matrix, replace(request, vllm=SpecifierSet()))  # the rest kept
        if older is not None:
            hints.append(f"drop the vLLM constraint ({request.vllm}): vLLM {older.vllm.version} runs here")
    kinds = {r.kind for r in rejections}
    for kind, hint in (("gpu", "build vLLM from source for this GPU's architecture (--source-build always)"),
                       ("python", "use a Python version the release supports (--python X.Y; uv can install it)"),
                       ("glibc", "use a newer Linux distribution (glibc), a container image with one, or an older "
                                 "vLLM")):
        if kind in kinds:
            hints.append(hint)
    return hints


def _machine_text(host: Host, request: Request) -> str:
    parts = []
    if host.driver.version is not None:
        parts.append(f"driver {host.driver.version}")
    if not request.cpu and host.gpus:
        parts.append(describe_gpus(host.gpus))
    parts.append(f"Python {host.python_minor}")
    parts.append(host.platform.tag + (f", glibc {host.platform.glibc}" if host.platform.glibc else ""))
    return ", ".join(parts)


def try_resolve(retry: Resolve, host: Host, matrix: Matrix, request: Request, *, driver: Any = ...,
                policy: Policy | None = None) -> Resolution | None:
    """``retry``'s answer with the driver (None: any) or the policy changed; None when none fits."""
    from msgspec.structs import replace

    h = host if driver is ... else replace(host, driver=replace(host.driver, version=driver, cuda=None))
    r = request if policy is None else replace(request, driver_policy=policy)
    try:
        return retry(h, matrix, r)
    except NoCompatibleStack:
        return None
