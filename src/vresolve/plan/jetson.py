"""A Jetson's wheel plan: the JetPack-specific vLLM and torch of one path of the Jetson AI Lab index. Pure.

The wheels come from that path alone (``--index-url``): it serves its own torch, vLLM and companions, and an
installer given a second index could pick that index's build of the same version number (PyPI's aarch64 torch
2.9.1 is not L4T's). Every package of the set is pinned in one command, torch beside the vLLM wheel that names
none. The environment is made with the wheels' Python (the JetPack's python3). Before the install, L4T's CUDA
toolkit must be where JetPack puts it (Triton compiles with its ``ptxas``), and the libraries the wheels load that
JetPack does not ship (cuDSS for the index's newer torch) must be installed; after it, the checks import vLLM's
compiled extensions, read torch's CUDA and arch list, and see the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..host import Host
from ..resolve import Request, Stack
from .steps import Check, Expand, Step, extension_check, fresh_environment, pip_install, program_check

if TYPE_CHECKING:
    from ..names import Installer
    from ..resolve.jetson import JetsonWheelChoice

__all__ = ["JetsonPlan", "build_jetson_plan"]

CUDA_HOME = "/usr/local/cuda"  # where JetPack installs L4T's CUDA toolkit (the cuda-toolkit-X-Y packages)


@dataclass(frozen=True, kw_only=True, slots=True)
class JetsonPlan:
    host: Host
    request: Request
    choice: JetsonWheelChoice
    installer: Installer
    env_dir: str
    python: str  # the environment's interpreter (conda: "python", run through conda run)
    steps: tuple[Step, ...]
    env: tuple[tuple[str, str], ...]
    env_reasons: tuple[tuple[str, str], ...]
    checks: tuple[Check, ...]  # before the install
    verify: tuple[Check, ...]  # after it
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def stack(self) -> Stack:
        return self.choice.stack

    @property
    def min_driver(self) -> None:
        return None  # a Jetson's driver is L4T's: its JetPack decides the CUDA, not a driver floor


def _requirements(choice: JetsonWheelChoice) -> list[str]:
    w = choice.wheels
    return [f"vllm=={w.vllm}", f"torch=={w.torch}", *(f"{k}=={v}" for k, v in sorted(w.companions.items())),
            *w.constraints]


def _checks(choice: JetsonWheelChoice) -> list[Check]:
    cuda = choice.jetpack.cuda
    release = f"release {cuda.major}.{cuda.minor}"
    out = [Check(name=f"L4T's CUDA {cuda.major}.{cuda.minor} toolkit is installed (Triton compiles with its ptxas)",
                 argv=(f"{CUDA_HOME}/bin/ptxas", "--version"), expect=release)]
    out += [Check(name=f"{lib} is installed: the Jetson index's torch {choice.wheels.torch} loads it and JetPack does "
                       "not ship it (NVIDIA's cuDSS for Jetson)" if lib.startswith("libcudss") else
                       f"{lib} is installed (the Jetson index's wheels load it; JetPack does not ship it)",
                  argv=("/sbin/ldconfig", "-p"), expect=lib) for lib in choice.wheels.system_libs]
    return out


def _verify(choice: JetsonWheelChoice, python: tuple[str, ...]) -> list[Check]:
    w = choice.wheels
    _, expect = extension_check(w.vllm, ())
    cuda = choice.jetpack.cuda
    out = [program_check(python, "vllm-version", name="the Jetson index's vLLM is installed", expect=f"vllm {w.vllm}"),
           program_check(python, "torch-version-cuda", name="torch is the Jetson index's build, for L4T's CUDA",
                         expect=f"torch {w.torch} CUDA {cuda.major}.{cuda.minor}"),
           program_check(python, "extensions", name="vLLM imports, with its compiled extensions", expect=expect),
           program_check(python, "gpus", name="torch sees the GPU", expect="cuda available True 1", needs_gpu=True),
           program_check(python, "arch-list", name="torch's arch list covers the GPU",
                         expect="arch list covers every GPU", needs_gpu=True)]
    return out


def _exports(choice: JetsonWheelChoice) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    cc = choice.jetson.cc
    env = [("CUDA_HOME", CUDA_HOME), ("PATH", Expand("$CUDA_HOME/bin:$PATH")), ("CPATH", Expand("$CUDA_HOME/include")),
           ("TRITON_PTXAS_PATH", f"{CUDA_HOME}/bin/ptxas"), ("TORCH_CUDA_ARCH_LIST", f"{cc.major}.{cc.minor}")]
    why = [("CUDA_HOME", "L4T's CUDA toolkit, which JetPack installs there: Triton and FlashInfer read its headers"),
           ("PATH", "its nvcc and ptxas first"),
           ("CPATH", "Triton compiles its launchers with cuda.h from there"),
           ("TRITON_PTXAS_PATH", "Triton's bundled ptxas is not built for L4T: Triton compiles with L4T's"),
           ("TORCH_CUDA_ARCH_LIST", "kernels compiled at run time target exactly this Jetson's GPU")]
    return env, why


def build_jetson_plan(host: Host, request: Request, choice: JetsonWheelChoice, *, installer: Installer = "uv",
                      env_dir: str | None = None) -> JetsonPlan:
    """The plan that installs ``choice`` into a fresh environment of the wheels' Python."""
    w = choice.wheels
    env_dir = env_dir or (f"vllm-{w.vllm.public}" if installer == "conda" else ".venv-vllm")
    py = f"{w.python.major}.{w.python.minor}"
    if installer == "conda":
        python: tuple[str, ...] = ("conda", "run", "-n", env_dir, "python")
        base: tuple[str, ...] = ("conda", "run", "-n", env_dir, "python", "-m", "pip", "install")
    else:
        python = (f"{env_dir}/bin/python",)
        base = pip_install(installer, python)
    install = Step(tool=base[0] if installer != "conda" else "conda",
                   argv=(*base, "--index-url", choice.index, *_requirements(choice)),
                   why=f"vLLM {w.vllm}, torch {w.torch} and their companions from the Jetson index's {w.path} path "
                       "only, every one pinned")
    env, why = _exports(choice)
    return JetsonPlan(host=host, request=request, choice=choice, installer=installer, env_dir=env_dir,
                      python=python[-1] if installer != "conda" else "python",
                      steps=(fresh_environment(installer, py, env_dir), install), env=tuple(env), env_reasons=tuple(why),
                      checks=tuple(_checks(choice)), verify=tuple(_verify(choice, python)),
                      reasons=choice.reasons, warnings=choice.warnings)
