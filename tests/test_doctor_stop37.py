"""Facts read whatever else a paste shows (issue 25, stop 37), from the held-out pastes named in each test (their
sidecars cite the threads):

- a CPU-only torch shown (``+cpu``) is named beside failures too (a warning where the paste shows no GPU);
- a compiled package's own report of a build without CUDA (detectron2's and MMCV's "CUDA compiler: not available",
  k2's "With CUDA: False", a torch extension's "Building with CUDA: False") is ``cpu-only-build`` where CUDA is wanted;
- conda's plan is read past a user's elision (``......``), and a command quoted in a sentence ends at its quotes;
- a GitHub issue form's field (``### OS Platform and Distribution``, then its answer on the next line) is read as one;
- the user's word that they got an error is a failure where the paste shows none of its own ("no problems found" is
  never said over it), and is dropped where the paste shows one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence

from .conftest import DATA, doctor_paste, doctor_text, worst_severities

HELDOUT = DATA / "heldout"


def _paste(number: str) -> Path:
    return next(HELDOUT.glob(f"{number}-*.txt"))


@pytest.mark.parametrize("number", ["042", "063", "084"])
def test_a_cpu_only_torch_is_named_beside_failures(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 042 ultralytics (torch 1.13.1+cpu, "device=0 is not working"); 063 kohya_ss (Torch 2.2.1+cpu beside a failed
    # pip run); 084 LLaMA-Factory on Windows (torch 2.6.0+cpu, "cuda is no avaible")
    code, doc = doctor_paste(_paste(number), capsys)
    assert code == 1 and worst_severities(doc).get("cpu-only-build") == "warning"


@pytest.mark.parametrize("number, library", [("138", "detectron2"), ("378", "detectron2"), ("486", "k2")])
def test_a_package_reporting_a_build_without_cuda(number: str, library: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # 138, 378: detectron2's collect_env "Detectron2 CUDA Compiler  not available" beside an RTX GPU and a CUDA torch;
    # 486: k2's version report "With CUDA: False" beside torch 1.13.1+cu117
    code, doc = doctor_paste(_paste(number), capsys)
    [finding] = [f for f in doc["findings"] if f["cause"] == "cpu-only-build"]
    assert code == 1 and finding["severity"] == "error" and finding["title"].startswith(library)


def test_a_build_without_cuda_on_macos_is_no_fault(capsys: pytest.CaptureFixture[str]) -> None:
    # 951: detectron2's report on a Mac ("CUDA compiler not available"): no NVIDIA GPU to use
    _, doc = doctor_paste(_paste("951"), capsys)
    assert "cpu-only-build" not in worst_severities(doc)


@pytest.mark.parametrize("text", [
    # no GPU, driver, CUDA build or CUDA asked for: a CPU machine's build
    "k2 version: 1.23.3\nWith CUDA: False\n",
    "running build_ext\nBuilding with CUDA: False\n",
])
def test_a_build_without_cuda_where_no_cuda_is_wanted(text: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = doctor_text(text, tmp_path, capsys)
    assert "cpu-only-build" not in worst_severities(doc)


def test_condas_plan_read_past_an_elision(capsys: pytest.CaptureFixture[str]) -> None:
    # 678 conda: cudatoolkit=10.1 asked in a sentence, the plan ("......" between its rows) gives pytorch
    # 1.10.0-py3.6_cpu_0 with cpuonly pulled in by the solver (not asked for)
    code, doc = doctor_paste(_paste("678"), capsys)
    assert code == 1 and worst_severities(doc).get("cpu-only-build") == "error"
    e = read_evidence(_paste("678").read_text())
    assert {i.value.name for i in e.installer if i.value.action == "asked"} == {"torch", "torchvision", "torchaudio",
                                                                                "cudatoolkit"}


def test_issue_form_fields(capsys: pytest.CaptureFixture[str]) -> None:
    # 723 tensorflow: "### Tensorflow Version" / "2.11.0", "### OS Platform and Distribution" / "Windows 11", and
    # "tf.config.list_physical_devices('GPU') # [] is returned"
    code, doc = doctor_paste(_paste("723"), capsys)
    assert code == 1 and worst_severities(doc).get("cpu-only-build") == "error"
    e = read_evidence(_paste("723").read_text())
    assert e.dist("tensorflow").value.version == "2.11.0" and [o.value for o in e.os] == ["Windows 11"]


def test_a_field_that_reads_nothing_is_left_to_the_words() -> None:
    # 659 (tensorflow#26182's template): "CUDA/cuDNN version: Cuda 9.0" is CUDA 9.0
    e = read_evidence("- CUDA/cuDNN version: Cuda 9.0 \n- GPU model and memory: Titan Xp\n")
    assert [c.value for c in e.cuda] == ["9.0"] and e.gpus[0].value.name == "Titan Xp"


@pytest.mark.parametrize("text", [
    "I have encountered the following error at compiling faiss with gpu support from source:\n\n![screenshot](x.png)\n",
    "When I run the server we get this exception and it stops.\n",
    "训练时报错，无法训练\n",  # "an error was raised in training, cannot train"
    "基于Paddle nvidia-docker 启动时，无法正常检测到gpu\n",  # "started in nvidia-docker, the GPU is not detected"
    "pip install flash-attn 安装失败\n",  # "the install failed"
])
def test_the_users_word_of_an_error_is_never_no_problems(text: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 1 and doc["unclear"]


def test_the_users_word_of_an_error_gives_way_to_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    # 035 (healthy): "we get the following error:" above vLLM's own check that 64 heads do not divide by 6 (the
    # program's own limit, not a fault of the stack): the user's words add no failure of their own
    code, doc = doctor_paste(_paste("035"), capsys)
    assert not doc["unclear"] and "error" not in {f["severity"] for f in doc["findings"]}


def test_a_shared_object_not_found_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    # 1002 torchrec: "File fbgemm_gpu_py.so not found" on import
    code, doc = doctor_paste(_paste("1002"), capsys)
    assert code == 1 and doc["unclear"]


def test_a_chinese_question_without_a_failure_stays_silent(capsys: pytest.CaptureFixture[str]) -> None:
    # 1099 (healthy): "最新版本的微调代码损失无法正常下降" (the loss does not go down): a training question, no failure
    code, doc = doctor_paste(_paste("1099"), capsys)
    assert code == 0 and not doc["unclear"]
