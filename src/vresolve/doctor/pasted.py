"""Findings from what only a pasted text shows: error lines the reader typed (signals), undefined
symbols by their owner, compilers killed in a build, libraries not found, and installer messages.

The machine's facts in a paste (GPUs, driver, torch, its CUDA) go through the live checks
(:func:`.checks.diagnose`); these are the facts a live probe has no counterpart for. Each finding
names the pasted lines it used, and takes its explanation and fix from the known-issues table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec
from msgspec.structs import replace
from packaging.specifiers import SpecifierSet

from ..host import Host
from ..matrix import KnownIssue, Matrix, VllmRelease
from ..values import Capability, public_version
from .ask_next import ASK_NO_DISTRIBUTION, ask_next, missing_for
from .companions import torchvision_paired
from .evidence import Evidence, Seen
from .evidence.families import advice
from .evidence.model import REPORT
from .facts import SEVERITIES, Finding, dedupe, in_site_packages, with_version
from .gpu_claims import ARCH_CLAIMS, CAPABILITY_CLAIMS, floor_of, unsettled
from .judge import Facts, _softer, fill, holds
from .likely import Lead
from .logs import issue_for, match_log
from .paste_predicates import SYMBOL_PREDICATES, symbol_causes
from .predicates import Hit
from .predicates import pasted_release as _release
from .sm import floor_in, parse_sm

#: vLLM's main compiled modules (``_C_stable_libtorch`` from 0.24 on)
CORE_MODULES = ("vllm._C", "vllm._C_stable_libtorch")
#: what a paste without the facts to judge a failure by should add
ASK_FOR = "the output of `vllm collect-env` (or `python -m torch.utils.collect_env`) from the same environment"


class Unclear(msgspec.Struct, frozen=True):
    """An error the paste shows whose cause its facts do not settle: what is missing, and what to paste."""

    error: str
    missing: str
    evidence: tuple[str, ...]
    paste: str = ASK_FOR
    likely: Lead | None = None  # the cause such lines most often had in labelled public reports (a base rate)

    def to_dict(self) -> dict[str, object]:
        said = {"error": self.error, "missing": self.missing, "evidence": list(self.evidence), "paste": self.paste}
        return said | ({"likely": self.likely.to_dict()} if self.likely is not None else {})



#: the predicates that read what only a paste shows (``Facts.log``), judged with the paste's typed lines (in this
#: order: a finding's lines, and the order of findings of one severity, follow it)
PASTED_PREDICATES = ("vllm-wheel-cuda-major-not-torch", "container-started-without-gpus",
                     "container-built-for-newer-driver", "pip-offers-no-wheel-for-interpreter",
                     "pip-finds-no-wheel-for-python", "ptxas-older-than-ptx", "triton-image-newer-than-driver",
                     "companion-cuda-build-beside-cpu-torch", "jaxlib-without-cuda", "ptxas-older-than-gpu",
                     "nvcc-older-than-arch", "cuda-library-of-other-major", "cuda-library-not-found",
                     "torch-library-not-found-by-extension", "nvcc-newer-than-driver",
                     "vllm-flash-attention-below-capability", "nccl-on-gpus-without-p2p",
                     "cuda-visible-devices-names-no-gpu", "torch-cpu-build-gpu-not-shown", "torch-cpu-build-gpu-unused", "program-own-limit",
                     "program-refuses-python", "process-killed-by-sigbus", "container-lost-gpu-devices",
                     "toolkit-said-beside-torch-cuda", "resolver-companion-pins-other-torch",
                     "uv-no-wheel-for-python", "slurm-job-without-gpus", "torch-source-tree-shadows",
                     "pod-gpu-without-driver-library", "conda-cpu-pytorch-where-cuda-asked",
                     "pypi-windows-torch-wheel", "pypi-aarch64-torch-cpu-release", "onnxruntime-providers-without-cuda",
                     "gpu-not-found-toolkit-above-driver", "extension-arch-list-misses-gpu", "build-cuda-above-driver",
                     "install-asks-cuda-above-driver", "cuda-library-symbol-missing",
                     "nvml-library-missing-gpu-expected", "torch-replaced-across-install",
                     "dataloader-worker-died-small-shm", "pip-pin-older-than-every-offered",
                     "nccl-loopback-across-nodes", "torch-cpu-build-beside-driver", "library-report-without-cuda")


def _line(seen: Seen[Any]) -> str:
    return f"pasted line {seen.line}: {seen.text}"


def signal_causes(matrix: Matrix) -> dict[str, str]:
    """signal code -> the cause it shows by itself: the known-issues rows' ``signals`` (one table for every error
    line doctor types)."""
    return {code: k.cause for k in matrix.known_issues for code in k.signals}


def _signal_row(matrix: Matrix, seen: Seen[Any]) -> KnownIssue | None:
    """The known-issues row that names this typed line's signal code (a cause's rows differ in what they say: a
    container's CUDA error 804 is not a host driver too old for a pip wheel); None for a line of another kind."""
    code = getattr(seen.value, "code", None)
    return next((k for k in matrix.known_issues if code in k.signals), None) if isinstance(code, str) else None


def _torch_spec(release: VllmRelease | None) -> SpecifierSet | None:
    """The torch a release's wheel pins (the x86_64 wheel's, else the aarch64 one's)."""
    if release is None:
        return None
    return (release.pins("linux-x86_64") or release.pins("linux-aarch64")).get("torch")


def _pin_holds(matrix: Matrix, vllm: str, torch: str) -> bool | None:
    """Whether the torch the vLLM release's wheel pins is this torch (None: the release or versions unknown)."""
    spec, have = _torch_spec(_release(matrix, vllm)), public_version(torch)
    return None if spec is None or have is None else spec.contains(have, prereleases=True)


#: an import failure of a compiled extension that was found (its file named, or a symbol missing in it): the source
#: tree holds a build of its own, so it is not a checkout without the compiled extensions
_EXTENSION_FOUND_RE = re.compile(r"_C\w*(?:\.[\w-]+)*\.(?:so|pyd)\b|undefined symbol")


def _vllm_core(e: Evidence, matrix: Matrix) -> tuple[str, list[Seen[Any]]] | Unclear | None:
    """vLLM's main compiled module failing to import, judged by what else the paste shows: a source checkout
    imported instead of the package, a platform where it is not used, a CPU torch, a torch vLLM does not pin,
    or an install without its compiled modules. ``Unclear`` when the paste does not show torch."""
    failed = [f for f in e.import_failures if f.value.module in CORE_MODULES]
    unbuilt = [f for f in e.import_failures if f.value.module == "vllm._version"]  # written only by a build
    trees = [p for p in e.vllm_paths if not in_site_packages(p.value)]
    absent = [f for f in failed if not _EXTENSION_FOUND_RE.search(f.text)]  # a tree built in place has its .so
    if trees and (absent or unbuilt):
        return "source-tree-shadowing", [(absent or unbuilt)[0], trees[0]]
    if not failed:
        return None
    first = failed[0]
    if e.accelerator or e.rocm:  # TPU, ROCm, XPU, CPU backends: vLLM does not use vllm._C there
        return None
    vllm = e.dist("vllm")
    if vllm is not None and (vllm.value.version or "").partition("+")[2].startswith(("cpu", "rocm", "tpu", "xpu")):
        return None
    cuda = e.torch_cuda_seen()
    if cuda is not None and cuda.value is None:
        return "cpu-only-build", [first, cuda]
    torch = e.dist("torch")
    if cuda is None or torch is None:
        return Unclear(error=first.value.error, evidence=(_line(first),),
                       missing="which torch is installed, and whether it is a CUDA build")
    holds = _pin_holds(matrix, vllm.value.version or "", torch.value.version or "") if vllm is not None else None
    if holds is False:
        return "torch-abi-mismatch", [first, vllm, torch] if vllm is not None else [first, torch]
    if holds is None:
        return Unclear(error=first.value.error, evidence=(_line(first), _line(torch)),
                       missing="the vLLM version (to set against the torch its wheel pins)")
    return "incomplete-install", [first, vllm, torch] if vllm is not None else [first, torch]


def compiler_shown(e: Evidence) -> Seen[Any] | None:
    """The line that shows a C compiler there (``gcc --version``, ``which gcc``, CC set, the user's words, a report's
    GCC version): Triton's "Failed to find C compiler" beside it is not a missing compiler."""
    present = next((s for s in e.signals if s.value.code == "c-compiler-present"), None)
    return present or next((t for t in e.tools if t.value[0] in ("gcc", "clang", "cl")), None)


def _overruled(e: Evidence, code: str) -> bool:
    """A signal whose cause the paste's own facts contradict (a missing C compiler where one is shown)."""
    return code == "no-c-compiler" and compiler_shown(e) is not None


def _causes(e: Evidence, table: dict[str, str], facts: Facts) -> Iterator[tuple[str, Seen[Any]]]:
    for sig in e.signals:
        cause = table.get(sig.value.code)
        if cause is not None and not _overruled(e, sig.value.code) and not _not_its_cause(sig, e, facts.matrix):
            yield cause, sig
    order = {id(seen): i for i, (_, seen) in enumerate(symbol_causes(e))}  # the symbols' order, then the libraries'
    yield from sorted(_typed(facts, SYMBOL_PREDICATES), key=lambda cs: order.get(id(cs[1]), len(order)))
    yield from _typed(facts, ("build-isolated-torch", "uv-build-isolated-torch"))
    yield from _typed(facts, ("build-out-of-memory", "build-killed-memory-not-shown"))
    yield from _install_causes(e, facts)


#: the packages whose own version checks (flashinfer's "flashinfer-cubin version (X) does not match", LlamaFactory's
#: "vllm>=0.4.3,<=0.7.3 is required ..., but found vllm==0.8.1") are about the GPU stack doctor judges: torch, its
#: companions, vLLM (another package's check, tokenizers' or a checkpoint's "version (3) does not match", is not)
_STACK_PACKAGES = re.compile(r"(?:torch\w*|xformers|flash[-_]attn\w*|vllm[-_]flash[-_]attn|flashinfer[\w-]*|vllm|"
                             r"triton|sgl[-_]kernel|jaxlib)", re.IGNORECASE)
def _capability_asked(sig: Seen[Any], e: Evidence, matrix: Matrix) -> Capability | None:
    """The compute capability a capability refusal asks for ("8.9"; an FP8 refusal's, the number another refusal on
    its line says), else the floor its line states ("capability >= 90"), else the floor features.yaml gives its
    feature; None where none says."""
    code, detail = sig.value.code, sig.value.detail
    if code == "fp8-capability":
        said = next((c for s in e.signals if s.line == sig.line and s.value.code in
                     ("capability-below-required", "capability-too-low", "gpu-too-old")
                     and (c := _capability_asked(s, e, matrix)) is not None), None)
        return said or floor_in(sig.text) or floor_of(matrix, code)
    if code == "capability-too-low" and detail and detail.isdigit():
        return parse_sm(detail)  # "Minimum capability: 80"
    if code in ("capability-below-required", "gpu-too-old") and detail:
        return parse_sm(str(detail))
    return floor_in(sig.text) or floor_of(matrix, code)


def _not_its_cause(sig: Seen[Any], e: Evidence, matrix: Matrix) -> bool:
    """Whether the facts the paste shows say this typed line is not its code's cause: a version check of a package
    outside the GPU stack; a capability refusal where every GPU the paste's reports show meets it (the line is not
    about these GPUs: a help text, a quoted message, another machine)."""
    code = sig.value.code
    if code in ("version-mismatch", "version-check"):
        return not _STACK_PACKAGES.fullmatch(sig.value.detail or "")
    if code == "torch-replaced":  # the user's own words of what they did ("I uninstalled torch and reinstalled it")
        return bool(_USER_DID_RE.search(sig.text)) or torch_asked_for(e)
    if code in _DRIVER_CODES:
        return driver_serves_torch(e, matrix) is not None
    if code == "torchvision-nms-missing":
        return torchvision_paired(e, matrix) is not None
    if code == "xformers-cannot-load":
        return xformers_built_for_this(e)
    if code in ("socket-unreachable", "nccl-ib-failure"):
        return failed_before(e, sig) is not None
    if code in CAPABILITY_CLAIMS or code in ARCH_CLAIMS:
        return unsettled(sig, e, matrix, _capability_asked(sig, e, matrix)) is not None
    return False


#: the user saying they uninstalled torch themselves (not an installer replacing it)
_USER_DID_RE = re.compile(r"\b(?:I|[Ww]e)(?:'ve|\s+(?:have|had|then|also|first|manually|just|already))*\s+uninstall")
#: torch's words for a driver older than its CUDA runtime
_DRIVER_CODES = frozenset({"driver-too-old", "driver-insufficient"})


def driver_serves_torch(e: Evidence, matrix: Matrix) -> tuple[Seen[Any], Seen[Any]] | None:
    """The driver and the torch CUDA a tool's report shows (nvidia-smi, collect_env, a package list; not a message
    or prose) where the driver serves that CUDA: a "driver too old" line is then not about this driver and this torch
    (another machine, container or environment, or a quoted message); None otherwise."""
    from .evidence.model import DERIVED
    from .toolchain_predicates import _driver_cuda

    driver, cuda = e.best("driver"), e.torch_cuda_seen()
    if driver is None or driver.rank != REPORT or cuda is None or cuda.rank > DERIVED or cuda.value is None:
        return None
    served = _driver_cuda(Facts(host=Host(), matrix=matrix, log=e), e)
    needs = public_version(str(cuda.value))
    if served is None or needs is None or served[0].release[:2] < needs.release[:2]:
        return None
    return driver, cuda


def xformers_built_for_this(e: Evidence) -> bool:
    """Whether xFormers' own table says it was built for the very torch and Python it runs with ("built for: PyTorch
    2.1.0+cu121 ... (you have 2.1.0+cu121)"): its extensions fail to load for another reason than a mismatch."""
    torch, python = e.dist("torch"), e.value("python")
    if not e.built_for or torch is None:
        return False
    for bf in e.built_for:
        if bf.value.torch is not None and bf.value.torch != torch.value.version:
            return False
        if bf.value.python is not None and str(bf.value.python).split(".")[:2] != str(python).split(".")[:2]:
            return False
    return True


#: failures that end a rank by themselves (a CUDA error, a crash, a kill, an Xid); another rank's connection to it
#: then fails
_RANK_ENDING = frozenset({"cuda", "crash", "killed", "xid"})


def failed_before(e: Evidence, sig: Seen[Any]) -> Seen[Any] | None:
    """The failure on an earlier line that ends a rank (a CUDA error or out of memory, a crash, a kill): a connection
    between the ranks that fails after it is its consequence (the peer is gone), not the network's fault."""
    ending: list[Seen[Any]] = [f for f in e.failures if f.value in _RANK_ENDING and f.line < sig.line]
    ending += [s for s in e.signals if s.value.code == "cuda-oom" and s.line < sig.line]
    return min(ending, key=lambda f: f.line, default=None)


#: what settles a torchvision::nms error where the listed torchvision is torch's own companion
_PASTE_NMS = ("the output of `python -c \"import torch, torchvision; print(torch.__version__, torch.__file__, "
              "torchvision.__version__, torchvision.__file__)\"` run the way the failing program runs (another "
              "environment or a second torchvision on sys.path loads instead), and the whole traceback")


def _contradicted(e: Evidence, matrix: Matrix) -> list[Unclear]:
    """The capability refusals whose GPUs the paste's reports contradict, and "driver too old" where the reported
    driver serves the reported torch's CUDA, as an error whose cause is not named."""
    said = next((s for s in e.signals if s.value.code in _DRIVER_CODES), None)
    served = driver_serves_torch(e, matrix) if said is not None else None
    if said is not None and served is not None:
        return [Unclear(error=said.text.strip(), evidence=(_line(said), _line(served[0]), _line(served[1])),
                        missing=f"the driver and torch of the process that failed: the driver shown "
                                f"({served[0].value}) serves the CUDA of the torch shown ({served[1].value})",
                        paste="the output of `nvidia-smi` and of `python -m torch.utils.collect_env` run where the "
                              "program failed (inside its container or environment), and the whole error")]
    nms = next((s for s in e.signals if s.value.code == "torchvision-nms-missing"), None)
    pair = torchvision_paired(e, matrix) if nms is not None else None
    if nms is not None and pair is not None:
        return [Unclear(error=nms.text.strip(), evidence=(_line(nms), _line(pair[0]), _line(pair[1])),
                        missing=f"which torchvision the failing process loaded: the torchvision listed "
                                f"({pair[1].value.version}) is the release built for the torch listed "
                                f"({pair[0].value.version})", paste=_PASTE_NMS)]
    xformers = next((s for s in e.signals if s.value.code == "xformers-cannot-load"), None)
    if xformers is not None and xformers_built_for_this(e):
        return [Unclear(error=xformers.text.strip(), evidence=(_line(xformers), *(_line(b) for b in e.built_for[:2])),
                        missing="why xFormers' extensions do not load: the torch and Python it was built for are the "
                                "ones it runs with",
                        paste="the output of `XFORMERS_MORE_DETAILS=1 python -m xformers.info` in the same environment, "
                              "and " + ASK_FOR)]
    for sig in e.signals:
        if sig.value.code in ("socket-unreachable", "nccl-ib-failure") and (first := failed_before(e, sig)) is not None:
            return [Unclear(error=first.text.strip(), evidence=(_line(first), _line(sig)),
                            missing="the first failure's cause (the connection between the ranks failed after it: "
                                    "its peer was gone)", paste=_PASTE_FOR["cuda"])]
        claim = unsettled(sig, e, matrix, _capability_asked(sig, e, matrix))
        if claim is not None:
            return [Unclear(error=sig.text.strip(), evidence=tuple(dict.fromkeys(_line(s) for s in claim.evidence)),
                            missing=claim.missing, paste=f"{claim.paste}; and {ASK_FOR}")]
    return []

#: the predicates over a paste's typed lines judged among its signals (:func:`_causes`, in this order; the three of
#: pip's installer lines together, in the installer's line order): their hits name the lines their cause is said by
TYPED_PREDICATES = ("build-isolated-torch", "build-out-of-memory", "pip-check-vllm-needs-other-torch",
                    "pip-check-needs-other-companion", "installer-collects-other-torch",
                    "built-for-other-torch-or-python", "uv-build-isolated-torch", "build-killed-memory-not-shown")
_INSTALLER_PREDICATES = TYPED_PREDICATES[2:5]


def _typed(facts: Facts, names: tuple[str, ...]) -> list[tuple[str, Seen[Any]]]:
    """(cause, line) for each line a hit of these predicates' rows names."""
    return [(row.cause, seen) for row, hit in holds(facts, names) for seen in hit.seen]


def _install_causes(e: Evidence, facts: Facts) -> Iterator[tuple[str, Seen[Any]]]:
    order = {id(ev): i for i, ev in enumerate(e.installer)}
    yield from sorted(_typed(facts, _INSTALLER_PREDICATES), key=lambda cs: order.get(id(cs[1]), len(order)))
    yield from _typed(facts, ("built-for-other-torch-or-python",))
    for lib in e.libraries:
        if lib.value.missing and lib.value.name == "cuda":  # the others: ``cuda-library-not-found``
            yield "library-not-found", lib
    for ev in e.installer:
        if ev.value.action == "requires-python":
            yield "python-unsupported", ev
        elif ev.value.action == "uninstalled" and ev.value.name == "torch":
            yield "installer-replaced-torch", ev


def _for_this_machine(cause: str, e: Evidence, matrix: Matrix) -> str:
    """The first sentence of a fix, with the values the paste shows: the driver torch's CUDA needs, the torch the
    pasted vLLM pins ("" when the paste does not show them)."""
    cuda, torch, vllm = e.torch_cuda_seen(), e.dist("torch"), e.dist("vllm")
    if cause == "driver-too-old" and cuda is not None and cuda.value is not None:
        from ..resolve import driver_floor

        tc = public_version(cuda.value)
        floor = driver_floor(matrix, tc, "minor-compat", False) if tc is not None else None
        driver = e.best("driver")
        if floor is not None:
            return (f"This torch is built with CUDA {cuda.value}: it needs NVIDIA driver >= {floor}"
                    + (f" (the paste shows {driver.value})" if driver is not None else "") + ". ")
    if cause == "torch-abi-mismatch" and vllm is not None and torch is not None:
        spec = _torch_spec(_release(matrix, vllm.value.version))
        if spec is not None:
            return (f"vLLM {vllm.value.version} pins torch{spec}; this environment has torch {torch.value.version}: "
                    f"install the pinned torch (`pip install \"torch{spec}\"` from the index of your CUDA variant), "
                    "or the vLLM release that pins your torch. ")
    return ""


#: what to paste to name the cause of a failed install or build
ASK_FOR_BUILD = ("the installer's whole output (`pip install -v ...`, or `uv pip install -v ...`) from its first line, "
                 "and the output of `vllm collect-env` (or `python -m torch.utils.collect_env`)")


#: what settles a "Failed to find C compiler" where a compiler is shown
ASK_FOR_COMPILER = ("the output of `echo $CC` (Windows: `echo %CC%`) and `which gcc cc clang` (Windows: `where gcc cl`) "
                    "in the shell that runs the program, and Triton's and torch's versions (`pip list | grep -i -E "
                    "\"triton|torch\"`: how Triton looks for the compiler changed between releases)")


def _unexplained(e: Evidence) -> list[Unclear]:
    """The failure a paste shows when no cause is named: an installer that failed, else the exception a traceback
    ends with (the last one); with what to paste."""
    failed = [ev for ev in e.installer if ev.value.action in ("build-failed", "resolution-failed",
                                                                "no-matching-distribution")]
    unfound = next((s for s in e.signals if s.value.code == "no-c-compiler"), None)
    shown = compiler_shown(e)
    if unfound is not None and shown is not None:
        return [Unclear(error=unfound.text.strip(), evidence=(_line(unfound), _line(shown)),
                        missing="why Triton does not find the C compiler the paste shows",
                        paste=ASK_FOR_COMPILER)]
    if failed:
        last = failed[-1]
        unmatched = last.value.action == "no-matching-distribution"  # (pip matched no file: what it matched against)
        return [Unclear(error=last.text.strip(), missing="the error above the installer's summary, and the machine's facts",
                        evidence=(_line(last),), paste=ASK_NO_DISTRIBUTION if unmatched else ASK_FOR_BUILD)]
    advised = next(((s, paste) for s in e.signals if s.value.code in _FAILURE_SIGNALS
                    and (paste := advice(s.value.code, s.value.detail)) is not None), None)
    if advised is not None:  # an error of a family whose own words say what settles it (families.advice)
        return [Unclear(error=advised[0].text.strip(), evidence=(_line(advised[0]),), paste=advised[1],
                        missing="the facts that name its cause (the driver, the GPUs, how the program was built)")]
    if e.exceptions:
        raised = e.exceptions[-1]
        return [Unclear(error=raised.value, missing="the facts that name its cause (torch, its CUDA, the GPUs, the "
                        "driver)", evidence=(_line(raised),))]
    return _failed_lines(e)


#: signals that show a failure no known-issues row names by itself (what doctor reads, without a cause)
_FAILURE_SIGNALS = frozenset({
    "container-without-gpu", "cuda-home-unset", "cuda-init-failed", "cuda-oom", "driver-combination",
    "gcc-unsupported", "no-cuda-gpus", "no-driver", "nvcc-unsupported-arch", "undefined-symbol", "vllm-c-obsolete",
    "invalid-image", "jax-cuda-plugin-failed", "nvidia-smi-missing", "cuda-not-available",
    "hang-said", "container-no-driver", "cuda-error", "gpu-not-found-said", "ggml-no-device-code",
    "nvml-library-missing", "dataloader-worker-died", "vllm-no-platform", "nvml-unknown-error", "sigbus",
    "python-refused-said"})
#: what to paste next, by the kind of failure shown
_PASTE_FOR = {
    "cuda": "the whole log from its first error, run again with `CUDA_LAUNCH_BLOCKING=1`, and " + ASK_FOR,
    # NCCL's own WARN lines name the transport that failed (NET/Socket and the interface, NET/IB, SHM, P2P); between
    # containers the cause is most often in how they were started (a bridge network, a private IPC namespace, a
    # 64 MB /dev/shm)
    "nccl": "the log of every rank run again with `NCCL_DEBUG=INFO` (NCCL's `NCCL WARN` and `NET/` lines name the "
            "transport that failed and the interface it used), the output of `nvidia-smi topo -m` and `ip addr` on each "
            "node, and, in containers, the `docker run` flags they were started with (`--network`, `--ipc`, "
            "`--shm-size`); and " + ASK_FOR,
}
#: a compiled extension that says it did not load, without the loader's reason (sgl-kernel's report cut short)
_EXTENSION_UNLOADED_RE = re.compile(r"\b(?:could not|cannot|can't|failed to) load (?:any )?[\w.-]*\s?(?:library|extension)",
                                    re.IGNORECASE)
ASK_FOR_EXTENSION = ("the import's whole error (the loader's own reason: `undefined symbol`, `cannot open shared object "
                     "file`), the versions of torch and of the package that failed (`pip list | grep -i -E "
                     "\"torch|kernel|flash|xformers|vllm\"`: a compiled extension loads only with the torch release it "
                     "was built for), and " + ASK_FOR)


#: a version check of a package outside the GPU stack is a failure whose cause is not named (:func:`_not_its_cause`)
_FAILURE_SIGNALS |= {"version-mismatch", "version-check"}


def _failed_lines(e: Evidence) -> list[Unclear]:
    """The lines that show a failure (typed by form: a CUDA or NCCL error, an exception, a tool's error, a kill,
    a non-zero exit; or a signal no cause names), the most telling kind first, as one error whose cause is not
    named; none when the paste shows no failure."""
    from .evidence.failures import FAILURE_KINDS

    rank = {kind: i for i, kind in enumerate(("signal", *FAILURE_KINDS))}
    seen: list[tuple[str, Seen[Any]]] = [("signal", s) for s in e.signals if s.value.code in _FAILURE_SIGNALS]
    seen += [(f.value, f) for f in e.failures]
    if not seen:
        return []
    seen.sort(key=lambda ks: (rank[ks[0]], ks[1].line))
    kind, first = seen[0]
    lines = tuple(dict.fromkeys(_line(s) for _, s in seen))[:3]
    unloaded = any(_EXTENSION_UNLOADED_RE.search(s.text) for _, s in seen)
    missing = missing_for(kind, "the facts that name its cause (torch, its CUDA, the GPUs, the driver)")
    return [Unclear(error=first.text.strip(), missing=missing, evidence=lines,
                    paste=ASK_FOR_EXTENSION if unloaded else _PASTE_FOR.get(kind) or ask_next(kind, ASK_FOR))]


def _all_causes(e: Evidence, matrix: Matrix) -> tuple[list[tuple[str, Seen[Any]]], list[Unclear]]:
    """Every (cause, line that shows it) the paste holds, and the errors it does not settle."""
    found: list[tuple[str, Seen[Any]]] = []
    core = _vllm_core(e, matrix)
    if isinstance(core, tuple):
        found += [(core[0], seen) for seen in core[1]]
    found += _causes(e, signal_causes(matrix), Facts(host=Host(), matrix=matrix, log=e))
    if torch_asked_for(e):  # the user replaced torch on purpose: no installer did it behind their back
        found = [(cause, seen) for cause, seen in found if cause != "installer-replaced-torch"]
    return found, ([core] if isinstance(core, Unclear) else []) + _contradicted(e, matrix)


def torch_asked_for(e: Evidence) -> bool:
    """Whether the installer was asked for torch itself on its command line (pip's "Collecting torch==2.5.1" without
    "(from vllm==...)" or "(from -r requirements.txt)"): the torch it replaced was replaced on purpose."""
    return any(ev.value.action == "collecting" and ev.value.name == "torch" and "(from" not in ev.text
               for ev in e.installer)


#: the predicate said only where no error is named (a weak sign: :data:`PASTED_PREDICATES` are judged first)
WEAK_PREDICATES = ("parallel-build-failed",)


def _weak(facts: Facts) -> list[Finding]:
    return [Finding(cause=row.cause, severity=row.severity, title=fill(row.title, hit.fill),
                    explanation=fill(row.explanation, hit.fill), fix=fill(row.fix, hit.fill), evidence=hit.evidence,
                    source="log") for row, hit in holds(facts, WEAK_PREDICATES)]


def _pasted_holds(facts: Facts) -> Iterator[tuple[KnownIssue, Hit]]:
    """The rows of :data:`PASTED_PREDICATES` that hold, predicate by predicate in that order."""
    for name in PASTED_PREDICATES:
        yield from holds(facts, (name,))


def _finding(e: Evidence, matrix: Matrix, cause: str, k: KnownIssue, hit: Hit | None,
             evidence: tuple[str, ...]) -> Finding:
    """A cause the paste shows, in its row's words (filled with the values its predicate's hit found)."""
    vllm = e.dist("vllm")
    fix = with_version(k.fix, vllm.value.version if vllm is not None else None)
    values = hit.fill if hit is not None else {}
    return Finding(cause=cause, severity=_softer(k.severity) if hit is not None and hit.softer else k.severity,
                   title=fill(k.title, values), explanation=fill(k.explanation, values),
                   fix=_for_this_machine(cause, e, matrix) + fill(fix, values), evidence=evidence, source="log")


def _rows_judged(facts: Facts, lines: dict[str, list[str]], rows: dict[str, KnownIssue],
                 unclear: list[Unclear]) -> dict[str, Hit]:
    """The rows judged from the log (:data:`PASTED_PREDICATES`) added to a paste's causes (their lines and rows) and
    to its errors not settled; the hit of each cause's row (its placeholders' values)."""
    hits: dict[str, Hit] = {}
    # where rows of one cause both hold, the most severe says it (an error of the facts before a report's warning)
    ranked = sorted(_pasted_holds(facts), key=lambda rh: SEVERITIES.index(rh[0].severity) + rh[1].softer)
    for row, hit in ranked:
        if hit.missing is not None:  # the row's fact is not shown: its error is not settled
            m = hit.missing
            unclear.append(Unclear(error=m.error, missing=m.missing, evidence=hit.evidence, paste=m.paste))
            continue
        if row.id in _FACT_NOTES and row.cause in lines:  # (a fact beside failures: the typed lines' row says it)
            continue
        shown = lines.setdefault(row.cause, [])
        shown += [line for line in dict.fromkeys(hit.evidence) if line not in shown][:max(0, 5 - len(shown))]
        if rows.setdefault(row.cause, row) is row:
            hits.setdefault(row.cause, hit)
    return hits


def _cpu_torch_is_the_mismatch(e: Evidence) -> bool:
    """Whether a companion built for a CUDA torch sits beside a CPU-only torch of the release it was built for (or of
    no release shown): then the CPU torch is the whole mismatch, and a companion "for your torch" is not the fix."""
    from .toolchain_predicates import cuda_companion_beside_cpu_torch

    if not cuda_companion_beside_cpu_torch(e):
        return False
    torch = e.dist("torch")
    have = public_version(torch.value.version) if torch is not None else None
    built = {public_version(bf.value.torch) for bf in e.built_for if bf.value.torch}
    return have is None or built <= {have}


def optional_kernels_cited(unclear: list[Unclear], findings: Sequence[Finding]) -> list[Unclear]:
    """``unclear`` without the errors every line of which an optional kernel's finding cites (vLLM's ERROR-level log
    that its optional Triton kernels did not import): a kernel the program goes on without is what they show. (A
    softer finding that leaves its error not settled, a compiler killed with memory not shown, keeps it.)"""
    cited = {ev.partition(":")[0] for f in findings if f.cause == "optional-kernel-missing" for ev in f.evidence}
    return [u for u in unclear if not u.evidence or not all(ev.partition(":")[0] in cited for ev in u.evidence)]


#: rows whose warning states a fact beside a paste's failures without explaining them (a CPU-only torch where the
#: paste shows no GPU): the failures stay "cause not named"
_FACT_NOTES = frozenset({"torch-cpu-build-gpu-not-shown"})


def judge_pasted(e: Evidence, matrix: Matrix, already: Sequence[Finding] = (),
                 host: Host | None = None) -> tuple[list[Finding], list[Unclear]]:
    """Findings for the causes the paste's typed lines show, one per cause (with every line that shows
    it, up to five), leaving out causes ``already`` found; and the errors whose cause the paste does not settle.
    ``host``: the machine doctor probed, when the paste is judged on it (``doctor --log`` without ``--no-env``): the
    paste's predicates read its facts where the paste does not show them (its driver)."""
    lines: dict[str, list[str]] = {}
    rows: dict[str, KnownIssue] = {}
    found, unclear = _all_causes(e, matrix)
    facts = Facts(host=host or Host(), matrix=matrix, log=e)
    typed = {id(seen): (row, hit) for row, hit in holds(facts, (*SYMBOL_PREDICATES, *TYPED_PREDICATES))
             for seen in hit.seen}
    typed_hits: dict[str, Hit] = {}
    for cause, seen in found:
        shown = lines.setdefault(cause, [])
        if len(shown) < 5 and _line(seen) not in shown:
            shown.append(_line(seen))
        row, hit = typed.get(id(seen), (_signal_row(matrix, seen), None))
        if row is not None and row.cause == cause and rows.setdefault(cause, row) is row and hit is not None:
            typed_hits.setdefault(cause, hit)
    out = []
    hits = typed_hits | _rows_judged(facts, lines, rows, unclear)
    named = {f.cause for f in already if f.severity != "info"}  # (an info of a cause does not hide the paste's error)
    for cause, evidence in lines.items():
        if cause not in named:
            out.append(_finding(e, matrix, cause, rows.get(cause) or issue_for(matrix, cause), hits.get(cause),
                                tuple(evidence)))
    if not any(f.severity == "error" for f in (*out, *already)):
        out += _weak(facts)
    # a typed line's cause said one step softer with what settles it (a compiler killed, memory not shown): the error
    # stays not settled while nothing else names an error
    pending = [Unclear(error=h.missing.error, missing=h.missing.missing, evidence=h.evidence, paste=h.missing.paste)
               for h in {id(h): h for _, h in typed.values()}.values() if h.missing is not None]
    if any(f.severity == "error" for f in (*out, *already)):
        return out, []  # a cause is named: the failure is explained
    if out and not all(rows.get(f.cause) is not None and rows[f.cause].id in _FACT_NOTES for f in out):
        return out, pending
    return out, unclear or pending or _unexplained(e)


def classify(matrix: Matrix, text: str) -> KnownIssue | None:
    """The known issue a short text (an import's traceback) shows: a signature's, else the first typed error line's
    or undefined torch symbol's; None when it shows none."""
    hits = match_log(text, matrix.known_issues)
    if hits:
        return hits[0][0]
    from .evidence import read_evidence

    e = read_evidence(text)
    first = min(_causes(e, signal_causes(matrix), Facts(host=Host(), matrix=matrix, log=e)), key=lambda cs: cs[1].line, default=None)
    return issue_for(matrix, first[0]) if first is not None else None


#: the pasted facts each live check reads, by the cause it names (the lines a finding from pasted facts cites)
_FACTS_OF = {
    "cpu-only-build": ("torch_cuda", "torch", "gpus"),
    "driver-too-old": ("driver", "cuda_driver", "torch_cuda", "torch", "cuda_available"),
    "arch-not-in-build": ("gpus", "torch_arch_list", "torch"),
    "gpu-not-visible": ("env", "cuda_available", "gpus", "container"),
    "library-not-found": ("cuda_available", "gpus", "ld_library_path"),
    "toolkit-mismatch": ("nvcc", "torch_cuda", "torch"),
    "torch-abi-mismatch": ("vllm", "torch"),
    "companion-mismatch": ("torch", "torchvision", "torchaudio", "xformers", "flashinfer", "flash-attn"),
    "gpu-too-old-for-feature": ("gpus",),
    "nvml-driver-mismatch": ("nvml_library", "driver"),
}


def _sightings(e: Evidence, name: str) -> list[Seen[Any]]:
    if name == "torch_cuda":
        seen = e.torch_cuda_seen()
        return [seen] if seen is not None else []
    if name in ("torch", "vllm", "torchvision", "torchaudio", "xformers", "flashinfer", "flash-attn"):
        dist = e.dist(name)
        return [dist] if dist is not None else []
    best = e.best(name)
    return [best] if best is not None else []


def cite(findings: Sequence[Finding], e: Evidence) -> list[Finding]:
    """Findings of the live checks on pasted facts, each with the pasted lines of the facts it read (up to six)."""
    out = []
    for f in findings:
        names = f.facts or _FACTS_OF.get(f.cause, ())  # its predicate's facts, else its cause's
        if f.source == "log" or not names:
            out.append(f)
            continue
        lines: list[str] = []
        for name in names:
            for seen in _sightings(e, name):
                if _line(seen) not in lines and len(lines) < 6:
                    lines.append(_line(seen))
        out.append(replace(f, evidence=(*f.evidence, *lines)))
    return out


def merge_log_findings(findings: Sequence[Finding], typed: Sequence[Finding],
                       cite: Callable[[Sequence[str]], tuple[str, ...]] | None = None) -> list[Finding]:
    """The environment's findings, the typed lines' and facts' (``typed``, cited by line), and the signatures'
    findings (``source == "log"`` in ``findings``) of the causes neither names, their lines cited by ``cite``."""
    named = {f.cause for f in typed} | {f.cause for f in findings if f.source != "log"}
    signed = [replace(f, evidence=cite(f.evidence)) if cite else f
              for f in findings if f.source == "log" and f.cause not in named]
    return dedupe([f for f in findings if f.source != "log"] + signed + list(typed))


def overruled(findings: Sequence[Finding], e: Evidence, matrix: Matrix | None = None) -> list[Finding]:
    """Findings the paste's facts overrule: a companion "built for another torch" (a signature's) where the only
    difference is that the torch is a CPU build of the release it was built for (the CPU build is the cause); a
    signature's "library not found" of a CUDA library of another major than the one the paste shows installed (the
    package asking for it is built for the other CUDA: ``cuda-library-of-other-major``); a signature's GPU "too old"
    where every GPU the paste's reports show meets what its lines ask for."""
    from .library_predicates import library_of_other_major

    other = library_of_other_major(e)
    if other is not None:
        soname, cited = other[0].value.soname, f"pasted line {other[0].line}:"  # (a cited line may be cut before it)
        findings = [f for f in findings if not (f.cause == "library-not-found" and f.source == "log"
                                                and any(soname in line or line.startswith(cited) for line in f.evidence))]
    out = [f for f in findings if f.cause != "companion-mismatch"] if _cpu_torch_is_the_mismatch(e) else list(findings)
    if torch_asked_for(e):
        out = [f for f in out if not (f.cause == "installer-replaced-torch" and f.source == "log")]
    if xformers_built_for_this(e) and any(s.value.code == "xformers-cannot-load" for s in e.signals):
        out = [f for f in out if not (f.cause == "companion-mismatch" and f.source == "log"
                                      and any("xFormers can't load" in line for line in f.evidence))]
    causes = signal_causes(matrix) if matrix is not None else {}
    codes_of = {"driver-too-old": _DRIVER_CODES, "companion-mismatch": frozenset({"torchvision-nms-missing"})}
    for cause in ("gpu-too-old-for-feature", "arch-not-in-build", "driver-too-old", "companion-mismatch"):
        said = [s for s in e.signals if (s.value.code in codes_of[cause] if cause in codes_of
                                         else causes.get(s.value.code) == cause)]
        if matrix is not None and said and all(_not_its_cause(s, e, matrix) for s in said):
            out = [f for f in out if not (f.cause == cause and f.source == "log")]
    return out


_UNAVAILABLE_RE = re.compile(r"`?torch\.cuda\.is_available\(\)`?\s*(?:is|returns|=)\s*False", re.IGNORECASE)


def keep_available(findings: Sequence[Finding], e: Evidence) -> list[Finding]:
    """Findings that do not contradict a report's "Is CUDA available: True": one that says CUDA is unavailable
    (a hidden GPU, a signature's "is_available() is False") is said of the process that failed, not of the
    environment the report was collected in."""
    seen = e.best("cuda_available")
    if seen is None or seen.value is not True or seen.rank != REPORT:
        return list(findings)
    out = []
    for f in findings:
        if f.cause == "gpu-not-visible" or _UNAVAILABLE_RE.search(f.explanation):
            f = replace(f, explanation=_UNAVAILABLE_RE.sub("CUDA finds no GPU in the process that failed", f.explanation)
                        + " The pasted report itself says torch sees the GPU (Is CUDA available: True): the process "
                        "that failed ran with other settings (another container, shell, or CUDA_VISIBLE_DEVICES) than "
                        "the one the report was collected in.", evidence=(*f.evidence, _line(seen)))
        out.append(f)
    return out
