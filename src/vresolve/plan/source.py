"""Source-build plans: vLLM built from its tagged source when no prebuilt wheel fits. Pure.

Decisions, each from the matrix and the Host:

- **the vLLM tag**: the newest release in the request whose CMake accepts every GPU
  (``build.cuda_archs``: CUDA_SUPPORTED_ARCHS for the nvcc in use, matched loosely the way
  vLLM's ``cuda_archs_loose_intersection`` does: SASS of the same major, minor not above the
  GPU's), and, when keeping torch, whose tree has ``use_existing_torch.py`` and whose own torch
  pin is not newer than the torch kept;
- **the torch to build against**: the one installed (``--keep-torch``), or the release's pinned
  torch in the variant that runs on every GPU, whose toolkit can target every GPU, that the
  driver serves; a variant whose CUDA matches a toolkit already on the machine first, then
  PyPI's build, then the newest CUDA;
- **the CUDA toolkit**: major.minor equal to torch's CUDA (``torch.version.cuda``), and an nvcc
  that can target every GPU (12.8+ for sm_120; a 12.x toolkit for sm_6x/sm_70, which CUDA 13
  cannot target); found on the machine, or installed into ``./.cuda-X.Y`` with conda;
- **the host compiler**: a GCC inside that nvcc's supported range (checked by the script);
- **parallelism** (:func:`build_parallelism`): ``NVCC_THREADS`` 2 on 8+ cores else 1, and
  ``MAX_JOBS`` so that every nvcc thread has a 4 GiB budget in 80 % of the memory, never more
  jobs than cores / NVCC_THREADS. vLLM's heaviest translation units (CUTLASS, FlashAttention,
  Marlin) peak at 3 to 4 GiB per nvcc thread; too many jobs is the seed's "ninja: build stopped".

The recipe exports ``TORCH_CUDA_ARCH_LIST`` set to exactly the machine's capabilities (never
``CMAKE_CUDA_ARCHITECTURES``, which torch's CMake ignores), ``CUDA_HOME`` and ``PATH``,
``VLLM_TARGET_DEVICE``, ccache launchers when ccache is there; runs ``use_existing_torch.py`` when
keeping torch; installs the build requirements and then vLLM with ``--no-build-isolation`` (so
pip cannot build against another torch); and verifies by importing ``vllm._C`` and running one
of its ops against torch's own result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
from packaging.version import Version

from ..host import Host, InstalledDist, Toolkit, describe_gpus
from ..matrix import CudaToolkit, Matrix, VllmRelease
from ..resolve import Cause, NoCompatibleStack, Request, Stack, TorchBuild, driver_floor
from ..values import CORE_EXTENSIONS, Capability, DriverVersion, exact_pin, public_version
from .steps import Check, Expand, Step, fresh_environment, pip_install

if TYPE_CHECKING:
    from ..names import Installer

__all__ = ["SourcePlan", "plan_source_build", "build_parallelism", "GIB_PER_NVCC_THREAD"]

GIB_PER_NVCC_THREAD = 4
VLLM_GIT = "https://github.com/vllm-project/vllm.git"


class SourcePlan(msgspec.Struct, frozen=True, kw_only=True):
    host: Host
    request: Request
    vllm: VllmRelease
    target: str  # "cuda" | "cpu"
    archs: tuple[Capability, ...]  # TORCH_CUDA_ARCH_LIST
    torch_version: str  # "2.11.0+cu130"
    torch_cuda: Version | None
    keep_torch: bool
    torch_build: TorchBuild | None  # the build the plan installs, when not keeping torch
    toolkit: CudaToolkit | None  # the matrix row of the toolkit
    toolkit_found: Toolkit | None  # the toolkit on the machine, when there is one
    cuda_home: str
    python: tuple[str, ...]  # the argv that runs the build's interpreter (a path, or conda run -n ENV python)
    env_dir: str | None
    installer: Installer
    src_dir: str
    max_jobs: int | None  # None: the recipe computes it on the build machine
    nvcc_threads: int
    min_driver: DriverVersion | None
    env: tuple[tuple[str, str], ...]
    env_reasons: tuple[tuple[str, str], ...]
    steps: tuple[Step, ...]
    checks: tuple[Check, ...]  # before the build: nvcc, torch, gcc
    verify: tuple[Check, ...]  # after it
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def stack(self) -> Stack:
        tb = self.torch_build
        return Stack(vllm=self.vllm.version, torch=self.torch_version.split("+")[0], torchvision=None, torchaudio=None,
                     companions={}, variant=f"cu{self.torch_cuda.major}{self.torch_cuda.minor}" if self.torch_cuda
                     else "cpu", vllm_variant="source", vllm_source=f"git tag v{self.vllm.version}",
                     torch_source="kept" if self.keep_torch else "pypi" if tb and tb.pypi else "pytorch-index",
                     cuda=self.torch_cuda, python=self.host.python_minor, install_kind="source")


def build_parallelism(cores: int | None, memory_mib: int | None) -> tuple[int | None, int]:
    """(MAX_JOBS, NVCC_THREADS) for a machine; MAX_JOBS None when its size is unknown.

    >>> build_parallelism(16, 128 * 1024)  # core-bound: 16 cores / 2 threads
    (8, 2)
    >>> build_parallelism(2, 24 * 1024)
    (2, 1)
    >>> build_parallelism(64, 32 * 1024)
    (3, 2)
    """
    threads = 2 if (cores or 0) >= 8 else 1
    if not cores or not memory_mib:
        return None, threads
    by_memory = int(memory_mib / 1024 * 0.8) // (GIB_PER_NVCC_THREAD * threads)
    return max(1, min(cores // threads, by_memory)), threads


def _loose_covers(accepted: Sequence[Capability], cc: Capability) -> Capability | None:
    """The arch vLLM's CMake builds for ``cc`` out of ``accepted`` (same major, minor not above), or None."""
    fits = [a for a in accepted if a.major == cc.major and a.minor <= cc.minor]
    return max(fits, default=None)


def _caps(host: Host) -> tuple[Capability, ...]:
    return tuple(sorted({g.compute_capability.base for g in host.gpus if g.compute_capability is not None}))


def _pin(r: VllmRelease, platform: str) -> Version | None:
    return exact_pin(r.pins(platform).get("torch"))


def _toolkit_on_host(host: Host, cuda: Version) -> Toolkit | None:
    return next((t for t in host.toolkits if (t.version.major, t.version.minor) == (cuda.major, cuda.minor)), None)


class _Choice(msgspec.Struct, frozen=True, kw_only=True):
    """What a source build is made of: the release, the torch (kept, or the release's pin), the toolkit."""

    release: VllmRelease
    target: str  # "cuda" | "cpu"
    caps: tuple[Capability, ...]
    kept: InstalledDist | None  # the environment's torch, when it is kept
    torch_build: TorchBuild | None  # the torch to install, when it is not
    toolkit: CudaToolkit | None
    floor: DriverVersion | None


class _Options(msgspec.Struct, frozen=True, kw_only=True):
    installer: Installer
    env_dir: str | None
    src_dir: str
    why_no_wheel: tuple[str, ...]
    precompiled: bool


# causes that the hardware rules out hold for every release: they are said first
_HARDWARE = ("gpu", "driver", "torch")


def plan_source_build(host: Host, matrix: Matrix, request: Request, *, keep_torch: bool = False,
                      installer: Installer = "uv", env_dir: str | None = None, src_dir: str = "vllm-src",
                      why_no_wheel: Sequence[str] = (), precompiled: bool = False) -> SourcePlan:
    """The source-build recipe for ``host``, or NoCompatibleStack saying why none works."""
    caps = () if request.cpu else _caps(host)
    target = "cpu" if request.cpu else "cuda"
    kept = host.installed_dist("torch") if keep_torch else None
    if keep_torch and kept is None:
        raise NoCompatibleStack("--keep-torch: no torch is installed in this environment",
                                hints=["run vresolve from the environment whose torch you want to keep",
                                       "or leave out --keep-torch: the plan then installs the torch the release pins"])
    if kept is None and not request.cpu:
        _jetson_torch_first(host, matrix, request)
    if not request.cpu:
        from ..resolve.gpudriver import refuse_unsupported_driver

        refuse_unsupported_driver(host, matrix)  # no build runs on a GPU the driver cannot drive
    if precompiled and keep_torch:
        raise NoCompatibleStack("--precompiled reuses a release's compiled kernels, which are built for the torch "
                                "that release pins: it cannot keep another torch",
                                hints=["leave out --keep-torch", "or leave out --precompiled and build the kernels"])
    options = _Options(installer=installer, env_dir=env_dir, src_dir=src_dir, why_no_wheel=tuple(why_no_wheel),
                       precompiled=precompiled)
    causes: list[Cause] = []
    for r in sorted((r for r in matrix.vllm if request.vllm.contains(r.version, prereleases=True)),
                    key=lambda r: r.version, reverse=True):
        choice = _choose(host, matrix, request, r, target, caps, kept, precompiled, causes)
        if choice == "stop":
            break
        if isinstance(choice, _Choice):
            return _recipe(host, matrix, request, choice, options)
    what = f"vLLM {request.vllm}".strip() if str(request.vllm) else "vLLM"
    hints = []
    if keep_torch:
        hints.append("leave out --keep-torch: the plan then installs a torch the release supports")
    if caps and any("CUDA_SUPPORTED_ARCHS" in c.text for c in causes):
        hints.append(f"no vLLM release builds for {', '.join(c.sm for c in caps)}; use a GPU of compute "
                     "capability 7.0 or newer, or the CPU backend (--gpu none)")
    ordered = sorted(_dedupe(causes), key=lambda c: c.kind not in _HARDWARE)
    raise NoCompatibleStack(f"no source build of {what} works on this machine", causes=ordered[:6], hints=hints)


def _jetson_torch_first(host: Host, matrix: Matrix, request: Request) -> None:
    """A Jetson whose JetPack CUDA is L4T's own: a source build needs NVIDIA's JetPack torch installed first (and
    --keep-torch), never the torch of the PyTorch index; the refusal says how (:mod:`..resolve.jetson`)."""
    from ..resolve.jetson import jetson_of, refusal, runs_unified_arm

    j = jetson_of(host, matrix, request.jetpack)
    if j is not None and not runs_unified_arm(matrix, j):
        raise refusal(host, matrix, request, j)  # with the way forward


def _choose(host: Host, matrix: Matrix, request: Request, r: VllmRelease, target: str, caps: tuple[Capability, ...],
            kept: InstalledDist | None, precompiled: bool, causes: list[Cause]) -> _Choice | str | None:
    """The build of release ``r`` for this machine; None (and a cause) when it cannot be built here,
    "stop" when no release can (a kept CPU torch for a CUDA build)."""
    b = r.build
    label = f"vLLM {r.version}"
    if b is None:
        causes.append(Cause("release", f"{label}: how it builds from source is not in the matrix"))
        return None
    if target == "cpu" and not b.cpu:
        causes.append(Cause("release", f"{label} does not build for the CPU (VLLM_TARGET_DEVICE=cpu)"))
        return None
    if precompiled and not b.precompiled:
        causes.append(Cause("release", f"{label}'s setup.py has no VLLM_USE_PRECOMPILED"))
        return None
    picked = _torch_of(host, matrix, request, r, target, caps, kept, causes)
    if not isinstance(picked, tuple):
        return picked
    torch_build, cuda = picked
    tk, floor = None, None
    if target == "cuda":
        assert cuda is not None
        found = _toolkit_of(host, matrix, request, r, cuda, caps, causes)
        if found is None:
            return None
        tk, floor = found
    return _Choice(release=r, target=target, caps=caps, kept=kept, torch_build=torch_build, toolkit=tk, floor=floor)


def _torch_of(host: Host, matrix: Matrix, request: Request, r: VllmRelease, target: str,
              caps: tuple[Capability, ...], kept: InstalledDist | None, causes: list[Cause]
              ) -> tuple[TorchBuild | None, Version | None] | str | None:
    """(the torch to install or None when kept, its CUDA); None or "stop" with a cause when none fits."""
    assert r.build is not None
    label = f"vLLM {r.version}"
    pin = _pin(r, host.platform.tag)
    if kept is not None:
        kept_version = public_version(kept.version)
        kept_cuda = public_version(kept.cuda) if kept.cuda else None
        if not r.build.use_existing_torch:
            causes.append(Cause("release", f"{label} has no use_existing_torch.py, so it cannot build against "
                                           "your torch"))
            return None
        if pin is not None and kept_version is not None and pin.release[:2] > kept_version.release[:2]:
            causes.append(Cause("release", f"{label} is made for torch {pin}, newer than your torch {kept.version}"))
            return None
        if target == "cuda" and kept_cuda is None:
            causes.append(Cause("torch", f"your torch {kept.version} is a CPU build: vLLM's CUDA kernels need a "
                                         "CUDA torch"))
            return "stop"
        return None, kept_cuda
    if pin is None:
        causes.append(Cause("release", f"{label} pins no exact torch for {host.platform.tag}"))
        return None
    torch_build, why = _pick_torch(host, matrix, request, pin, caps, target)
    if torch_build is None:
        causes.append(Cause("release", f"{label} pins torch {pin}: {why}"))
        return None
    return torch_build, torch_build.cuda


def _toolkit_of(host: Host, matrix: Matrix, request: Request, r: VllmRelease, cuda: Version,
                caps: tuple[Capability, ...], causes: list[Cause]
                ) -> tuple[CudaToolkit, DriverVersion | None] | None:
    """(torch's CUDA toolkit, the driver it needs) when its nvcc and vLLM's CMake build every GPU here."""
    assert r.build is not None
    label = f"vLLM {r.version}"
    tk = matrix.toolkit(cuda)
    if tk is None:
        causes.append(Cause("release", f"CUDA {cuda} (torch's) is not in the matrix's toolkits"))
        return None
    untargetable = [c for c in caps if not tk.can_target(c)]
    if untargetable:
        causes.append(Cause("gpu", f"nvcc {tk.version} (torch's CUDA) cannot target "
                                   f"{', '.join(c.sm for c in untargetable)}"))
        return None
    accepted = r.build.archs_for(cuda)
    if accepted is None:
        causes.append(Cause("release", f"{label}'s CMakeLists does not build with CUDA {cuda}"))
        return None
    refused = [c for c in caps if _loose_covers(accepted, c) is None]
    if refused:
        causes.append(Cause("gpu", f"{label}'s CMake builds only {', '.join(map(str, accepted))} "
                                   f"(CUDA_SUPPORTED_ARCHS): not {', '.join(c.sm for c in refused)}"))
        return None
    floor = driver_floor(matrix, cuda, request.driver_policy, False)
    if floor is not None and host.driver.version is not None and host.driver.version < floor:
        causes.append(Cause("driver", f"torch's CUDA {cuda} needs driver >= {floor}; this machine has "
                                      f"{host.driver.version}"))
        return None
    return tk, floor


def _dedupe(items: Sequence[Cause]) -> list[Cause]:
    seen: dict[str, Cause] = {}
    for c in items:
        seen.setdefault(c.text, c)
    return list(seen.values())


def _pick_torch(host: Host, matrix: Matrix, request: Request, pin: Version, caps: Sequence[Capability],
                target: str) -> tuple[TorchBuild | None, str]:
    """The variant of torch ``pin`` to build against, or (None, why not); asked once per matrix revision and the
    facts it reads (a sweep of many hosts, as the grid's, asks it for every release on each)."""
    from ..resolve.candidates import memo

    on_host = tuple(sorted({(t.version.major, t.version.minor) for t in host.toolkits}))
    key = ("source-torch", matrix.revision, pin, host.python_minor, host.platform.tag, request.variant,
           request.driver_policy, tuple(caps), target, host.driver.version, on_host)
    found: tuple[TorchBuild | None, str] = memo(key, lambda: _pick_torch_now(host, matrix, request, pin, caps, target))
    return found


def _pick_torch_now(host: Host, matrix: Matrix, request: Request, pin: Version, caps: Sequence[Capability],
                    target: str) -> tuple[TorchBuild | None, str]:
    release = matrix.torch_release(pin)
    if release is None:
        return None, "that torch is not in the matrix"
    if host.python_minor not in release.python:
        return None, f"it has no wheel for Python {host.python_minor}"
    platform = host.platform.tag
    options = []
    for v in release.variants:
        archs = v.archs.get(platform)
        if archs is None or (target == "cpu") != (v.cuda is None):
            continue
        if request.variant and v.variant != request.variant:
            continue
        if target == "cuda":
            assert v.cuda is not None
            tk = matrix.toolkit(v.cuda)
            if tk is None or not all(tk.can_target(c) for c in caps) or not all(archs.covers(c) for c in caps):
                continue
            floor = driver_floor(matrix, v.cuda, request.driver_policy, False)
            if floor is not None and host.driver.version is not None and host.driver.version < floor:
                continue
        on_host = v.cuda is not None and _toolkit_on_host(host, v.cuda) is not None
        options.append((not on_host, platform not in v.pypi_default, not v.provenance.trusted,
                        -(v.cuda.major * 100 + v.cuda.minor) if v.cuda else 0, v))
    if not options:
        kind = "CPU" if target == "cpu" else f"CUDA build that runs on and can be compiled for {', '.join(map(str, caps))}"
        return None, f"no {kind} of it fits this machine"
    best = min(options, key=lambda o: o[:4])[4]
    return TorchBuild(release=release, variant=best, platform=platform, pypi=platform in best.pypi_default), ""


def _recipe(host: Host, matrix: Matrix, request: Request, c: _Choice, o: _Options) -> SourcePlan:
    """The recipe. ``o.precompiled``: an editable install that reuses the release's compiled kernels
    (``VLLM_USE_PRECOMPILED=1``): no toolkit, no nvcc, no MAX_JOBS; the torch is the one the release pins."""
    r, tk = c.release, (None if o.precompiled else c.toolkit)  # precompiled: nothing is compiled
    if c.kept is not None:
        torch_version, torch_cuda = c.kept.version, public_version(c.kept.cuda) if c.kept.cuda else None
    else:
        assert c.torch_build is not None
        torch_version, torch_cuda = f"{c.torch_build.version}+{c.torch_build.variant.variant}", c.torch_build.cuda
    found = _toolkit_on_host(host, torch_cuda) if torch_cuda is not None and not o.precompiled else None
    cuda_home = "" if tk is None else (found.path if found is not None else Expand(f"$PWD/.cuda-{tk.version}"))
    steps: list[Step] = []
    reasons: list[str] = list(o.why_no_wheel)
    warnings: list[str] = []
    python, env_dir = _environment(host, matrix, c, o, torch_version, torch_cuda, found, steps, reasons)
    if tk is not None:
        assert torch_cuda is not None
        _toolkit(tk, found, torch_cuda, c.caps, steps, reasons, warnings)
    max_jobs, threads = build_parallelism(host.cpu_count, host.memory_mib)
    if o.precompiled:
        max_jobs = 0
    env = _build_env(host, c, o, tk, cuda_home, max_jobs, threads)
    checks = _pre_checks(tk, torch_cuda, python)
    _build_steps(c, o, python, tk, steps, reasons)
    if max_jobs is None:
        warnings.append("the build machine's memory is unknown: the recipe computes MAX_JOBS there "
                        f"({GIB_PER_NVCC_THREAD} GiB per nvcc thread in 80 % of MemAvailable)")
    return SourcePlan(host=host, request=request, vllm=r, target=c.target, archs=c.caps, torch_version=torch_version,
                      torch_cuda=torch_cuda, keep_torch=c.kept is not None, torch_build=c.torch_build, toolkit=tk,
                      toolkit_found=found, cuda_home=cuda_home, python=python, env_dir=env_dir,
                      installer=o.installer, src_dir=o.src_dir, max_jobs=max_jobs, nvcc_threads=threads,
                      min_driver=c.floor, env=tuple((k, v) for k, v, _ in env),
                      env_reasons=tuple((k, why) for k, _, why in env), steps=tuple(steps), checks=tuple(checks),
                      verify=(_op_check(python, c.target, r, host.platform.tag),), reasons=tuple(reasons),
                      warnings=tuple(warnings))


def _environment(host: Host, matrix: Matrix, c: _Choice, o: _Options, torch_version: str,
                 torch_cuda: Version | None, found: Toolkit | None, steps: list[Step], reasons: list[str]
                 ) -> tuple[tuple[str, ...], str | None]:
    """(the argv of the interpreter the build uses, the environment it creates or None when keeping torch's)."""
    r = c.release
    if c.kept is not None:
        python: tuple[str, ...] = (host.python_executable or "python3",)
        reasons.append(f"builds against the torch in this environment ({torch_version}, CUDA "
                       f"{torch_cuda or 'none'}), which it keeps: {python[0]}")
        return python, None
    env_dir = o.env_dir or (f"vllm-{r.version}" if o.installer == "conda" else ".venv-vllm")
    steps.append(fresh_environment(o.installer, str(host.python_minor), env_dir))
    # conda run passes the build's exports through, like the wheel plan's conda steps
    python = ("conda", "run", "-n", env_dir, "python") if o.installer == "conda" else (f"{env_dir}/bin/python",)
    tb = c.torch_build
    assert tb is not None
    pins = [f"torch=={tb.version}" if tb.pypi else f"torch=={tb.version}+{tb.variant.variant}"]
    index = () if tb.pypi else ("--index-url", f"{matrix.torch_index}/{tb.variant.variant}")
    steps.append(Step(tool=o.installer, argv=(*pip_install(o.installer, python), *index, *pins),
                      why=f"the torch vLLM {r.version} pins ({tb.version}), "
                          + ("PyPI's build" if tb.pypi else f"the {tb.variant.variant} build from the PyTorch index")))
    reasons.append(f"builds against torch {torch_version}, the torch vLLM {r.version} pins, in the variant "
                   f"that runs on {', '.join(map(str, c.caps)) or 'the CPU'}"
                   + (f" and matches the CUDA toolkit already here ({found.path})" if found else ""))
    return python, env_dir


def _toolkit(tk: CudaToolkit, found: Toolkit | None, torch_cuda: Version, caps: tuple[Capability, ...],
             steps: list[Step], reasons: list[str], warnings: list[str]) -> None:
    """The CUDA toolkit equal to torch's CUDA: the one on the machine, or one installed with conda."""
    if found is not None:
        reasons.append(f"CUDA toolkit {found.version} at {found.path} matches torch's CUDA {torch_cuda} "
                       f"and its nvcc targets {', '.join(c.sm for c in caps)}")
    elif tk.install_conda is not None:
        channel, packages = tk.install_conda
        steps.append(Step(tool="conda", argv=("conda", "create", "-y", "-p", f".cuda-{tk.version}", "-c", channel,
                                              *packages),
                          why=f"CUDA toolkit {tk.version} (torch's CUDA) into ./.cuda-{tk.version}: "
                              "none of that version is on the machine"))
        reasons.append(f"no CUDA {tk.version} toolkit on the machine: the recipe installs one with conda "
                       f"({channel}: {' '.join(packages)})")
    else:
        warnings.append(f"install the CUDA {tk.version} toolkit (its nvcc must equal torch's CUDA) and point "
                        f"CUDA_HOME at it: the matrix knows no package for it")
    if tk.host_gcc is None:
        warnings.append(f"the matrix does not know which GCC versions nvcc {tk.version} supports")


def _build_env(host: Host, c: _Choice, o: _Options, tk: CudaToolkit | None, cuda_home: str,
               max_jobs: int | None, threads: int) -> list[tuple[str, str, str]]:
    """The build's environment: (name, value, why) each."""
    env: list[tuple[str, str, str]] = []
    if o.precompiled:
        env.append(("VLLM_USE_PRECOMPILED", "1",
                    "fetch the compiled extensions of this release instead of building them"))
    elif c.target == "cuda":
        env.append(("CUDA_HOME", cuda_home, f"the CUDA {tk.version if tk else ''} toolkit vLLM's CMake builds with"))
        env.append(("PATH", Expand("$CUDA_HOME/bin:$PATH"), "its nvcc first on PATH"))
        env.append(("TORCH_CUDA_ARCH_LIST", ";".join(str(x) for x in c.caps),
                    f"exactly this machine's GPUs ({describe_gpus(host.gpus)}); vLLM and torch take the arch list "
                    "from here (CMAKE_CUDA_ARCHITECTURES is ignored)"))
        if max_jobs is not None:  # else the recipe decides on the build machine
            env.append(("NVCC_THREADS", str(threads), "threads per nvcc job (2 on machines of 8 cores or more)"))
    env.append(("VLLM_TARGET_DEVICE", c.target,
                "what vLLM's setup.py " + ("installs for" if o.precompiled else "builds for")))
    if max_jobs and host.memory_mib:
        env.append(("MAX_JOBS", str(max_jobs), f"{host.memory_mib / 1024:.0f} GiB x 80 % / ({GIB_PER_NVCC_THREAD} "
                                               f"GiB x {threads} nvcc threads), at most {host.cpu_count} cores / "
                                               f"{threads}"))
    if host.tool("ccache") and not o.precompiled:
        for k in ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"):
            env.append((k, "ccache", "ccache is on this machine: a rebuild reuses what compiled before"))
    return env


def _pre_checks(tk: CudaToolkit | None, torch_cuda: Version | None, python: tuple[str, ...]) -> list[Check]:
    """The checks before the build (the seed's pitfalls: nvcc != torch's CUDA, an unsupported gcc)."""
    if tk is None or torch_cuda is None:
        return []
    checks = [Check(name="nvcc is torch's CUDA", argv=(Expand("$CUDA_HOME/bin/nvcc"), "--version"),
                    expect=f"release {torch_cuda.major}.{torch_cuda.minor},"),
              Check(name="torch is the planned build",
                    argv=(*python, "-c", 'import torch; print("torch CUDA", torch.version.cuda)'),
                    expect=f"torch CUDA {torch_cuda.major}.{torch_cuda.minor}")]
    if tk.host_gcc is not None:
        lo, hi = tk.host_gcc
        checks.append(Check(name=f"gcc is one nvcc {tk.version} supports (GCC {lo} to {hi})",
                            argv=("sh", "-c", f'v=$(gcc -dumpversion | cut -d. -f1); '
                                              f'[ "$v" -ge {lo} ] && [ "$v" -le {hi} ] && echo "gcc $v ok"'),
                            expect="ok"))
    return checks


def _build_steps(c: _Choice, o: _Options, python: tuple[str, ...], tk: CudaToolkit | None, steps: list[Step],
                 reasons: list[str]) -> None:
    """The clone, the kept torch's pins dropped, and the build (or the editable precompiled install)."""
    r = c.release
    b = r.build
    assert b is not None
    steps.append(Step(tool="git", argv=("git", "clone", "--depth", "1", "--branch", f"v{r.version}", VLLM_GIT,
                                        o.src_dir),
                      why=f"vLLM's source at the v{r.version} tag"))
    if c.kept is not None:
        steps.append(Step(tool="python", argv=(*python, b.use_existing_torch or "use_existing_torch.py"),
                          cwd=o.src_dir,
                          why="drop the torch pins from vLLM's requirements, so the build keeps your torch"))
    pip = pip_install(o.installer, python)
    if o.precompiled:
        steps.append(Step(tool=o.installer, argv=(*pip, "-e", f"./{o.src_dir}"),
                          why="an editable install that reuses the release's compiled kernels "
                              "(VLLM_USE_PRECOMPILED=1): edit the Python code in place"))
        reasons.append(f"vLLM {r.version}'s kernels come precompiled: only the Python code is taken from the checkout")
        return
    # from the top directory (a relative environment path stays right), naming the tree's paths
    steps.append(Step(tool=o.installer, argv=(*pip, "-r", f"{o.src_dir}/{b.requirements or 'requirements-build.txt'}"),
                      why="the build requirements (cmake, ninja, ...) into the environment itself"))
    steps.append(Step(tool=o.installer, argv=(*pip, "--no-build-isolation", "-v", f"./{o.src_dir}"),
                      why="build and install vLLM against the torch in the environment "
                          "(--no-build-isolation: no private build environment with another torch)"))
    reasons.append(f"vLLM {r.version}'s CMake builds {', '.join(map(str, c.caps))} with nvcc {tk.version}"
                   if tk is not None else f"vLLM {r.version} builds for the CPU (VLLM_TARGET_DEVICE=cpu)")
    if b.precompiled and c.kept is None:
        reasons.append("if you change only vLLM's Python code: VLLM_USE_PRECOMPILED=1 with an editable install reuses "
                       "the release's compiled kernels instead of building them")


# silu_and_mul is in every release's main kernel library, under torch.ops._C from 0.5.0 on
# (PR #5047 moved the ops from a pybind11 submodule, vllm._C.ops, to TORCH_LIBRARY(_C)); from 0.22.0 it is
# registered by _C_stable_libtorch (STABLE_TORCH_LIBRARY_FRAGMENT(_C, ...), csrc/libtorch_stable/
# torch_bindings.cpp), and from 0.24.0 CUDA builds have no _C at all. So the check loads the release's
# main kernel modules (read off its wheel's file list) and calls the op where the tag registers it.
_OP_CHECK = (
    'import importlib, torch\n'
    'for name in {modules}:\n'
    '    importlib.import_module(name)\n'
    'dev = "{device}"\n'
    'dt = torch.float16 if dev == "cuda" else torch.float32\n'
    'x = torch.randn(8, 64, device=dev, dtype=dt)\n'
    'out = torch.empty(8, 32, device=dev, dtype=dt)\n'
    'op = {op}\n'
    'op(out, x)\n'
    'ref = torch.nn.functional.silu(x[:, :32].float()) * x[:, 32:].float()\n'
    'ok = torch.allclose(out.float(), ref, atol=2e-2, rtol=2e-2)\n'
    'print("vLLM kernels: silu_and_mul " + ("matches torch" if ok else "DIFFERS from torch"))\n'
)
_PYBIND_OPS = Version("0.5.0")  # before: vllm._C.ops (pybind11)


def _op_check(python: tuple[str, ...], target: str, r: VllmRelease, platform: str = "linux-x86_64") -> Check:
    wheels = r.wheels_for(platform) or r.wheels
    shipped = wheels[0].extensions if wheels and target == "cuda" else ()
    modules = [m for m in CORE_EXTENSIONS if m in shipped] or [CORE_EXTENSIONS[0]]  # CPU builds: vllm._C
    op = ('importlib.import_module("vllm._C").ops.silu_and_mul' if r.version < _PYBIND_OPS
          else "torch.ops._C.silu_and_mul")
    return Check(name=f"vLLM {r.version}'s kernels ({', '.join(modules)}) load and one of its ops matches torch",
                 argv=(*python, "-c", _OP_CHECK.format(device="cuda" if target == "cuda" else "cpu",
                                                      modules=repr(modules), op=op)),
                 expect="vLLM kernels: silu_and_mul matches torch", needs_gpu=target == "cuda")

