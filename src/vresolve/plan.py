"""Resolution -> InstallPlan: ordered installer steps, exports, verification. Pure.

Steps are argv tuples per installer (``uv`` by default, ``pip``, ``conda``); shell text
is only made by :func:`shell_line` for display. Every package is pinned exactly, with its
local version tag when it comes from a variant index (``torch==2.14.0+cu128``), so an
installer cannot swap a build behind the user's back: the second step names the torch the
first step installed, and pip / uv keep an installed distribution that satisfies an exact pin.

The install goes into a fresh virtual environment by default: vLLM pins torch exactly and
would replace the torch of an existing environment.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from .errors import UsageError
from .host import DriverInfo, Host, HostGpu, PlatformInfo
from .matrix import Matrix
from .resolve import Resolution, TorchBuild, VllmBuild
from .values import EXTENSION_HELPERS, Capability, DriverVersion

__all__ = ["INSTALLERS", "Step", "Check", "InstallPlan", "build_plan", "target_host", "parse_gpus", "shell_line",
           "exports_text", "sh_value"]

INSTALLERS = ("uv", "pip", "conda")
SHELLS = ("bash", "fish", "dotenv")


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    tool: str  # "uv" | "pip" | "conda" | "python"
    argv: tuple[str, ...]
    why: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    name: str
    argv: tuple[str, ...]
    expect: str  # a line the output must contain


@dataclass(frozen=True, kw_only=True, slots=True)
class InstallPlan:
    resolution: Resolution
    installer: str
    env_dir: str
    steps: tuple[Step, ...]
    env: tuple[tuple[str, str], ...]
    env_reasons: tuple[tuple[str, str], ...]
    verify: tuple[Check, ...]
    alternatives: tuple[tuple[Resolution, str], ...] = field(default=())


def shell_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)


# --------------------------------------------------------------------------- the target machine


def parse_gpus(matrix: Matrix, text: str) -> tuple[HostGpu, ...]:
    """``--gpu NAME[,NAME...]`` or ``sm_XY`` -> GPUs; UsageError naming an unknown one, with close names.

    ``2xH100`` or ``H100*2`` count several of one kind.
    """
    gpus: list[HostGpu] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise UsageError(f"--gpu: empty GPU name in {text!r}")
        count = 1
        for sep in ("x", "*"):
            head, s, tail = part.partition(sep)
            if s and sep == "x" and head.isdigit():
                count, part = int(head), tail.strip()
                break
            if s and sep == "*" and tail.strip().isdigit():
                part, count = head.strip(), int(tail)
                break
        try:
            cc = Capability.parse(part) if part.lower().startswith(("sm_", "compute_")) or part[:1].isdigit() else None
        except ValueError:
            cc = None
        if cc is not None:
            name = f"sm_{cc.major}{cc.minor}"
        else:
            gpu = matrix.find_gpu(part)
            if gpu is None:
                names = [n for g in matrix.gpus for n in (g.name, *g.names, *g.aliases)]
                close = difflib.get_close_matches(part, names, n=3, cutoff=0.5)
                lower = {n.lower(): n for n in names}
                close += [lower[k] for k in difflib.get_close_matches(part.lower(), list(lower), n=3, cutoff=0.5)
                          if lower[k] not in close]
                hint = f" (did you mean {', '.join(repr(c) for c in close[:3])}?)" if close else \
                    " (expected a GPU name such as 'H100' or 'NVIDIA GeForce RTX 4090', or sm_XY)"
                raise UsageError(f"--gpu: unknown GPU {part!r}{hint}")
            name, cc = gpu.name, gpu.compute_capability
        for _ in range(count):
            gpus.append(HostGpu(index=len(gpus), name=name, compute_capability=cc, source="--gpu",
                                cc_source="matrix" if not name.startswith("sm_") else "--gpu"))
    return tuple(gpus)


def parse_driver(text: str) -> DriverVersion:
    try:
        return DriverVersion.parse(text)
    except ValueError:
        raise UsageError(f"--driver: invalid driver version {text!r} (expected a version such as '580.65.06')") from None


def parse_python(text: str) -> Version:
    try:
        v = Version(text)
    except InvalidVersion:
        v = None
    if v is None or len(v.release) < 2 or v.major != 3:
        raise UsageError(f"--python: invalid Python version {text!r} (expected X.Y such as '3.12')")
    return v


def parse_glibc(text: str) -> Version:
    try:
        v = Version(text)
    except InvalidVersion:
        v = None
    if v is None or len(v.release) != 2 or v.major != 2 or v.pre or v.post or v.dev or v.local:
        raise UsageError(f"--glibc: invalid glibc version {text!r} (expected X.Y such as '2.28')")
    return v


def target_host(matrix: Matrix, *, gpus: str, driver: str | None, python: str | None, platform: str | None,
                base: Host, glibc: Version | None = None) -> Host:
    """The machine to plan for when it is not this one (``--gpu NAME`` or ``--gpu none``).

    ``base`` supplies what the flags leave out (this interpreter's Python and platform); another
    machine's glibc is not this one's: unknown unless ``glibc`` (``--glibc``) gives it.
    """
    gpu_list = () if gpus == "none" else parse_gpus(matrix, gpus)
    drv = DriverInfo(version=parse_driver(driver), source="--driver") if driver else DriverInfo()
    plat = base.platform
    if platform:
        plat = parse_platform(platform)
    return Host(driver=drv, gpus=gpu_list, python=parse_python(python) if python else base.python,
                platform=PlatformInfo(os=plat.os, machine=plat.machine, glibc=glibc))


def parse_platform(text: str) -> PlatformInfo:
    if text not in ("linux-x86_64", "linux-aarch64"):
        raise UsageError(f"--platform: invalid platform {text!r} (expected linux-x86_64 or linux-aarch64)")
    return PlatformInfo(os="linux", machine=text.split("-", 1)[1])


# --------------------------------------------------------------------------- steps


def _local(version: str, variant: str) -> str:
    return version if "+" in version else f"{version}+{variant}"


def _pins(matrix: Matrix, res: Resolution) -> tuple[list[str], list[str]]:
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
    return {k for w in matrix.extra_wheels.get(package, {}).get(wanted, ()) for k in w.requires}


def _vllm_index(matrix: Matrix, v: VllmBuild) -> str | None:
    if v.where != "vllm-index":
        return None
    return f"{matrix.vllm_index}/{v.version}/{v.variant}"


def _steps(matrix: Matrix, res: Resolution, installer: str, env_dir: str, into: str | None = None) -> list[Step]:
    t, v = res.torch, res.vllm
    py = f"{res.host.python_minor}"
    torch_pins, vllm_pins = _pins(matrix, res)
    torch_index = f"{matrix.torch_index}/{t.variant.variant}"
    vllm_index = _vllm_index(matrix, v)
    steps: list[Step] = []
    if into is not None:  # the existing environment whose torch is kept: its exact pin keeps it
        base: tuple[str, ...] = (("uv", "pip", "install", "--python", into) if installer == "uv"
                                 else (into, "-m", "pip", "install"))
    elif installer == "uv":
        steps.append(Step(tool="uv", argv=("uv", "venv", "--python", py, "--seed", env_dir),
                          why=f"a fresh environment with Python {py} (uv fetches that Python if it is missing)"))
        base = ("uv", "pip", "install", "--python", f"{env_dir}/bin/python")
    elif installer == "pip":
        steps.append(Step(tool="python", argv=(f"python{py}", "-m", "venv", env_dir),
                          why=f"a fresh environment with Python {py} (python{py} must be installed)"))
        base = (f"{env_dir}/bin/python", "-m", "pip", "install")
    else:
        steps.append(Step(tool="conda", argv=("conda", "create", "-y", "-n", env_dir, f"python={py}", "pip"),
                          why=f"a conda environment with Python {py} and pip; the wheels come through pip"))
        base = ("conda", "run", "-n", env_dir, "python", "-m", "pip", "install")
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
        steps.append(Step(tool="vllm", argv=(*run, "download-kernels"),
                          why="FlashInfer's precompiled kernels for this FlashInfer and CUDA (flashinfer-cubin, "
                              "flashinfer-jit-cache, from FlashInfer's own index); without them vLLM compiles "
                              "kernels at startup, minutes on Hopper"))
    return steps


# SASS of the GPU's major with a minor not above the GPU's, or PTX not above its capability
_COVERAGE = (
    "import torch\n"
    "archs = torch.cuda.get_arch_list()\n"
    "sm = [int(a[3:]) for a in archs if a.startswith(\"sm_\") and a[3:].isdigit()]\n"
    "ptx = [int(a[8:]) for a in archs if a.startswith(\"compute_\") and a[8:].isdigit()]\n"
    "bad = []\n"
    "for i in range(torch.cuda.device_count()):\n"
    "    ma, mi = torch.cuda.get_device_capability(i)\n"
    "    if not any(s // 10 == ma and s % 10 <= mi for s in sm) and not any(p <= ma * 10 + mi for p in ptx):\n"
    "        bad.append(\"%d.%d\" % (ma, mi))\n"
    "print(\"arch list covers every GPU\" if not bad else \"not covered: \" + \" \".join(bad))\n"
)


# Imports every compiled extension module of the installed vLLM package (found in its directory)
# and checks that the ones the wheel ships (read off its zip directory) are all there. On a machine
# without the NVIDIA driver, an extension whose only fault is the missing libcuda.so.1 counts as
# present, and the output says so.
_EXTENSIONS = r"""
import sys
expected = @EXPECTED@
import torch, vllm
found = find_extensions(os.path.dirname(vllm.__file__))
missing = sorted(set(expected) - set(found))
bad, driverless = [], []
for name, path in sorted(found.items()):
    error = None if name in sys.modules else load_extension(name, path)
    if error:
        (driverless if "libcuda.so.1" in error else bad).append((name, error))
for name in missing:
    print("MISSING %s: the wheel ships it, this install lacks it" % name)
for name, text in bad:
    print("FAILS %s: %s" % (name, text[:400]))
for name, _ in driverless:
    print("needs libcuda.so.1 (no NVIDIA driver on this machine), counted as present: %s" % name)
ok = bool(found) and not missing and not bad
print("vllm %s: compiled extensions %s (%d)" % (vllm.__version__.split("+")[0], "load" if ok else "DO NOT ALL LOAD",
                                                len(found)))
"""


def extension_check(version: Version, extensions: Sequence[str]) -> tuple[str, str]:
    """(the Python of the check that vLLM's compiled extensions load, the line it prints on success).

    ``extensions``: the modules the planned wheel ships (empty when the matrix has no list for the build:
    then every module found in the installed package must load).
    """
    import json

    script = "import os" + EXTENSION_HELPERS + _EXTENSIONS.replace("@EXPECTED@", json.dumps(sorted(extensions)))
    return script, f"vllm {version.public}: compiled extensions load"


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
    exts = planned_extensions(res)
    script, expect = extension_check(v.version, exts)
    what = f"the {len(exts)} compiled extensions its wheel ships" if exts else "its compiled extensions"
    checks = [Check(name=f"vLLM imports, with {what}", argv=(python, "-c", script), expect=expect)]
    if t.cuda is not None:
        checks.append(Check(name="torch is the planned CUDA build",
                            argv=(python, "-c", 'import torch; print("torch CUDA", torch.version.cuda)'),
                            expect=f"torch CUDA {t.cuda}"))
    gpus = [g for g in res.host.gpus if g.compute_capability is not None]
    if gpus and t.cuda is not None:
        checks.append(Check(name="torch sees the GPUs",
                            argv=(python, "-c", 'import torch; print("cuda available", torch.cuda.is_available(), '
                                                'torch.cuda.device_count())'),
                            expect=f"cuda available True {len(gpus)}"))
        checks.append(Check(name="torch's arch list covers every GPU", argv=(python, "-c", _COVERAGE),
                            expect="arch list covers every GPU"))
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


def build_plan(matrix: Matrix, res: Resolution, *, installer: str = "uv", env_dir: str | None = None,
               alternatives: Sequence[tuple[Resolution, str]] = (), into: str | None = None) -> InstallPlan:
    """The install plan; ``into``: the interpreter of an existing environment to install into, keeping its
    torch (``--keep-torch``), instead of a fresh environment."""
    if installer not in INSTALLERS:
        raise UsageError(f"--installer: invalid value {installer!r} (expected one of: {', '.join(INSTALLERS)})")
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
        checks.append(Check(name="the installer kept your torch", argv=(python, "-c", 'import torch; print("torch", '
                                                                                      'torch.__version__)'),
                            expect=f"torch {kept.version}"))
    if installer == "conda":
        checks = [Check(name=c.name, argv=("conda", "run", "-n", env_dir, *c.argv), expect=c.expect) for c in checks]
    env, why = _exports(res)
    return InstallPlan(resolution=res, installer=installer, env_dir=env_dir,
                       steps=tuple(_steps(matrix, res, installer, env_dir, into)),
                       env=tuple(env), env_reasons=tuple(why), verify=tuple(checks), alternatives=tuple(alternatives))


_EXPANDED = ("$PWD", "$CUDA_HOME", "$PATH")  # the only variables vresolve's own values refer to


def sh_value(v: str, fish: bool = False) -> str:
    """Quote a value; ``$PWD``/``$CUDA_HOME``/``$PATH`` in it still expand."""
    parts = [v]
    for var in _EXPANDED:
        parts = [x for p in parts for x in _split_keep(p, var)]
    if fish and len(parts) > 1 and v.endswith(":$PATH"):  # fish: PATH is a list
        return " ".join(sh_value(x, fish) for x in v[: -len(":$PATH")].split(":")) + " $PATH"
    return "".join(f'"{p}"' if p in _EXPANDED else shlex.quote(p) for p in parts if p)


def _split_keep(text: str, var: str) -> list[str]:
    out: list[str] = []
    for i, piece in enumerate(text.split(var)):
        if i:
            out.append(var)
        out.append(piece)
    return out


def exports_text(env: Sequence[tuple[str, str]], shell: str) -> str:
    """The exports in one shell's syntax (``--shell bash|fish|dotenv``)."""
    if shell == "bash":
        return "".join(f"export {k}={sh_value(v)}\n" for k, v in env)
    if shell == "fish":
        return "".join(f"set -gx {k} {sh_value(v, fish=True)}\n" for k, v in env)
    if shell == "dotenv":
        return "".join(f"{k}={v}\n" for k, v in env)
    raise UsageError(f"--shell: invalid value {shell!r} (expected one of: {', '.join(SHELLS)})")
