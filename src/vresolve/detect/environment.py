"""An environment's stack as its own interpreter sees it: torch, vLLM and its compiled modules, the
companions, imported in a subprocess (never in-process), and ``LD_LIBRARY_PATH`` shadows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ..host import (
    EnvReport,
    ModuleReport,
    TorchRuntime,
)
from ..values import CORE_EXTENSIONS, EXTENSION_HELPERS


def probe_torch(python: str | None = None, timeout: float = 120.0) -> TorchRuntime:
    """torch's view (version, CUDA, arch list, device capabilities), from ``import torch`` in a subprocess.

    Never in-process: importing torch costs seconds and may crash on a broken install.
    """
    env = probe_environment(python, timeout=timeout)
    if env.torch is not None:
        return env.torch
    torch = env.module("torch")
    return TorchRuntime(error=env.error or (torch.error if torch is not None else None) or "torch did not import")


_ENV_SCRIPT = r"""
import importlib, importlib.util, json, sys, traceback
out = {"sys_path": list(sys.path), "modules": [], "requires": {}}
def spec_origin(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception as e:
        return None
    return None if spec is None else (spec.origin or (list(spec.submodule_search_locations or []) or [None])[0])
def attempt(name, version_attr="__version__"):
    rep = {"name": name, "origin": spec_origin(name)}
    if rep["origin"] is None and "." not in name:
        rep["error"] = "ModuleNotFoundError: No module named %r" % name
        out["modules"].append(rep)
        return None
    try:
        mod = importlib.import_module(name)
        v = getattr(mod, version_attr, None)
        rep["version"] = None if v is None else str(v)
        out["modules"].append(rep)
        return mod
    except BaseException as e:
        tb = traceback.format_exc()
        rep["error"] = (tb.strip().splitlines() or [repr(e)])[-1][:2000]
        rep["traceback"] = tb[-6000:]
        out["modules"].append(rep)
        return None
torch = attempt("torch")
if torch is not None:
    t = {"version": str(torch.__version__), "cuda": torch.version.cuda}
    try:
        t["available"] = bool(torch.cuda.is_available())
        t["arch_list"] = list(torch.cuda.get_arch_list()) if t["available"] else []
        t["device_capabilities"] = ["%d.%d" % torch.cuda.get_device_capability(i)
                                    for i in range(torch.cuda.device_count())] if t["available"] else []
    except BaseException as e:
        t["error"] = "%s: %s" % (type(e).__name__, e)
    out["torch"] = t
def attempt_file(name, path):
    error = load_extension(name, path)
    rep = {"name": name, "origin": path}
    if error:
        rep["error"], rep["traceback"] = error.split(" <- ")[0][:2000], error[-6000:]
    out["modules"].append(rep)
vllm = attempt("vllm")
root = spec_origin("vllm")
exts = find_extensions(root[:-len("/__init__.py")]) if root and root.endswith("/__init__.py") else {}
out["vllm_extensions"] = sorted(exts)
for name in @CORE@:
    if name not in exts:
        attempt(name)  # the error a user sees: No module named 'vllm._C'
for name, path in sorted(exts.items()):
    if name not in sys.modules:
        attempt_file(name, path)
    else:
        out["modules"].append({"name": name, "origin": path})
for name in ("torchvision", "torchaudio", "xformers", "flashinfer", "flash_attn"):
    attempt(name)
try:
    from importlib import metadata
    for dist in ("vllm", "torchvision", "torchaudio", "xformers", "flashinfer-python", "flash-attn"):
        try:
            reqs = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue
        out["requires"][dist] = [r for r in reqs if r.split(";")[0].strip().lower().startswith(("torch", "triton"))]
except Exception:
    pass
sys.stdout.write("\n@@vresolve@@" + json.dumps(out) + "\n")
"""


def probe_environment(python: str | None = None, timeout: float = 180.0, cwd: str | None = None) -> EnvReport:
    """Import the stack (torch, vllm, vllm._C, companions) in a subprocess of ``python`` and report.

    Never in-process: an import can take seconds, crash, or poison this process.
    """
    import json
    import subprocess

    exe = python or sys.executable
    try:
        script = EXTENSION_HELPERS + _ENV_SCRIPT.replace("@CORE@", repr(CORE_EXTENSIONS))
        p = subprocess.run([exe, "-c", script], capture_output=True, text=True, timeout=timeout,
                           errors="replace", cwd=cwd)
    except subprocess.TimeoutExpired:
        return EnvReport(python=exe, error=f"importing the stack timed out after {timeout:g} s")
    except OSError as e:
        return EnvReport(python=exe, error=f"{exe}: could not run ({e.strerror or e})")
    marker = p.stdout.rpartition("@@vresolve@@")[2].strip()
    try:
        d = json.loads(marker)
    except ValueError:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return EnvReport(python=exe, error=f"the probe died (exit code {p.returncode}): {tail[:300]}")
    return EnvReport(
        python=exe, sys_path=tuple(d.get("sys_path") or ()),
        modules=tuple(ModuleReport.from_dict(m) for m in d.get("modules") or ()),
        requires=tuple((k, tuple(v)) for k, v in sorted((d.get("requires") or {}).items())),
        vllm_extensions=tuple(str(x) for x in d.get("vllm_extensions") or ()),
        torch=TorchRuntime.from_dict(d["torch"]) if d.get("torch") else None)


def library_shadows(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``LD_LIBRARY_PATH`` directories holding CUDA libraries that would load before pip's nvidia-* ones.

    Returns (directory, the CUDA libraries in it) for each such directory.
    """
    env = os.environ if environ is None else environ
    out = []
    prefixes = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so", "libcusparse.so",
                "libnvrtc.so", "libcufft.so", "libnvJitLink.so")
    for d in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if not d:
            continue
        try:
            names = sorted(n for n in os.listdir(d) if n.startswith(prefixes))
        except OSError:
            continue
        if names:
            out.append((d, tuple(names)))
    return tuple(out)
