"""Families of messages from the fifth split's held-out misses, now development material (issue 25, tests/data/heldout
600-627; see tests/data/heldout/README.md, "The fifth split"), each read by its family rather than by one excerpt's
wording, with look-alikes that must not trigger it.

The pastes are real text from the public threads their sidecars name; the single lines below are real lines of the
same families (their threads in the comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_paste

HELDOUT = Path(__file__).parent / "data" / "heldout"
LOGS = Path(__file__).parent / "data" / "logs"
Capsys = pytest.CaptureFixture[str]



def _errors(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["cause"] for f in doc["findings"] if f["severity"] == "error"]


# --- a warning is not a failure: vLLM failing to read its commit hash (vllm._version) ---

def test_a_missing_version_module_in_a_warning_alone_is_not_a_shadowing_checkout(capsys: Capsys) -> None:
    """600: a working vLLM's collect_env run from a source checkout warns "Failed to read commit hash: No module named
    'vllm._version'"; nothing fails, so nothing is wrong (and the report's cut sections are not read as facts)."""
    code, doc = doctor_paste(HELDOUT / "600-healthy-vllm-collect-env-a100-torch240-cu121-driver555-best-of.txt", capsys)
    assert (code, _errors(doc), doc["unclear"]) == (0, [], [])
    main(["doctor", "--no-env", "--log",
          str(HELDOUT / "600-healthy-vllm-collect-env-a100-torch240-cu121-driver555-best-of.txt")])
    text = capsys.readouterr().out
    assert "sees 0 GPU(s)" not in text and "arch list ()" not in text and "sees a GPU (which: not shown)" in text


@pytest.mark.parametrize("name", ["source-tree-shadowing__fork-checkout-api-server.txt",
                                  "source-tree-shadowing__collect-env-inside-checkout.txt"])
def test_the_same_warning_before_a_traceback_is_still_the_checkout(name: str, capsys: Capsys) -> None:
    """Look-alike: the same warning, then the import of vllm fails (a traceback): the checkout is the cause."""
    code, doc = doctor_paste(LOGS / name, capsys)
    assert code == 1 and "source-tree-shadowing" in _errors(doc)


def test_an_import_that_fails_outside_a_warning_is_still_read() -> None:
    """Look-alike: "No module named" as an error of its own is an import failure whatever else the paste shows."""
    e = read_evidence("ModuleNotFoundError: No module named 'vllm._C'\n")
    assert [f.value.module for f in e.import_failures] == ["vllm._C"]
    warned = "/x/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:\nNo module named 'vllm._version'\n"
    assert read_evidence(warned).import_failures == ()
    assert [f.value.module for f in read_evidence(warned + "Traceback (most recent call last):\n").import_failures] \
        == ["vllm._version"]


# --- facts that rule a cause out stop it: /dev/shm with room is not "shared memory too small" ---

def test_a_bus_error_beside_the_hosts_ipc_namespace_is_not_named_shared_memory(capsys: Capsys) -> None:
    """617: torch's "insufficient shared memory (shm)" (printed for any bus error in a DataLoader worker) in a container
    started with --ipc=host and 254 GB of /dev/shm: the cause is not named, the failure still listed (exit 1)."""
    code, doc = doctor_paste(HELDOUT / "617-unclear-bus-error-in-worker-with-254gb-shm-ipc-host.txt", capsys)
    assert code == 1 and _errors(doc) == []
    (u,) = doc["unclear"]
    assert "insufficient shared memory (shm)" in u["error"]


def test_the_same_bus_error_without_those_facts_is_still_shared_memory(capsys: Capsys) -> None:
    """Look-alike: the same DataLoader message in a SageMaker container that shows no room (616) is still the cause."""
    code, doc = doctor_paste(HELDOUT / "616-shm-dataloader-bus-error-sagemaker-container.txt", capsys)
    assert code == 1 and "shared-memory-too-small" in _errors(doc)


@pytest.mark.parametrize(("line", "ample"), [
    ("docker run --gpus all --ipc=host vllm/vllm-openai:latest", True),
    ("    ipc: host", True),
    ("docker run --shm-size=32g img", True),
    ("shm             254G  1.0G  253G   1% /dev/shm", True),  # df -h: the Avail column
    # look-alikes: advice or a fix, a small or full /dev/shm
    ("you should try --ipc=host or a larger --shm-size", False),
    ("fixed by adding --ipc=host to docker run", False),
    ("shm              64M   64M     0 100% /dev/shm", False),
    ("docker run --shm-size=1g img", False),
])
def test_room_in_dev_shm_is_read_from_the_users_setup_only(line: str, ample: bool) -> None:
    assert bool(read_evidence(line + "\n").shm_ample) is ample


def test_room_shown_anywhere_in_the_paste_turns_the_shm_signal_into_a_failure() -> None:
    text = ("docker run --ipc=host img\n"
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n")
    e = read_evidence(text)
    # (the run line has no GPU flag: seventh-b's `run-without-gpus` signal is read from it too, and stop 35's context
    # signal that the program runs in a container: neither is an shm signal)
    context = ("run-without-gpus", "container-said")
    assert [s.value.code for s in e.signals if s.value.code not in context] == []
    assert [f.line for f in e.failures] == [2]
    e = read_evidence(text.replace("--ipc=host", "--gpus all"))
    assert [s.value.code for s in e.signals if s.value.code not in context] == ["shm-exhausted"]


# --- a failure by its form: an exception whose message is on the next line, a logger's CRITICAL level ---

def test_an_import_error_with_its_message_below_is_a_failure(capsys: Capsys) -> None:
    """626: sgl_kernel raises "ImportError: " and prints "[sgl_kernel] CRITICAL: Could not load any common_ops
    library!" below it; the paste shows no torch version, so: cause not named (exit 1), never "no problems found"."""
    code, doc = doctor_paste(HELDOUT / "626-companion-mismatch-sgl-kernel-cpu-built-torch29-installed-torch210.txt", capsys)
    assert code == 1 and len(doc["unclear"]) == 1
    assert [f.value for f in read_evidence((HELDOUT / "626-companion-mismatch-sgl-kernel-cpu-built-torch29-installed"
                                                     "-torch210.txt").read_text()).failures] == [
        "traceback", "exception", "tool", "gpu-unused"]  # (sgl_kernel's "Expected variant: CPU/No GPU detected")


@pytest.mark.parametrize(("line", "failed"), [
    ("ImportError: ", True),
    ("[sgl_kernel] CRITICAL: Could not load any common_ops library!", True),
    ("CRITICAL:root:engine died", True),
    # look-alikes: the word in prose, a level named in a config, a heading
    ("It is CRITICAL that the versions match", False),
    ("log_level: CRITICAL", False),
    ("Possible errors: ImportError: or OSError:", False),
])
def test_critical_and_bare_exception_lines_by_form(line: str, failed: bool) -> None:
    assert bool(read_evidence(line + "\n").failures) is failed


# --- TensorFlow 2.11 and later on native Windows: a CPU-only build ---

def test_tensorflow_212_on_native_windows_seeing_no_gpu_is_a_cpu_only_build(capsys: Capsys) -> None:
    """618: TensorFlow 2.12 on Windows 10 prints "GPU is NOT AVAILABLE": its Windows package has no GPU build from
    2.11 (TensorFlow's release notes and install guide)."""
    code, doc = doctor_paste(HELDOUT / "618-cpu-only-build-tensorflow-212-windows-native-gpu-not-available.txt", capsys)
    assert code == 1 and _errors(doc) == ["cpu-only-build"]


@pytest.mark.parametrize("text", [
    "OS: Windows 10\nTensor Flow Version: 2.10.1\nGPU is NOT AVAILABLE\n",  # the last release with Windows GPU builds
    "OS: Ubuntu 22.04\nTensor Flow Version: 2.12.0\nNum GPUs Available:  0\n",  # Linux: another reason
    "Windows 11 with WSL2\nrunning under /mnt/c/Users/me\nTensor Flow Version: 2.15.0\nGPU is NOT AVAILABLE\n",
    "OS: Windows 10\nGPU is NOT AVAILABLE\n",  # no TensorFlow version shown
    "OS: Windows 10\nTensor Flow Version: 2.12.0\nNum GPUs Available:  1\n",  # it sees one
])
def test_tensorflow_lookalikes_are_not_the_windows_cpu_build(text: str) -> None:
    assert "tensorflow-windows-cpu-build" not in [s.value.code for s in read_evidence(text).signals]


def test_the_windows_cpu_build_reads_the_guides_own_checks() -> None:
    for check in ("Num GPUs Available:  0", "GPU is NOT AVAILABLE"):
        e = read_evidence(f"OS: Microsoft Windows 11 Pro\nTensorFlow version: 2.16.1\n{check}\n")
        assert [s.value.code for s in e.signals] == ["tensorflow-windows-cpu-build"], check


# --- gcc without its compiler proper (g++ not installed) ---

@pytest.mark.parametrize(("line", "named"), [
    ("gcc: fatal error: cannot execute ‘cc1plus’: execvp: No such file or directory", True),
    ("x86_64-linux-gnu-gcc: error: cannot execute 'cc1plus': execvp: No such file or directory", True),
    ("gcc-11: fatal error: cannot execute 'cc1': execvp: No such file or directory", True),
    # look-alikes: cc1plus that runs and warns, or is killed (out of memory), or fails on the code
    ("cc1plus: warning: command-line option '-Wstrict-prototypes' is valid for C/ObjC but not for C++", False),
    ("g++: fatal error: Killed signal terminated program cc1plus", False),
    ("cc1plus: all warnings being treated as errors", False),
])
def test_a_missing_compiler_proper_is_no_c_compiler(line: str, named: bool) -> None:
    codes = [s.value.code for s in read_evidence(line + "\n").signals]
    assert ("host-compiler-missing" in codes) is named


def test_cc1plus_missing_is_named(capsys: Capsys) -> None:
    code, doc = doctor_paste(HELDOUT / "620-c-compiler-missing-deepspeed-cpu-adam-cc1plus-not-found.txt", capsys)
    assert code == 1 and _errors(doc) == ["c-compiler-missing"]


# --- Fabric Manager's own log: its version against the driver's; a service that failed to start ---

def test_fabric_manager_of_another_version_than_the_driver_is_named(capsys: Capsys) -> None:
    """609: "fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver version 530.41.03":
    Fabric Manager must be the driver's exact version (NVIDIA's Fabric Manager guide), so it does not run."""
    code, doc = doctor_paste(HELDOUT / "609-fabric-manager-not-running-version-mismatch-530-driver.txt", capsys)
    assert code == 1 and _errors(doc) == ["fabric-manager-not-running"]


def test_fabric_manager_with_nothing_to_manage_is_a_failure_not_named(capsys: Capsys) -> None:
    """610 (look-alike): the service fails with NV_WARN_NOTHING_TO_DO (two A40s on an NVLink bridge, no NVSwitch): a
    failure whose cause is not named (exit 1), not Fabric Manager's version, nor an unreadable paste (exit 2)."""
    code, doc = doctor_paste(HELDOUT / "610-unclear-fabricmanager-nothing-to-do-a40-nvlink-bridge.txt", capsys)
    assert code == 1 and _errors(doc) == [] and len(doc["unclear"]) == 1


@pytest.mark.parametrize(("line", "code"), [
    ("nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver "
     "version 530.41.03. Please update with matching NVIDIA driver package.", "fabric-manager-version-mismatch"),
    # look-alikes: a version check of two other things, FM reporting its own version
    ("nvidia-smi: client version 535.54 does not match with driver version 535.104", None),
    ("Fabric Manager version is : 535.129.03", None),
])
def test_fabric_manager_version_lines(line: str, code: str | None) -> None:
    codes = [s.value.code for s in read_evidence(line + "\n").signals]
    assert codes == ([code] if code else [])


@pytest.mark.parametrize(("line", "failed"), [
    ("Job for nvidia-fabricmanager.service failed because the control process exited with error code.", True),
    ("Nov 15 14:15:47 host systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, "
     "status=1/FAILURE", True),
    # look-alikes: a service that runs, one that stopped cleanly
    ("     Active: active (running) since Tue 2024-05-14 09:12:01 UTC; 2h ago", False),
    ("Nov 15 14:15:47 host systemd[1]: nvidia-persistenced.service: Main process exited, code=exited, "
     "status=0/SUCCESS", False),
])
def test_a_service_that_failed_to_start_is_a_failure(line: str, failed: bool) -> None:
    assert bool(read_evidence(line + "\n").failures) is failed
