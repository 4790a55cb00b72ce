"""A message's claim about the GPU ("too old for this feature", "this build has no kernels for SM X") judged from facts
(issue 25, archfacts): the GPU the paste shows against features.yaml's floors and TensorRT's releases, the SM read
however it is written, and "cause not named" where the GPU shown contradicts the message or no GPU is shown and the
message does not say the GPU's own SM.

The pastes are real text from the threads their sidecars name (tests/data/corpus 910-919, tests/data/heldout 502, 862,
877: development material); the single lines are real lines of the same families (their threads in the comments) or
the fixed output of a tool (nvidia-smi's CSV query, collect_env's GPU line, pip list's).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vresolve.doctor.sm import floor_in, gpu_sm_in, parse_sm
from vresolve.errors import MatrixError
from vresolve.matrix import load_matrix
from vresolve.values import Capability

from .conftest import SHIPPED, doctor_paste, doctor_text, error_causes, excerpt

CORPUS = Path(__file__).parent / "data" / "corpus"
HELDOUT = Path(__file__).parent / "data" / "heldout"
Capsys = pytest.CaptureFixture[str]

#: real error lines (threads: Dao-AILab/flash-attention#1485, NVIDIA/TensorRT#2727, sgl-project/sglang#5871,
#: pytorch/pytorch#118703)
FLASH = "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
TRT_0X809 = ("[12/12/2024-10:15:17] [E] [TRT] 1: [caskUtils.cpp::trtSmToCask::147] Error Code 1: Internal Error "
             "(Unsupported SM: 0x809)")
FP8E4NV = "type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')"
SCALED_MM = ("RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, "
             "or ROCm MI300+")


_one, _errors, _judge = excerpt, error_causes, doctor_text


# --- SMs however written ---

@pytest.mark.parametrize(("token", "cc"), [
    ("sm_89", "8.9"), ("sm89", "8.9"), ("SM 8.9", "8.9"), ("8.9", "8.9"), ("compute_89", "8.9"), ("89", "8.9"),
    ("0x809", "8.9"), ("0x601", "6.1"), ("0xc00", "12.0"), ("(8, 9)", "8.9"), ("(7,0)", "7.0"), ("sm_120", "12.0"),
    ("sm_90a", "9.0a"), ("120", "12.0")])
def test_an_sm_however_written(token: str, cc: str) -> None:
    assert parse_sm(token) == Capability.parse(cc)


@pytest.mark.parametrize("token", ["0x1", "hello", "", "0xff09", "8", "sm_"])
def test_not_an_sm(token: str) -> None:
    assert parse_sm(token) is None


@pytest.mark.parametrize(("line", "cc"), [
    # vllm-project/vllm#946; vLLM's quantization check; xFormers; ollama; torch; TensorRT 8 and 10
    ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
     "compute capability 7.5.", "7.5"),
    ("The quantization method fp8 is not supported for the current GPU. Minimum capability: 90. Current capability: 86.",
     "8.6"),
    ("requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)", "7.0"),
    ("CUDA GPU is too old. Falling back to CPU mode. Compute Capability detected: 5.2", "5.2"),
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     "12.0"),
    ("Found GPU0 GeForce GTX 670M which is of cuda capability 2.1.", "2.1"),
    (TRT_0X809, "8.9"),
    ("API Usage Error (Target GPU SM 120 is not supported by this TensorRT release.)", "12.0"),
    ("Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1", "6.1"),
])
def test_the_gpus_own_sm_a_message_states(line: str, cc: str) -> None:
    assert gpu_sm_in(line) == Capability.parse(cc)


@pytest.mark.parametrize("line", [FLASH, SCALED_MM, FP8E4NV, "f8e4m3nv is only supported on compute capability >= 90",
                                  "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.",
                                  "INTERNAL_ERROR: Assertion failed: Unsupported SM."])
def test_a_floor_is_not_the_gpus_sm(line: str) -> None:
    """A message that says only what it needs (or TensorRT 7's SM-less assertion) states no SM of the GPU."""
    assert gpu_sm_in(line) is None


@pytest.mark.parametrize(("line", "cc"), [
    ("f8e4m3nv is only supported on compute capability >= 90", "9.0"), (SCALED_MM, "8.9"),
    ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0.", "8.0"),
    ("FA3 is only supported on devices with compute capability >= 8", "8.0"), (FLASH, None),
    ("Your Tesla T4 GPU has compute capability 7.5.", None)])
def test_the_floor_a_message_states(line: str, cc: str | None) -> None:
    assert floor_in(line) == (Capability.parse(cc) if cc else None)


def test_a_floor_stated_as_a_number_names_the_cause_without_a_gpu(tmp_path: Path, capsys: Capsys) -> None:
    """Heldout 005: "only supported on compute capability >= 90" and no GPU shown: the words come from a check of the
    device it ran on against that floor, so the device is below it: named. FlashAttention's "Ampere GPUs or newer"
    states no number (its check is a window, 8.x or 9.0): without a GPU it stays not named ."""
    code, doc = doctor_paste(_one(HELDOUT, "005"), capsys)
    assert code == 1 and _errors(doc) == ["gpu-too-old-for-feature"] and doc["unclear"] == []
    code, doc = _judge(f"{FLASH}\n", tmp_path, capsys)
    assert code == 1 and _errors(doc) == [] and doc["unclear"]


# --- TensorRT without kernels for the GPU's SM ---

@pytest.mark.parametrize("number", ["910", "911", "912", "913", "914"])
def test_tensorrt_refusing_the_gpus_sm(number: str, capsys: Capsys) -> None:
    """RTX 4080 on 8.4.1.5, a "4090" on 7.2.1, a 1080 Ti on 10.0.1, an RTX 5070 Ti on 10.7, an RTX A6000 on 7.0."""
    code, doc = doctor_paste(_one(CORPUS, number), capsys)
    assert code == 1 and _errors(doc) == ["arch-not-in-build"]
    assert "TensorRT" in doc["findings"][0]["title"]


def test_tensorrt_862_the_sm_in_hex_beside_the_gpu(capsys: Capsys) -> None:
    code, doc = doctor_paste(_one(HELDOUT, "862"), capsys)
    assert code == 1 and "arch-not-in-build" in _errors(doc)


def test_tensorrt_refusing_another_sm_than_the_gpu_shown(tmp_path: Path, capsys: Capsys) -> None:
    """Look-alike: the message names SM 8.9 and the report shows an RTX 3090 (8.6): another process or machine."""
    code, doc = _judge(f"{TRT_0X809}\nGPU 0: NVIDIA GeForce RTX 3090\n", tmp_path, capsys)
    assert code == 1 and _errors(doc) == [] and "SM 8.9" in doc["unclear"][0]["missing"]


def test_tensorrt_release_that_supports_the_sm(tmp_path: Path, capsys: Capsys) -> None:
    """Look-alike: TensorRT 8.6.1 (its support matrix holds Ada) says "Unsupported SM: 0x809" on an RTX 4090: not its
    release's arch list; what else loaded is asked for."""
    text = f"tensorrt                 8.6.1\n{TRT_0X809}\nGPU 0: NVIDIA GeForce RTX 4090\n"
    code, doc = _judge(text, tmp_path, capsys)
    assert code == 1 and _errors(doc) == [] and "nvinfer" in doc["unclear"][0]["paste"]


def test_tensorrt_release_that_lacks_the_sm(tmp_path: Path, capsys: Capsys) -> None:
    text = f"tensorrt                 10.0.1\n{TRT_0X809.replace('0x809', '0x601')}\nGPU 0: NVIDIA GeForce GTX 1080 Ti\n"
    code, doc = _judge(text, tmp_path, capsys)
    assert code == 1 and _errors(doc) == ["arch-not-in-build"]


def test_tensorrt_without_sm_or_gpu_is_not_named(tmp_path: Path, capsys: Capsys) -> None:
    """TensorRT 7's "Unsupported SM." names no SM: with no GPU shown, which GPU is asked for."""
    code, doc = _judge("INTERNAL_ERROR: Assertion failed: Unsupported SM.\n", tmp_path, capsys)
    assert code == 1 and _errors(doc) == [] and "compute_cap" in doc["unclear"][0]["paste"]


def test_tensorrt_other_failure_on_a_supported_gpu_is_not_arch(capsys: Capsys) -> None:
    """919 (NVIDIA/TensorRT#2727's comment): an RTX 4050 on TensorRT 8.6.1 with another assertion."""
    _, doc = doctor_paste(_one(CORPUS, "919"), capsys)
    assert "arch-not-in-build" not in _errors(doc)


# --- a feature's floor against the GPU shown ---

def test_a_floor_without_a_gpu_asks_for_it(capsys: Capsys) -> None:
    """877 (flash-attention#1485): "only supports Ampere GPUs or newer", no GPU in the paste (the thread's A800 meets
    it): cause not named, with the query that settles it."""
    code, doc = doctor_paste(_one(HELDOUT, "877"), capsys)
    assert code == 1 and _errors(doc) == []
    assert "8.0" in doc["unclear"][0]["missing"] and "compute_cap" in doc["unclear"][0]["paste"]


@pytest.mark.parametrize(("error", "gpu", "named"), [
    (FLASH, "GPU 0: Tesla T4", True), (FLASH, "GPU 0: Tesla V100-SXM2-32GB", True),
    (FLASH, "GPU 0: NVIDIA A100-SXM4-80GB", False), (FLASH, "GPU 0: NVIDIA GeForce RTX 5090", False),
    (FP8E4NV, "GPU 0: NVIDIA A100-SXM4-80GB", True), (FP8E4NV, "GPU 0: NVIDIA H100 80GB HBM3", False),
    (SCALED_MM, "GPU 0: NVIDIA GeForce RTX 3090", True), (SCALED_MM, "GPU 0: NVIDIA GeForce RTX 4090", False),
])
def test_a_floor_judged_by_the_gpu_shown(error: str, gpu: str, named: bool, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _judge(f"{error}\n{gpu}\n", tmp_path, capsys)
    assert code == 1 and ("gpu-too-old-for-feature" in _errors(doc)) is named
    assert named or doc["unclear"]


@pytest.mark.parametrize(("family", "named"), [("an Ampere GPU", True), ("an Ada GPU", False)])
def test_a_gpu_architecture_in_the_users_words(family: str, named: bool, tmp_path: Path, capsys: Capsys) -> None:
    """050's words (sglang#1224: "with an Ampere GPU"): Ampere's capabilities (8.0 to 8.7) are all below fp8e4nv's 8.9;
    Ada's (8.9) meet it."""
    text = f"Currently when trying to load a FP8 model with {family} you get this error:\n`ValueError(\"{FP8E4NV}\")`\n"
    code, doc = _judge(text, tmp_path, capsys)
    assert code == 1 and ("gpu-too-old-for-feature" in _errors(doc)) is named


def test_a_floor_on_the_gpu_required_is_not_a_gpu_architecture_shown(tmp_path: Path, capsys: Capsys) -> None:
    """The floor's own words ("Ampere GPUs or newer") are not the user's GPU."""
    code, doc = _judge(f"There is an error when i deploy it: {FLASH}\n", tmp_path, capsys)
    assert code == 1 and _errors(doc) == [] and doc["unclear"]


@pytest.mark.parametrize("number", ["915", "916", "917", "918"])
def test_a_gpu_below_the_floor_shown_or_stated(number: str, capsys: Capsys) -> None:
    """915 (4x A100 collect_env, fp8e4nv), 916 (sglang check_env's A10 at 8.6), 917 (Tesla T4s in the user's words),
    918 (Inductor's "your device is of CUDA capability 6.1" on a Tesla P40: the message states the GPU's SM)."""
    code, doc = doctor_paste(_one(CORPUS, number), capsys)
    assert code == 1 and "gpu-too-old-for-feature" in _errors(doc)


def test_the_sm_on_the_line_above_torchs_refusal(capsys: Capsys) -> None:
    """502: torch's "Found GPU0 GeForce GTX 670M which is of cuda capability 2.1." above "PyTorch no longer supports
    this GPU": the refusal's SM is its message's."""
    code, doc = doctor_paste(_one(HELDOUT, "502"), capsys)
    assert code == 1 and "arch-not-in-build" in _errors(doc)


@pytest.mark.parametrize("number", ["666", "900"])
def test_look_alikes_of_a_gpu_too_old(number: str, capsys: Capsys) -> None:
    """666: eight H100s and an FP8 checkpoint, healthy; 900: FlashAttention's refusal on an RTX 5090 (newer, not older)."""
    _, doc = doctor_paste(_one(CORPUS, number), capsys)
    assert "gpu-too-old-for-feature" not in _errors(doc)


# --- the facts: features.yaml ---

def test_the_floors_are_the_matrixs() -> None:
    m = load_matrix(SHIPPED)
    floors = {f.id: str(f.min_compute_capability) for f in m.features}
    assert floors == {"bf16": "8.0", "flash-attention-2": "8.0", "fp8-transformer-engine": "8.9",
                      "triton-fp8e4nv": "8.9"}
    assert all(f.provenance.source and f.provenance.verified for f in m.features)
    (trt,) = m.library_sms
    assert trt.name == "tensorrt" and all(row.provenance.source for row in trt.rows)


def test_a_library_row_whose_range_is_reversed_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "m"
    shutil.copytree(SHIPPED, root)
    text = (root / "features.yaml").read_text(encoding="utf-8")
    (root / "features.yaml").write_text(text.replace('highest: "12.0"', 'highest: "7.0"'), encoding="utf-8")
    with pytest.raises(MatrixError, match="highest"):
        load_matrix(root, cache=False)


# --- a pasted report's torch against the arch list torch.yaml gives its release ---

def test_a_reports_torch_without_its_arch_list(tmp_path: Path, capsys: Capsys) -> None:
    """083 (pytorch#110153) cut to the report itself, torch's own warning left out: torch 2.0.1+cu117's wheels carry
    SASS up to sm_86 and no PTX (torch.yaml), so the H100 shown (9.0) has no kernels: the same judgement as torch's."""
    text = _one(CORPUS, "083").read_text(encoding="utf-8")
    report = text[text.index("PyTorch version:"):]
    code, doc = _judge(report, tmp_path, capsys)
    assert code == 1 and _errors(doc) == ["arch-not-in-build"]
    assert "sm_90" in doc["findings"][0]["explanation"] and "cu117" in doc["findings"][0]["explanation"]


@pytest.mark.parametrize("number", ["666", "869"])
def test_a_reports_torch_that_covers_the_gpu(number: str, capsys: Capsys) -> None:
    """666: torch 2.5.1+cu124 on H100s; heldout 869: torch 2.5.1+cu124 on P100s (its cu124 wheels carry sm_60): no
    arch-not-in-build from torch (869's vLLM, whose kernels would not cover the P100, is not in the paste)."""
    directory = CORPUS if number == "666" else HELDOUT
    _, doc = doctor_paste(_one(directory, number), capsys)
    assert "arch-not-in-build" not in _errors(doc)


def test_a_torch_release_the_matrix_does_not_know_is_not_judged(tmp_path: Path, capsys: Capsys) -> None:
    """torch 1.7.1 (before torch.yaml's first release, 2.0.0) on an RTX 3070: its arch list is not known, never a default."""
    report = ("PyTorch version: 1.7.1+cu102\nCUDA used to build PyTorch: 10.2\nOS: Ubuntu 20.04.1 LTS (x86_64)\n"
              "Is CUDA available: True\nGPU models and configuration: GPU 0: GeForce RTX 3070\n")
    _, doc = _judge(report, tmp_path, capsys)
    assert "arch-not-in-build" not in _errors(doc)
