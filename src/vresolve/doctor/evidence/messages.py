"""Facts in programs' own messages: the CUDA a driver serves, GPUs and capabilities named in errors, torch's arch
list, the toolkit check of ``torch.utils.cpp_extension``, modules that fail to import, undefined symbols, shared
libraries, versions that vLLM, xFormers and FlashInfer print.

Input::

    The NVIDIA driver on your system is too old (found version 11040).         cuda_driver 11.4
    NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible ...   GPU, capability 12.0
    The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70.   torch's arch list
    The detected CUDA version (12.1) mismatches the version that was used to compile
    PyTorch (11.8). Please make sure to use the same CUDA versions.             nvcc 12.1, torch's CUDA 11.8
    ImportError: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi  vllm._C, a torch symbol
    ImportError: libcudart.so.12: cannot open shared object file                 libcudart.so.12, missing
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from ...values import Capability, DriverVersion
from .collect import Collector, apply_rules
from .lines import Line
from .model import MESSAGE, BuiltFor, Dist, Gpu, ImportFailure, Library, Nvcc
from .symbols import attribute
from .tokens import VERSION, cuda_of_number, dist_name

__all__ = ["MessageReader", "module_of"]

HOW = "message"
#: a toolkit check's versions could come from an isolated build's torch: worth a little less than a message
TOOLKIT_CHECK = MESSAGE + 8

Handler = Callable[[re.Match[str], Line, Collector], None]

_EXTENSION_RE = re.compile(r"(?:\.abi3|\.cpython-[\w-]+|\.cp\d+-[\w-]+)?\.(?:so|pyd)$")
# a Python extension module's file (not a shared library: libcusparse.so.12, libtorchaudio.so)
_MODULE_FILE_RE = re.compile(r"(?:^|/)(?!lib)\w+(?:\.abi3|\.cpython-[\w-]+)?\.(?:so|pyd)$")
_MISSING = ("cannot open shared object", "no such file", "cannot find", "cannot found", "failed to load",
            "could not load", "unable to load", "not found", "couldn't open", "could not open")


#: a library found and loaded whose initialization failed (not a missing library)
_INIT_FAILED_RE = re.compile(r"\binit(?:iali[sz]ation)? (?:failure|failed|error)\b")


def module_of(path: str) -> str:
    """The dotted module a compiled extension's file is: ``/x/site-packages/vllm/_C.abi3.so`` -> ``vllm._C``."""
    for anchor in ("site-packages/", "dist-packages/"):
        if anchor in path:
            path = path.rsplit(anchor, 1)[1]
            break
    else:
        path = path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1] if path.count("/") >= 2 else path
    return _EXTENSION_RE.sub("", path).strip("/").replace("/", ".")


def _gpu(out: Collector, line: Line, name: str | None, cc: Capability | None, span: tuple[int, int]) -> None:
    out.add("gpus", Gpu(name=name.strip() if name else None, compute_capability=cc), line, MESSAGE, HOW, span)


def _found_version(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("cuda_driver", cuda_of_number(int(m[1])), line, MESSAGE, HOW, m.span())


def _bf16(m: re.Match[str], line: Line, out: Collector) -> None:
    _gpu(out, line, m["name"], Capability.parse(m["cc"]), m.span())


def _current_capability(m: re.Match[str], line: Line, out: Collector) -> None:
    _gpu(out, line, None, Capability.parse(m["cc"]), m.span())


def _sm_not_compatible(m: re.Match[str], line: Line, out: Collector) -> None:
    _gpu(out, line, m["name"], Capability.parse(m["sm"]), m.span())


def _if_you_want(m: re.Match[str], line: Line, out: Collector) -> None:
    _gpu(out, line, m["name"], None, m.span())


def _device_capability(m: re.Match[str], line: Line, out: Collector) -> None:
    if not out.near("ggml-not-cuda", line, 16):  # (under ggml's "found N ROCm devices" the number is a gfx's)
        _gpu(out, line, m["name"], Capability.parse(m["cc"]), m.span())


def _arch_list(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("torch_arch_list", tuple(m["archs"].split()), line, MESSAGE, HOW, m.span())


def _toolkit_check(m: re.Match[str], line: Line, out: Collector) -> None:
    """``The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.8)``: the
    ``PyTorch (11.8)`` part often on the next line. In an isolated build (a ``pip-build-env`` path nearby) the
    torch is the build environment's, not the one installed."""
    if m["nvcc"]:
        out.add("nvcc", Nvcc(release=m["nvcc"]), line, TOOLKIT_CHECK, "toolkit check", m.span())
        out.mark("toolkit-check", line)
    if m["torch"] and (m["nvcc"] or out.near("toolkit-check", line, 1)):
        isolated = out.near("build-env", line, 12)
        field = "build_env_torch_cuda" if isolated else "torch_cuda"
        out.add(field, m["torch"], line, TOOLKIT_CHECK, "toolkit check", m.span())


def _undefined(m: re.Match[str], line: Line, out: Collector) -> None:
    name = m["symbol"].rstrip("'\"`),.;")
    path = m["path"]
    library = path.rsplit("/", 1)[-1] if path else None
    out.add("symbols", attribute(name, library), line, MESSAGE, HOW, m.span())
    if path and _MODULE_FILE_RE.search(path):
        out.add("import_failures", ImportFailure(module=module_of(path), error=f"undefined symbol: {name}"),
                line, MESSAGE, HOW, m.span())


def _glibc_required(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("glibc_required", m[1], line, MESSAGE, HOW, m.span())


def _libraries(m: re.Match[str], line: Line, out: Collector) -> None:
    lower = line.lower
    # "libc.so.6: version `GLIBC_2.32' not found": the library is there, a symbol version is not
    # "undefined symbol" (loaded, an entry point absent) and "wrong ELF class" (a copy for the other word size, skipped)
    # "init failure: 802" (ollama's "Unable to load cudart library X: cuda driver library init failure"): the library
    # is there and loaded, its initialization failed (the code says why)
    missing = any(word in lower for word in _MISSING) and "version `" not in line.body and "version '" not in lower \
        and "undefined symbol" not in lower and "wrong elf class" not in lower and not _INIT_FAILED_RE.search(lower)
    for lib in re.finditer(r"(?<![\w.+-])lib([A-Za-z][\w+-]*?)\.so((?:\.\d+)*)(?![\w-])", line.body):
        version = lib[2].lstrip(".") or None
        out.add("libraries", Library(soname=lib[0], name=lib[1], version=version, missing=missing), line, MESSAGE,
                HOW, lib.span())
    for lib in re.finditer(r"cannot find -l(\w+)", line.body):
        out.add("libraries", Library(soname=f"lib{lib[1]}.so", name=lib[1], missing=True), line, MESSAGE, HOW,
                lib.span())


def _unquote(text: str) -> str:
    """``'libcudart.so.12: cannot open ...')`` -> ``libcudart.so.12: cannot open ...`` (an error's repr, maybe cut)."""
    text = text.strip()
    if text.endswith(")"):
        text = text[:-1].rstrip()
    if text[:1] in ("'", '"'):
        text = text[1:-1] if len(text) > 1 and text.endswith(text[0]) else text[1:]
    return text


def _failed_import(m: re.Match[str], line: Line, out: Collector) -> None:
    error = _unquote(m["error"])
    out.add("import_failures", ImportFailure(module=m["module"], error=error), line, MESSAGE, HOW, m.span())


def _exception(m: re.Match[str], line: Line, out: Collector) -> None:
    """The exception a traceback ends with, kept when the paste shows a traceback (a bare "Error: x" in prose is not one)."""
    if "traceback" in out.kinds:
        out.add("exceptions", line.body.strip(), line, MESSAGE, HOW)


def _imported(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("imported", m["module"], line, MESSAGE, HOW, m.span())


def _torch_required(m: re.Match[str], line: Line, out: Collector) -> None:
    """A build's own check that torch imports (``please install PyTorch first!``): torch is not importable there, said
    as Python says a module it does not find (not a torch that fails to load: no library is missing)."""
    out.add("import_failures", ImportFailure(module="torch", error=f"No module named 'torch' in the build ({m[0]})"),
            line, MESSAGE, HOW, m.span())


def _python_warning(m: re.Match[str], line: Line, out: Collector) -> None:
    """Python's warning line (``/x/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:``): it and the
    next line (the rest of its message) report, they do not fail."""
    out.mark("python-warning", line)


def _no_module(m: re.Match[str], line: Line, out: Collector) -> None:
    if "Failed to import from" not in line.body:
        # inside a warning (vLLM failing to read its commit hash from vllm._version) the import is not a failure
        # unless the paste shows one
        add = out.defer if out.near("python-warning", line, 1) else out.add
        add("import_failures", ImportFailure(module=m[1], error=f"No module named '{m[1]}'"), line, MESSAGE, HOW,
                m.span())


def _dist(field: str, name_group: str = "", name: str = "") -> Handler:
    def handler(m: re.Match[str], line: Line, out: Collector) -> None:
        out.add_dist(Dist(name=dist_name(name or m[name_group]), version=m[field]), line, MESSAGE, HOW)
    return handler


def _xformers_built(m: re.Match[str], line: Line, out: Collector) -> None:
    out.mark("xformers-built-for", line)


def _built_for_torch(m: re.Match[str], line: Line, out: Collector) -> None:
    if out.near("xformers-built-for", line, 3):
        out.add("built_for", BuiltFor(package="xformers", torch=m["built"]), line, MESSAGE, HOW, m.span())
        out.add_dist(Dist(name="torch", version=m["have"]), line, MESSAGE, HOW)


def _built_for_python(m: re.Match[str], line: Line, out: Collector) -> None:
    if out.near("xformers-built-for", line, 4):
        out.add("built_for", BuiltFor(package="xformers", python=m["built"]), line, MESSAGE, HOW, m.span())
        out.add("python", m["have"], line, MESSAGE, HOW, m.span())


def _mismatched_pair(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add_dist(Dist(name=dist_name(m["a"]), version=m["av"]), line, MESSAGE, HOW)
    out.add_dist(Dist(name=dist_name(m["b"]), version=m["bv"]), line, MESSAGE, HOW)


def _detected_driver(m: re.Match[str], line: Line, out: Collector) -> None:
    """NGC's banner: ``... but version 535.104.05 was detected``: the host's driver."""
    out.add("driver", DriverVersion.parse(m["v"]), line, MESSAGE, HOW, m.span())


def _accelerator(m: re.Match[str], line: Line, out: Collector) -> None:
    platform = m["platform"].lower()
    names = {"rocm": "ROCm", "tpu": "TPU", "xpu": "XPU", "hpu": "HPU", "neuron": "Neuron", "cpu": "CPU"}
    if platform in names:
        out.add("accelerator", names[platform], line, MESSAGE, HOW, m.span())


RULES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("found version", re.compile(r"too old \(found version (\d{4,5})\)"), _found_version),
    ("compute capability", re.compile(r"Your (?P<name>.+?) GPU has compute capability (?P<cc>\d+\.\d+)"), _bf16),
    ("Current capability", re.compile(r"Current capability: (?P<cc>\d{2,3})\b"), _current_capability),
    ("CUDA capability sm_", re.compile(r"(?:^|:\s)(?P<name>[A-Za-z][^:]*?) with CUDA capability sm_(?P<sm>\d+) is not "
                                       r"compatible"), _sm_not_compatible),
    ("compute capability", re.compile(r"Device \d+: (?P<name>[^,]+), compute capability (?P<cc>\d+\.\d+)"),
     _device_capability),  # llama.cpp, ggml
    ("compute capability", re.compile(r"name: (?P<name>[^,]+), pci bus id: [^,]+, compute capability: "
                                      r"(?P<cc>\d+\.\d+)"), _device_capability),  # TensorFlow
    ("GPU with PyTorch", re.compile(r"If you want to use the (?P<name>.+?) GPU with PyTorch"), _if_you_want),
    ("CUDA capabilities", re.compile(r"supports CUDA capabilities (?P<archs>(?:(?:sm|compute)_\d+a?\s*)+)"),
     _arch_list),
    ("PyTorch (", re.compile(r"(?:detected CUDA version \((?P<nvcc>\d+\.\d+)\) mismatches.*?)?"
                             r"(?:^\s*|compile\s+)PyTorch \((?P<torch>\d+\.\d+)\)"), _toolkit_check),
    ("mismatches", re.compile(r"detected CUDA version \((?P<nvcc>\d+\.\d+)\) mismatches(?!.*PyTorch \()(?P<torch>)"),
     _toolkit_check),
    ("undefined", re.compile(r"(?:(?P<path>[^\s:'\"`(]*(?:/|\.so)[^\s:'\"`(]*):\s+)?undefined (?:symbol|reference to):?\s+[`'‘]?"
                             r"(?P<symbol>[^\s,'\"`’)]+)(?:[’'],?)?(?:,? version (?P<version>\S+))?"), _undefined),
    ("GLIBC_", re.compile(r"GLIBC_(\d+\.\d+(?:\.\d+)?)['`’]? not found"), _glibc_required),
    (".so", re.compile(r"\.so\b"), _libraries),
    ("-l", re.compile(r"cannot find -l\w+"), _libraries),
    ("Failed to import from", re.compile(r"Failed to import from (?P<module>[\w.]+) with \w+\((?P<error>.*)$"),
     _failed_import),
    ("Warning: ", re.compile(r"\.py:\d+: [A-Z]\w*Warning: "), _python_warning),
    ("No module named", re.compile(r"No module named ['\"]?([\w.]*\w)['\"]?"), _no_module),
    ("Error", re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*Error|\w*Exception): \S"), _exception),
    ("import", re.compile(r"(?:^|[\s>`])(?:import|importing|from) (?P<module>torchvision|torchaudio|xformers|flash_attn"
                          r"|flashinfer|vllm|sgl_kernel"
                          # third-party extensions built against torch (PyG's, OpenMMLab's, detectron2, apex)
                          r"|torch[_-](?:scatter|sparse|cluster|spline[_-]conv)|pyg_lib|mmcv|detectron2|apex)\b"),
     _imported),
    ("PyTorch", re.compile(r"requires PyTorch\S* (?:been |to be |is )?installed|please install PyTorch first",
                           re.IGNORECASE), _torch_required),
    ("server version", re.compile(rf"vLLM API server version (?P<v>{VERSION})"), _dist("v", name="vllm")),
    ("LLM engine (v", re.compile(rf"LLM engine \(v(?P<v>{VERSION})\)"), _dist("v", name="vllm")),
    ("but found", re.compile(rf"but found (?P<n>[\w.-]+)==(?P<v>{VERSION})"), _dist("v", "n")),
    # TensorFlow's version as its issue template's scripts print it ("Tensor Flow Version: 2.12.0")
    ("ersion", re.compile(rf"\bTensor ?Flow [Vv]ersion\s*:?\s*v?(?P<v>{VERSION})", re.IGNORECASE),
     _dist("v", name="tensorflow")),
    ("xFormers was built for", re.compile(r"xFormers was built for"), _xformers_built),
    ("you have", re.compile(rf"^\s*PyTorch (?P<built>{VERSION})(?: with CUDA \d+)? \(you have (?P<have>{VERSION})\)"),
     _built_for_torch),
    ("you have", re.compile(rf"^\s*Python\s+(?P<built>{VERSION}) \(you have (?P<have>\d+\.\d+(?:\.\d+)?)\)"),
     _built_for_python),
    ("xFormers ", re.compile(rf"^\s*xFormers (?P<v>{VERSION})\s*$"), _dist("v", name="xformers")),
    ("does not match", re.compile(rf"(?P<a>[\w-]+) version \((?P<av>{VERSION})\) does not match (?P<b>[\w-]+) version "
                                  rf"\((?P<bv>{VERSION})\)"), _mismatched_pair),
    ("was detected", re.compile(r"version (?P<v>\d{3}\.\d+(?:\.\d+)?) was detected"), _detected_driver),
    ("detected platform", re.compile(r"Automatically detected platform (?P<platform>\w+)"), _accelerator),
    ("TPU", re.compile(r"(?:(?<=PJRT_DEVICE=)|(?=TPU device found))(?P<platform>TPU)"), _accelerator),
)


#: the loader's "undefined symbol: NAME" wrapped after "undefined" (a terminal or an issue form's width)
_UNDEFINED_RULES = tuple(rule for rule in RULES if rule[0] == "undefined")


class MessageReader:
    """The facts in programs' messages (see the module's docstring), and an undefined symbol whose message a paste
    wrapped after "undefined" (read across the break, on the first line's number)."""

    def __init__(self) -> None:
        self._prev: Line | None = None

    def feed(self, line: Line, out: Collector) -> bool:
        prev, self._prev = self._prev, line
        if prev is not None and prev.no + 1 == line.no and prev.lower.rstrip().endswith("undefined") \
                and line.lower.lstrip().startswith("symbol:"):
            joined = msgspec.structs.replace(prev, text=f"{prev.text} {line.body.strip()}",
                                             body=f"{prev.body} {line.body.strip()}",
                                             lower=f"{prev.lower} {line.lower.strip()}")
            apply_rules(_UNDEFINED_RULES, joined, out)
        return apply_rules(RULES, line, out)
