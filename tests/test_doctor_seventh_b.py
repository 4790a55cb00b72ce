"""The seventh split's "no problems found" over a failure (issue 25), fixed by family, with look-alikes: a logger's
error level and a traceback cut short are failures shown (817, 136); a process in a container that sees no driver or
GPU where the paste shows the container was given none (832); an NCCL job on GeForce RTX 40 boards, which have no
CUDA peer-to-peer, that hangs or fails (833); and the audit: no paste of the corpus or of the measured held-out sets
that shows a failure gets "no problems found"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_paste

DATA = Path(__file__).parent / "data"


def _judge(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, dict[str, Any], list[str]]:
    paste = tmp_path / "paste.txt"
    paste.write_text(text)
    code, answer = doctor_paste(paste, capsys)
    return code, answer, [f["cause"] for f in answer.get("findings", [])]


def _errors(answer: dict[str, Any]) -> list[str]:
    return [f["cause"] for f in answer.get("findings", []) if f["severity"] == "error"]


# ---------------------------------------------------------------------------------------------------------------
# a logger's error level, a traceback cut short: failures shown
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    # vLLM's logger (817's line), with and without a worker's process prefix
    "ERROR 03-20 07:42:38 [utils.py:613] Cannot use FA version 2 is not supported due to FA3 is only supported on "
    "devices with compute capability >= 8 excluding 8.6 and 8.9 and Blackwell archs (>=10)",
    "(VllmWorker rank=0 pid=2412) ERROR 03-20 07:42:38 [multiproc_executor.py:470] WorkerProc hit an exception.",
    "ERROR 01-11 13:09:40 engine.py:366] Engine background task failed",
    # Python logging's default format and loguru's, a bracketed level, uvicorn's
    "2024-05-01 10:00:00,123 - root - ERROR - Failed to load the model weights",
    "2024-03-20 07:42:38.123 | ERROR    | server:load:42 - model load failed",
    "[ERROR] something went wrong while loading",
    "ERROR:    Exception in ASGI application",
    # a CUDA call (or its symbol's lookup) said to fail, in ollama's Go log (801's line)
    'time=2024-09-03T16:36:00.677+08:00 level=INFO source=gpu.go:568 msg="unable to load cuda driver library" '
    'error="symbol lookup for cuCtxCreate_v3 failed"',
    "cudaMalloc failed: out of memory",
])
def test_error_level_lines_are_failures(line: str) -> None:
    assert [f.value for f in read_evidence(line + "\n").failures], line


@pytest.mark.parametrize("line", [
    "INFO 03-20 07:42:38 [topk_topp_sampler.py:36] Using FlashInfer for top-p & top-k sampling.",
    "WARNING 03-20 07:42:38 [config.py:1] ERROR handling in this path is deprecated",
    "NO ERRORS FOUND",
    "Build succeeded. 0 ERRORS, 0 warnings",
    "ERRORS: 0",
    "2024-05-01 10:00:00,123 - root - INFO - ERROR counters reset",
    "the log level is ERROR by default",
])
def test_lines_that_only_mention_an_error_level_are_not(line: str) -> None:
    assert not read_evidence(line + "\n").failures, line


def test_817_vllm_error_line_is_cause_not_named(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's FlashAttention-version ERROR line on a T4, nothing failing after it: not "no problems found", and no
    cause guessed (the thread does not say what failed)."""
    [paste] = DATA.glob("heldout/817-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and answer["unclear"] and not _errors(answer)
    assert "FA3 is only supported on devices" in answer["unclear"][0]["error"]  # (the logger's prefix cut)


def test_136_traceback_cut_before_its_exception(capsys: pytest.CaptureFixture[str]) -> None:
    [paste] = DATA.glob("corpus/136-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and answer["unclear"] and not _errors(answer)


def test_a_whole_traceback_leads_with_its_exception(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The traceback's first line is the least telling kind: the exception it ends with is what is said."""
    code, answer, _ = _judge(tmp_path, capsys, "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                             "    import foo\nValueError: the checkpoint has an unknown model type\n")
    assert code == 1 and answer["unclear"][0]["error"].startswith("ValueError")


# ---------------------------------------------------------------------------------------------------------------
# a container started without GPUs (832's family)
# ---------------------------------------------------------------------------------------------------------------

def test_832_container_without_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """A test container run with --gpus all shows the host's driver; in the Jupyter container nvidia-smi is missing
    and torch sees no CUDA: the container was started without GPUs."""
    [paste] = DATA.glob("heldout/832-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and _errors(answer) == ["gpu-not-visible"]


RUN_WITHOUT_GPUS = ("$ docker run -it --rm -p 8888:8888 pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime python app.py\n"
                    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
                    "installed a driver from http://www.nvidia.com/Download/index.aspx\n")


def test_run_without_gpu_flags_then_no_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, causes = _judge(tmp_path, capsys, RUN_WITHOUT_GPUS)
    assert code == 1 and "gpu-not-visible" in _errors(answer)


@pytest.mark.parametrize("text", [
    # the same run with GPUs: the no-driver error has another cause (not settled by the paste)
    RUN_WITHOUT_GPUS.replace("docker run -it", "docker run --gpus all -it"),
    RUN_WITHOUT_GPUS.replace("docker run -it", "docker run --runtime=nvidia -it"),
    # a run continued on the next line: its flags may follow
    RUN_WITHOUT_GPUS.replace("docker run -it --rm", "docker run -it --rm \\\n  --gpus all"),
    # no container at all: nvidia-smi missing on a bare machine is no driver installed
    "$ nvidia-smi\nbash: nvidia-smi: command not found\n>>> torch.cuda.is_available()\nFalse\n"
    "NVIDIA-SMI 535.54.03   Driver Version: 535.54.03   CUDA Version: 12.2\n",
])
def test_container_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, causes = _judge(tmp_path, capsys, text)
    assert "gpu-not-visible" not in causes
    assert code == 1  # each shows a failure: never "no problems found"


def test_cpu_torch_in_a_container_is_the_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU-only torch in a container run without GPUs, on a machine with an NVIDIA GPU: the build is the cause."""
    code, answer, causes = _judge(tmp_path, capsys, "GPU: NVIDIA GeForce RTX 3090\n$ docker run -it python:3.11 bash\n"
                                  ">>> import torch\n>>> torch.__version__\n'2.1.0+cpu'\n"
                                  "torch.cuda.is_available() returns False\n")
    assert "gpu-not-visible" not in causes and "cpu-only-build" in causes


def test_is_available_returns_false_is_read() -> None:
    e = read_evidence('cuda is not available in pylabs. "torch.cuda.is_available()" returns "False".\n')
    assert e.value("cuda_available") is False


# ---------------------------------------------------------------------------------------------------------------
# NCCL on GeForce RTX 40 boards (833's family)
# ---------------------------------------------------------------------------------------------------------------

def test_833_rtx4090_nccl_hang(capsys: pytest.CaptureFixture[str]) -> None:
    [paste] = DATA.glob("heldout/833-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and _errors(answer) == ["nccl-misconfigured"]
    assert "NCCL_P2P_DISABLE=1" in answer["findings"][0]["fix"]


NCCL_HANG = ("Training with 2x RTX 4090 under torchrun hangs after the first all_reduce.\n"
             "host:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
             "host:1234:1234 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n")


def test_rtx40_nccl_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, _ = _judge(tmp_path, capsys, NCCL_HANG)
    assert code == 1 and _errors(answer) == ["nccl-misconfigured"]


@pytest.mark.parametrize("text", [
    NCCL_HANG.replace("RTX 4090", "A100"),  # data-center boards have P2P: the hang's cause is not settled
    NCCL_HANG.replace("RTX 4090", "RTX 4000 Ada"),  # a professional Ada board, not a GeForce one
    NCCL_HANG.replace("hangs after the first all_reduce", "runs at 14 samples/s"),  # no hang, no failure
    "My single RTX 4090 hangs when loading the model in ComfyUI.\n",  # a hang without NCCL
])
def test_nccl_lookalikes(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, causes = _judge(tmp_path, capsys, text)
    assert "nccl-misconfigured" not in causes
    if "hangs" in text:
        assert code == 1 and answer["unclear"]  # a hang is a failure shown: its cause not named


def test_4x_gpu_count_is_read() -> None:
    assert [g.value.name for g in read_evidence("7402P and Asrock ROMED8-2T, 4xRTX 4090, NPS=4\n").gpus] == ["RTX 4090"]


# ---------------------------------------------------------------------------------------------------------------
# the audit: no paste that shows a failure gets "no problems found"; healthy pastes stay silent
# ---------------------------------------------------------------------------------------------------------------

def _pastes() -> list[Path]:
    held = [p for p in sorted((DATA / "heldout").glob("*.txt"))
            if (n := p.name.split("-")[0]).isdigit() and int(n) < 860]  # (3 digits, and 4 from stop 37 on)
    return sorted((DATA / "corpus").glob("*.txt")) + held


#: corpus pastes labelled with a cause that still get no finding and exit 0: excerpts that show no failure line (a
#: collect_env report, an install command); 041 and 148 left the list when the user's own words of a failure ("can't
#: install vllm", "installs torch with cpu") became failure lines (evidence/said.py)
_KNOWN_SILENT = {"007", "053", "056", "057", "075", "078", "081", "082", "085", "109", "117", "140", "149", "885"}


@pytest.mark.parametrize("paste", [p for p in _pastes() if p.name[:3] in {"817", "832", "833", "136", "801"}
                                   and "-healthy-" not in p.name],
                         ids=lambda p: p.stem[:3])
def test_fixed_pastes_are_not_silent(paste: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and (answer["findings"] or answer["unclear"])


def test_silent_pastes_show_no_failure_line() -> None:
    """Each paste left "no problems found" while labelled with a cause shows no failure doctor reads (no error line,
    no failure signal): its label rests on the thread, not on a line of the excerpt."""
    for paste in sorted((DATA / "corpus").glob("*.txt")):
        if paste.name[:3] in _KNOWN_SILENT:
            e = read_evidence(paste.read_text(encoding="utf-8", errors="replace"))
            assert not e.failures and not e.exceptions, paste.name


@pytest.mark.parametrize("paste", [p for p in _pastes()
                                   if (yaml.safe_load(p.with_suffix(".yaml").read_text()) or {}).get("expected_cause")
                                   == "healthy"], ids=lambda p: p.stem[:3])
def test_healthy_pastes_have_no_error(paste: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vresolve.cli import main

    main(["doctor", "--no-env", "--log", str(paste), "--json"])
    out = capsys.readouterr().out
    if not out.strip().startswith("{"):
        return
    import json

    answer = json.loads(out)
    assert not _errors(answer) and not answer.get("unclear")


def test_880_ngc_banner_no_driver_in_container(capsys: pytest.CaptureFixture[str]) -> None:
    """NGC's entrypoint says it found no driver in its container: started without GPUs (the maintainer's answer)."""
    [paste] = DATA.glob("corpus/880-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and _errors(answer) == ["gpu-not-visible"]


def test_ngc_banner_beside_a_broken_host_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same banner where the host's own nvidia-smi cannot reach the driver: the host is the fault, not the run."""
    code, answer, causes = _judge(tmp_path, capsys, (
        "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
        "$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
        "latest NVIDIA driver is installed and running.\n"))
    assert "gpu-not-visible" not in causes and code == 1


def test_881_rtx4090_all_reduce_perf_hang(capsys: pytest.CaptureFixture[str]) -> None:
    [paste] = DATA.glob("corpus/881-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and _errors(answer) == ["nccl-misconfigured"]


@pytest.mark.parametrize("number", ["882", "883"])
def test_docker_run_without_gpus_real_pastes(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    """floydhub's GPU image run with plain `docker run` (IPython's is_available() False), anibali's image run with
    `docker run -it ... sh` (nvidia-smi not found inside, the VM's nvidia-smi fine)."""
    [paste] = DATA.glob(f"corpus/{number}-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and _errors(answer) == ["gpu-not-visible"]


def test_ipython_prompts_are_read() -> None:
    e = read_evidence("In [2]: torch.cuda.is_available()\nOut[2]: False\n")
    assert e.value("cuda_available") is False


def test_quoted_run_with_gpus_is_not_without(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same words with `--gpus=all` in the quoted command: nvidia-smi missing there is not settled by the run."""
    text = (DATA / "corpus").glob("883-*.txt").__next__().read_text().replace("docker run -it", "docker run --gpus=all -it")
    text = text.replace("Output from my vm's nvidia-smi.", "").split("+---")[0]  # and no host driver shown
    code, answer, causes = _judge(tmp_path, capsys, text)
    assert "gpu-not-visible" not in causes and code == 1


def test_884_runtime_nvidia_no_driver_is_not_named(capsys: pytest.CaptureFixture[str]) -> None:
    """Started with the NVIDIA runtime and NVIDIA_VISIBLE_DEVICES=all, nvidia-smi working inside: a container given its
    GPUs; torch's "Found no NVIDIA driver" there is not named (the thread's fix is the image's driver capabilities)."""
    [paste] = DATA.glob("corpus/884-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert code == 1 and answer["unclear"] and not answer["findings"]


def test_885_rtx5090_is_not_an_rtx40(capsys: pytest.CaptureFixture[str]) -> None:
    [paste] = DATA.glob("corpus/885-*.txt")
    code, answer = doctor_paste(paste, capsys)
    assert "nccl-misconfigured" not in [f["cause"] for f in answer["findings"]]
