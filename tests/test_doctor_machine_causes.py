"""Causes around the stack that users hit and doctor names (issue 25): /dev/shm too small, NCCL's transports
misconfigured, the NVSwitch fabric not initialized (Fabric Manager), a GPU fallen off the bus, no C compiler for
Triton, a container image newer than the host's driver; and what live doctor says of an environment with neither
torch nor vLLM.

Pasted text comes from public threads (tests/data/corpus, the sidecars name each thread); the excerpts that must
stay silent are real lines of healthy NCCL logs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vresolve.cli import main

from .conftest import doctor_paste
from .test_broken_driver import COULD_NOT_COMMUNICATE, Machine, machine, smi_saying, tree  # noqa: F401

CORPUS = Path(__file__).parent / "data" / "corpus"
Capsys = pytest.CaptureFixture[str]



@pytest.mark.parametrize(("stem", "cause", "title"), [
    ("260-shm-nccl-posix-fallocate-docker-2080", "shared-memory-too-small", "Shared memory (/dev/shm)"),
    ("262-shm-dataloader-bus-error-pipedream", "shared-memory-too-small", "Shared memory (/dev/shm)"),
    ("263-nccl-p2p-ipc-handle-peer-access-ray", "nccl-misconfigured", "NCCL cannot use the path"),
    ("265-nccl-bootstrap-no-socket-interface-eth0", "nccl-misconfigured", "NCCL cannot use the path"),
    ("267-fabric-manager-802-hf-jobs-h200", "fabric-manager-not-running", "NVSwitch fabric is not initialized"),
    ("268-gpu-fallen-off-bus-dmesg-nvsentinel", "gpu-fallen-off-bus", "fallen off the bus (Xid 79)"),
    ("270-triton-no-c-compiler-vllm-docker", "c-compiler-missing", "No C compiler"),
    # CUDA error 804 is driver-too-old, told in the words of the container case (its own row, not the pip wheel's)
    ("272-error-804-vllm-image-0.4.3-rtx4090-535", "driver-too-old", "The container's CUDA is newer"),
])
def test_each_cause_is_named_with_its_own_row(stem: str, cause: str, title: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(CORPUS / f"{stem}.txt", capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == cause]
    assert code == 1 and f["severity"] == "error" and title in f["title"]
    assert f["evidence"] and all(e.startswith("pasted line ") for e in f["evidence"])
    assert doc["unclear"] == []


def test_a_host_driver_too_old_for_a_pip_wheel_keeps_its_own_words(tmp_path: Path, capsys: Capsys) -> None:
    """The row picked by the line's signal: torch's "driver too old" is not the container's 804."""
    log = tmp_path / "log.txt"
    log.write_text((Path(__file__).parent / "data/logs/driver-too-old__cuda-init-found-version-11000.txt").read_text())
    code, doc = doctor_paste(log, capsys)
    (f,) = [f for f in doc["findings"] if f["cause"] == "driver-too-old"]
    assert code == 1 and f["title"].startswith("The NVIDIA driver is older than the CUDA runtime")


@pytest.mark.parametrize("lines", [
    # NCCL choosing P2P and falling back from a missing libibverbs: a working run (NVIDIA/nccl#367, vllm#5458)
    "26a46eb2b1d3:111329:111329 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    "26a46eb2b1d3:111329:111329 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>\n"
    "ip-172-31-13-247:50202:50264 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/CUMEM\n"
    "ip-172-31-13-247:50200:50262 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via direct shared memory\n",
    # (an Xid that is not 79 is a failure no install cause explains: tests/test_doctor_fourth_split.py)
])
def test_healthy_lines_stay_silent(lines: str, tmp_path: Path, capsys: Capsys) -> None:
    log = tmp_path / "log.txt"
    log.write_text(lines)
    code, doc = doctor_paste(log, capsys)
    if "error" in doc:  # a lone kernel line doctor reads nothing from: said so (exit 2), never a cause it is not
        assert code == 2 and "holds nothing doctor can read" in doc["error"]["message"]
        return
    causes = {f["cause"] for f in doc["findings"]}
    assert not causes & {"nccl-misconfigured", "shared-memory-too-small", "gpu-fallen-off-bus"}, doc["findings"]
    assert code == 0 and doc["unclear"] == []


# live doctor: an environment with neither torch nor vLLM (vresolve's own) is not healthy, it is unchecked

@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real interpreter with neither torch nor vLLM: a fresh venv (no pip, no site packages)."""
    env = tmp_path_factory.mktemp("bare") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    return env / "bin" / "python"


def test_nothing_to_check_in_an_environment_without_the_stack(bare_python: Path, capsys: Capsys) -> None:
    assert main(["doctor", "--interpreter", str(bare_python), "--json", "--timeout", "120"]) == 1
    doc = json.loads(capsys.readouterr().out)
    said = doc["nothing_checked"]
    assert said.startswith("nothing to check here: no torch/vLLM in this environment (") and str(bare_python) in said
    assert said.endswith("point doctor at your environment: --interpreter YOUR_ENV/bin/python")
    assert main(["doctor", "--interpreter", str(bare_python), "--timeout", "120"]) == 1
    out = capsys.readouterr().out
    assert "nothing to check here" in out and "no problems found" not in out
    assert main(["doctor", "--interpreter", str(bare_python), "--timeout", "120", "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "nothing to check here" in out and "No problem found" not in out


def test_an_environment_with_torch_is_checked(tmp_path: Path, capsys: Capsys) -> None:
    """An interpreter whose probe answers with torch installed: checked as usual, no "nothing to check"."""
    answer = {"sys_path": [], "modules": [{"name": "torch", "origin": "/env/torch/__init__.py", "version": "2.5.1"},
                                          {"name": "vllm", "origin": None, "error": "ModuleNotFoundError: No module "
                                           "named 'vllm'"}], "requires": {},
              "torch": {"version": "2.5.1", "cuda": None, "available": False, "arch_list": []}}
    (tmp_path / "answer").write_text("\n@@vresolve@@" + json.dumps(answer) + "\n")
    exe = tmp_path / "python"
    exe.write_text(f"#!/bin/sh\ncat '{tmp_path / 'answer'}'\n")
    exe.chmod(0o755)
    main(["doctor", "--interpreter", str(exe), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["environment"]["error"] is None and doc["nothing_checked"] is None


def test_a_broken_driver_is_named_beside_nothing_to_check(tmp_path: Path, machine: Machine,  # noqa: F811
                                                          bare_python: Path, capsys: Capsys) -> None:
    """detection's driver.state == "broken" (the module loaded, nvidia-smi cannot talk to it): named, live."""
    machine(smi_saying(tmp_path, COULD_NOT_COMMUNICATE, 9), tree(tmp_path))
    assert main(["doctor", "--interpreter", str(bare_python), "--json", "--timeout", "120"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["host"]["driver"]["state"] == "broken"
    (f,) = [f for f in doc["findings"] if f["title"] == "The NVIDIA driver is installed but not working"]
    assert f["severity"] == "error" and "sudo modprobe nvidia" in f["fix"]
    assert doc["nothing_checked"] is not None
    assert main(["doctor", "--interpreter", str(bare_python), "--timeout", "120"]) == 1
    out = capsys.readouterr().out
    assert "The NVIDIA driver is installed but not working" in out and "no problems found" not in out
