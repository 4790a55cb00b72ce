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

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import Version

from ..host import Host, HostGpu, Toolkit
from ..matrix import CudaToolkit, Matrix, VllmRelease
from ..resolve import NoCompatibleStack, Request, TorchBuild, driver_floor
from ..values import CORE_EXTENSIONS, Capability, DriverVersion, exact_pin, public_version
from .steps import Check, Step, fresh_environment, pip_install

__all__ = ["SourcePlan", "plan_source_build", "build_parallelism", "GIB_PER_NVCC_THREAD"]

GIB_PER_NVCC_THREAD = 4
VLLM_GIT = "https://github.com/vllm-project/vllm.git"


@dataclass(frozen=True, kw_only=True, slots=True)
class SourcePlan:
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
    python: str  # the interpreter the build uses (a path, or a shell expression for conda)
    env_dir: str | None
    installer: str
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


def gpu_text(gpus: Sequence[HostGpu], caps: Sequence[Capability]) -> str:
    names = sorted({g.name for g in gpus})
    return f"{', '.join(names)} ({', '.join(c.sm for c in caps)})"


def _pin(r: VllmRelease, platform: str) -> Version | None:
    return exact_pin(r.pins(platform).get("torch"))


def _toolkit_on_host(host: Host, cuda: Version) -> Toolkit | None:
    return next((t for t in host.toolkits if (t.version.major, t.version.minor) == (cuda.major, cuda.minor)), None)


def plan_source_build(host: Host, matrix: Matrix, request: Request, *, keep_torch: bool = False,  # noqa: C901 (issue 12: to split)
                      installer: str = "uv", env_dir: str | None = None, src_dir: str = "vllm-src",
                      why_no_wheel: Sequence[str] = (), precompiled: bool = False) -> SourcePlan:
    """The source-build recipe for ``host``, or NoCompatibleStack saying why none works."""
    platform = host.platform.tag
    caps = () if request.cpu else _caps(host)
    target = "cpu" if request.cpu else "cuda"
    kept = host.installed_dist("torch") if keep_torch else None
    if keep_torch and kept is None:
        raise NoCompatibleStack("--keep-torch: no torch is installed in this environment",
                                hints=["run vresolve from the environment whose torch you want to keep",
                                       "or leave out --keep-torch: the plan then installs the torch the release pins"])
    if precompiled and keep_torch:
        raise NoCompatibleStack("--precompiled reuses a release's compiled kernels, which are built for the torch "
                                "that release pins: it cannot keep another torch",
                                hints=["leave out --keep-torch", "or leave out --precompiled and build the kernels"])
    kept_version = public_version(kept.version) if kept else None
    kept_cuda = public_version(kept.cuda) if kept and kept.cuda else None
    causes: list[str] = []
    releases = sorted((r for r in matrix.vllm if request.vllm.contains(r.version, prereleases=True)),
                      key=lambda r: r.version, reverse=True)
    for r in releases:
        b = r.build
        label = f"vLLM {r.version}"
        if b is None:
            causes.append(f"{label}: how it builds from source is not in the matrix")
            continue
        if target == "cpu" and not b.cpu:
            causes.append(f"{label} does not build for the CPU (VLLM_TARGET_DEVICE=cpu)")
            continue
        if precompiled and not b.precompiled:
            causes.append(f"{label}'s setup.py has no VLLM_USE_PRECOMPILED")
            continue
        pin = _pin(r, platform)
        torch_build: TorchBuild | None = None
        if keep_torch:
            if not b.use_existing_torch:
                causes.append(f"{label} has no use_existing_torch.py, so it cannot build against your torch")
                continue
            assert kept is not None  # checked above
            if pin is not None and kept_version is not None and pin.release[:2] > kept_version.release[:2]:
                causes.append(f"{label} is made for torch {pin}, newer than your torch {kept.version}")
                continue
            if target == "cuda" and kept_cuda is None:
                causes.append(f"your torch {kept.version} is a CPU build: vLLM's CUDA kernels need a CUDA torch")
                break
            cuda = kept_cuda
        else:
            if pin is None:
                causes.append(f"{label} pins no exact torch for {platform}")
                continue
            torch_build, why = _pick_torch(host, matrix, request, pin, caps, target)
            if torch_build is None:
                causes.append(f"{label} pins torch {pin}: {why}")
                continue
            cuda = torch_build.cuda
        if target == "cuda":
            assert cuda is not None
            tk = matrix.toolkit(cuda)
            if tk is None:
                causes.append(f"CUDA {cuda} (torch's) is not in the matrix's toolkits")
                continue
            untargetable = [c for c in caps if not tk.can_target(c)]
            if untargetable:
                causes.append(f"nvcc {tk.version} (torch's CUDA) cannot target "
                              f"{', '.join(c.sm for c in untargetable)}")
                continue
            accepted = b.archs_for(cuda)
            if accepted is None:
                causes.append(f"{label}'s CMakeLists does not build with CUDA {cuda}")
                continue
            refused = [c for c in caps if _loose_covers(accepted, c) is None]
            if refused:
                causes.append(f"{label}'s CMake builds only {', '.join(map(str, accepted))} "
                              f"(CUDA_SUPPORTED_ARCHS): not {', '.join(c.sm for c in refused)}")
                continue
            floor = driver_floor(matrix, cuda, request.driver_policy, False)
            if floor is not None and host.driver.version is not None and host.driver.version < floor:
                causes.append(f"torch's CUDA {cuda} needs driver >= {floor}; this machine has {host.driver.version}")
                continue
        else:
            tk, floor = None, None
        return _recipe(host, matrix, request, r, target, caps, keep_torch, kept, torch_build, tk, floor,
                       installer, env_dir, src_dir, why_no_wheel, precompiled)
    what = f"vLLM {request.vllm}".strip() if str(request.vllm) else "vLLM"
    hints = []
    if keep_torch:
        hints.append("leave out --keep-torch: the plan then installs a torch the release supports")
    if caps and any("CUDA_SUPPORTED_ARCHS" in c for c in causes):
        hints.append(f"no vLLM release builds for {', '.join(c.sm for c in caps)}; use a GPU of compute "
                     "capability 7.0 or newer, or the CPU backend (--gpu none)")
    # what the hardware rules out first (it holds for every release), then release by release
    hardware = ("cannot target", "CUDA_SUPPORTED_ARCHS", "needs driver", "CPU build")
    ordered = sorted(_dedupe(causes), key=lambda c: not any(h in c for h in hardware))
    raise NoCompatibleStack(f"no source build of {what} works on this machine", causes=ordered[:6], hints=hints)


def _dedupe(items: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for i in items:
        seen.setdefault(i, None)
    return list(seen)


def _pick_torch(host: Host, matrix: Matrix, request: Request, pin: Version, caps: Sequence[Capability],
                target: str) -> tuple[TorchBuild | None, str]:
    """The variant of torch ``pin`` to build against, or (None, why not)."""
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


def _recipe(host: Host, matrix: Matrix, request: Request, r: VllmRelease, target: str, caps: tuple[Capability, ...],  # noqa: C901 (issue 12: to split)
            keep_torch: bool, kept: object, torch_build: TorchBuild | None, tk: CudaToolkit | None,
            floor: DriverVersion | None, installer: str, env_dir: str | None, src_dir: str,
            why_no_wheel: Sequence[str], precompiled: bool = False) -> SourcePlan:
    """The recipe. ``precompiled``: an editable install that reuses the release's compiled kernels
    (``VLLM_USE_PRECOMPILED=1``): no toolkit, no nvcc, no MAX_JOBS; the torch is the one the release pins."""
    assert r.build is not None
    b = r.build
    if precompiled:
        tk = None  # nothing is compiled
    py_minor = str(host.python_minor)
    torch_version = (kept.version if keep_torch else  # type: ignore[attr-defined]
                     f"{torch_build.version}+{torch_build.variant.variant}")  # type: ignore[union-attr]
    torch_cuda = (public_version(kept.cuda) if keep_torch and kept.cuda else  # type: ignore[attr-defined]
                  (torch_build.cuda if torch_build else None))
    found = _toolkit_on_host(host, torch_cuda) if torch_cuda is not None and not precompiled else None
    if tk is None:
        cuda_home = ""
    elif found is not None:
        cuda_home = found.path
    else:
        cuda_home = f"$PWD/.cuda-{tk.version}"
    steps: list[Step] = []
    reasons: list[str] = list(why_no_wheel)
    warnings: list[str] = []

    # the environment and its Python
    if keep_torch:
        python = host.python_executable or "python3"
        env_dir = None
        reasons.append(f"builds against the torch in this environment ({torch_version}, CUDA {torch_cuda or 'none'}), "
                       f"which it keeps: {python}")
    else:
        env_dir = env_dir or (f"vllm-{r.version}" if installer == "conda" else ".venv-vllm")
        steps.append(fresh_environment(installer, py_minor, env_dir))
        if installer == "conda":  # the build runs the environment's interpreter by its path
            python = "$(conda run -n " + shlex.quote(env_dir) + " python -c 'import sys; print(sys.executable)')"
        else:
            python = f"{env_dir}/bin/python"
        assert torch_build is not None
        tb = torch_build
        pins = [f"torch=={tb.version}" if tb.pypi else f"torch=={tb.version}+{tb.variant.variant}"]
        index = () if tb.pypi else ("--index-url", f"{matrix.torch_index}/{tb.variant.variant}")
        steps.append(Step(tool=installer, argv=(*pip_install(installer, python), *index, *pins),
                               why=f"the torch vLLM {r.version} pins ({tb.version}), "
                                   + ("PyPI's build" if tb.pypi else f"the {tb.variant.variant} build from the PyTorch index")))
        reasons.append(f"builds against torch {torch_version}, the torch vLLM {r.version} pins, in the variant "
                       f"that runs on {', '.join(map(str, caps)) or 'the CPU'}"
                       + (f" and matches the CUDA toolkit already here ({found.path})" if found else ""))

    # the toolkit
    if tk is not None:
        assert torch_cuda is not None
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

    # parallelism
    max_jobs, threads = build_parallelism(host.cpu_count, host.memory_mib)
    env: list[tuple[str, str]] = []
    why: list[tuple[str, str]] = []
    if precompiled:
        max_jobs = 0
        env.append(("VLLM_USE_PRECOMPILED", "1"))
        why.append(("VLLM_USE_PRECOMPILED", "fetch the compiled extensions of this release instead of building them"))
    elif target == "cuda":
        env.append(("CUDA_HOME", cuda_home))
        why.append(("CUDA_HOME", f"the CUDA {tk.version if tk else ''} toolkit vLLM's CMake builds with"))
        env.append(("PATH", "$CUDA_HOME/bin:$PATH"))
        why.append(("PATH", "its nvcc first on PATH"))
        env.append(("TORCH_CUDA_ARCH_LIST", ";".join(str(c) for c in caps)))
        why.append(("TORCH_CUDA_ARCH_LIST", f"exactly this machine's GPUs ({gpu_text(host.gpus, caps)}); vLLM and "
                                             "torch take the arch list from here (CMAKE_CUDA_ARCHITECTURES is ignored)"))
        if max_jobs is not None:  # else the recipe decides on the build machine
            env.append(("NVCC_THREADS", str(threads)))
            why.append(("NVCC_THREADS", "threads per nvcc job (2 on machines of 8 cores or more)"))
    env.append(("VLLM_TARGET_DEVICE", target))
    why.append(("VLLM_TARGET_DEVICE", "what vLLM's setup.py " + ("installs for" if precompiled else "builds for")))
    if max_jobs and host.memory_mib:
        env.append(("MAX_JOBS", str(max_jobs)))
        why.append(("MAX_JOBS", f"{host.memory_mib / 1024:.0f} GiB x 80 % / ({GIB_PER_NVCC_THREAD} GiB x "
                                f"{threads} nvcc threads), at most {host.cpu_count} cores / {threads}"))
    if host.tool("ccache") and not precompiled:
        for k in ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"):
            env.append((k, "ccache"))
            why.append((k, "ccache is on this machine: a rebuild reuses what compiled before"))

    # checks before the build
    checks: list[Check] = []
    if tk is not None and torch_cuda is not None:
        checks.append(Check(name="nvcc is torch's CUDA", argv=("$CUDA_HOME/bin/nvcc", "--version"),
                            expect=f"release {torch_cuda.major}.{torch_cuda.minor},"))
        checks.append(Check(name="torch is the planned build",
                            argv=(python, "-c", 'import torch; print("torch CUDA", torch.version.cuda)'),
                            expect=f"torch CUDA {torch_cuda.major}.{torch_cuda.minor}"))
        if tk.host_gcc is not None:
            lo, hi = tk.host_gcc
            checks.append(Check(name=f"gcc is one nvcc {tk.version} supports (GCC {lo} to {hi})",
                                argv=("sh", "-c", f'v=$(gcc -dumpversion | cut -d. -f1); '
                                                  f'[ "$v" -ge {lo} ] && [ "$v" -le {hi} ] && echo "gcc $v ok"'),
                                expect="ok"))

    # the build
    steps.append(Step(tool="git", argv=("git", "clone", "--depth", "1", "--branch", f"v{r.version}", VLLM_GIT, src_dir),
                           why=f"vLLM's source at the v{r.version} tag"))
    if keep_torch:
        steps.append(Step(tool="python", argv=(python, b.use_existing_torch or "use_existing_torch.py"),
                               cwd=src_dir,
                               why="drop the torch pins from vLLM's requirements, so the build keeps your torch"))
    reqs = b.requirements or "requirements-build.txt"
    if precompiled:
        steps.append(Step(tool=installer, argv=(*pip_install(installer, python), "-e", f"./{src_dir}"),
                               why="an editable install that reuses the release's compiled kernels "
                                   "(VLLM_USE_PRECOMPILED=1): edit the Python code in place"))
        reasons.append(f"vLLM {r.version}'s kernels come precompiled: only the Python code is taken from the checkout")
    else:
        # from the top directory (a relative environment path stays right), naming the tree's paths
        steps.append(Step(tool=installer, argv=(*pip_install(installer, python), "-r", f"{src_dir}/{reqs}"),
                               why="the build requirements (cmake, ninja, ...) into the environment itself"))
        steps.append(Step(tool=installer, argv=(*pip_install(installer, python), "--no-build-isolation", "-v",
                                                     f"./{src_dir}"),
                               why="build and install vLLM against the torch in the environment "
                                   "(--no-build-isolation: no private build environment with another torch)"))
        reasons.append(f"vLLM {r.version}'s CMake builds {', '.join(map(str, caps))} with nvcc {tk.version}"
                       if tk is not None else f"vLLM {r.version} builds for the CPU (VLLM_TARGET_DEVICE=cpu)")
    verify = [_op_check(python, target, r, host.platform.tag)]
    if b.precompiled and not keep_torch and not precompiled:
        reasons.append("if you change only vLLM's Python code: VLLM_USE_PRECOMPILED=1 with an editable install reuses "
                       "the release's compiled kernels instead of building them")
    if max_jobs is None and not precompiled:
        warnings.append("the build machine's memory is unknown: the recipe computes MAX_JOBS there "
                        f"({GIB_PER_NVCC_THREAD} GiB per nvcc thread in 80 % of MemAvailable)")
    return SourcePlan(host=host, request=request, vllm=r, target=target, archs=caps, torch_version=torch_version,
                      torch_cuda=torch_cuda, keep_torch=keep_torch, torch_build=torch_build, toolkit=tk,
                      toolkit_found=found, cuda_home=cuda_home, python=python, env_dir=env_dir, installer=installer,
                      src_dir=src_dir, max_jobs=max_jobs, nvcc_threads=threads, min_driver=floor, env=tuple(env),
                      env_reasons=tuple(why), steps=tuple(steps), checks=tuple(checks), verify=tuple(verify),
                      reasons=tuple(reasons), warnings=tuple(warnings))



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


def _op_check(python: str, target: str, r: VllmRelease, platform: str = "linux-x86_64") -> Check:
    wheels = r.wheels_for(platform) or r.wheels
    shipped = wheels[0].extensions if wheels and target == "cuda" else ()
    modules = [m for m in CORE_EXTENSIONS if m in shipped] or [CORE_EXTENSIONS[0]]  # CPU builds: vllm._C
    op = ('importlib.import_module("vllm._C").ops.silu_and_mul' if r.version < _PYBIND_OPS
          else "torch.ops._C.silu_and_mul")
    return Check(name=f"vLLM {r.version}'s kernels ({', '.join(modules)}) load and one of its ops matches torch",
                 argv=(python, "-c", _OP_CHECK.format(device="cuda" if target == "cuda" else "cpu",
                                                      modules=repr(modules), op=op)),
                 expect="vLLM kernels: silu_and_mul matches torch")

