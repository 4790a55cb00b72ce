"""More tools' documented report formats read as facts, and judged through doctor's one path (issue 25, "reports"):
the CUDA samples' deviceQuery, llama.cpp's (ggml's) CUDA start-up lines, Ultralytics' banner, CuPy's show_config(),
detectron2's collect_env table and OpenMMLab's collect_env lines.

Each format's lines are real (tests/data/corpus 300-305 and the threads named beside each constant); the combinations
built from them are look-alikes: the same words, another fact. A line a reader cannot parse gives no fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence, summary

from .conftest import DATA, doctor_answer, error_causes

CORPUS = DATA / "corpus"
HELDOUT = DATA / "heldout"


_doctor = doctor_answer
_errors = error_causes


def _causes(answer: dict) -> list[str]:
    return [f["cause"] for f in answer["findings"]]


def _corpus(prefix: str, where: Path = CORPUS) -> str:
    return next(where.glob(f"{prefix}-*.txt")).read_text()


# ---------------------------------------------------------------------------------------------------------------
# deviceQuery (cuda-samples deviceQuery.cpp; bear63/sceneReco#32, pytorch/pytorch#5046)

DEVICE_QUERY = """./NVIDIA_CUDA-8.0_Samples/bin/x86_64/linux/release/deviceQuery Starting...

 CUDA Device Query (Runtime API) version (CUDART static linking)

Detected 1 CUDA Capable device(s)

Device 0: "GeForce GTX 1080"
  CUDA Driver Version / Runtime Version          8.0 / 8.0
  CUDA Capability Major/Minor version number:    6.1
  Total amount of global memory:                 8105 MBytes (8499167232 bytes)
"""


def test_device_query_facts() -> None:
    e = read_evidence(DEVICE_QUERY)
    s = summary(e)
    assert s["gpus"] == ["GeForce GTX 1080"] and s["compute_capabilities"] == ["6.1"]
    assert s["cuda_driver"] == "8.0" and s["cuda_runtime"] == "8.0"
    assert e.best("gpus").rank == 0 and e.best("gpus").how == "deviceQuery"


def test_device_query_in_markdown_bold() -> None:
    s = summary(read_evidence(_corpus("300")))
    assert s["gpus"] == ["GeForce GTX 1050"] and s["compute_capabilities"] == ["6.1"]
    assert s["cuda_driver"] == "9.0" and s["cuda_runtime"] == "8.0"


def test_device_query_summary_line() -> None:
    s = summary(read_evidence("deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = 11.4, CUDA Runtime Version = "
                              "11.2, NumDevs = 1\nResult = PASS\n"))
    assert s["cuda_driver"] == "11.4" and s["cuda_runtime"] == "11.2"


@pytest.mark.parametrize("text", [
    "  CUDA Capability Major/Minor version number:    6.1\n",  # no device named before it
    'Device 0: "GeForce GTX 1080"\n  CUDA Capability Major/Minor version number:    6\n',  # cut
    "  CUDA Driver Version / Runtime Version          11.4 /\n",
    'Device 0: "GeForce GTX 1080"\n  CUDA Capability Major/Minor version number:    x.y\n',
])
def test_device_query_partial_lines_give_no_fact(text: str) -> None:
    e = read_evidence(text)
    assert not e.capabilities() and e.best("cuda_driver") is None and e.best("cuda_runtime") is None


def test_device_query_driver_below_torch_cuda(tmp_path: Path) -> None:
    """deviceQuery's driver CUDA (9.0) below a torch built for CUDA 10.2: the existing judgement of torch's CUDA
    against the CUDA the driver serves."""
    text = DEVICE_QUERY.replace("8.0 / 8.0", "9.0 / 8.0") + "\n>>> torch.__version__\n'1.10.0+cu102'\n"
    assert "driver-too-old" in _causes(_doctor(tmp_path, text))


def test_device_query_healthy_is_silent(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, DEVICE_QUERY + "Result = PASS\n")
    assert _errors(answer) == [] and not answer.get("unclear")


# ---------------------------------------------------------------------------------------------------------------
# llama.cpp / ggml (ggml-cuda.cu's ggml_cuda_init; ggml-org/ggml#465, leejet/stable-diffusion.cpp#554)

GGML = ("ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no\nggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no\n"
        "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA RTX A1000 Laptop GPU, compute capability 8.6, VMM: yes\n")


def test_ggml_device_lines() -> None:
    e = read_evidence(GGML)
    s = summary(e)
    assert s["gpus"] == ["NVIDIA RTX A1000 Laptop GPU"] and s["compute_capabilities"] == ["8.6"]
    assert e.best("gpus").rank == 0


def test_ggml_old_form_and_its_failure(tmp_path: Path) -> None:
    text = _corpus("301")
    s = summary(read_evidence(text))
    assert s["gpus"] == ["NVIDIA GeForce 940MX"] and s["compute_capabilities"] == ["5.0"]
    assert "arch-not-in-build" in _errors(_doctor(tmp_path, text))


@pytest.mark.parametrize("text", [
    # ggml's ROCm build prints its devices under "ROCm devices": an AMD GPU's gfx number is no compute capability
    "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, compute capability 11.0, VMM: no\n",
    # a device line with no "found N CUDA devices" above it
    "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n",
    # the list ended: a later line of the same shape is not one of its devices
    "ggml_cuda_init: found 1 CUDA devices:\nllama_model_loader: loaded meta data\n"
    "  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n",
    "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8\n",
])
def test_ggml_lines_that_are_not_cuda_devices(text: str) -> None:
    """Not read as ggml's report (a "Device N: NAME, compute capability X.Y" line alone is still read as a program's
    message, a lower rank, by messages.py)."""
    assert not [g for g in read_evidence(text).gpus if g.how == "ggml"]


def test_ggml_rocm_devices_give_no_capability_at_all() -> None:
    e = read_evidence("ggml_cuda_init: found 2 ROCm devices:\n"
                      "  Device 0: AMD Radeon RX 7900 XTX, compute capability 11.0, VMM: no\n"
                      "  Device 1: AMD Radeon RX 7900 XTX, compute capability 11.0, VMM: no\n")
    assert not e.capabilities()


def test_ggml_healthy_is_silent(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, GGML)
    assert _errors(answer) == [] and not answer.get("unclear")


# ---------------------------------------------------------------------------------------------------------------
# Ultralytics' banner (ultralytics' select_device; ultralytics/ultralytics#20123, mikel-brostrom/boxmot#836)

ULTRA_GPU = "Ultralytics 8.3.106 🚀 Python-3.13.3 torch-2.6.0+cu126 CUDA:0 (NVIDIA GeForce RTX 4080 SUPER, 16376MiB)\n"
ULTRA_CPU = "Ultralytics YOLOv8.0.88  Python-3.9.16 torch-2.0.0+cpu\n"
SMI = ("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
       "|   0  NVIDIA GeForce RTX 3070        Off | 00000000:01:00.0 Off |                  N/A |\n")


def test_ultralytics_banner_with_a_gpu() -> None:
    e = read_evidence(ULTRA_GPU)
    s = summary(e)
    assert s["dists"]["torch"] == "2.6.0+cu126" and s["python"] == "3.13.3"
    assert s["gpus"] == ["NVIDIA GeForce RTX 4080 SUPER"] and s["cuda_available"] is True
    assert e.dist("torch").rank == 0


def test_ultralytics_banner_cpu_torch() -> None:
    e = read_evidence(ULTRA_CPU + "Ultralytics YOLOv8.0.20 🚀 Python-3.10.9 torch-2.0.0+cpu CPU\n")
    s = summary(e)
    assert s["dists"]["torch"] == "2.0.0+cpu" and not s.get("gpus")
    assert e.best("cuda_available") is None  # "CPU" is the device chosen, not proof that no GPU exists


def test_ultralytics_cpu_torch_beside_an_nvidia_gpu(tmp_path: Path) -> None:
    assert "cpu-only-build" in _errors(_doctor(tmp_path, ULTRA_CPU + SMI))


def test_ultralytics_healthy_banner_is_silent(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, ULTRA_GPU)
    assert _errors(answer) == [] and not answer.get("unclear")


@pytest.mark.parametrize("text", ["Ultralytics YOLOv8.0.88 Python-3.9 torch-2.0.0+cpu\n",  # no micro version
                                  "see https://docs.ultralytics.com torch-2.0.0+cpu\n"])  # not the banner
def test_ultralytics_lookalike_lines_give_no_torch(text: str) -> None:
    e = read_evidence(text)
    assert e.dist("torch") is None or e.dist("torch").rank > 0


# ---------------------------------------------------------------------------------------------------------------
# CuPy's show_config() (cupyx/_runtime.py; cupy/cupy#9723, #1132, #9827)

def cupy(build: str, driver: str, runtime: str = "12090 (linked to CuPy) / 12080 (locally installed)") -> str:
    return ("OS                           : Linux-6.8.0-106-generic-x86_64-with-glibc2.39\n"
            "CuPy Version                 : 14.0.1\nCuPy Platform                : NVIDIA CUDA\n"
            f"CUDA Build Version           : {build}\nCUDA Driver Version          : {driver}\n"
            f"CUDA Runtime Version         : {runtime}\n"
            "Device 0 Name                : NVIDIA GeForce RTX 3090\nDevice 0 Compute Capability  : 86\n")


def test_cupy_show_config_facts() -> None:
    e = read_evidence(cupy("12090", "12070"))
    s = summary(e)
    assert s["dists"]["cupy"] == "14.0.1" and s["cuda_driver"] == "12.7"
    assert s["gpus"] == ["NVIDIA GeForce RTX 3090"] and s["compute_capabilities"] == ["8.6"]
    assert [b.value.cuda for b in e.ext_reports] == ["12.9"]
    assert e.best("cuda_runtime") is None  # 12090 is no "12090" runtime: the API's integer, read by the CuPy reader


def test_cupy_corpus_excerpt() -> None:
    e = read_evidence(_corpus("305"))
    assert summary(e)["cuda_driver"] == "13.0" and [b.value.cuda for b in e.ext_reports] == ["12.9"]


@pytest.mark.parametrize(("build", "driver", "cause"), [
    ("12090", "11040", "driver-too-old"),  # CUDA 12 code on a driver serving CUDA 11.4: another major
    ("10020", "10010", "driver-too-old"),  # CUDA 10 had no minor-version compatibility
    ("12090", "12070", None),  # (cupy/cupy#9827's figures) minor-version compatibility within CUDA 12
    ("12090", "13000", None),  # (cupy/cupy#9723's) a newer driver
    ("9000", "9010", None),  # (cupy/cupy#1132's)
])
def test_cupy_build_against_the_driver(tmp_path: Path, build: str, driver: str, cause: str | None) -> None:
    answer = _doctor(tmp_path, cupy(build, driver))
    assert _errors(answer) == ([cause] if cause else [])
    assert not answer.get("unclear")


@pytest.mark.parametrize("text", [
    "CuPy Version          : 4.0.0rc1\nCUDA Build Version    : 9000\nCUDA Driver Version   : 9010\n"
    "CUDA Runtime Version  : CUDARuntimeError('cudaErrorUnknown: unknown error',)\n",
    "CuPy Version : 13.0.0\nCUDA Driver Version : CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is "
    "insufficient for CUDA runtime version')\n",
])
def test_cupy_error_values_give_no_version(text: str) -> None:
    e = read_evidence(text)
    assert e.best("cuda_runtime") is None
    assert e.best("cuda_driver") is None or e.best("cuda_driver").value == "9.1"


def test_cupy_rows_of_a_rocm_build_are_not_cuda() -> None:
    e = read_evidence("CuPy Version : 13.0.0\nCuPy Platform : AMD ROCm\nCUDA Build Version : 50700000\n"
                      "CUDA Driver Version : 50700000\nDevice 0 Name : AMD Instinct MI210\n"
                      "Device 0 Compute Capability : 90\n")
    assert not e.ext_reports and e.best("cuda_driver") is None and not e.capabilities()


def test_cupy_rows_without_its_header_are_not_read() -> None:
    e = read_evidence("CUDA Build Version : 12090\nDevice 0 Compute Capability : 86\n")
    assert not e.ext_reports and not e.capabilities()


# ---------------------------------------------------------------------------------------------------------------
# detectron2's collect_env (detectron2/utils/collect_env.py; corpus 302-304, tests/data/heldout 992)

def test_detectron2_table_facts() -> None:
    e = read_evidence(_corpus("302"))
    s = summary(e)
    assert s["gpus"] == ["Tesla P40"] and s["dists"]["torch"] == "1.4.0+cu100" and s["cuda_available"] is True
    assert {(b.value.package, b.value.cuda, b.value.archs) for b in e.ext_reports} == {
        ("detectron2", "10.0", ()), ("detectron2", None, ("sm_70",))}
    assert {g.value.index for g in e.gpus if g.rank == 0} == set(range(8))


def test_detectron2_gpu_arch_column_and_capability_flags() -> None:
    e = read_evidence(_corpus("304"))
    assert summary(e)["compute_capabilities"] == ["7.5"]
    archs = {b.value.package: b.value.archs for b in e.ext_reports if b.value.archs}
    assert archs == {"detectron2": ("sm_75",), "torchvision": ("sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80",
                                                                "sm_86")}


def test_detectron2_arch_flags_without_the_gpu_with_its_error(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, _corpus("302"))
    assert "arch-not-in-build" in _errors(answer)
    cited = [ev for f in answer["findings"] if f["cause"] == "arch-not-in-build" for ev in f["evidence"]]
    assert any("detectron2 arch flags" in ev for ev in cited)


def test_detectron2_arch_flags_without_the_gpu_report_only(tmp_path: Path) -> None:
    """The report alone (tests/data/heldout 992): the listing names SASS only, so without "no kernel image" shown it is
    said as a warning."""
    answer = _doctor(tmp_path, _corpus("992", HELDOUT))
    found = [f for f in answer["findings"] if f["cause"] == "arch-not-in-build"]
    assert found and found[0]["severity"] == "warning" and "sm_70" in found[0]["explanation"]


@pytest.mark.parametrize("prefix", ["303", "304"])
def test_detectron2_arch_flags_that_cover_the_gpu(tmp_path: Path, prefix: str) -> None:
    """sm_35 covers a K80 (3.7: SASS runs on a later minor of its major); 7.5 covers a 7.5 GPU."""
    answer = _doctor(tmp_path, _corpus(prefix))
    assert "arch-not-in-build" not in _causes(answer) and _errors(answer) == [] and not answer.get("unclear")


@pytest.mark.parametrize("value", ["/home/u/detectron2/_C.so; cannot find cuobjdump", "/home/u/detectron2/_C.so",
                                   "sm_37, /x", "sm_", "7"])
def test_detectron2_arch_flags_not_a_list(value: str) -> None:
    e = read_evidence(f"sys.platform            linux\ndetectron2 arch flags   {value}\n"
                      "GPU 0                   Tesla V100-SXM2-16GB (arch=7.0)\n")
    assert not [b for b in e.ext_reports if b.value.archs]


def test_detectron2_rows_need_its_table() -> None:
    """Without one of detectron2's own keys, "PyTorch  1.4.0" and "GPU 0  NAME" rows are not its table's."""
    e = read_evidence("PyTorch                 1.4.0 @/x/torch\nGPU 0                   Tesla V100-SXM2-16GB (arch=7.0)\n"
                      "torchvision arch flags  sm_35\n")
    assert not e.ext_reports and not e.capabilities()


def test_detectron2_cuda_compiler_when_c_failed_is_nvcc() -> None:
    e = read_evidence("sys.platform            linux\ndetectron2._C           not built correctly: No module\n"
                      "CUDA compiler           Build cuda_11.1.TC455_06.29190527_0\n")
    assert summary(e)["nvcc"] == "11.1" and not e.ext_reports


# ---------------------------------------------------------------------------------------------------------------
# OpenMMLab's collect_env (mmcv/utils/env.py; its "GPU 0,1: NAME", "PyTorch:", "NVCC:" lines are read by other readers)

MMCV = ("sys.platform: linux\nPython: 3.7.10 (default, Jun  4 2021, 14:48:32) [GCC 7.5.0]\nCUDA available: True\n"
        "GPU 0: NVIDIA GeForce RTX 3090\nCUDA_HOME: /usr/local/cuda\nNVCC: Cuda compilation tools, release 11.1, V11.1.105\n"
        "PyTorch: 1.8.1+cu111\nTorchVision: 0.9.1+cu111\nOpenCV: 4.5.2\nMMCV: 1.3.8\nMMCV Compiler: GCC 7.3\n"
        "MMCV CUDA Compiler: 11.1\nMMDetection: 2.14.0+\n")


def test_mmcv_lines() -> None:
    e = read_evidence(MMCV)
    s = summary(e)
    assert s["dists"]["mmcv"] == "1.3.8" and s["dists"]["torchvision"] == "0.9.1+cu111"
    assert [(b.value.package, b.value.cuda) for b in e.ext_reports] == [("mmcv", "11.1")]
    assert s["gpus"] == ["NVIDIA GeForce RTX 3090"] and s["cuda_available"] is True


def test_mmcv_not_available_gives_no_build() -> None:
    assert not read_evidence(MMCV.replace("MMCV CUDA Compiler: 11.1", "MMCV CUDA Compiler: not available")).ext_reports


def test_mmcv_built_with_a_cuda_the_driver_does_not_serve(tmp_path: Path) -> None:
    smi = "| NVIDIA-SMI 440.33.01    Driver Version: 440.33.01    CUDA Version: 10.2     |\n"
    answer = _doctor(tmp_path, smi + MMCV.replace("PyTorch: 1.8.1+cu111", "PyTorch: 1.8.1"))
    assert "driver-too-old" in _errors(answer)


def test_mmcv_healthy_report_is_silent(tmp_path: Path) -> None:
    smi = "| NVIDIA-SMI 460.32.03    Driver Version: 460.32.03    CUDA Version: 11.2     |\n"
    answer = _doctor(tmp_path, smi + MMCV)
    assert _errors(answer) == [] and not answer.get("unclear")


# ---------------------------------------------------------------------------------------------------------------
# xFormers' python -m xformers.info (xformers/info.py; the build.* rows of its build metadata, as in public notes and
# facebookresearch/xformers#939)

def xformers_info(torch: str = "2.0.1+cu118", cc: str = "8.9", name: str = "NVIDIA GeForce RTX 4070",
                  built: str = "2.0.1+cu118", cuda: str = "1108", archs: str = "5.0+PTX 6.0 6.1 7.0 7.5 8.0 8.6") -> str:
    return ("xFormers 0.0.20\nmemory_efficient_attention.cutlassF:               available\n"
            "is_triton_available:                               True\n"
            f"pytorch.version:                                   {torch}\n"
            "pytorch.cuda:                                      available\n"
            f"gpu.compute_capability:                            {cc}\n"
            f"gpu.name:                                          {name}\n"
            "build.info:                                        available\n"
            f"build.cuda_version:                                {cuda}\n"
            "build.python_version:                              3.10.11\n"
            f"build.torch_version:                               {built}\n"
            f"build.env.TORCH_CUDA_ARCH_LIST:                    {archs}\n"
            "build.env.XFORMERS_BUILD_TYPE:                     Release\n"
            "build.nvcc_version:                                11.8.89\n")


def test_xformers_info_facts() -> None:
    e = read_evidence(xformers_info())
    s = summary(e)
    assert s["dists"]["torch"] == "2.0.1+cu118" and s["dists"]["xformers"] == "0.0.20"
    assert s["gpus"] == ["NVIDIA GeForce RTX 4070"] and s["compute_capabilities"] == ["8.9"] and s["cuda_available"]
    assert s["built_for"] == {"xformers": "2.0.1+cu118"}
    builds = {(b.value.cuda, b.value.archs) for b in e.ext_reports}
    assert builds == {("11.8", ()), (None, ("sm_50", "compute_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86"))}


@pytest.mark.parametrize("kwargs", [
    {},  # RTX 4070 (8.9) under sm_80/sm_86 SASS: same major, later minor
    {"torch": "2.0.1+cu117", "cc": "8.0", "name": "NVIDIA A100-SXM4-40GB"},  # cu117 torch, cu118 build: same release
    {"torch": "2.1.1+cu121", "built": "2.1.1+cu121", "cuda": "1201", "archs": "5.0+PTX 6.0 6.1 7.0 7.5 8.0+PTX 9.0",
     "name": "NVIDIA GeForce RTX 4090"},
    {"torch": "1.12.1+cu113", "built": "1.12.1+cu113", "cuda": "1104", "archs": "None", "cc": "3.7",
     "name": "Tesla K80"},
])
def test_xformers_info_healthy_is_silent(tmp_path: Path, kwargs: dict[str, str]) -> None:
    answer = _doctor(tmp_path, xformers_info(**kwargs))
    assert _errors(answer) == [] and not answer.get("unclear")
    assert "arch-not-in-build" not in _causes(answer)


def test_xformers_info_built_for_another_torch(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, xformers_info(torch="2.1.0+cu121"))
    assert "companion-mismatch" in _causes(answer)


def test_xformers_info_built_for_a_cuda_torch_beside_a_cpu_torch(tmp_path: Path) -> None:
    answer = _doctor(tmp_path, xformers_info(torch="2.0.1+cpu").replace(
        "pytorch.cuda:                                      available", "pytorch.cuda:    not available"))
    assert "cpu-only-build" in _errors(answer)


def test_xformers_info_arch_list_without_the_gpu(tmp_path: Path) -> None:
    text = xformers_info(archs="8.0;8.6", cc="7.5", name="Tesla T4")
    found = [f for f in _doctor(tmp_path, text)["findings"] if f["cause"] == "arch-not-in-build"]
    assert found and found[0]["severity"] == "warning"


def test_xformers_info_of_a_rocm_torch_reads_no_capability() -> None:
    """xFormers' ROCm build prints the AMD GPU's gfx number (11.0 for gfx1100) as gpu.compute_capability."""
    e = read_evidence(xformers_info(torch="2.4.1+rocm6.1", cc="11.0", name="AMD Radeon PRO W7900",
                                    built="2.4.1+rocm6.1", cuda="None", archs=""))
    assert not e.capabilities() and not e.ext_reports


@pytest.mark.parametrize(("line", "archs"), [("build.env.TORCH_CUDA_ARCH_LIST:  Ampere", ()),
                                              ("build.env.TORCH_CUDA_ARCH_LIST:  8.6;9.0a", ()),
                                              ("build.env.TORCH_CUDA_ARCH_LIST:  8.6", ("sm_86",))])
def test_xformers_arch_list_forms(line: str, archs: tuple[str, ...]) -> None:
    assert [b.value.archs for b in read_evidence(line + "\n").ext_reports if b.value.archs] == ([archs] if archs else [])


# ---------------------------------------------------------------------------------------------------------------
# bitsandbytes' diagnostics (python -m bitsandbytes; its CUDA setup lines before 0.43)

@pytest.mark.parametrize(("line", "cc"), [
    ("CUDA specs: CUDASpecs(highest_compute_capability=(8, 6), cuda_version_string='124', cuda_version_tuple=(12, 4))",
     "8.6"),
    ("PyTorch settings found: CUDA_VERSION=128, Highest Compute Capability: (12, 0).", "12.0"),
    ("CUDA SETUP: Highest compute capability among GPUs detected: 7.5", "7.5"),
])
def test_bitsandbytes_capability(line: str, cc: str) -> None:
    e = read_evidence(line + "\n")
    assert [str(c) for c in e.capabilities()] == [cc] and e.gpus[0].how == "bitsandbytes"


@pytest.mark.parametrize("line", [
    # a ROCm build: HIP's version in CUDA's place, the gfx1100's number as a capability
    "CUDA specs: CUDASpecs(highest_compute_capability=(11, 0), cuda_version_string='60', cuda_version_tuple=(6, 0))",
    "PyTorch settings found: CUDA_VERSION=60, Highest Compute Capability: (11, 0).",
    "Highest Compute Capability: (8,9)",  # a user's retelling, not the program's line
])
def test_bitsandbytes_lines_that_give_no_capability(line: str) -> None:
    assert not [g for g in read_evidence(line + "\n").gpus if g.how == "bitsandbytes"]


def test_bitsandbytes_capability_is_not_given_to_a_named_gpu() -> None:
    """The highest capability among the GPUs is not any one named GPU's."""
    e = read_evidence("GPU 0: Tesla T4 (UUID: GPU-1)\nGPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-2)\n"
                      "PyTorch settings found: CUDA_VERSION=121, Highest Compute Capability: (8, 0).\n")
    assert summary(e)["gpus"] == ["Tesla T4", "NVIDIA A100-SXM4-40GB"]
    assert {g.value.name: g.value.compute_capability for g in e.gpus if g.value.name and g.rank == 0} == {
        "Tesla T4": None, "NVIDIA A100-SXM4-40GB": None}


# ---------------------------------------------------------------------------------------------------------------
# TensorFlow's tf.sysconfig.get_build_info() (its one-line OrderedDict and a tuple-a-line form, as public notes print them)

TF_BUILD = ("OrderedDict([('cpu_compiler', '/opt/rh/devtoolset-9/root/usr/bin/gcc'), ('cuda_compute_capabilities', "
            "['sm_52', 'sm_60', 'sm_61', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'compute_90']), ('cuda_version', '12.1'), "
            "('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])\n")


@pytest.mark.parametrize(("text", "cuda", "archs"), [
    (TF_BUILD, "12.1", ("sm_52", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "compute_90")),
    ("      ('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']),\n"
     "      ('cuda_version', '11.2'),\n", "11.2", ("sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80")),
    ("('cuda_version', '64_112'), ('cudnn_version', '64_8')\n", "11.2", None),  # Windows' form
    ("('cuda_version', '12.5.1'), ('cudnn_version', '9')\n", "12.5", None),
])
def test_tensorflow_build_info(text: str, cuda: str, archs: tuple[str, ...] | None) -> None:
    e = read_evidence(text)
    assert [b.value.cuda for b in e.ext_reports if b.value.cuda] == [cuda]
    assert [b.value.archs for b in e.ext_reports if b.value.archs] == ([archs] if archs else [])


@pytest.mark.parametrize("text", [
    "print(json.dumps(tf.sysconfig.get_build_info().get('cuda_compute_capabilities', [])))\n",  # code, no values
    "torch_info={'version': '2.0', 'bf16_support': True, 'cuda_version': '11.7'}\n",  # DeepSpeed's record: a dict
    "('cuda_compute_capabilities', ['sm_35', 'Kepler']),\n",
])
def test_tensorflow_lookalike_lines_give_no_build(text: str) -> None:
    assert not read_evidence(text).ext_reports


def test_tensorflow_built_for_a_cuda_the_driver_does_not_serve(tmp_path: Path) -> None:
    smi = "| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |\n"
    assert "driver-too-old" in _errors(_doctor(tmp_path, smi + TF_BUILD))


def test_tensorflow_build_healthy_is_silent(tmp_path: Path) -> None:
    smi = ("| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
           "|   0  NVIDIA GeForce RTX 3060        Off | 00000000:01:00.0 Off |                  N/A |\n")
    answer = _doctor(tmp_path, smi + TF_BUILD)
    assert _errors(answer) == [] and not answer.get("unclear") and "arch-not-in-build" not in _causes(answer)


def test_tensorflow_build_without_the_gpu(tmp_path: Path) -> None:
    """A K80 (3.7) under a build whose oldest code is sm_52: said as a warning (no failure shown)."""
    smi = ("| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |\n"
           "|   0  Tesla K80                      Off | 00000000:01:00.0 Off |                    0 |\n")
    found = [f for f in _doctor(tmp_path, smi + TF_BUILD.replace("12.1", "11.2"))["findings"]
             if f["cause"] == "arch-not-in-build"]
    assert found and found[0]["severity"] == "warning"
