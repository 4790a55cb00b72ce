"""Findings and the facts doctor observed, in plain words (what it judged, whether or not anything is wrong).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from ..host import EnvReport, Host, HostGpu, ModuleReport
from ..values import ArchList, Capability, core_extension, exact_pin, public_version

SEVERITIES = ("error", "warning", "info")


REINSTALL_CAUSES = ("cpu-only-build", "torch-abi-mismatch", "cuda-variant-mismatch", "arch-not-in-build",
                    "companion-mismatch", "installer-replaced-torch")


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    cause: str
    severity: str  # "error" | "warning" | "info"
    title: str
    explanation: str
    fix: str
    evidence: tuple[str, ...] = ()
    source: str = "environment"  # "environment" | "log" | "lock"
    #: the facts its known-issues row's predicate reads (the pasted lines a finding on pasted facts cites)
    facts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "severity": self.severity, "title": self.title,
                "explanation": self.explanation, "fix": self.fix, "evidence": list(self.evidence),
                "source": self.source}


def worst_exit_code(findings: Sequence[Finding]) -> int:
    """1 when any finding is an error, else 0."""
    return 1 if any(f.severity == "error" for f in findings) else 0


def caps_covered(arch_list: Sequence[str], cc: Capability) -> bool:
    """torch.cuda.get_arch_list() covers cc (the rule of :meth:`ArchList.covers`)."""
    return ArchList.from_torch(arch_list).covers(cc)


def with_version(fix: str, version: str | None) -> str:
    """A known issue's fix with its ``<version>`` placeholder filled with the installed vLLM's version, when known."""
    return fix.replace("<version>", version) if version else fix


def in_site_packages(path: str) -> bool:
    """Whether a path lies in an installed package tree (``site-packages``/``dist-packages``; POSIX or Windows)."""
    return any(part in ("site-packages", "dist-packages") for part in path.replace("\\", "/").split("/"))


def is_source_tree(origin: str | None) -> str | None:
    """The checkout root when a module's origin is a vLLM source tree rather than an installed package."""
    if not origin:
        return None
    pkg = os.path.dirname(origin) if origin.endswith(".py") else origin
    root = os.path.dirname(pkg)
    if in_site_packages(root):
        return None
    markers = ("setup.py", "pyproject.toml", "CMakeLists.txt", "csrc")
    return root if sum(os.path.exists(os.path.join(root, m)) for m in markers) >= 2 else None


def torch_pin(lines: Sequence[str]) -> Version | None:
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.lower() != "torch":
            continue
        pin = exact_pin(req.specifier)
        return Version(pin.public) if pin is not None else None
    return None


def dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in findings:
        key = (f.cause, f.title, f.source)
        if key not in seen:
            seen.add(key)
            out.append(f)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f.severity])


def needs_libcuda(m: ModuleReport) -> bool:
    return "libcuda.so.1" in (m.traceback or "") + (m.error or "")


def observations(host: Host, env: EnvReport | None, unknown: frozenset[str] = frozenset()) -> list[str]:
    """What doctor saw, in plain words, whether or not anything is wrong (the state it judged). ``unknown``: the
    facts a pasted text does not show (``driver``, ``gpus``, ``torch.cuda``, ``torch.available``): said so, not
    shown as their defaults."""
    gpus = [g for g in host.gpus if g.compute_capability is not None]
    out = _machine_seen(host, gpus, unknown)
    if env is None:
        return out
    if env.error:
        return [*out, f"the environment ({env.python}) could not be inspected: {env.error}"]
    out.append(f"environment: {env.python}")
    out += _torch_seen(host, env, gpus, unknown)
    for name in ("vllm", "torchvision", "torchaudio", "xformers", "flashinfer", "flash_attn"):
        m = env.module(name)
        if m is None:
            continue
        if m.error and "No module named" in m.error and (m.origin is None):
            if name == "vllm":
                out.append("vllm: not installed")
            continue
        state = f"{m.version or '?'}" + (f", from {m.origin}" if name == "vllm" and m.origin else "")
        out.append(f"{name}: {state}" + (f", does not import: {m.error}" if m.error else ""))
    v = env.module("vllm")
    if v is not None and v.origin:
        out += _kernels_seen(env)
    return out


def _machine_seen(host: Host, gpus: Sequence[HostGpu], unknown: frozenset[str]) -> list[str]:
    """The driver and GPUs, and a Jetson's L4T release (its CUDA is its JetPack's: compat_matrix/jetson.yaml)."""
    listed = ", ".join(f"{g.name} ({g.compute_capability})" for g in gpus)
    if host.driver.version is not None:
        out = [f"NVIDIA driver {host.driver.version} (CUDA {host.driver.cuda or '?'}), "
               + (listed or ("GPUs not shown" if "gpus" in unknown else "no GPU"))]
    elif "driver" in unknown:
        out = ["NVIDIA driver not shown" + (f"; {listed}" if listed else "; GPUs not shown" if "gpus" in unknown else "")]
    elif host.driver.broken:
        out = ["NVIDIA GPUs without a driver" if host.driver.state == "not-installed"
               else "NVIDIA driver installed, not working"]
    else:
        out = ["no NVIDIA driver or GPU"]
    if host.platform.l4t is not None:
        out.append(f"Jetson Linux (L4T) {host.platform.l4t}" + (f", from {host.platform.l4t_source}"
                                                               if host.platform.l4t_source else ""))
    return out


def _torch_seen(host: Host, env: EnvReport, gpus: Sequence[HostGpu], unknown: frozenset[str] = frozenset()) -> list[str]:
    t = env.torch
    if t is None:
        torch_mod = env.module("torch")
        return ["torch: not installed" if torch_mod is None or "No module named 'torch'" in (torch_mod.error or "")
                else f"torch: does not import ({torch_mod.error})"]
    seen = f"sees {len(t.device_capabilities)} GPU(s): {', '.join(t.device_capabilities)}" if t.available else \
        "sees no GPU"
    if t.available and not t.device_capabilities:  # a report that says CUDA is available, not which devices
        seen = "sees a GPU (which: not shown)"
    if "torch.available" in unknown:
        seen = "(whether it sees a GPU: not shown)"
    cuda = "not shown" if "torch.cuda" in unknown else t.cuda or "none: a CPU build"
    out = [f"torch {t.version} (CUDA {cuda}) {seen}"]
    if t.available and gpus and t.arch_list:  # an empty list: not shown (a report cut before it)
        covered = all(caps_covered(t.arch_list, g.cc) for g in gpus)
        out.append(f"torch's arch list ({' '.join(t.arch_list)}) " + ("covers every GPU" if covered
                                                                     else "misses a GPU"))
    tc = public_version(t.cuda)
    for tk in host.toolkits:
        same = tc is not None and (tk.version.major, tk.version.minor) == (tc.major, tc.minor)
        out.append(f"nvcc {tk.version} " + (f"at {tk.path} " if tk.path else "") + ("matches" if same else "differs from")
                   + f" torch's CUDA {t.cuda}")
    return out


def _kernels_seen(env: EnvReport) -> list[str]:
    out = []
    core = core_extension(env.vllm_extensions)
    c = env.module(core)
    if c is not None:
        out.append(f"{core}: " + ("loads" if not c.error else f"does not load ({c.error})"))
    if env.vllm_extensions:
        reps = [m for m in (env.module(n) for n in env.vllm_extensions) if m is not None]
        fails = [m for m in reps if m.error and not needs_libcuda(m)]
        driverless = [m for m in reps if m.error and needs_libcuda(m)]
        out.append(f"vLLM's compiled modules: {len(reps)} found, {len(reps) - len(fails) - len(driverless)} load"
                   + (f", {len(driverless)} need the driver's libcuda.so.1" if driverless else "")
                   + (f", {len(fails)} fail" if fails else ""))
    return out


def hidden_by(env: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The variables that hide every GPU from CUDA, as ``NAME=value`` evidence; () when none does.

    ``CUDA_VISIBLE_DEVICES`` empty, or starting with an entry that is no device (CUDA stops at the
    first invalid one: ``-1``); ``NVIDIA_VISIBLE_DEVICES`` ``none``, ``void`` or empty (the NVIDIA
    container runtime then exposes no GPU).
    """
    out = []
    for name, value in env:
        first = value.split(",")[0].strip()
        if name == "CUDA_VISIBLE_DEVICES" and (not first or first.startswith("-") or first.lower() == "nodevfiles"):
            out.append(f"{name}={value!r}")
        elif name == "NVIDIA_VISIBLE_DEVICES" and value.strip().lower() in ("", "none", "void"):
            out.append(f"{name}={value!r}")
    return tuple(out)
