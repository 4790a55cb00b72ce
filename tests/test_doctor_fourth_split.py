"""Families of messages, from the third split's held-out misses, now development material (issue 25, tests/data/heldout
400-430; see tests/data/heldout/README.md, "The fourth split"), each read by its family rather than by one excerpt's
wording: a compiler's or assembler's fatal error whatever the tool and its spacing (403); a GPU below the compute
capability a program requires, in either order of the words (401, 426); every kernel Xid line a failure (420); Gloo's
and NCCL's socket failures a network-interface misconfiguration (428); and the lines that show a failure widened by
form (fatal, catastrophic, error-level log lines, signals, a library that cannot load), so that no paste that shows a
failure gets "no problems found". Each family has look-alike lines that must not trigger it.

The dev pastes are real text from the public threads their sidecars name; the single lines below are real lines of
the same families (their threads in the comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vresolve.doctor.evidence import read_evidence

from .conftest import doctor_paste

HELDOUT = Path(__file__).parent / "data" / "heldout"
CORPUS = Path(__file__).parent / "data" / "corpus"
Capsys = pytest.CaptureFixture[str]



def _codes(text: str) -> list[str]:
    return [s.value.code for s in read_evidence(text + "\n").signals]


def _failures(text: str) -> list[str]:
    return [f.value for f in read_evidence(text + "\n").failures]


@pytest.mark.parametrize(("stem", "cause"), [
    ("401-gpu-too-old-fp8-transformer-engine-rtx3090", "gpu-too-old-for-feature"),
    ("403-build-oom-catastrophic-out-of-memory-onnxruntime-windows", "build-oom"),
    ("426-gpu-too-old-ollama-cuda-gpu-too-old-gtx970-cc52", "gpu-too-old-for-feature"),
    ("428-nccl-misconfigured-gloo-connectfullmesh-sglang-multinode-h20", "nccl-misconfigured"),
])
def test_the_third_sets_misses_are_named_by_their_family(stem: str, cause: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(HELDOUT / f"{stem}.txt", capsys)
    assert code == 1 and cause in [f["cause"] for f in doc["findings"] if f["severity"] == "error"]
    assert doc["unclear"] == []


def test_every_xid_line_is_a_failure_not_an_unreadable_paste(capsys: Capsys) -> None:
    """Xid 48 (an uncorrectable ECC error) and 63 (a page retired): no install cause, but a failure: cause not named,
    exit 1, not "holds nothing doctor can read" (exit 2)."""
    code, doc = doctor_paste(HELDOUT / "420-unclear-xid48-dbe-xid63-page-retired-dmesg.txt", capsys)
    assert code == 1 and not [f for f in doc["findings"] if f["severity"] == "error"]
    (u,) = doc["unclear"]
    assert "Xid (PCI:0000:8a:00): 48" in u["error"]


# -- compiler and assembler fatal errors, any tool, any spacing ------------------------------------------------------

@pytest.mark.parametrize("line", [
    "19:03:37   ptxas fatal   : Memory allocation failure",  # onnxruntime#... (403), MSBuild pads the colon
    "x.hpp(3324): catastrophic error : out of memory [D:\\workspace\\ONNX-Runtime\\a.vcxproj]",  # 403
    "/tmp/x.cu(12): catastrophic error: out of memory",  # nvcc's own spacing
    "Z:\\build\\pupy.c : fatal error C1002: compiler is out of heap space in pass 2",  # MSVC (pupy#658)
])
def test_a_build_out_of_memory_is_read_in_any_tools_words(line: str) -> None:
    assert "nvcc-out-of-memory" in _codes(line)
    assert _failures(line) == ["tool"]


@pytest.mark.parametrize("line", [
    "nvcc fatal   : Unsupported gpu architecture 'compute_89'",
    "ptxas fatal   : Ptx assembly aborted due to errors",
    "LINK : fatal error LNK1257: code generation failed",
    "collect2: fatal error: ld terminated with signal 9 [Killed]",
    "[2020-09-08 11:15:32] GPU #0: FATAL: the 'x' kernel failed",
])
def test_a_tools_fatal_error_is_a_failure_whatever_its_spacing(line: str) -> None:
    assert _failures(line) == ["tool"]


@pytest.mark.parametrize("line", [
    "ptxas info    : Compiling entry function '_Z10initKernelIfEvPT_iS0_' for 'sm_80'",  # xlstm#54: info, not fatal
    "-- Looking for a CUDA compiler - found; fatal errors are reported below if any",
    "LOG_LEVEL=FATAL python train.py",
    "I avoided the catastrophic error by lowering MAX_JOBS",
])
def test_fatal_lookalikes_are_not_failures(line: str) -> None:
    assert _failures(line) == [] and "nvcc-out-of-memory" not in _codes(line)


# -- a GPU below the capability a program requires, in either order ------------------------------------------------

@pytest.mark.parametrize("line", [
    "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.",  # 401
    "2024/01/14 19:50:06 gpu.go:138: CUDA GPU is too old. Falling back to CPU mode. Compute Capability detected: 5.2",
    "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090).",  # ComfyUI-QwenVL#28
    "    requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)",  # xFormers
    "RuntimeError: this kernel requires a GPU with compute capability >= 7.0",
])
def test_a_gpu_below_the_required_capability_is_read_in_either_order(line: str) -> None:
    assert "capability-below-required" in _codes(line)


@pytest.mark.parametrize("line", [
    "  Device 0: NVIDIA GeForce RTX 4070 Ti, compute capability 8.9, VMM: yes",  # llama.cpp's healthy device list
    'time=2024-03-22T20:48:20.624Z level=INFO source=gpu.go:119 msg="CUDA Compute Capability detected: 8.6"',
    "    requires device with capability <= (9, 0) but your GPU has capability (12, 0) (too new)",  # a build too old
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",  # the driver, not the GPU
    "compute_cap",
])
def test_capability_lookalikes_are_not_a_gpu_too_old(line: str) -> None:
    assert "capability-below-required" not in _codes(line)


def test_xformers_too_old_beside_a_build_without_cuda_is_not_the_cause() -> None:
    """xFormers lists every reason it refused an operator: "(too old)" after "xFormers wasn't build with CUDA
    support" is moot (the build has no CUDA kernels at all)."""
    text = ("`fa2F@0.0.0` is not supported because:\n    xFormers wasn't build with CUDA support\n"
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)")
    assert "capability-below-required" not in _codes(text)


def test_torchs_own_capability_floor_is_the_build_lacking_the_arch() -> None:
    line = "    PyTorch no longer supports this GPU because it is too old."  # torch/cuda/__init__.py's warning
    assert _codes(line) == ["arch-not-in-build"]


# -- Xid lines --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "[Mon Oct 29 12:07:39 2018] NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been "
    "detected on GPU in the framebuffer at partition 4, subpartition 1.",
    "Jun 25 14:53:54 host kernel: NVRM: Xid (PCI:0000:01:00): 120, GSP task panic: unknown error (0) @ pc:0x1001b30",
    "[93297.027938] NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x52e7b0",
    "[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel 0x0000000c, intr 00000000.",
    "NVRM: Xid (PCI:0000:3b:00): 74, pid=1234, NVLink: fatal error detected on link 2",
])
def test_every_xid_is_a_failure(line: str) -> None:
    assert _failures(line)[0] == "xid"


def test_an_xid_that_is_not_79_is_listed_not_named(tmp_path: Path, capsys: Capsys) -> None:
    """Xid 32 (NVIDIA's catalog: an invalid or corrupted push buffer stream), from a kernel log (kohsuke's gist): a
    failure no install cause explains, so cause not named (exit 1); never the GPU fallen off the bus."""
    log = tmp_path / "log.txt"
    log.write_text("Dec 23 23:30:56 rescue kernel: [ 179.437933] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000005 "
                   "intr 00008000\n")
    code, doc = doctor_paste(log, capsys)
    assert code == 1 and doc["findings"] == [] and len(doc["unclear"]) == 1


@pytest.mark.parametrize("line", [
    "NVRM: GPU at PCI:0000:01:00: GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513",
    "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.71.05  Release Build",
    "To allow a better identification of this error the Xid codes 119 and 120 are added",  # prose about Xids
])
def test_xid_lookalikes_are_not_failures(line: str) -> None:
    assert "xid" not in _failures(line)


# -- Gloo's and NCCL's socket failures ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
    "RuntimeError: [/opt/conda/work/third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [172.31.71.170]:13195: "
    "Connection refused",  # pytorch#108732
    "host:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43315> failed : "
    "No route to host",
])
def test_a_socket_that_cannot_connect_is_a_network_interface_problem(line: str) -> None:
    assert "socket-unreachable" in _codes(line)


@pytest.mark.parametrize("line", [
    "ddp-0: ddp-0:8381:8381 [0] NCCL INFO NET/Socket : Using [0]eth0:10.106.71.59<0>",  # DeepSpeed#2632: working
    "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
    "export GLOO_SOCKET_IFNAME=eth0",
    "hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN NET/Socket : message "
    "truncated : receiving 696320 bytes instead of 32768",  # nccl#268: ranks calling NCCL differently
    # a connect that only timed out: a slow or crashed peer as much as an interface (held-out 507: a CI runner)
    "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.h:301] Connect timeout "
    "[none]",
])
def test_socket_lookalikes_are_not_an_interface_problem(line: str) -> None:
    assert "socket-unreachable" not in _codes(line)


# -- the host compiler nvcc drives -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH",  # darknet#8584, candle#2241, xmake#1391
    "error: command 'x86_64-linux-gnu-gcc' failed: No such file or directory",
    "error: Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ Build Tools\"",
])
def test_a_missing_host_compiler_is_read(line: str) -> None:
    assert "host-compiler-missing" in _codes(line)


@pytest.mark.parametrize("line", [
    "checking for cl.exe ... C:\\Program Files\\Microsoft Visual Studio\\2019\\VC\\bin\\HostX64\\x64\\cl.exe",
    "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",  # nvcc failed: its own error is above
])
def test_host_compiler_lookalikes_are_not_read(line: str) -> None:
    assert "host-compiler-missing" not in _codes(line)


# -- no paste that shows a failure gets "no problems found" ----------------------------------------------------------

@pytest.mark.parametrize("line", [
    "E0715 18:02:17.586518  591934 cuda_dnn.cc:523] Loaded runtime CuDNN library: 9.0.0 but source was compiled "
    "with: 9.1.1.",  # jax#22416, glog's error level
    "[rank4]:[E421 02:05:38.764490322 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed",
    "2021-10-16 14:56:09.420644: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: "
    "CUDA_ERROR_UNKNOWN",
    "time=2024-05-01T10:00:00.000Z level=ERROR source=server.go:1 msg=\"llama runner terminated\"",
    "Aborted",
    "Bus error",
    "nvcc error   : 'cicc' died due to signal 9 (Kill signal)",
    "cudaGetDeviceCount returned 35",
    "Result = FAIL",
    "2022-08-11 14:21:29.345331: W tensorflow/platform/default/dso_loader.cc:64] Could not load dynamic library "
    "'cudart64_110.dll'; dlerror: cudart64_110.dll not found",
    "CUDA backend failed to initialize: Unable to load CUDA. Is it installed?",
])
def test_a_failure_is_read_by_its_form(line: str) -> None:
    assert _failures(line)


@pytest.mark.parametrize("line", [
    "I0715 18:02:17.586518  591934 cuda_dnn.cc:523] Loaded runtime CuDNN library: 9.1.1",  # info level
    "2020-09-09 11:24:28.446370: I tensorflow/platform/default/dso_loader.cc:44] Successfully opened dynamic "
    "library libcuda.so.1",
    "time=2025-07-30T13:57:36.458+08:00 level=INFO source=gpu.go:217 msg=\"looking for compatible GPUs\"",
    "Aborting is not needed: the run finished",
    "The device initialized and the backend is ready",
])
def test_failure_lookalikes_are_not_failures(line: str) -> None:
    assert _failures(line) == []


def test_healthy_pastes_of_every_set_stay_silent(capsys: Capsys) -> None:
    """Every paste labelled healthy in the corpus and in every held-out set (all of them measured; a blind set joins
    tests/data/heldout only once it has been measured): no error and nothing listed as a failure, whatever the new
    families read."""
    import yaml

    for sidecar in sorted([*CORPUS.glob("*.yaml"), *HELDOUT.glob("*.yaml")]):
        if (yaml.safe_load(sidecar.read_text()) or {}).get("expected_cause") != "healthy":
            continue
        _, doc = doctor_paste(sidecar.with_suffix(".txt"), capsys)  # (nothing readable: an input error, no finding)
        assert not [f for f in doc.get("findings", []) if f["severity"] == "error"], sidecar.stem
        assert doc.get("unclear", []) == [], sidecar.stem
