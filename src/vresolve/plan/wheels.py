"""Resolution -> InstallPlan: ordered installer steps, exports, verification. Pure.

Every package is pinned exactly, with its local version tag when it comes from a variant index
(``torch==2.14.0+cu128``), so an installer cannot swap a build behind the user's back: the second step
names the torch the first step installed, and pip / uv keep an installed distribution that satisfies an
exact pin. The install goes into a fresh virtual environment by default (vLLM pins torch exactly and
would replace the torch of an existing environment), or into the existing one with ``--keep-torch``
when a wheel pins exactly the torch there.

A wheel set of a target's own index (a Jetson's JetPack path of the Jetson index: ``Resolution.index``)
is the same plan with the steps it needs: checks before the install (L4T's CUDA toolkit, the system
libraries the wheels load), one install of every package pinned from that path alone (``--index-url``:
an installer given a second index could pick that index's build of the same version number), into a
fresh environment of the wheels' Python, the exports its kernels compile with, and the checks after.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
from packaging.version import InvalidVersion, Version

from ..matrix import Matrix
from ..names import INSTALLERS
from ..resolve import Resolution, Stack, TorchBuild, VllmBuild
from .steps import Check, Expand, Step, extension_check, fresh_environment, pip_install, program_check

if TYPE_CHECKING:
    from ..host import Host
    from ..names import Installer
    from ..resolve import Request
    from ..resolve.candidates import JetsonWheelChoice

L4T_CUDA_HOME = "/usr/local/cuda"  # where JetPack installs L4T's CUDA toolkit (the cuda-toolkit-X-Y packages)


class InstallPlan(msgspec.Struct, frozen=True, kw_only=True):
    resolution: Resolution
    installer: Installer
    env_dir: str
    steps: tuple[Step, ...]
    env: tuple[tuple[str, str], ...]
    env_reasons: tuple[tuple[str, str], ...]
    verify: tuple[Check, ...]
    alternatives: tuple[tuple[Resolution, str], ...] = ()
    checks: tuple[Check, ...] = ()  # before the install (a wheel set of a target's own index: L4T's toolkit, ...)

    @property
    def stack(self) -> Stack:
        return self.resolution.stack

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.resolution.reasons

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.resolution.warnings

    @property
    def lockable(self) -> bool:
        """Whether ``vresolve lock`` (and ``apply``'s lock) can record it by hash: not a wheel set of a target's own
        index, whose files that index replaces under the same name."""
        return self.resolution.index is None


def _local(version: str, variant: str) -> str:
    return version if "+" in version else f"{version}+{variant}"


def wheel_requirements(matrix: Matrix, res: Resolution) -> tuple[list[str], list[str]]:
    """(torch-index pins, vLLM step requirements)."""
    t: TorchBuild = res.torch
    v: VllmBuild = res.vllm
    torch_family = ["torch", "torchvision", "torchaudio"]
    versions = {"torch": str(t.version), **{k: res.companions[k] for k in torch_family[1:] if k in res.companions}}
    if t.pypi:
        torch_pins: list[str] = []
        family = [f"{k}=={versions[k]}" for k in torch_family if k in versions]
    else:
        torch_pins = [f"{k}=={_local(versions[k], t.variant.variant)}" for k in torch_family if k in versions]
        family = torch_pins
    if v.asset is not None:  # a GitHub release asset: no index has it, so its URL is the requirement
        vllm_req = f"vllm @ {v.asset.url_for(res.host.python)}"
    else:
        vllm_req = f"vllm=={v.version if v.where == 'pypi' else _local(str(v.version), v.variant)}"
    return torch_pins, [vllm_req, *family, *_constraints(matrix, res)]


# cuda-python up to 12.6.2.post1 was one package holding cuda/bindings/*; from 12.8.0 on it is a
# metapackage that requires cuda-bindings~=X.Y.Z. FlashInfer asks only for cuda-python>=12.0, so when
# the newest cuda-bindings (another requirement's pick, e.g. torch's cuda-bindings>=13.0.3,<14) is newer
# than the newest cuda-python, uv backtracks to the old all-in-one 12.6.2.post1, whose 28 files overwrite
# cuda-bindings' own in whichever order the installer unpacks them (observed: uv pip compile of the H200
# plan picks cuda-python==12.6.2.post1 with cuda-bindings==13.5.0; pip picks 13.x). Keeping cuda-python on
# the stack's CUDA major, at a metapackage release, keeps the two consistent.
_CUDA_PYTHON_FLOOR = {12: "12.8", 13: "13.0"}


def _constraints(matrix: Matrix, res: Resolution) -> list[str]:
    """Extra requirements that keep an installer from a broken pick the pins allow."""
    out = []
    fi = res.companions.get("flashinfer-python")
    cuda = res.torch.cuda
    if fi and cuda is not None and cuda.major in _CUDA_PYTHON_FLOOR and "cuda-python" in _companion_requires(
            matrix, "flashinfer-python", fi):
        out.append(f"cuda-python>={_CUDA_PYTHON_FLOOR[cuda.major]},<{cuda.major + 1}")
    return out


def _companion_requires(matrix: Matrix, package: str, version: str) -> set[str]:
    """The requirement names a companion's wheels declare (as recorded from their METADATA)."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return set()
    return {k for w in matrix.wheels_of(package, wanted) for k in w.requires}


def vllm_index_url(matrix: Matrix, v: VllmBuild) -> str | None:
    if v.where != "vllm-index":
        return None
    return f"{matrix.vllm_index}/{v.version}/{v.variant}"


def _steps(matrix: Matrix, res: Resolution, installer: Installer, env_dir: str, into: str | None = None) -> list[Step]:
    t, v = res.torch, res.vllm
    py = f"{res.host.python_minor}"
    torch_pins, vllm_pins = wheel_requirements(matrix, res)
    torch_index = f"{matrix.torch_index}/{t.variant.variant}"
    vllm_index = vllm_index_url(matrix, v)
    steps: list[Step] = []
    if into is not None:  # the existing environment whose torch is kept: its exact pin keeps it
        base = pip_install(installer, (into,))
    else:
        steps.append(fresh_environment(installer, py, env_dir))
        base = (("conda", "run", "-n", env_dir, "python", "-m", "pip", "install") if installer == "conda"
                else pip_install(installer, (f"{env_dir}/bin/python",)))
    if torch_pins:
        steps.append(Step(tool=base[0] if installer != "conda" else "conda",
                          argv=(*base, "--index-url", torch_index, *torch_pins),
                          why=f"torch {t.version}+{t.variant.variant} and its companions from the PyTorch index only"))
    extra: tuple[str, ...] = ("--extra-index-url", vllm_index) if vllm_index else ()
    if v.asset is not None:
        where = "its GitHub release asset (the URL), the rest from your configured index"
    else:
        where = "your configured index" + (f" and vLLM's {v.variant} index" if vllm_index else "")
    why = f"vLLM {v.version} from {where}; the exact torch pins keep the torch already chosen"
    if t.pypi:
        why = f"vLLM {v.version} with the torch it pins ({t.version}, PyPI's {t.variant.variant} build), from {where}"
    if any(p.startswith("cuda-python") for p in vllm_pins):
        why += "; cuda-python held on CUDA's major (an old all-in-one cuda-python overwrites cuda-bindings)"
    steps.append(Step(tool=base[0] if installer != "conda" else "conda", argv=(*base, *extra, *vllm_pins), why=why))
    if v.cuda is not None and res.companions.get("flashinfer-python") and v.wheel is not None \
            and "download-kernels" in v.wheel.features:
        run = ("conda", "run", "-n", env_dir, "vllm") if installer == "conda" else (f"{env_dir}/bin/vllm",)
        steps.append(Step(tool="vllm", argv=(*run, "download-kernels"), needs_gpu=True,
                          why="FlashInfer's precompiled kernels for this FlashInfer and CUDA (flashinfer-cubin, "
                              "flashinfer-jit-cache, from FlashInfer's own index); without them vLLM compiles "
                              "kernels at startup, minutes on Hopper"))
    return steps


def planned_extensions(res: Resolution) -> tuple[str, ...]:
    """The compiled modules of the planned vLLM wheel, as read off the wheel; () when not recorded.

    A variant build from another index is the same build recipe as the PyPI wheel of its release
    (the matrix's variant rows say so), so the PyPI wheel's list stands for it; a CPU build differs.
    """
    v = res.vllm
    if v.wheel is None or (v.cuda is None) != (v.release.cuda is None):
        return ()
    return v.wheel.extensions


def _verify(res: Resolution, python: str) -> list[Check]:
    t, v = res.torch, res.vllm
    exts = sorted(planned_extensions(res))
    _, expect = extension_check(v.version, exts)
    what = f"the {len(exts)} compiled extensions its wheel ships" if exts else "its compiled extensions"
    checks = [program_check((python,), "extensions", exts, name=f"vLLM imports, with {what}", expect=expect)]
    if t.cuda is not None:
        checks.append(program_check((python,), "torch-cuda", name="torch is the planned CUDA build",
                                    expect=f"torch CUDA {t.cuda}"))
    gpus = [g for g in res.host.gpus if g.compute_capability is not None]
    if gpus and t.cuda is not None:
        checks.append(program_check((python,), "gpus", name="torch sees the GPUs",
                                    expect=f"cuda available True {len(gpus)}", needs_gpu=True))
        checks.append(program_check((python,), "arch-list", name="torch's arch list covers every GPU",
                                    expect="arch list covers every GPU", needs_gpu=True))
    return checks


def _exports(res: Resolution) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    env: list[tuple[str, str]] = []
    why: list[tuple[str, str]] = []
    ccs = [cc for _, cc in res.host.known_gpus()]
    if len(set(ccs)) > 1:
        env.append(("CUDA_DEVICE_ORDER", "PCI_BUS_ID"))
        why.append(("CUDA_DEVICE_ORDER", "GPUs of different kinds: make CUDA number them as nvidia-smi does "
                                          "(CUDA's default puts the fastest first)"))
    if ccs:
        caps = sorted({cc.base for cc in ccs})
        env.append(("TORCH_CUDA_ARCH_LIST", ";".join(str(c) for c in caps)))
        why.append(("TORCH_CUDA_ARCH_LIST", "kernels compiled at run time (FlashInfer, torch extensions) target "
                                             "exactly this machine's GPUs"))
    if res.ptx_gpus:
        env.append(("CUDA_CACHE_MAXSIZE", "4294967296"))
        why.append(("CUDA_CACHE_MAXSIZE", "some GPU runs PTX: keep the JIT-compiled kernels in a 4 GiB cache "
                                           "instead of compiling them again at every start"))
    return env, why


def build_plan(matrix: Matrix, res: Resolution, *, installer: Installer = "uv", env_dir: str | None = None,
               alternatives: Sequence[tuple[Resolution, str]] = (), into: str | None = None) -> InstallPlan:
    """The install plan; ``into``: the interpreter of an existing environment to install into, keeping its
    torch (``--keep-torch``), instead of a fresh environment."""
    if installer not in INSTALLERS:
        raise ValueError(f"installer {installer!r} (expected one of: {', '.join(INSTALLERS)})")
    if res.index is not None:
        return _index_plan(res, res.index, installer, env_dir)
    if into is not None and installer == "conda":
        installer = "pip"  # the environment exists: its own pip installs into it
    env_dir = env_dir or (f"vllm-{res.vllm.version}" if installer == "conda" else ".venv-vllm")
    if into is not None:
        import os.path

        env_dir = os.path.dirname(os.path.dirname(into)) or into
    python = into or (f"{env_dir}/bin/python" if installer != "conda" else "python")
    checks = _verify(res, python)
    kept = res.host.installed_dist("torch") if into is not None else None
    if kept is not None:
        checks.append(program_check((python,), "torch-version", name="the installer kept your torch",
                                    expect=f"torch {kept.version}"))
    if installer == "conda":
        from msgspec.structs import replace

        checks = [replace(c, argv=("conda", "run", "-n", env_dir, *c.argv)) for c in checks]
    env, why = _exports(res)
    return InstallPlan(resolution=res, installer=installer, env_dir=env_dir,
                       steps=tuple(_steps(matrix, res, installer, env_dir, into)),
                       env=tuple(env), env_reasons=tuple(why), verify=tuple(checks), alternatives=tuple(alternatives))


def plan_index_wheels(host: Host, request: Request, choice: JetsonWheelChoice, *, installer: Installer = "uv",
                      env_dir: str | None = None) -> InstallPlan:
    """The plan of a wheel set chosen from a target's own index (:func:`vresolve.resolve.jetson.jetson_wheel_choice`):
    what :func:`build_plan` makes of the Resolution :func:`vresolve.resolve.resolve` gives for it."""
    from ..resolve.jetson import wheel_resolution

    return _index_plan(wheel_resolution(host, request, choice), choice, installer, env_dir)


def _index_plan(res: Resolution, choice: JetsonWheelChoice, installer: Installer, env_dir: str | None
                ) -> InstallPlan:
    """A wheel set of a target's own index, installed into a fresh environment of the wheels' Python."""
    w = choice.wheels
    env_dir = env_dir or (f"vllm-{w.vllm.public}" if installer == "conda" else ".venv-vllm")
    if installer == "conda":
        python: tuple[str, ...] = ("conda", "run", "-n", env_dir, "python")
        base: tuple[str, ...] = ("conda", "run", "-n", env_dir, "python", "-m", "pip", "install")
    else:
        python = (f"{env_dir}/bin/python",)
        base = pip_install(installer, python)
    requirements = [f"vllm=={w.vllm}", f"torch=={w.torch}", *(f"{k}=={v}" for k, v in sorted(w.companions.items())),
                    *w.constraints]
    install = Step(tool=base[0] if installer != "conda" else "conda",
                   argv=(*base, "--index-url", choice.index, *requirements),
                   why=f"vLLM {w.vllm}, torch {w.torch} and their companions from the Jetson index's {w.path} path "
                       "only, every one pinned")
    env, why = _index_exports(choice)
    fresh = fresh_environment(installer, f"{w.python.major}.{w.python.minor}", env_dir)
    return InstallPlan(resolution=res, installer=installer, env_dir=env_dir, steps=(fresh, install), env=tuple(env),
                       env_reasons=tuple(why), verify=tuple(_index_verify(choice, python)),
                       checks=tuple(_index_checks(choice)))


def _index_checks(choice: JetsonWheelChoice) -> list[Check]:
    """Before the install: L4T's CUDA toolkit where JetPack puts it (Triton compiles with its ``ptxas``), and the
    libraries the wheels load that JetPack does not ship (cuDSS for the index's newer torch)."""
    cuda = choice.jetpack.cuda
    release = f"release {cuda.major}.{cuda.minor}"
    out = [Check(name=f"L4T's CUDA {cuda.major}.{cuda.minor} toolkit is installed (Triton compiles with its ptxas)",
                 argv=(f"{L4T_CUDA_HOME}/bin/ptxas", "--version"), expect=release)]
    out += [Check(name=f"{lib} is installed: the Jetson index's torch {choice.wheels.torch} loads it and JetPack does "
                       "not ship it (NVIDIA's cuDSS for Jetson)" if lib.startswith("libcudss") else
                       f"{lib} is installed (the Jetson index's wheels load it; JetPack does not ship it)",
                  argv=("/sbin/ldconfig", "-p"), expect=lib) for lib in choice.wheels.system_libs]
    return out


def _index_verify(choice: JetsonWheelChoice, python: tuple[str, ...]) -> list[Check]:
    """After it: vLLM's compiled extensions import, torch's CUDA and arch list, the GPU seen."""
    w = choice.wheels
    _, expect = extension_check(w.vllm, ())
    cuda = choice.jetpack.cuda
    return [program_check(python, "vllm-version", name="the Jetson index's vLLM is installed", expect=f"vllm {w.vllm}"),
            program_check(python, "torch-version-cuda", name="torch is the Jetson index's build, for L4T's CUDA",
                          expect=f"torch {w.torch} CUDA {cuda.major}.{cuda.minor}"),
            program_check(python, "extensions", name="vLLM imports, with its compiled extensions", expect=expect),
            program_check(python, "gpus", name="torch sees the GPU", expect="cuda available True 1", needs_gpu=True),
            program_check(python, "arch-list", name="torch's arch list covers the GPU",
                          expect="arch list covers every GPU", needs_gpu=True)]


def _index_exports(choice: JetsonWheelChoice) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    cc = choice.jetson.cc
    home = L4T_CUDA_HOME
    env = [("CUDA_HOME", home), ("PATH", Expand("$CUDA_HOME/bin:$PATH")), ("CPATH", Expand("$CUDA_HOME/include")),
           ("TRITON_PTXAS_PATH", f"{home}/bin/ptxas"), ("TORCH_CUDA_ARCH_LIST", f"{cc.major}.{cc.minor}")]
    why = [("CUDA_HOME", "L4T's CUDA toolkit, which JetPack installs there: Triton and FlashInfer read its headers"),
           ("PATH", "its nvcc and ptxas first"),
           ("CPATH", "Triton compiles its launchers with cuda.h from there"),
           ("TRITON_PTXAS_PATH", "Triton's bundled ptxas is not built for L4T: Triton compiles with L4T's"),
           ("TORCH_CUDA_ARCH_LIST", "kernels compiled at run time target exactly this Jetson's GPU")]
    return env, why
