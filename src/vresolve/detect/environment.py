"""An environment's stack as its own interpreter sees it: torch, vLLM and its compiled modules, the
companions, imported in a subprocess (never in-process), and ``LD_LIBRARY_PATH`` shadows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

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


PROBE_OUTPUT_LIMIT = 1 << 20
"""The most the probe may print on stdout (1 MiB): its answer is a few KiB (tens with many tracebacks, each
cut to 6000 characters). Past it the probe is stopped: an interpreter may print anything, and what it
prints is held in memory. Of stderr only the last 64 KiB are kept (its last line is the evidence)."""
_STDERR_TAIL = 64 << 10


def _kill_group(proc: Any) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def _drain(proc: Any, deadline: float, limit: int) -> tuple[bytes, bytes, str | None]:
    """(stdout, the tail of stderr, why it was stopped or None), reading both pipes as they fill."""
    import selectors
    import time

    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(out), bytes(err), "timeout"
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = key.data
                buf += chunk
                if buf is out and len(out) > limit:
                    return bytes(out), bytes(err), "too much output"
                if buf is err and len(err) > 2 * _STDERR_TAIL:
                    del err[:-_STDERR_TAIL]
    return bytes(out), bytes(err[-_STDERR_TAIL:]), None


def run_bounded(argv: list[str], timeout: float, limit: int = PROBE_OUTPUT_LIMIT, cwd: str | None = None
                ) -> tuple[int | None, bytes, bytes, str | None]:
    """Run a probe: (exit code, stdout, the tail of stderr, why it was stopped: "timeout", "too much output"
    or None). OSError when it cannot start. It runs in its own process group, killed as a whole when stopped,
    on an interrupt too: nothing of it outlives the call."""
    import subprocess
    import time

    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=cwd, start_new_session=True)
    try:
        out, err, stopped = _drain(proc, deadline, limit)
        if stopped is None:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stopped = "timeout"
    finally:
        if proc.poll() is None or stopped:
            _kill_group(proc)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    return (None if stopped else proc.returncode), out, err, stopped


def probe_environment(python: str | None = None, timeout: float = 180.0, cwd: str | None = None) -> EnvReport:
    """Import the stack (torch, vllm, vllm._C, companions) in a subprocess of ``python`` and report.

    Never in-process: an import can take seconds, crash, or poison this process. What the probe prints is
    bounded (:data:`PROBE_OUTPUT_LIMIT`) and its answer checked for shape and types: an interpreter may
    print anything; a probe that fails is the report's ``error``, one line.
    """
    import json

    exe = python or sys.executable
    script = EXTENSION_HELPERS + _ENV_SCRIPT.replace("@CORE@", repr(CORE_EXTENSIONS))
    try:
        code, out, err, stopped = run_bounded([exe, "-c", script], timeout, cwd=cwd)
    except (OSError, ValueError) as e:
        return EnvReport(python=exe, error=f"{exe}: could not run ({getattr(e, 'strerror', None) or e})")
    if stopped == "timeout":
        return EnvReport(python=exe, error=f"importing the stack timed out after {timeout:g} s")
    if stopped:
        return EnvReport(python=exe, error=f"the probe printed more than {PROBE_OUTPUT_LIMIT >> 20} MiB: stopped")
    head, marker, answer = out.decode("utf-8", errors="replace").rpartition("@@vresolve@@")
    if not marker:
        tail = (err.decode("utf-8", errors="replace").strip().splitlines() or ["(no output)"])[-1]
        return EnvReport(python=exe, error=f"the probe died (exit code {code}): {tail[:300]}")
    try:
        d = json.loads(answer.strip())
    except (ValueError, RecursionError) as e:  # RecursionError: [[[[...]]]] nested past the stack
        return EnvReport(python=exe, error=f"the probe's answer is malformed: not JSON ({str(e)[:100]})")
    problem = answer_problem(d)
    if problem:
        return EnvReport(python=exe, error=f"the probe's answer is malformed: {problem}")
    return EnvReport(
        python=exe, sys_path=tuple(d.get("sys_path") or ()),
        modules=tuple(ModuleReport.from_dict(m) for m in d.get("modules") or ()),
        requires=tuple((k, tuple(v)) for k, v in sorted((d.get("requires") or {}).items())),
        vllm_extensions=tuple(str(x) for x in d.get("vllm_extensions") or ()),
        torch=TorchRuntime.from_dict(d["torch"]) if d.get("torch") else None)


_MAX_SHORT = 256  # names, versions, CUDA versions: never longer (and no version of thousands of digits)
_MAX_LONG = 8192  # paths, errors, tracebacks (the probe cuts its tracebacks to 6000 characters)


def _str_problem(where: str, v: object, limit: int, optional: bool = True) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > limit:
        return f"{where} is not a string of at most {limit} characters"
    return None


def _list_problem(where: str, v: object, limit: int) -> str | None:
    if v is None:
        return None
    if not isinstance(v, list):
        return f"{where} is not a list"
    return next((p for i, x in enumerate(v) if (p := _str_problem(f"{where}[{i}]", x, limit, False))), None)


def _module_problem(where: str, m: object) -> str | None:
    if not isinstance(m, dict):
        return f"{where} is not an object"
    return (_str_problem(f"{where}.name", m.get("name"), _MAX_SHORT, optional=False)
            or next((p for k, n in (("origin", _MAX_LONG), ("version", _MAX_SHORT), ("error", _MAX_LONG),
                                    ("traceback", _MAX_LONG)) if (p := _str_problem(f"{where}.{k}", m.get(k), n))),
                    None))


def _torch_problem(t: object) -> str | None:
    if t is None:
        return None
    if not isinstance(t, dict):
        return "torch is not an object"
    if t.get("available") is not None and not isinstance(t.get("available"), bool):
        return "torch.available is not true or false"
    return (next((p for k, n in (("version", _MAX_SHORT), ("cuda", _MAX_SHORT), ("error", _MAX_LONG))
                  if (p := _str_problem(f"torch.{k}", t.get(k), n))), None)
            or _list_problem("torch.arch_list", t.get("arch_list"), _MAX_SHORT)
            or _list_problem("torch.device_capabilities", t.get("device_capabilities"), _MAX_SHORT))


def answer_problem(d: object) -> str | None:
    """What is wrong with the shape or the types of the probe's answer, or None (it may leave keys out)."""
    if not isinstance(d, dict):
        return "not a JSON object"
    modules, requires = d.get("modules"), d.get("requires")
    if modules is not None and not isinstance(modules, list):
        return "modules is not a list"
    if requires is not None and not isinstance(requires, dict):
        return "requires is not an object"
    return (_list_problem("sys_path", d.get("sys_path"), _MAX_LONG)
            or _list_problem("vllm_extensions", d.get("vllm_extensions"), _MAX_SHORT)
            or next((p for i, m in enumerate(modules or ()) if (p := _module_problem(f"modules[{i}]", m))), None)
            or next((p for k, v in (requires or {}).items() if (p := _list_problem(f"requires.{k[:40]}", v,
                                                                                    _MAX_LONG))), None)
            or _torch_problem(d.get("torch")))


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
