"""doctor's evidence reader: every corpus excerpt read into the facts its sidecar lists, the tricky forms one by one,
the conversion to the probe's objects, and a big input read in bounded memory."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
import yaml

from vresolve.doctor.evidence import Evidence, read_evidence, summary, to_host_facts
from vresolve.doctor.evidence import symbols as symbols_module
from vresolve.doctor.evidence.lines import clean
from vresolve.doctor.evidence.symbols import attribute, outer_name
from vresolve.parsers import machine_text
from vresolve.values import Capability

from .conftest import DATA
from .corpus_facts import compare

CORPUS = DATA / "corpus"
EXCERPTS = sorted(CORPUS.glob("*.txt"))


def _all_seen(e: Evidence) -> list:
    return [s for name in e.__struct_fields__ for s in (getattr(e, name) if isinstance(getattr(e, name), tuple)
                                                         else ()) if hasattr(s, "line")]


def test_corpus_is_there() -> None:
    assert len(EXCERPTS) == 396 and all(p.with_suffix(".yaml").exists() for p in EXCERPTS)


@pytest.mark.parametrize("path", EXCERPTS, ids=lambda p: p.stem[:48])
def test_corpus_excerpt(path: Path) -> None:
    """The sidecar's facts are read, and every fact read names a line of the excerpt that shows it."""
    side = yaml.safe_load(path.with_suffix(".yaml").read_text())
    raw = path.read_bytes()
    evidence = read_evidence(raw)
    misses = [c for c in compare(side.get("facts") or {}, evidence) if not c.ok]
    assert not misses, "\n".join(f"{c.key}: expected {c.expected!r}, read {c.got!r}" for c in misses)
    lines = raw.decode("utf-8", errors="replace").split("\n")
    assert evidence.lines == len(lines) - (lines[-1] == "")
    for seen in _all_seen(evidence):
        shown = machine_text(clean(lines[seen.line - 1].rstrip("\r")), 10**6)
        assert seen.text.strip("…") in shown, (seen, shown)


# ---------------------------------------------------------------------------------------------------------------
# tricky forms


@pytest.mark.parametrize(("number", "cuda"), [("11040", "11.4"), ("9000", "9.0"), ("11000", "11.0"),
                                              ("12020", "12.2"), ("11060", "11.6")])
def test_found_version_is_the_cuda_driver_api(number: str, cuda: str) -> None:
    e = read_evidence(f"RuntimeError: The NVIDIA driver on your system is too old (found version {number}). Please "
                      "update your GPU driver")
    assert e.value("cuda_driver") == cuda
    assert e.best("cuda_driver").line == 1
    assert e.signal_codes() == {"driver-too-old"}
    assert not e.driver  # the driver's own version is not shown


def test_driver_version_forms() -> None:
    e = read_evidence("| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
                      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n")
    assert [str(s.value) for s in e.driver] == ["535.104.05", "550.90.07"]
    assert e.value("cuda_driver") == "12.2" and e.value("nvidia_smi") == "535.104.05"
    assert "nvidia_smi" in e.kinds


COLLECT_ENV_GAPS = """\
Collecting environment information...
PyTorch version: N/A
Is debug build: N/A
CUDA used to build PyTorch: Could not collect
ROCM used to build PyTorch: N/A
OS: Ubuntu 22.04.4 LTS (x86_64)
Libc version: glibc-2.35
Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: N/A
CUDA runtime version: Could not collect
GPU models and configuration: Could not collect
Nvidia driver version: Could not collect
cuDNN version: Could not collect
"""


def test_collect_env_na_and_could_not_collect_are_gaps() -> None:
    e = read_evidence(COLLECT_ENV_GAPS)
    assert e.torch is None and not e.torch_cuda and e.torch_cuda_seen() is None
    assert not e.cuda_available and not e.cuda_runtime and not e.gpus and not e.driver and not e.cudnn
    assert not e.rocm and not e.accelerator
    assert e.value("python") == "3.10.12" and e.value("glibc") == "2.35" and e.value("os") == "Ubuntu 22.04.4 LTS"
    assert e.kinds == {"collect_env_torch"}


def test_collect_env_none_is_a_cpu_build() -> None:
    e = read_evidence("PyTorch version: 2.5.1\nCUDA used to build PyTorch: None\n")
    seen = e.torch_cuda_seen()
    assert seen is not None and seen.value is None and seen.line == 2


def test_torch_cuda_from_the_best_torchs_local_tag() -> None:
    e = read_evidence("Found existing installation: torch 2.10.0+cu130\ntorch 2.9.1+cu128\n")
    assert e.torch == "2.9.1+cu128" and e.value("torch_cuda") is None
    seen = e.torch_cuda_seen()
    assert seen is not None and (seen.value, seen.line) == ("12.8", 2)
    assert read_evidence("torch==2.6.0+cpu").torch_cuda_seen().value is None


NEW_FORMAT = """\
==============================
        System Info
==============================
OS                           : Ubuntu 22.04.5 LTS (x86_64)
Libc version                 : glibc-2.35
==============================
       PyTorch Info
==============================
PyTorch version              : 2.6.0+cpu
CUDA used to build PyTorch   : Could not collect
==============================
       CUDA / GPU Info
==============================
Is CUDA available            : False
GPU models and configuration : GPU 0: NVIDIA GeForce RTX 3090
Nvidia driver version        : 570.124.06
==============================
         vLLM Info
==============================
vLLM Version                 : 0.1.dev16463+gfb1ac806c (git sha: fb1ac806c)
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled
"""


def test_collect_env_new_format() -> None:
    e = read_evidence(NEW_FORMAT)
    s = summary(e)
    assert s["gpus"] == ["NVIDIA GeForce RTX 3090"] and s["driver"] == "570.124.06"
    assert e.torch == "2.6.0+cpu" and e.vllm == "0.1.dev16463+gfb1ac806c"
    assert e.torch_cuda_seen().value is None  # from the +cpu tag: the report could not collect it
    assert s["vllm_cuda_archs"] == "Not Set" and s["platform"] == "linux-x86_64"
    assert e.value("cuda_available") is False and e.kinds == {"collect_env_vllm"}


MIXED = """\
$ nvidia-smi -L
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6c3b1f2e-0000-0000-0000-000000000000)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-6c3b1f2e-0000-0000-0000-000000000001)
$ pip list | grep -E 'torch|vllm|flash'
Package            Version
------------------ -------------
flash-attn         2.6.3
torch              2.4.0
vllm               0.6.1
$ python -c 'import vllm'
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/opt/venv/lib/python3.11/site-packages/vllm/__init__.py", line 3, in <module>
    from vllm.engine.arg_utils import AsyncEngineArgs
ImportError: /opt/venv/lib/python3.11/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
"""


def test_mixed_paste() -> None:
    e = read_evidence(MIXED)
    assert e.kinds == {"nvidia_smi", "pip_list", "traceback"}
    assert [(g.value.index, g.value.name) for g in e.gpus] == [(0, "NVIDIA H100 80GB HBM3"),
                                                               (1, "NVIDIA H100 80GB HBM3")]
    assert {d.value.name: d.value.version for d in e.dists} == {"flash-attn": "2.6.3", "torch": "2.4.0",
                                                                 "vllm": "0.6.1"}
    assert e.dist("flash_attn").line == 7 and e.value("python") == "3.11"
    [failure] = e.import_failures
    assert (failure.value.module, failure.line) == ("vllm._C", 15)
    assert failure.value.error == "undefined symbol: _ZN3c104cuda9SetDeviceEi"
    [symbol] = e.symbols
    assert (symbol.value.owner, symbol.value.library) == ("torch", "_C.abi3.so")


def test_pip_freeze_direct_references() -> None:
    e = read_evidence("torch @ file:///wheels/torch-2.1.2%2Bcu121-cp310-cp310-linux_x86_64.whl\n"
                      "vllm @ file:///home/me/src/vllm\n"
                      "-e git+https://github.com/vllm-project/vllm@abc123#egg=vllm\n"
                      "numpy==1.26.4\n")
    assert e.torch == "2.1.2+cu121" and e.torch_cuda_seen().value == "12.1"
    vllm = [d.value for d in e.dists if d.value.name == "vllm"]
    assert [(d.version, d.location) for d in vllm] == [(None, "file:///home/me/src/vllm"),
                                                       (None, "git+https://github.com/vllm-project/vllm@abc123")]
    assert e.vllm is None and e.kinds == {"pip_list"}


CONDA = """\
# packages in environment at /opt/conda/envs/llm:
#
# Name                    Version                   Build  Channel
python                    3.11.9               h955ad1f_0
pytorch                   2.5.1           py3.11_cuda12.4_cudnn9.1.0_0    pytorch
pytorch-cuda              12.4                 hc786d27_7    pytorch
torchvision               0.20.1              py311_cu124    pytorch
"""


def test_conda_list_columns() -> None:
    e = read_evidence(CONDA)
    torch = e.dist("torch")
    assert torch is not None and (torch.value.version, torch.value.build) == ("2.5.1", "py3.11_cuda12.4_cudnn9.1.0_0")
    assert e.value("torch_cuda") == "12.4" and e.value("python") == "3.11.9"
    assert e.dist("pytorch-cuda").value.version == "12.4" and e.dist("torchvision").value.version == "0.20.1"
    assert e.kinds == {"conda_list"}


def test_traceback_paths_give_python_but_a_report_wins() -> None:
    tb = '  File "/home/u/miniconda3/envs/x/lib/python3.10/site-packages/torch/__init__.py", line 229, in <module>\n'
    e = read_evidence(tb)
    assert e.value("python") == "3.10" and e.best("python").how == "path" and e.kinds == {"traceback"}
    e = read_evidence(tb + "Python version: 3.11.9 (main, Apr 19 2024, 16:48:06) [GCC 11.2.0] (64-bit runtime)\n")
    assert e.value("python") == "3.11.9" and [s.value for s in e.python] == ["3.10", "3.11.9"]
    win = read_evidence(r'  File "C:\Users\me\AppData\Local\Temp\pip-build-env-dl9xeg5d\overlay\Lib\site-packages'
                        r'\torch\utils\cpp_extension.py", line 383')
    assert summary(win)["platform"] == "windows"
    assert summary(win)["build_env_paths"] == [r"C:\Users\me\AppData\Local\Temp\pip-build-env-dl9xeg5d\overlay"]


@pytest.mark.parametrize(("symbol", "owner", "needs"), [
    ("_ZN3c106detail19maybe_wrap_dim_slowEllb", "torch", None),
    ("_ZNK3c106SymInt6sym_neERKS0_", "torch", None),
    ("_ZN2at4_ops15sum_IntList_out4callERKNS_6TensorE", "torch", None),
    ("_ZN5torch3jit17parseSchemaOrNameERKSsb", "torch", None),
    ("_ZTVN5torch8autograd12AutogradMetaE", "torch", None),
    ("torch_dtype_float4_e2m1fn_x2", "torch", None),
    ("__nvJitLinkComplete_12_4", "nvjitlink", "12.4"),
    ("__nvJitLinkAddData_12_1", "nvjitlink", "12.1"),
    ("_ZN4vllm9rms_normERN2at6TensorE", "unknown", None),
    ("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEED1Ev", "unknown", None),
    ("cudaGetDriverEntryPointByVersion", "unknown", None),
])
def test_symbol_attribution(symbol: str, owner: str, needs: str | None) -> None:
    s = attribute(symbol)
    assert (s.owner, s.needs, s.mangled) == (owner, needs, symbol)


def test_symbol_outer_name_and_demangling(monkeypatch: pytest.MonkeyPatch) -> None:
    assert outer_name("_ZNK3c106SymInt6sym_neERKS0_") == "c10" and outer_name("_Z3foov") == "foo"
    assert outer_name("_ZNSt7__cxx11") is None
    if symbols_module._CXXFILT is None:
        assert attribute("_ZN3c104cuda9SetDeviceEi").demangled is None  # kept mangled without cxxfilt

    class FakeCxxfilt:
        @staticmethod
        def demangle(name: str) -> str:
            return {"_ZN3c104cuda9SetDeviceEi": "c10::cuda::SetDevice(int)"}.get(name, name)

    monkeypatch.setattr(symbols_module, "_CXXFILT", FakeCxxfilt)
    assert attribute("_ZN3c104cuda9SetDeviceEi").demangled == "c10::cuda::SetDevice(int)"
    assert attribute("_Z3foov").demangled is None
    assert attribute("c10::cuda::SetDevice(int)").owner == "torch"  # a name printed demangled


def test_undefined_symbol_line_forms() -> None:
    e = read_evidence("ImportError: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12\n"
                      "OSError: /x/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.abi3.so: undefined "
                      "symbol: torch_dtype_float4_e2m1fn_x2`\n")
    assert [(s.value.mangled, s.value.owner, s.value.library) for s in e.symbols] == [
        ("__nvJitLinkAddData_12_1", "nvjitlink", None),
        ("torch_dtype_float4_e2m1fn_x2", "torch", "libtorchaudio.abi3.so")]
    assert not e.import_failures  # libtorchaudio is a library, not a Python module


def test_libraries_and_whether_they_are_missing() -> None:
    e = read_evidence("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
                      "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by /x/_C.abi3.so)\n"
                      "/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
                      "INFO 04-22 15:53:32 utils.py:580] Found nccl from library libnccl.so.2\n")
    libs = {(s.value.soname, s.value.version, s.value.missing) for s in e.libraries}
    assert libs == {("libcudart.so.12", "12", True), ("libc.so.6", "6", False), ("libcuda.so", None, True),
                    ("libnccl.so.2", "2", False)}
    assert e.value("glibc_required") == "2.32" and not e.glibc
    assert e.signal_codes() == {"glibc-too-old", "libcuda-missing"}


BUILD = """\
      /usr/local/cuda/bin/nvcc  -I/tmp/pip-build-env-dy69uemu/overlay/lib/python3.9/site-packages/torch/include \
-c csrc/attention.cu -o build/attention.o -gencode arch=compute_75,code=sm_75 -gencode arch=compute_86,code=[sm_86]
      Killed
c++: fatal error: Killed signal terminated program cc1plus
nvcc error   : 'cicc' died due to signal 9 (Kill signal)
ninja: build stopped: subcommand failed.
error: command '/usr/bin/gcc' failed with exit code 137
"""


def test_build_kills() -> None:
    e = read_evidence(BUILD)
    assert [(k.value.program, k.value.how, k.value.in_build) for k in e.killed] == [
        ("nvcc", "signal 9", True), ("cc1plus", "signal 9", True), ("cicc", "signal 9", True),
        ("ninja", "build stopped", True), (None, "exit status 137", True)]
    assert [g.value for g in e.gencode] == ["sm_75", "sm_86"]
    assert summary(e)["build_env_paths"] == ["/tmp/pip-build-env-dy69uemu/overlay"] and e.value("python") == "3.9"
    assert "build_log" in e.kinds
    alone = read_evidence("INFO 05-07 05:58:46 core.py:291] shutting down\nKilled\n")
    assert [(k.value.program, k.value.in_build) for k in alone.killed] == [(None, False)]


def test_installer_messages() -> None:
    e = read_evidence("""\
  Attempting uninstall: torch
    Found existing installation: torch 2.10.0+cu130
    Uninstalling torch-2.10.0+cu130:
      Successfully uninstalled torch-2.10.0+cu130
Successfully installed torch-2.9.1 vllm-0.15.1
ERROR: Package 'vllm' requires a different Python: 3.13.1 not in '<3.13,>=3.9'
ERROR: No matching distribution found for vllm==0.10
torchvision 0.15.2+cu118 requires torch==2.0.1, but you have torch 2.1.0 which is incompatible.
WARNING: Package(s) not found: torch
""")
    events = [(s.value.action, s.value.name, s.value.version, s.value.detail) for s in e.installer]
    assert events == [("uninstalled", "torch", "2.10.0+cu130", None), ("installed", "torch", "2.9.1", None),
                      ("installed", "vllm", "0.15.1", None), ("requires-python", "vllm", None, "<3.13,>=3.9"),
                      ("no-matching-distribution", "vllm", None, "vllm==0.10"),
                      ("conflict", "torchvision", "0.15.2+cu118", "torch"), ("not-installed", "torch", None, None)]
    assert e.torch == "2.9.1" and e.value("python") == "3.13.1"
    assert {d.value.name: d.value.version for d in e.dists if d.line == 8} == {"torchvision": "0.15.2+cu118",
                                                                                "torch": "2.1.0"}


def test_build_memory_jobs_and_vllm_paths() -> None:
    """The host's memory used up (top), OOM in words (not a GPU's), parallel jobs, and where vLLM's files were
    loaded from (a checkout, or site-packages)."""
    e = read_evidence("""\
MiB Mem : 128686.2 total,    571.3 free, 128028.8 used,     86.1 buff/cache
MAX_JOBS=64 pip install flash-attn --no-build-isolation
subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=64', '--target=_C']' returned non-zero exit status 1.
I'm seeing OOM Error while building flash_attn
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB
  File "/home/u/vllm/vllm/engine/llm_engine.py", line 3, in <module>
  File "/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 9, in <module>
/src/vllm/vllm/__init__.py:7: RuntimeWarning: Failed to read commit hash:
Collecting torch==2.0.0 (from xformers==0.0.19)
""")
    assert [m.value for m in e.memory] == [(128686.2, 571.3 + 86.1)]
    assert sorted({j.value for j in e.build_jobs}) == [64]
    assert [w.value for w in e.oom_words] == ["OOM Error"]  # the CUDA OOM is a GPU's, not the host's
    assert [p.value for p in e.vllm_paths] == ["/home/u/vllm", "/venv/lib/python3.12/site-packages", "/src/vllm"]
    assert [(x.value.action, x.value.name, x.value.version, x.value.detail) for x in e.installer] == [
        ("collecting", "torch", "2.0.0", "xformers")]


def test_uv_lines_and_list_bullets() -> None:
    uv = read_evidence("Uninstalled 1 package in 12ms\nInstalled 2 packages in 30ms\n - torch==2.7.0\n"
                       " + torch==2.7.1+cu128\n")
    assert [(s.value.action, s.value.version) for s in uv.installer] == [("uninstalled", "2.7.0"),
                                                                          ("installed", "2.7.1+cu128")]
    bullet = read_evidence("- vllm==0.5.4\n")
    assert not bullet.installer


def test_build_isolation() -> None:
    e = read_evidence("""\
  Running command pip subprocess to install build dependencies
  Collecting torch==2.3.0
    Using cached torch-2.3.0-cp312-cp312-manylinux1_x86_64.whl.metadata (26 kB)
  Installing build dependencies ... done
Collecting flash-attn
  Using cached flash_attn-2.7.4.post1.tar.gz (6.0 MB)
""")
    assert summary(e)["build_env"] == {"torch": "2.3.0"}
    assert e.torch is None and e.dist("flash-attn").value.version == "2.7.4.post1"
    assert e.dist("flash-attn").rank > e.best("build_env").rank  # a download: what was to be installed


def test_toolkit_check_in_an_isolated_build() -> None:
    e = read_evidence("""\
        File "/tmp/pip-build-env-k_b5x9gx/overlay/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 387
      RuntimeError:
      The detected CUDA version (12.0) mismatches the version that was used to compile
      PyTorch (11.7). Please make sure to use the same CUDA versions.
""")
    assert e.value("nvcc").release == "12.0" and e.value("build_env_torch_cuda") == "11.7" and not e.torch_cuda
    plain = read_evidence("RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to "
                          "compile PyTorch (11.7). Please make sure to use the same CUDA versions.")
    assert plain.value("nvcc").release == "12.1" and plain.value("torch_cuda") == "11.7"
    assert plain.signal_codes() == {"toolkit-mismatch", "toolkit-beside-torch-cuda"}  # the refusal; the two CUDAs


@pytest.mark.parametrize(("text", "name", "value"), [
    ('os.environ["CUDA_VISIBLE_DEVICES"]=\'1\'', "CUDA_VISIBLE_DEVICES", "1"),
    ("export CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES", "0,1"),
    ('CUDA_VISIBLE_DEVICES="0,1" python serve.py', "CUDA_VISIBLE_DEVICES", "0,1"),
    ("      NVIDIA_VISIBLE_DEVICES: all", "NVIDIA_VISIBLE_DEVICES", "all"),
    ("docker run -e NVIDIA_VISIBLE_DEVICES=void img", "NVIDIA_VISIBLE_DEVICES", "void"),
    ("MAX_JOBS=4 pip install flash-attn --no-build-isolation", "MAX_JOBS", "4"),
])
def test_environment_variables(text: str, name: str, value: str) -> None:
    assert summary(read_evidence(text))["env"] == {name: value}


def test_ld_library_path_entries() -> None:
    e = read_evidence("export LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:$LD_LIBRARY_PATH:/opt/nccl/lib")
    assert e.value("ld_library_path") == ("/usr/local/cuda-12.1/lib64", "/opt/nccl/lib")
    assert read_evidence("echo $LD_LIBRARY_PATH").ld_library_path == ()


def test_signals() -> None:
    e = read_evidence("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                      "Failed to initialize NVML: Driver/library version mismatch\n"
                      "CUDA error: the provided PTX was compiled with an unsupported toolchain.\n"
                      "ModuleNotFoundError: No module named 'vllm._C'\n"
                      "RuntimeError: No CUDA GPUs are available\n")
    assert [(s.value.code, s.line) for s in e.signals] == [("no-kernel-image", 1), ("nvml-mismatch", 2),
                                                          ("ptx-toolchain", 3), ("vllm-c-missing", 4),
                                                          ("no-cuda-gpus", 5)]
    assert e.signals[3].value.detail == "vllm._C"


def test_gpu_names_cut_by_the_paste_fold_into_whole_ones() -> None:
    e = read_evidence("VIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                      "PyTorch installation.\nIf you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please "
                      "check\n")
    assert summary(e)["gpus"] == ["NVIDIA GeForce RTX 5090"]
    assert e.capabilities() == (Capability(12, 0),)


def test_gpu_from_nvidia_smi_table_and_query() -> None:
    e = read_evidence("|   0  NVIDIA GeForce ...  Off  | 00000000:09:00.0  On |                  N/A |\n"
                      "name, compute_cap, driver_version\nNVIDIA H200, 9.0, 580.159.04\n")
    assert [(g.value.name, g.value.truncated, g.value.compute_capability) for g in e.gpus] == [
        ("NVIDIA GeForce ...", True, None), ("NVIDIA H200", False, Capability(9, 0))]
    assert str(e.value("driver")) == "580.159.04"


def test_python_asked_and_answered() -> None:
    e = read_evidence("```\nimport torch\nprint(torch.__version__)\nprint(torch.version.cuda)\n```\n```\n"
                      "2.1.0.dev20230726+cu121\n12.1\n```\n>>> torch.cuda.is_available()\nFalse\n")
    assert e.torch == "2.1.0.dev20230726+cu121" and e.value("torch_cuda") == "12.1"
    assert e.value("cuda_available") is False


def test_prose() -> None:
    e = read_evidence("ubuntu20.04+python3.10.14+cuda11.8+cudnn8.9.6+A100\n"
                      "I use the RTX3090 whose version of the driver is 525 and the cuda version is 12.1\n"
                      "flash_attn 2.4.2~2.5.8 (I have tried various versions of flash_attn)\n"
                      "- PyTorch: 2.3.1+cu121\n")
    s = summary(e)
    assert (s["os"], s["python"], s["cuda"], s["cudnn"]) == ("ubuntu20.04", "3.10.14", "11.8", "8.9.6")
    assert set(s["gpus"]) == {"A100", "RTX3090"} and s["driver"] == "525"
    assert e.dist("flash-attn") is None  # a range is not a version
    assert e.torch == "2.3.1+cu121" and all(d.rank == 20 for d in e.dists)


def test_sources_read_alike() -> None:
    text = MIXED + NEW_FORMAT
    want = summary(read_evidence(text))
    for source in (text.encode(), io.StringIO(text), io.BytesIO(text.encode()), text.replace("\n", "\r\n")):
        assert summary(read_evidence(source)) == want


# ---------------------------------------------------------------------------------------------------------------
# the probe's objects


def test_to_host_facts() -> None:
    smi = MIXED.split("$ pip list")[0]
    traceback = MIXED.split("$ python -c 'import vllm'\n")[1]
    facts = to_host_facts(read_evidence(smi + NEW_FORMAT.replace("GPU 0: NVIDIA GeForce RTX 3090", "") + traceback))
    host = facts.host
    assert str(host.driver.version) == "570.124.06" and host.driver.source == "pasted line 19 (collect_env)"
    assert [(g.index, g.name) for g in host.gpus] == [(0, "NVIDIA H100 80GB HBM3"), (1, "NVIDIA H100 80GB HBM3")]
    assert host.gpus[0].source == "pasted line 2 (nvidia-smi)"
    assert str(host.python) == "3.11" and str(host.platform.glibc) == "2.35" and host.platform.tag == "linux-x86_64"
    assert host.installed_dist("torch").version == "2.6.0+cpu" and host.installed_dist("torch").cuda is None
    assert host.torch_runtime is not None and host.torch_runtime.available is False
    assert facts.env is not None and facts.env.module("vllm._C").error.startswith("undefined symbol")
    assert facts.env.module("vllm").version == "0.1.dev16463+gfb1ac806c"
    assert facts.unknown == frozenset()  # torch's CUDA (none: +cpu) and its availability are both shown


def test_to_host_facts_leaves_gaps_unguessed() -> None:
    facts = to_host_facts(read_evidence("ImportError: libcudart.so.12: cannot open shared object file\n"
                                        "torch 2.4.0\n"))
    host = facts.host
    assert host.driver.version is None and host.gpus == () and host.platform.glibc is None
    assert facts.unknown == {"python", "platform.os", "platform.machine", "torch.cuda", "torch.available", "driver", "gpus"}
    assert host.torch_runtime is not None and host.torch_runtime.cuda is None  # listed in unknown: not a CPU build
    assert to_host_facts(read_evidence("")).env is None


# ---------------------------------------------------------------------------------------------------------------
# big inputs


def test_big_input_bounded_and_plain(tmp_path: Path) -> None:
    """20 MB of log with a 5 MB line, NUL bytes, binary garbage and ANSI colours: the facts are found, the long
    line is cut, no fact's text holds a control character."""
    rng = random.Random(7)
    path = tmp_path / "big.log"
    with path.open("wb") as f:
        f.write(b"\x1b[31m" + b"y" * 5_000_000 + b" Driver Version: 999.99.99\x1b[0m\n")
        f.write(b"\x00\x01\xff\xfe\x00garbage\x00\x00\n" * 5)
        filler = [b"INFO 05-16 18:10:%02d [engine.py:%d] Avg prompt throughput: %d.0 tokens/s\n",
                  b"  File \"/usr/lib/python3.10/site-packages/vllm/worker.py\", line %d, in %d\n",
                  b"\x1b[32mINFO\x1b[0m:     127.0.0.1:%d - \"POST /v1/completions HTTP/1.1\" 200 OK %d\n"]
        while f.tell() < 20_000_000:
            f.write(b"".join(filler[i % 3] % ((rng.randrange(60), rng.randrange(9999), rng.randrange(99))[:2 if i % 3
                             else 3]) for i in range(3000)))
        f.write(b"| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n")
        f.write(b"\x1b[1;31mImportError: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\x1b[0m\x00\n")
        f.write(b"PyTorch version: 2.1.2+cu121 \x1b]8;;http://x\x07(notes)\x1b]8;;\x07\n")
    with path.open("rb") as stream:
        e = read_evidence(stream)
    assert str(e.value("driver")) == "535.104.05" and e.torch == "2.1.2+cu121" and e.cut_lines == 1
    assert e.symbols[0].value.mangled == "_ZN3c104cuda9SetDeviceEi" and e.value("python") == "3.10"
    texts = [s.text for s in _all_seen(e)]
    assert texts and not any(ch < " " or "\x7f" <= ch <= "\x9f" for t in texts for ch in t)
    assert e.dists[0].text == "PyTorch version: 2.1.2+cu121 (notes)"


def test_python_command_and_inline_answers() -> None:
    e = read_evidence('$ python -c "import torch; print(torch.__version__, torch.cuda.is_available()); '
                      'print(torch.cuda.get_device_name(0))"\n2.4.0+cu121 True\nNVIDIA A100-SXM4-80GB\n')
    assert e.torch == "2.4.0+cu121" and e.value("cuda_available") is True
    assert [g.value.name for g in e.gpus] == ["NVIDIA A100-SXM4-80GB"]
    inline = read_evidence("torch.__version__ = '2.3.1+cu118', torch.version.cuda: 11.8, "
                           "torch.cuda.is_available() -> False")
    assert (inline.torch, inline.value("torch_cuda"), inline.value("cuda_available")) == ("2.3.1+cu118", "11.8", False)


def test_pip_show_and_lists_without_their_header() -> None:
    e = read_evidence("Name: torch\nVersion: 2.1.0+cu121\nSummary: Tensors and Dynamic neural networks\n"
                      "pytorch                   2.5.1           py3.11_cuda12.4_cudnn9.1.0_0    pytorch\n"
                      "vllm                      0.6.3.post1\n")
    assert [(d.value.name, d.value.version, d.how) for d in e.dists] == [
        ("torch", "2.1.0+cu121", "pip show"), ("torch", "2.5.1", "conda list"), ("vllm", "0.6.3.post1", "pip list")]
    assert e.value("torch_cuda") == "12.4" and e.kinds == {"pip_list", "conda_list"}


def test_other_programs_name_gpus_and_toolkits() -> None:
    e = read_evidence("ggml_cuda_init: found 1 CUDA devices:\n"
                      "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
                      "-- The CUDA compiler identification is NVIDIA 12.1.105\n"
                      '-- Found Python: /usr/bin/python3.10 (found version "3.10.12") found components: Interpreter\n'
                      "GPU: 2x A100 80GB\n")
    assert summary(e)["gpus"] == ["NVIDIA GeForce RTX 3090"] and e.capabilities() == (Capability(8, 6),)
    assert "A100 80GB" in [g.value.name for g in e.gpus if g.how == "prose"]  # the user's, ranked below
    assert e.value("nvcc").version == "12.1.105" and e.value("python") == "3.10.12"


def test_values_are_bounded() -> None:
    e = read_evidence("GPU models and configuration: " + "NVIDIA " * 500 + "\nCUDA_VISIBLE_DEVICES=" + "1," * 900)
    assert len(e.gpus[0].value.name) == 256 and e.gpus[0].value.name.endswith("…")
    assert len(e.env[0].value[1]) == 256


@pytest.mark.parametrize(("text", "field", "value"), [
    ("CUDA=12.2", "cuda", "12.2"), ("cuda_version:12.2", "cuda", "12.2"), ("my CUDA version is 12.4", "cuda", "12.4"),
    ("torch=2.1.0", "torch", "2.1.0"), ("torch_version: 2.3.1", "torch", "2.3.1"),
    ("python_version=3.10.4", "python", "3.10.4"),
])
def test_prose_versions_with_equals_and_underscores(text: str, field: str, value: str) -> None:
    e = read_evidence(text + "\n")
    got = e.torch if field == "torch" else e.value(field)
    assert got == value


@pytest.mark.parametrize(("text", "code", "detail"), [
    ("stderr: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=10.2, please update your driver",
     "container-cuda-unmet", "10.2"),
    ("nvidia-docker | 2016/08/22 12:54:02 Error: unsupported CUDA version: driver 7.5 < image 8.0",
     "container-cuda-unmet", "8.0"),
    ("dlerr: /usr/lib64/libcuda.so.418.74: undefined symbol: cuCtxCreate_v3", "libcuda-entry-point-missing",
     "cuCtxCreate_v3"),
    ("[188497.595099] NVRM: No NVIDIA graphics adapter probed!", "no-driver", None),
    ("[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).", "no-driver", None),
])
def test_machine_signals(text: str, code: str, detail: str | None) -> None:
    e = read_evidence(text)
    assert [(s.value.code, s.value.detail) for s in e.signals if s.value.code == code] == [(code, detail)]


def test_an_undefined_symbol_in_a_found_library_is_not_a_missing_library() -> None:
    e = read_evidence('msg="Unable to load nvcuda" error="symbol lookup for cuCtxCreate_v3 failed: '
                      '/usr/lib64/libcuda.so.418.74: undefined symbol: cuCtxCreate_v3"')
    assert [lib.value.missing for lib in e.libraries] == [False]


def test_pip25_failed_to_build_when_getting_requirements() -> None:
    e = read_evidence("      ModuleNotFoundError: No module named 'torch'\n"
                      "ERROR: Failed to build 'flash-attn' when getting requirements to build wheel\n")
    assert [(ev.value.action, ev.value.name) for ev in e.installer] == [("build-failed", "flash-attn")]
