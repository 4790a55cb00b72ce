"""What paths, prompts and settings in a paste say about the machine: the Python of ``.../python3.10/site-packages``
and of ``_C.cpython-310-x86_64-linux-gnu.so``, the platform of ``/lib/aarch64-linux-gnu``, ``C:\\Users``
(Windows) and ``/mnt/c/`` (WSL), environment variables set (``CUDA_VISIBLE_DEVICES=1``,
``os.environ["CUDA_VISIBLE_DEVICES"] = "0"``, compose's ``NVIDIA_VISIBLE_DEVICES: all``), containers
(``nvcr.io/nvidia/pytorch:24.08-py3``, a shell prompt ``root@f6ca99dec4b4:``), the directory vLLM's Python
files were loaded from (``File "/src/vllm/vllm/engine/llm.py"`` -> ``/src/vllm``), and a Jetson's L4T release
(``/etc/nv_tegra_release``, jtop's ``L4T: 36.3.0``, the nvidia-l4t-core package).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .collect import Collector
from .collect_env import read_platform_string
from .lines import Line
from .model import DOWNLOAD, MESSAGE, PROSE, REPORT, Dist

__all__ = ["EnvironmentReader", "ENV_VARS"]

Handler = Callable[[re.Match[str], Line, Collector], None]

#: the environment variables kept (what decides which GPUs, CUDA and libraries a process gets, and builds)
ENV_VARS = (r"CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES"
            r"|NVIDIA_DRIVER_CAPABILITIES|CUDA_HOME|CUDA_PATH|LD_LIBRARY_PATH|LD_PRELOAD|TORCH_CUDA_ARCH_LIST"
            r"|MAX_JOBS|NVCC_THREADS|PJRT_DEVICE|VLLM_[A-Z0-9_]+")
_ENV_RE = re.compile(rf"(?<![\w.])(?P<name>{ENV_VARS})(?:['\"]\])?\s*(?:=|:(?!:))\s*"
                     r"(?:f?(?P<q>['\"])(?P<quoted>[^'\"]*)(?P=q)?|(?P<bare>[^\s'\";)]*))")
_IMAGE_RE = re.compile(r"(?<![\w./-])((?:nvcr\.io|docker\.io|ghcr\.io|quay\.io)/[\w.-]+(?:/[\w.-]+)*:[\w.-]+"
                       r"|(?:vllm/vllm-openai|nvidia/cuda|pytorch/pytorch|rocm/[\w.-]+|lmsysorg/sglang)(?::[\w.-]+)?)")


def _python_path(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", m["v"], line, MESSAGE, "path", m.span())


def _cpython_tag(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("python", f"3.{m['minor']}", line, MESSAGE if m["ext"] else DOWNLOAD, "path", m.span())


def _python_home(m: re.Match[str], line: Line, out: Collector) -> None:
    """A Python's own directory: Windows' ``C:\\Python313\\``, ``...\\Programs\\Python\\Python311\\``; macOS'
    ``Python.framework/Versions/3.11/``."""
    out.add("python", f"3.{m['minor']}" if m["minor"] else m["v"], line, MESSAGE, "path", m.span())
    out.add("system", "windows" if m["minor"] else "darwin", line, MESSAGE, "path", m.span())


def _bits(m: re.Match[str], line: Line, out: Collector) -> None:
    """A 32-bit or 64-bit interpreter: Windows' ``Python37-32`` directory, collect_env's ``(32-bit runtime)``, a
    ``win32`` wheel."""
    out.add("python_bits", 32 if "32" in m[0] else 64, line, MESSAGE, "path", m.span())


def _os_wheel(m: re.Match[str], line: Line, out: Collector) -> None:
    """A Windows or macOS wheel's platform tag (``win_amd64``, ``macosx_10_9_x86_64``): the platform it was for."""
    tag = m["tag"]
    system = "windows" if tag.startswith("win") else "darwin"
    out.add("system", system, line, DOWNLOAD, "wheel", m.span())
    machine = "aarch64" if tag.endswith("arm64") else "x86_64" if tag.endswith(("x86_64", "amd64")) else None
    if machine is not None:
        out.add("machine", machine, line, DOWNLOAD, "wheel", m.span())


def _python_image(m: re.Match[str], line: Line, out: Collector) -> None:
    """The official Python container image (``python:3.12-slim``, ``FROM python:3.11``): its interpreter."""
    out.add("python", m["v"], line, PROSE, "image", m.span())


def _python_said(m: re.Match[str], line: Line, out: Collector) -> None:
    """A line that starts by naming the Python (``Python 3.11.1 , even with ...``, ``Python Version: (Python
    3.13.0)``): what ``python --version`` prints, or the user's words."""
    out.add("python", m["v"], line, PROSE, "prose", m.span())


def _triplet(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("machine", m["machine"], line, MESSAGE, "path", m.span())
    out.add("system", "linux", line, MESSAGE, "path", m.span())


def _wheel_platform(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("machine", m["machine"], line, DOWNLOAD, "wheel", m.span())
    out.add("system", "linux", line, DOWNLOAD, "wheel", m.span())


def _windows(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("system", "windows", line, MESSAGE, "path", m.span())


def _wsl(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("wsl", True, line, MESSAGE, "path", m.span())
    out.add("system", "linux", line, MESSAGE, "path", m.span())


def _platform_string(m: re.Match[str], line: Line, out: Collector) -> None:
    read_platform_string(m[1], line, out, MESSAGE, "platform")


def _env(m: re.Match[str], line: Line, out: Collector) -> None:
    value = m["quoted"] if m["quoted"] is not None else (m["bare"] or "").rstrip(".,")
    if value is None or (not value and m["q"] is None):
        return
    out.add("env", (m["name"], value), line, MESSAGE if "=" in m[0] else PROSE, "environment", m.span())
    if m["name"] == "LD_LIBRARY_PATH":
        entries = tuple(e for e in value.split(":") if e and not any(c in e for c in "{}$"))
        if entries:
            out.add("ld_library_path", entries, line, MESSAGE, "environment", m.span())


def _vllm_path(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("vllm_paths", m["root"], line, MESSAGE, "path", m.span())


def _image(m: re.Match[str], line: Line, out: Collector) -> None:
    image = m[1]
    out.add("container", image, line, PROSE, "image", m.span())
    tag = re.match(r"vllm/vllm-openai:v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)$", image)
    if tag:
        out.add_dist(Dist(name="vllm", version=tag[1]), line, PROSE, "image tag")


def _tegra_release(m: re.Match[str], line: Line, out: Collector) -> None:
    """/etc/nv_tegra_release's first line: ``# R36 (release), REVISION: 4.3, GCID: ...`` is L4T 36.4.3."""
    out.add("l4t", f"{m['major']}.{m['rev']}", line, REPORT, "nv_tegra_release", m.span())


def _l4t_named(m: re.Match[str], line: Line, out: Collector) -> None:
    """``L4T: 36.3.0`` (jtop), ``[L4T 36.3.0]`` (jetson_release), ``L4T Release: R35.4.1``, ``L4T R36.4.3``."""
    out.add("l4t", m["v"], line, MESSAGE, "l4t", m.span())


def _l4t_package(m: re.Match[str], line: Line, out: Collector) -> None:
    """The nvidia-l4t-core package's version: ``nvidia-l4t-core/stable,now 36.3.0-20240719161631`` (apt list),
    ``ii  nvidia-l4t-core  36.4.3-20250107174145`` (dpkg -l)."""
    out.add("l4t", m["v"], line, REPORT, "nvidia-l4t-core", m.span())


def _prompt(m: re.Match[str], line: Line, out: Collector) -> None:
    out.add("container", "docker", line, MESSAGE, "prompt", m.span())


#: (literals one of which the line must hold, the pattern, what it says)
RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], Handler], ...] = (
    (("python",), re.compile(r"[/\\](?:lib|lib64|Lib|include)[/\\]python(?P<v>\d\.\d{1,2})(?:[/\\]|$)"), _python_path),
    (("\\Python3", "Python.framework/Versions/3."), re.compile(
        r"\\Python3(?P<minor>\d{1,2})(?:-(?:32|64|arm64))?\\|Python\.framework/Versions/(?P<v>3\.\d{1,2})/"),
     _python_home),
    (("-32\\", "bit runtime)", "win32.whl"), re.compile(
        r"\\Python3\d{1,2}-32\\|\((?:32|64)-bit runtime\)|-win32\.whl"), _bits),
    ((".whl",), re.compile(r"-(?P<tag>win_amd64|win_arm64|macosx_\d+_\d+_(?:x86_64|arm64|universal2))\.whl"), _os_wheel),
    (("python:3",), re.compile(r"(?<![\w/.-])python:(?P<v>3\.\d{1,2})(?![\d.])"), _python_image),
    (("Python 3",), re.compile(r"^\W{0,3}(?:Python [Vv]ersion:\s*\(?)?Python (?P<v>3\.\d{1,2}(?:\.\d{1,2})?)(?![\d.])"),
     _python_said),
    (("cpython-3", "-cp3"), re.compile(r"(?:(?P<ext>\.cpython-)|-cp)3(?P<minor>\d{1,2})[-m]"), _cpython_tag),
    (("-linux-gnu",), re.compile(r"(?P<machine>x86_64|aarch64)-linux-gnu"), _triplet),
    ((".whl",), re.compile(r"(?:manylinux\w*|linux)_(?P<machine>x86_64|aarch64)\.whl"), _wheel_platform),
    ((":\\",), re.compile(r"(?<![\w])[A-Za-z]:\\(?:Users|Program Files|ProgramData|Windows|Python\d+|[\w.-]+\\)"),
     _windows),
    (("/mnt/",), re.compile(r"/mnt/[a-z]/(?:Users|Windows|Program Files)"), _wsl),
    (("-with-glibc",), re.compile(r"\b((?:Linux|Windows|macOS)-[\w.+-]+-with-glibc\d+\.\d+)"), _platform_string),
    (("VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "TORCH_CUDA_ARCH_LIST",
      "MAX_JOBS", "NVCC_THREADS", "PJRT_DEVICE", "VLLM_", "DRIVER_CAPABILITIES"), _ENV_RE, _env),
    (("nvcr.io", "docker.io", "ghcr.io", "quay.io", "vllm-openai", "nvidia/cuda", "pytorch/pytorch", "rocm/",
      "sglang"), _IMAGE_RE, _image),
    (("root@",), re.compile(r"\broot@[0-9a-f]{12}:"), _prompt),
    # a Jetson's L4T release
    (("(release), REVISION",), re.compile(r"#\s*R(?P<major>\d{2})\s*\(release\),\s*REVISION:\s*(?P<rev>\d{1,2}\.\d{1,2})\b"),
     _tegra_release),
    (("L4T",), re.compile(r"\bL4T(?: [Rr]elease)?[:*\s]{0,6}R?(?P<v>\d{2}\.\d{1,2}(?:\.\d{1,2})?)(?![\d.])"), _l4t_named),
    (("nvidia-l4t-core",), re.compile(r"\bnvidia-l4t-core(?:/[\w.-]+,now|:arm64)?\s+(?P<v>\d{2}\.\d{1,2}\.\d{1,2})-\d"),
     _l4t_package),
    # where vLLM's Python files were loaded from: a traceback's frame, a warning's location
    (("/vllm/", "\\vllm\\"), re.compile(r"(?:File \"|^\s*)(?P<root>[^\s\"]*)[/\\]vllm[/\\][\w.-]+(?:[/\\][\w.-]+)*\.py(?:\"|:\d)"),
     _vllm_path),
)


class EnvironmentReader:
    """Paths, environment variables and containers (see the module's docstring)."""

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if "compose" in line.prefixes:
            out.add("container", "docker compose", line, MESSAGE, "log prefix")
        found = False
        for needles, pattern, handler in RULES:
            for needle in needles:  # (a loop, not any(): this runs for every line of a big log)
                if needle in body:
                    break
            else:
                continue
            for m in pattern.finditer(body):
                handler(m, line, out)
                found = True
        return found
