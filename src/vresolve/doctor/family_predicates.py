"""Predicates over families of facts that several tools say alike (issue 25, stop 34): the driver's NVML library
missing where a GPU is expected, a torch that an install replaced (two torch builds shown, an install between), and a
DataLoader worker that died where the paste shows a small /dev/shm."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .cpu_install import cpu_asked
from .evidence import Evidence, Seen
from .paste_predicates import pasted_line
from .predicate_base import Facts, Hit, Missing, predicate

#: the torch asked for by name on an install command (then it was replaced on purpose)
_TORCH_ASKED_RE = re.compile(r"(?<![\w-])torch(?![\w-])")


def _signals(e: Evidence, code: str) -> list[Seen[Any]]:
    return [s for s in e.signals if s.value.code == code]


def _gpu_expected(e: Evidence, line: Seen[Any]) -> bool:
    """Whether the paste shows a GPU is meant to be used: a GPU or a CUDA torch shown, the container runtime's own
    hook (asked for GPUs), or vLLM finding no platform at all (its CUDA build with nothing to run on)."""
    if "nvidia-container-cli" in line.text or e.gpus:
        return True
    if any(cuda is not None for cuda in (t.value for t in e.torch_cuda)):
        return True
    return bool(_signals(e, "vllm-no-platform"))


@predicate("nvml-library-missing-gpu-expected", ())
def _nvml_library_missing(f: Facts) -> Iterator[Hit]:
    """NVML's "NVML Shared Library Not Found" or the container hook's "libnvidia-ml.so.1: cannot open shared object
    file" where a GPU is meant to be used (on a machine without a GPU the first is only a monitor's note)."""
    e = f.log
    if e is None:
        return
    hits = [s for s in _signals(e, "nvml-library-missing") if _gpu_expected(e, s)]
    if hits:
        yield Hit(evidence=tuple(pasted_line(s) for s in hits[:2]), seen=tuple(hits))


def _torch_builds(e: Evidence) -> list[Seen[Any]]:
    """Every torch the paste shows with a version, in line order, one per change."""
    seen = sorted((d for d in e.dists if d.value.name == "torch" and d.value.version), key=lambda d: d.line)
    changes: list[Seen[Any]] = []
    for d in seen:
        if not changes or changes[-1].value.version != d.value.version:
            changes.append(d)
    return changes


@predicate("torch-replaced-across-install", ("torch",), ("before", "after"))
def _torch_replaced(f: Facts) -> Iterator[Hit]:
    """Two torch builds shown one after the other (a REPL's ``torch.__version__``, an installer's "Successfully
    installed torch-1.1.0", a list), with an install command in the paste that did not ask for torch itself: the
    installer replaced the torch that was there. A paste that asks for torch by name replaced it on purpose."""
    e = f.log
    if e is None:
        return
    commands = _signals(e, "install-command")
    if not commands or any(_TORCH_ASKED_RE.search(c.value.detail or "") for c in commands):
        return
    builds = _torch_builds(e)
    if len(builds) < 2:
        return
    before, after = builds[0], builds[-1]
    if before.value.version == after.value.version:
        return
    yield Hit(evidence=(pasted_line(before), pasted_line(commands[0]), pasted_line(after)),
              fill={"before": before.value.version, "after": after.value.version}, seen=(after,))


@predicate("dataloader-worker-died-small-shm", ())
def _worker_died_small_shm(f: Facts) -> Iterator[Hit]:
    """A DataLoader worker that "exited unexpectedly" where the paste shows the container's /dev/shm is small (64 MB
    is Docker's default): the worker died passing a batch through shared memory."""
    e = f.log
    if e is None or e.shm_ample:
        return
    died = _signals(e, "dataloader-worker-died")
    small = _signals(e, "shm-small")
    if died and small:
        yield Hit(evidence=(pasted_line(died[0]), pasted_line(small[0])), seen=(died[0],))


@predicate("nccl-loopback-across-nodes", ())
def _nccl_loopback_across_nodes(f: Facts) -> Iterator[Hit]:
    """NCCL's bootstrap bound to the loopback interface (``Bootstrap : Using [0]lo:127.0.0.1``, NCCL_SOCKET_IFNAME=lo)
    in a job the paste shows spans several nodes: the other nodes cannot reach 127.0.0.1."""
    e = f.log
    if e is None:
        return
    loop, nodes = _signals(e, "nccl-bootstrap-loopback"), _signals(e, "multi-node")
    if loop and nodes:
        yield Hit(evidence=(pasted_line(loop[0]), pasted_line(nodes[0])), seen=(loop[0],))


@predicate("torch-cpu-build-beside-driver", ("torch_cuda", "driver"), ("driver",))
def _cpu_torch_beside_driver(f: Facts) -> Iterator[Hit]:
    """torch shown to be a CPU build ("PyTorch built with CUDA: False", ``torch.version.cuda`` None, ``+cpu``) where
    the paste shows nvidia-smi answering with an NVIDIA driver (so a GPU and its driver are there), and no GPU named
    (``torch-cpu-build-beside-gpus`` speaks where one is); not where the CPU build was asked for."""
    e = f.log
    if e is None or e.gpus or f.host.gpus or cpu_asked(e) is not None:
        return
    cuda = e.torch_cuda_seen()
    driver = next((d for d in e.driver if d.how == "nvidia-smi"), None)
    if cuda is None or cuda.value is not None or driver is None:
        return
    yield Hit(evidence=(pasted_line(cuda), pasted_line(driver)), seen=(cuda,), fill={"driver": str(driver.value)})


#: what shows shared memory in use or at stake around a SIGBUS: a container, NCCL, torch's workers, /dev/shm itself
_SHM_CONTEXT = ("shm-small", "nccl-in-use", "dataloader-worker-died")


def _containers_shown(e: Evidence) -> list[Seen[Any]]:
    """The containers the paste itself shows (an image, a prompt, the user's words), not a relay's log prefix (a
    paste's findings do not depend on how it was relayed)."""
    return [*_signals(e, "container-said"), *(c for c in e.container if c.how != "log prefix")]


@predicate("process-killed-by-sigbus", ())
def _killed_by_sigbus(f: Facts) -> Iterator[Hit]:
    """A process killed by SIGBUS ("Bus error", "signal 7", "SIGBUS") where the paste does not show /dev/shm ample
    (``--ipc=host``, 16 GB or more): most often a full /dev/shm under NCCL, torch's workers or a server's shards, where
    the paste shows a container, /dev/shm, NCCL or worker processes. Alone it is not settled (a truncated
    memory-mapped file, failing memory also raise SIGBUS): "cause not named", with what settles it."""
    e = f.log
    if e is None or e.shm_ample:
        return
    sigbus = _signals(e, "sigbus")
    if not sigbus or _signals(e, "shm-exhausted"):
        return  # (a DataLoader's own SIGBUS message is the shared-memory row's)
    context = [s for s in e.signals if s.value.code in _SHM_CONTEXT] + _containers_shown(e)
    context += [s for s in sigbus if "/dev/shm" in s.text or "shm" in s.text.lower()]
    if not context:
        yield Hit(evidence=(pasted_line(sigbus[0]),), seen=(sigbus[0],), missing=Missing(
            error=sigbus[0].text.strip(), missing="where the process ran and how much /dev/shm it had",
            paste="the output of `df -h /dev/shm` where the program runs, how it was started (`docker run ...` with "
                  "its `--ipc`/`--shm-size`, the pod's volumes) and `dmesg | tail` after the crash"))
        return
    yield Hit(evidence=tuple(dict.fromkeys((pasted_line(sigbus[0]), pasted_line(context[0])))), seen=(sigbus[0],))


@predicate("container-lost-gpu-devices", ())
def _container_lost_gpu_devices(f: Facts) -> Iterator[Hit]:
    """nvidia-smi's "Failed to initialize NVML: Unknown Error" where the paste shows it runs in a container: the
    container cannot open the GPU's device nodes (NVIDIA's notice: systemd re-applying the container's cgroups on a
    daemon-reload, a pod's device permissions), though the host's driver works."""
    e = f.log
    if e is None:
        return
    unknown = _signals(e, "nvml-unknown-error")
    inside = _containers_shown(e)
    if unknown and inside:
        yield Hit(evidence=tuple(dict.fromkeys((pasted_line(unknown[0]), pasted_line(inside[0])))), seen=(unknown[0],))

