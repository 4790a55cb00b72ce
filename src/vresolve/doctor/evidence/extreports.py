"""Compiled packages' environment reports, read as reports: detectron2's ``python -m detectron2.utils.collect_env``
table and OpenMMLab's ``collect_env`` (mmcv, mmdet, mmengine: ``python mmdet/utils/collect_env.py``).

Input::

    sys.platform            linux                              detectron2 (detectron2/utils/collect_env.py: a
    detectron2              0.1.3 @/home/u/detectron2/detectron2   tabulate table, key and value apart by 2+ spaces)
    CUDA compiler           CUDA 10.1                          the CUDA detectron2's _C was compiled with
    detectron2 arch flags   sm_37                              SASS in its _C (cuobjdump --list-elf)
    PyTorch                 1.4.0 @/.../site-packages/torch
    GPU available           True                               (older: "CUDA available")
    GPU 0                   Tesla V100-SXM2-16GB (arch=7.0)    (older: without "(arch=...)")
    Driver version          470.57.02
    torchvision             0.5.0 @/.../torchvision
    torchvision arch flags  sm_35, sm_50, sm_60, sm_70, sm_75

    TorchVision: 0.9.1+cu111                                   OpenMMLab (mmcv/utils/env.py collect_env, printed
    MMCV: 1.3.8                                                "key: value"; its "GPU 0,1: NAME", "PyTorch: ...",
    MMCV Compiler: GCC 7.3                                     "CUDA available: ..." and "NVCC: ..." lines are read
    MMCV CUDA Compiler: 11.3                                   by .envtools and .smi)

    pytorch.version:                  2.0.1+cu118              xFormers' ``python -m xformers.info`` (xformers/info.py:
    pytorch.cuda:                     available                its keys are its own; "build.*" is the build's record)
    gpu.compute_capability:           6.0
    gpu.name:                         Tesla P100-PCIE-16GB
    build.cuda_version:               1108                     the CUDA it was built with (11.8, as its warning's
    build.python_version:             3.10.11                  "with CUDA 1201" is 12.1)
    build.torch_version:              2.0.1+cu118
    build.env.TORCH_CUDA_ARCH_LIST:   5.0+PTX 6.0 6.1 7.0 7.5 8.0+PTX 9.0

    OrderedDict([('cpu_compiler', '/opt/rh/devtoolset-9/root/usr/bin/gcc'), ('cuda_compute_capabilities', ['sm_52',
    'sm_60', 'sm_86', 'compute_90']), ('cuda_version', '12.1'), ('cudnn_version', '8'), ('is_cuda_build', True), ...])
                                                               TensorFlow's tf.sysconfig.get_build_info() (one line, or
                                                               a tuple a line; Windows' CUDA: '64_112' is 11.2)

detectron2's rows are read once one of its own keys (``sys.platform``, ``detectron2``...) was seen. Its arch flags
list the SASS the library carries (``cuobjdump --list-elf``), not its PTX; a value that is not such a list (a path,
"...; cannot find cuobjdump") gives no fact. "CUDA compiler" is the CUDA the library was built with where _C
imports, and the machine's nvcc's last line (``Build cuda_11.1.TC455_06.29190527_0``) where it does not: read
as nvcc's release then.
"""

from __future__ import annotations

import re

from ...values import Capability, DriverVersion
from .collect import Collector
from .lines import Line
from .model import REPORT, BuiltFor, Dist, ExtBuild, Gpu, Nvcc
from .tokens import NOT_SHOWN, key_value, version_token

__all__ = ["ExtReportsReader"]

D2 = "detectron2.utils.collect_env"
MM = "mmcv collect_env"
XF = "xformers.info"

_ROW_RE = re.compile(r"^(?P<key>[A-Za-z_][\w.$(),]*(?: [\w.$(),]+)*)\s{2,}(?P<value>\S.*?)\s*$")
_RULE_RE = re.compile(r"^-{5,}\s+-{5,}\s*$")
_D2_KEYS = frozenset({"sys.platform", "detectron2", "detectron2._c", "detectron2 arch flags", "detectron2_env_module",
                      "detectron2 compiler", "detectron2 cuda compiler"})
_GPU_KEY_RE = re.compile(r"^gpu (?P<idx>\d{1,2}(?:,\d{1,2})*)$")
_GPU_VALUE_RE = re.compile(r"^(?P<name>[^()]*?\S)(?:\s+\(arch=(?P<cc>\d{1,2}\.\d)\))?$")
_ARCH_RE = re.compile(r"^(?:sm_\d{2,3}[af]?|\d{1,2}\.\d)$")
_CUDA_RE = re.compile(r"^(?:CUDA\s+)?(?P<v>\d{1,2}\.\d{1,2})(?:\.\d+)?$")
_NVCC_BUILD_RE = re.compile(r"^Build cuda_(?P<v>\d{1,2}\.\d{1,2})\.")
_TF_ARCHS_RE = re.compile(r"\('cuda_compute_capabilities', \[(?P<archs>[^\]]*)\]")
_TF_CUDA_RE = re.compile(r"\('cuda_version', '(?:(?P<v>\d{1,2}\.\d{1,2})(?:\.\d+)?|64_(?P<major>\d{2})(?P<minor>\d))'\)")
_XF_CUDA_RE = re.compile(r"^(?P<major>\d{1,2})(?P<minor>\d{2})$")  # 1108: 11.8, 1201: 12.1
_XF_ARCH_RE = re.compile(r"^(?P<cc>\d{1,2}\.\d)(?P<ptx>\+PTX)?$")


def arch_flags(value: str) -> tuple[str, ...]:
    """detectron2's arch flags (``sm_35, sm_37``; ``3.7, 5.0`` in some editions) as ``sm_NN``; () when any entry
    is not one (a path, a failure's words)."""
    parts = [p.strip() for p in value.split(",")]
    if not parts or not all(_ARCH_RE.match(p) for p in parts):
        return ()
    return tuple(dict.fromkeys(Capability.parse(p).sm if "." in p else p for p in parts))


def built_cuda(value: str) -> str | None:
    """The CUDA a library says it was compiled with: ``10.1``, ``CUDA 10.1``, ``11.3``; None for anything else."""
    m = _CUDA_RE.match(value.strip())
    return m["v"] if m else None


def torch_arch_list(value: str) -> tuple[str, ...]:
    """A TORCH_CUDA_ARCH_LIST (``5.0+PTX 6.0 6.1``, ``7.0;8.0``) as torch.cuda.get_arch_list() names it (``sm_50``,
    ``compute_50``, ...); () when any entry is not a capability (a name such as "Ampere", "None")."""
    out: list[str] = []
    for part in re.split(r"[\s;,]+", value.strip()):
        m = _XF_ARCH_RE.match(part)
        if m is None:
            return ()
        cc = Capability.parse(m["cc"])
        out += [cc.sm] + ([f"compute_{cc.major}{cc.minor}"] if m["ptx"] else [])
    return tuple(dict.fromkeys(out))


class ExtReportsReader:
    """detectron2's table and OpenMMLab's lines (see the module's docstring)."""

    def __init__(self) -> None:
        self._d2 = False  # a detectron2 table's own key was seen
        self._xf_cc: Capability | None = None  # xFormers' gpu.compute_capability, for its gpu.name line after it
        self._xf_rocm = False  # xFormers' pytorch.version is a ROCm build

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body.strip()
        if body.startswith("MMCV") or body.startswith("TorchVision:"):
            return self._mmcv(body, line, out)
        if body.startswith(("pytorch.", "gpu.", "build.", "xFormers ")):
            return self._xformers(body, line, out)
        if "('cuda_" in body:
            return self._tensorflow(body, line, out)
        if _RULE_RE.match(body):
            return self._d2
        m = _ROW_RE.match(body)
        if m is None:
            return False
        key, value = m["key"].lower(), m["value"]
        if key in _D2_KEYS:
            self._d2 = True
            out.markers.add("detectron2-collect-env")
        if not self._d2:
            return False
        return self._d2_row(key, value, line, out)

    def _d2_row(self, key: str, value: str, line: Line, out: Collector) -> bool:
        if value.lower() in NOT_SHOWN:
            return True
        handled = self._d2_package(key, value, line, out) or self._d2_gpu(key, value, line, out)
        if handled is not None:
            return handled
        if key in ("sys.platform", "python"):
            self._d2_platform(key, value, line, out)
        elif key in ("cuda compiler", "detectron2 cuda compiler"):
            if cuda := built_cuda(value):
                out.add("ext_reports", ExtBuild(package="detectron2", cuda=cuda), line, REPORT, D2)
            elif m := _NVCC_BUILD_RE.match(value):
                out.add("nvcc", Nvcc(release=m["v"]), line, REPORT, D2)
        elif key in ("detectron2 arch flags", "torchvision arch flags"):
            if archs := arch_flags(value):
                out.add("ext_reports", ExtBuild(package=key.split()[0], archs=archs), line, REPORT, D2)
        elif key == "driver version" and re.fullmatch(r"\d{3}\.\d{1,3}(?:\.\d{1,3})?", value.strip()):
            out.add("driver", DriverVersion.parse(value.strip()), line, REPORT, D2)
        return True  # one of the table's rows: taken (Pillow, cv2, CUDA_HOME, ...), not prose

    @staticmethod
    def _d2_platform(key: str, value: str, line: Line, out: Collector) -> None:
        if key == "sys.platform":
            system = {"linux": "linux", "win32": "windows", "darwin": "darwin"}.get(value.strip())
            if system is not None:
                out.add("system", system, line, REPORT, D2)
        elif (version := version_token(value)) and version.startswith("3."):
            out.add("python", version, line, REPORT, D2)

    @staticmethod
    def _d2_package(key: str, value: str, line: Line, out: Collector) -> bool | None:
        names = {"detectron2": "detectron2", "pytorch": "torch", "torchvision": "torchvision"}
        if key not in names:
            return None
        version = version_token(value.split(" @")[0])
        if version and (key != "pytorch" or value.split(" @")[0].strip() == version):
            out.add_dist(Dist(name=names[key], version=version), line, REPORT, D2)
        return True

    @staticmethod
    def _d2_gpu(key: str, value: str, line: Line, out: Collector) -> bool | None:
        if key in ("cuda available", "gpu available"):
            word = value.strip().split(":")[0].lower()
            if word in ("true", "yes", "false", "no"):
                out.add("cuda_available", word in ("true", "yes"), line, REPORT, D2)
            return True
        m = _GPU_KEY_RE.match(key)
        if m is None:
            return None
        g = _GPU_VALUE_RE.match(value.strip())
        if g is not None:
            cc = Capability.parse(g["cc"]) if g["cc"] else None
            for idx in m["idx"].split(","):
                out.add("gpus", Gpu(name=g["name"], index=int(idx), compute_capability=cc), line, REPORT, D2)
        return True

    @staticmethod
    def _mmcv(body: str, line: Line, out: Collector) -> bool:
        kv = key_value(body)
        if kv is None:
            return False
        key, value = kv
        if key == "mmcv" and (version := version_token(value)):
            out.add_dist(Dist(name="mmcv", version=version), line, REPORT, MM)
        elif key == "torchvision" and (version := version_token(value)):
            out.add_dist(Dist(name="torchvision", version=version), line, REPORT, MM)
        elif key == "mmcv cuda compiler" and (cuda := built_cuda(value)):
            out.add("ext_reports", ExtBuild(package="mmcv", cuda=cuda), line, REPORT, MM)
        elif key not in ("mmcv compiler", "mmcv cuda compiler"):
            return False
        return True

    def _xformers(self, body: str, line: Line, out: Collector) -> bool:
        if m := re.fullmatch(r"xFormers (\S+)", body):
            if version := version_token(m[1]):
                out.add_dist(Dist(name="xformers", version=version), line, REPORT, XF)
            return version is not None
        kv = key_value(body)
        if kv is None:
            return False
        key, value = kv[0], kv[1].strip()
        if key == "pytorch.version" and (version := version_token(value)):
            self._xf_rocm = "rocm" in version.partition("+")[2].lower()  # its "compute capability" is a gfx number
            out.add_dist(Dist(name="torch", version=version), line, REPORT, XF)
        elif key == "pytorch.cuda" and value in ("available", "not available"):
            out.add("cuda_available", value == "available", line, REPORT, XF)
        elif key in ("gpu.compute_capability", "gpu.name"):
            self._xformers_gpu(key, value, line, out)
        elif key in ("build.torch_version", "build.python_version") and (version := version_token(value)):
            built = BuiltFor(package="xformers", torch=version) if key == "build.torch_version" else \
                BuiltFor(package="xformers", python=version)
            out.add("built_for", built, line, REPORT, XF)
        elif key == "build.cuda_version" and (m := _XF_CUDA_RE.match(value)):
            out.add("ext_reports", ExtBuild(package="xformers", cuda=f"{int(m['major'])}.{int(m['minor'])}"), line,
                    REPORT, XF)
        elif key == "build.env.torch_cuda_arch_list" and (archs := torch_arch_list(value)):
            out.add("ext_reports", ExtBuild(package="xformers", archs=archs), line, REPORT, XF)
        else:
            return key.startswith(("pytorch.", "gpu.", "build."))
        return True

    def _xformers_gpu(self, key: str, value: str, line: Line, out: Collector) -> None:
        if key == "gpu.compute_capability":
            self._xf_cc = Capability.parse(value) if re.fullmatch(r"\d{1,2}\.\d", value) and not self._xf_rocm else None
            if self._xf_cc is not None:
                out.add("gpus", Gpu(compute_capability=self._xf_cc), line, REPORT, XF)
        elif value and value.lower() not in NOT_SHOWN:
            out.add("gpus", Gpu(name=value, compute_capability=self._xf_cc), line, REPORT, XF)

    @staticmethod
    def _tensorflow(body: str, line: Line, out: Collector) -> bool:
        how = "tf.sysconfig.get_build_info()"
        found = False
        if m := _TF_ARCHS_RE.search(body):
            archs = [a.strip().strip("'\"") for a in m["archs"].split(",") if a.strip()]
            if archs and all(re.fullmatch(r"(?:sm|compute)_\d{2,3}[af]?", a) for a in archs):
                out.add("ext_reports", ExtBuild(package="tensorflow", archs=tuple(archs)), line, REPORT, how, m.span())
                found = True
        if m := _TF_CUDA_RE.search(body):
            cuda = m["v"] or f"{int(m['major'])}.{m['minor']}"
            out.add("ext_reports", ExtBuild(package="tensorflow", cuda=cuda), line, REPORT, how, m.span())
            found = True
        return found
