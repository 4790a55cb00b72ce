"""The facts a corpus sidecar lists, compared with what the evidence reader read (tests and bench share this).

Normalisation: versions compare as strings after stripping; Python by major.minor; GPU names as a set of the
names the paste lists; a capability, an undefined symbol, a gencode or a build environment's path need only be
among those read; ``vllm_c_import_error`` need only be the start of the error read; any other key names a
distribution (``flash_attn`` is flash-attn, ``flashinfer`` also flashinfer-python, ``conda_pytorch`` is conda's
``version build`` of torch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from vresolve.doctor.evidence import Evidence
from vresolve.doctor.evidence.summary import summary

Getter = Callable[[dict[str, Any], Evidence], Any]


class Check(msgspec.Struct, frozen=True):
    key: str
    expected: Any
    got: Any
    ok: bool


def _version(text: Any) -> str | None:
    return None if text is None else str(text).strip()


def _minor(text: Any) -> str | None:
    return None if text is None else ".".join(str(text).split(".")[:2])


def _dist(name: str) -> Getter:
    def get(s: dict[str, Any], e: Evidence) -> Any:
        seen = e.dist(name)
        return seen.value.version if seen else None
    return get


def _conda(name: str) -> Getter:
    def get(s: dict[str, Any], e: Evidence) -> Any:
        hits = [d.value for d in e.dists if d.value.name == name and d.value.build]
        return f"{hits[0].version} {hits[0].build}" if hits else None
    return get


def _key(name: str) -> Getter:
    return lambda s, e: s.get(name)


#: sidecar key -> (what the reader read, how the two compare)
GETTERS: dict[str, tuple[Getter, Callable[[Any, Any], bool]]] = {
    "gpus": (_key("gpus"), lambda exp, got: set(exp) == set(got or ())),
    "compute_capability": (_key("compute_capabilities"), lambda exp, got: str(exp) in (got or ())),
    "python": (_key("python"), lambda exp, got: _minor(exp) == _minor(got)),
    "torch_cuda": (lambda s, e: s.get("torch_cuda", "<not shown>"), lambda exp, got: _version(exp) == _version(got)),
    "cuda_available": (_key("cuda_available"), lambda exp, got: exp is got),
    "wsl": (_key("wsl"), lambda exp, got: exp is got),
    "torch_arch_list": (_key("torch_arch_list"), lambda exp, got: list(exp) == list(got or ())),
    "container": (lambda s, e: [c.value for c in e.container],
                  lambda exp, got: bool(got) if exp is True else exp in (got or ())),
    "undefined_symbol": (_key("undefined_symbols"), lambda exp, got: exp in (got or ())),
    "vllm_c_import_error": (lambda s, e: s.get("import_failures", {}).get("vllm._C"),
                            lambda exp, got: got is not None and str(got).startswith(exp)),
    "torch_replaced": (lambda s, e: s.get("uninstalled", {}).get("torch"), None),
    "xformers_built_for_torch": (lambda s, e: s.get("built_for", {}).get("xformers"), None),
    "cuda_archs": (_key("vllm_cuda_archs"), None),
    "gencode": (_key("gencode"), lambda exp, got: exp in (got or ())),
    "build_env_torch": (lambda s, e: s.get("build_env", {}).get("torch"), None),
    "build_env_torch_path": (_key("build_env_paths"), lambda exp, got: exp in (got or ())),
    "build_env_torch_cuda": (_key("build_env_torch_cuda"), None),
    "torch_installed": (lambda s, e: "torch" not in s.get("not_installed", ()), lambda exp, got: exp is got),
    "nvidia_smi_version": (_key("nvidia_smi"), None),
    "gcc": (lambda s, e: s.get("tools", {}).get("gcc"), None),
    "conda_pytorch": (_conda("torch"), None),
    **{k: (_key(k), None) for k in ("driver", "cuda_driver", "nvml_library", "cuda_runtime", "cuda", "cudnn", "rocm",
                                    "platform", "os", "jetson", "accelerator", "glibc", "nvcc")},
}


def _env(name: str) -> Getter:
    return lambda s, e: s.get("env", {}).get(name)


def compare(expected: dict[str, Any], evidence: Evidence) -> list[Check]:
    """One check per fact the sidecar lists."""
    s = summary(evidence)
    out = []
    for key, want in expected.items():
        getter, same = GETTERS.get(key, (_env(key.upper()) if key.endswith("_visible_devices") else _dist(key), None))
        got = getter(s, evidence)
        ok = same(want, got) if same is not None else _version(want) == _version(got)
        out.append(Check(key=key, expected=want, got=got, ok=bool(ok)))
    return out
