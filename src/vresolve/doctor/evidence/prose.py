"""What users write about their setup: ``- PyTorch: 2.3.1+cu121``, ``python 3.12.7``, ``torch 2.6.0``,
``ubuntu20.04+python3.10.14+cuda11.8+cudnn8.9.6+A100``, ``My torch version is 1.8.1.``, ``I use H100 gpu.``,
``Nvidia GeForce RTX 3050 laptop GPU`` on a line of its own, ``GTX 1080 Ti (Compute 6.1)``.

Every fact read here has rank PROSE (a tool's report or a program's message about the same fact wins), but the rows
of a pip list pasted without its header (``torch     2.1.0``: columns). Only lines that no report reader took are
read here, and no program's output (a logger's lines, a traceback's frames: see :mod:`.reader`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...values import Capability, DriverVersion
from .collect import Collector
from .lines import Line
from .model import PROSE, REPORT, Dist, Gpu, Nvcc
from .tokens import cuda_of_local, dist_name, key_value, version_token

__all__ = ["ProseReader", "GPU_PATTERN"]

HOW = "prose"

#: a GPU model as people write it (vendor and family words optional): RTX 4090, RTX3090, GTX 1080 Ti, A100,
#: H100, Tesla V100S, L40S, RTX A6000, RTX 6000 Ada Generation, MI300X
GPU_PATTERN = (r"(?:(?:NVIDIA|Nvidia|nvidia)\s+)?(?:(?:GeForce|Tesla|Quadro|TITAN|Titan)\s+)?"
               r"(?:[Rr][Tt][Xx]\s?(?:PRO\s+)?(?:A\d{4}|\d{4})|[Gg][Tt][Xx]\s?\d{3,4}|(?:10|20|30|40|50)[5-9]0\s?[Tt][Ii]|A\d{2,4}[GX]?|H\d{3}|H20|B\d{3}"
               r"|GB\d{3}|GH\d{3}|L4|L20|L40S?|T4|T400|T600|T1000|T1200|V100S?|P100|P40|K10|K20X?|K40|K80|M10|M40|M60|MI\d{3}X?)"
               r"(?:[ -](?:Ti|SUPER|Super|Laptop GPU|laptop GPU|PCIe|PCIE|SXM\d?|NVL|\d+GB|HBM\d?e?|Ada Generation"
               r"|Max-Q))*")
_GPU_RE = re.compile(rf"(?:(?<![\w/.-])|(?<=\d[x×]))(?P<name>{GPU_PATTERN})(?![\w-])"
                     r"(?:\s*\((?:[Cc]ompute(?: [Cc]apability)?|cc|sm_?)\s*(?P<cc>\d+\.?\d*)\))?")
#: what a line naming a GPU model holds (lower-cased), checked before the pattern
_GPU_NEEDLES = ("gpu", "nvidia", "tesla", "rtx", "gtx", "quadro", "titan", "a100", "h100", "h200", "v100", "a40",
                "a10", "l40", "t4", "l4", "t400", "t600", "t1000", "t1200", "k20", "k40", "m40", "a6000", "a800", "h800", "h20", "b200", "b100", "p100", "p40", "k80", "m60",
                "mi2", "mi3", "gb200", "gh200", "a30", "l20", "0ti", "0 ti")
_MENTION_NEEDLES = ("torch", "vllm", "python", "cud", "flash", "xformers", "triton", "sgl", "transformers", "nvcc",
                    "tensorrt")
_OS_NEEDLES = ("ubuntu", "debian", "centos", "rocky", "alma", "red hat", "rhel", "fedora", "opensuse", "amazon linux",
               "arch linux", "windows", "macos", "tencentos")
#: a program's message (an exception, a logger's level): a GPU it names is an example or a requirement
#: ("only supported on H100", "e.g. H100"), not the user's GPU
_PROGRAM_MESSAGE_RE = re.compile(r"^\s*(?:[\w.]*(?:Error|Exception|Warning|Exit)\b:?|(?:ERROR|WARNING|WARN|CRITICAL|FATAL"
                                 r"|ERR|INFO|DEBUG)\b|\[(?:ERROR|WARNING|WARN)\])")
#: words that make the GPU named right after them an example or a requirement, not the user's
_EXAMPLE_RE = re.compile(r"(?:\be\.g\.?|\bfor example|\bsuch as|\blike|\bsupported on|\brequires?|\bat least|"
                         r"\bneeds?|\bonly on|\bvs\.?)[\s,:(]*(?:an?\s+|the\s+)?(?:NVIDIA\s+)?$", re.IGNORECASE)
#: a GPU architecture named as the user's GPU ("an Ampere GPU", "on Turing cards"), not a floor ("Ampere GPUs or
#: newer", "requires an Ampere GPU": :data:`_EXAMPLE_RE`)
_FAMILY_RE = re.compile(r"\b(?P<family>Kepler|Maxwell|Pascal|Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell)"
                        r"(?: architecture)? (?:GPUs?|cards?|graphics cards?)\b(?! (?:or|and) (?:newer|later|above|higher))")
#: the user's own sentence naming their GPU or its architecture ("GPU is NVIDIA T1000.", "while architecture is Turing")
_GPU_IS_RE = re.compile(r"^(?:(?:my|the|our)\s+)?GPUs?\s+(?:is|are)\s+(?:an?\s+)?(?P<rest>.{2,60}?)\s*[.。]?$", re.IGNORECASE)
_ARCH_IS_RE = re.compile(r"\barchitecture is (?:an? )?(?P<family>Kepler|Maxwell|Pascal|Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b")
_BARE_GPU_RE = re.compile(r"^(?:NVIDIA|Nvidia|Tesla|Quadro|GeForce|AMD Instinct)\b[\w .()-]{0,60}$")
_MENTION_RE = re.compile(
    r"(?<![\w./-])(?P<name>torch|pytorch|torchvision|torchaudio|vllm|xformers|flash[-_]attn|vllm[-_]flash[-_]attn"
    r"|flashinfer(?:[-_]python)?|triton|sgl[-_]kernel|transformers|tensorrt)"
    r"(?:\s*==?\s*|[_\s]version\s*(?:[:=]\s*|is\s+)?|\s+v|\s+|-(?=\d)|(?=\d))(?P<v>\d+(?:\.\d+)+[\w.+]*)(?![\w/])",
    re.IGNORECASE)
#: a source archive's or a wheel's file ending after the version a file name holds
_ARCHIVE_RE = re.compile(r"\.(?:tar\.gz|tar\.bz2|tar\.xz|tgz|zip|whl|egg)$", re.IGNORECASE)
# no local part: "python3.10.14+cuda11.8+cudnn8.9.6" is three facts
_SPECIAL_RE = re.compile(r"(?<![\w./-])(?P<name>python|cuda|cudnn|nvcc)"
                         r"(?:\s*==?\s*|[_\s]version\s*(?:[:=]\s*|is\s+)?|\s+v|\s+|(?=\d))"
                         r"(?P<v>\d+(?:\.\d+)+)(?![\w/])",
                         re.IGNORECASE)
_OS_RE = re.compile(r"(?<![\w/])(?:Ubuntu|Debian(?: GNU/Linux)?|CentOS(?: Linux)?|Rocky Linux|AlmaLinux"
                    r"|Red Hat Enterprise Linux|RHEL|Fedora|openSUSE(?: Leap)?|Amazon Linux|Arch Linux|Windows|macOS"
                    r"|TencentOS Server)\s?\d+(?:\.\d+)*(?: LTS)?(?![\w.])", re.IGNORECASE)
_DRIVER_RE = re.compile(r"\b(?:driver version|version of the driver|driver)\s+(?:is\s+|:\s*|=\s*)?"
                        r"(?P<v>\d{3}(?:\.\d{1,3}){0,2})(?![\w.])", re.IGNORECASE)
_BACKEND_RE = re.compile(r"torch-backend[= ](?P<variant>cu\d{2,3}|cpu)\b")
#: a machine said to be 64-bit ARM ("an aarch64 machine", "on arm64"; not a wheel's ``_aarch64`` tag, read with it)
_AARCH64_RE = re.compile(r"(?<![\w/.-])(?:aarch64|arm64|sbsa)\b", re.IGNORECASE)
_JETSON_RE = re.compile(r"\b(?P<board>Jetson(?: AGX| Orin| Xavier| Nano| TX2| NX)*)|\b[Jj]et[Pp]ack\b")
_WSL_RE = re.compile(r"\bWSL2?\b")
_ROW_RE = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9._-]*)(?P<gap>\s+)v?(?P<v>\d[\w.+!]*)\s*$")
_NOT_A_VERSION_NEXT = ("~", "-", "*", "x ")
#: a command line asking an installer for a release (``$ pip install torch==2.5.1``, after a prompt or alone on its
#: line; not prose that says what was installed): what it names is a request, not what is installed (pip's own
#: lines say what it installed, or why it did not)
_INSTALL_COMMAND_RE = re.compile(r"(?:^\s*|[$>#!`]\s*)(?:sudo\s+)?(?:python3?(?:\.exe)?\s+-m\s+)?"
                                 r"(?:pip3?(?:\.exe)?|uv pip|conda|mamba|micromamba)\s+install\b")

Handler = Callable[[str, Line, Collector], bool]  # whether it read a fact


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    for needle in needles:  # (a loop, not any(): faster, and this runs for most lines of a big log)
        if needle in text:
            return True
    return False


def _version_field(field: str) -> Handler:
    def handler(value: str, line: Line, out: Collector) -> bool:
        version = version_token(value)
        if version:
            out.add(field, version, line, PROSE, HOW)
            return True
        return False
    return handler


def _dist(name: str) -> Handler:
    def handler(value: str, line: Line, out: Collector) -> bool:
        version = version_token(value)
        if version:
            out.add_dist(Dist(name=name, version=version), line, PROSE, HOW)
            return True
        return False
    return handler


def _os(value: str, line: Line, out: Collector) -> bool:
    if value and value[0].isalpha():
        out.add("os", value, line, PROSE, HOW)
        return True
    return False


def _gpu(value: str, line: Line, out: Collector) -> bool:
    name = re.sub(r"^\d+\s*[x×*]\s*", "", value.strip(" .。,;"))  # "2x A100 80GB"
    if name and name[0].isalnum():
        out.add("gpus", Gpu(name=name), line, PROSE, HOW)
        return True
    return False


def _driver(value: str, line: Line, out: Collector) -> bool:
    version = version_token(value)
    if version and re.fullmatch(r"\d{3}(?:\.\d+){0,2}", version):
        out.add("driver", DriverVersion.parse(version), line, PROSE, HOW)
        return True
    return False


def _cc(text: str | None) -> Capability | None:
    try:
        return Capability.parse(text) if text else None
    except ValueError:
        return None


def _capability(value: str, line: Line, out: Collector) -> bool:
    cc = _cc(value.split()[0]) if value else None
    if cc is not None:
        out.add("gpus", Gpu(compute_capability=cc), line, PROSE, HOW)
        return True
    return False


def _nvcc(value: str, line: Line, out: Collector) -> bool:
    version = version_token(value)
    if version:
        out.add("nvcc", Nvcc(release=".".join(version.split(".")[:2])), line, PROSE, HOW)
        return True
    return False


def _container(value: str, line: Line, out: Collector) -> bool:
    if value and " " not in value:
        out.add("container", value, line, PROSE, HOW)
        return True
    return False


def _available(value: str, line: Line, out: Collector) -> bool:
    word = value.split()[0].lower() if value else ""
    if word in ("true", "yes", "false", "no"):
        out.add("cuda_available", word in ("true", "yes"), line, PROSE, HOW)
        return True
    return False


def _built_with_cuda(value: str, line: Line, out: Collector) -> bool:
    """A script's "PyTorch built with CUDA: False" (``torch.backends.cuda.is_built()``): False is a CPU build."""
    word = value.split()[0].lower() if value else ""
    if word in ("false", "no"):
        out.add("torch_cuda", None, line, PROSE, HOW)
        return True
    return False


def _pip(value: str, line: Line, out: Collector) -> bool:
    version = version_token(value)
    if version:
        out.add("tools", ("pip", version), line, PROSE, HOW)
        return True
    return False


KEYS: dict[str, Handler] = {
    **dict.fromkeys(("python", "python version", "python_version"), _version_field("python")),
    **dict.fromkeys(("os", "system", "operating system", "operating systems", "distro", "os platform",
                     "os platform and distribution", "os version", "platform"), _os),
    **dict.fromkeys(("cuda", "cuda version", "cuda/cudnn version", "cuda_version", "cuda toolkit", "cuda toolkit version"),
                    _version_field("cuda")),
    **dict.fromkeys(("cudnn", "cudnn version"), _version_field("cudnn")),
    **dict.fromkeys(("gpu", "gpus", "gpu model", "gpu type", "graphics card", "gpu name", "gpu model and memory"),
                    _gpu),
    **dict.fromkeys(("driver", "driver version", "nvidia driver", "nvidia driver version", "gpu driver"), _driver),
    **dict.fromkeys(("torch", "pytorch", "torch version", "pytorch version", "torch_version"), _dist("torch")),
    **dict.fromkeys(("vllm", "vllm version"), _dist("vllm")),
    **dict.fromkeys(("compute capability", "cuda capability", "compute cap"), _capability),
    **dict.fromkeys(("nvcc", "nvcc version"), _nvcc),
    **dict.fromkeys(("cuda available", "cuda is available", "gpu available"), _available),
    **dict.fromkeys(("pytorch built with cuda", "torch built with cuda", "built with cuda"), _built_with_cuda),
    **dict.fromkeys(("docker image", "image", "container", "container image"), _container),
    "pip version": _pip,
}
_SPECIAL = {"python": "python", "cuda": "cuda", "cudnn": "cudnn"}


def _families(body: str, line: Line, out: Collector) -> None:
    """The GPU architectures a user says they have ("an Ampere GPU", "architecture is Turing"), not one a requirement
    names."""
    for m in (*_FAMILY_RE.finditer(body), *_ARCH_IS_RE.finditer(body)):
        if not _EXAMPLE_RE.search(body, max(0, m.start() - 40), m.start()):
            out.add("gpu_families", m["family"].split()[0].lower(), line, PROSE, HOW, m.span())


#: a GitHub issue form's field: a heading (``### Python version``) whose answer is the next line (``3.9.10``)
_FORM_HEADING_RE = re.compile(r"^#{2,4}\s+(?P<key>[^#:]{2,52}?)\s*$")


class ProseReader:
    """A user's words about the setup (see the module's docstring)."""

    def __init__(self) -> None:
        self._heading: str | None = None  # an issue form's field whose answer may be the next line

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body.strip()
        if not body:
            return False
        heading, self._heading = self._heading, None
        if (m := _FORM_HEADING_RE.match(body)) is not None:
            self._heading = m["key"]
            return True
        if heading is not None and len(body) <= 80 and self._key_value(f"{heading}: {body}", line, out):
            return True  # "### OS Platform and Distribution" then "Windows 11": read as one field
        if self._key_value(body, line, out) or self._row(body, line, out):
            return True
        if _BARE_GPU_RE.match(body) and _GPU_RE.search(body):
            out.add("gpus", Gpu(name=body.rstrip(" .。")), line, PROSE, HOW)
            return True
        said = _GPU_IS_RE.match(body)
        if said is not None and _BARE_GPU_RE.match(said["rest"]) and _GPU_RE.search(said["rest"]):
            out.add("gpus", Gpu(name=said["rest"].rstrip(" .。")), line, PROSE, HOW)  # "GPU is NVIDIA T1000."
            return True
        self._mentions(body, line, out)
        return False

    @staticmethod
    def _key_value(body: str, line: Line, out: Collector) -> bool:
        kv = key_value(body)
        if kv is None:
            return False
        key, value = kv
        key = " ".join(key.replace("版本", " version").split())  # "Python版本：3.10.11" (read "Python 版本:3.10.11")
        handler = KEYS.get(key)
        if handler is not None:  # (one that reads nothing leaves the line to the words' reading: "CUDA: Cuda 9.0")
            return handler(value, line, out)
        named = re.fullmatch(r"(?P<name>[a-z][a-z0-9._-]*)(?: version)?", key)
        version = version_token(value) if named is not None else None
        if named is not None and version and "." in version and version == value.lstrip("v"):
            out.add_dist(Dist(name=dist_name(named["name"]), version=version), line, PROSE, HOW)  # "flash-attn: 2.5.7"
            return True
        return False

    @staticmethod
    def _row(body: str, line: Line, out: Collector) -> bool:
        """``torch    2.9.1`` (a pip list's row without its header), ``python 3.12.7+gc``, ``cuda 12.8``."""
        m = _ROW_RE.match(body)
        version = version_token(m["v"]) if m else None
        if m is None or not version:
            return False
        name = m["name"].lower()
        if name in _SPECIAL:
            out.add(_SPECIAL[name], version, line, PROSE, HOW)
        elif name in ("ubuntu", "debian", "centos", "fedora", "windows", "macos", "version", "release", "step"):
            return False
        elif len(m["gap"]) >= 2:  # columns: a pip list's row without its header ("pip list | grep torch")
            out.kinds.add("pip_list")
            out.add_dist(Dist(name=dist_name(name), version=version), line, REPORT, "pip list")
        else:
            out.add_dist(Dist(name=dist_name(name), version=version), line, PROSE, HOW)
        return True

    def _mentions(self, body: str, line: Line, out: Collector) -> None:
        lower = line.lower
        if _holds(lower, _MENTION_NEEDLES) and not (" install" in lower and _INSTALL_COMMAND_RE.search(lower)):
            for m in (*_MENTION_RE.finditer(body), *_SPECIAL_RE.finditer(body)):
                self._mention(m, body, line, out)
        if _holds(lower, _OS_NEEDLES):
            for m in _OS_RE.finditer(body):
                out.add("os", m[0], line, PROSE, HOW, m.span())
        if _holds(lower, _GPU_NEEDLES) and not _PROGRAM_MESSAGE_RE.match(body):
            for m in _GPU_RE.finditer(body):
                if not _EXAMPLE_RE.search(body, max(0, m.start() - 40), m.start()):
                    out.add("gpus", Gpu(name=m["name"], compute_capability=_cc(m["cc"])), line, PROSE, HOW,
                            m.span())
        if ("gpu" in lower or "card" in lower or "architecture is" in lower) and not _PROGRAM_MESSAGE_RE.match(body):
            _families(body, line, out)
        if "river" in body and (d := _DRIVER_RE.search(body)):
            out.add("driver", DriverVersion.parse(d["v"]), line, PROSE, HOW, d.span())
        self._platform(body, line, out)

    @staticmethod
    def _mention(m: re.Match[str], body: str, line: Line, out: Collector) -> None:
        if body[m.end():m.end() + 2].startswith(_NOT_A_VERSION_NEXT):
            return  # a range ("2.4.2~2.5.8"), a wildcard
        version = _ARCHIVE_RE.sub("", m["v"]).rstrip(".")  # "flash_attn-2.7.4.post1.tar.gz": its version
        version = version[:-2] if version.endswith(".x") else version
        name = m["name"].lower()
        if name in _SPECIAL:
            out.add(_SPECIAL[name], version, line, PROSE, HOW, m.span())
        elif name == "nvcc":
            out.add("nvcc", Nvcc(release=".".join(version.split(".")[:2])), line, PROSE, HOW, m.span())
        else:
            out.add_dist(Dist(name=dist_name(name), version=version), line, PROSE, HOW)

    @staticmethod
    def _platform(body: str, line: Line, out: Collector) -> None:
        if "backend" in body and (b := _BACKEND_RE.search(body)):
            out.add("torch_cuda", cuda_of_local(f"0+{b['variant']}"), line, PROSE, HOW, b.span())
        if ("arch64" in body or "rm64" in body or "sbsa" in body) and (a := _AARCH64_RE.search(body)):
            out.add("machine", "aarch64", line, PROSE + 5, HOW, a.span())
        if ("etson" in body or "etpack" in body.lower()) and (j := _JETSON_RE.search(body)):
            out.add("jetson", j["board"] or "Jetson", line, PROSE, HOW, j.span())
            out.add("machine", "aarch64", line, PROSE + 5, HOW, j.span())
            out.add("system", "linux", line, PROSE + 5, HOW, j.span())
        if "WSL" in body and (w := _WSL_RE.search(body)):
            out.add("wsl", True, line, PROSE, HOW, w.span())
