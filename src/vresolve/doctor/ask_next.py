"""What to paste next for an error whose cause the paste does not settle, by the kind of failure it shows
(:data:`~.evidence.failures.FAILURE_KINDS`), and what the paste lacks to settle it.

Each ask fits what was seen: a library that says it will not use the GPU needs the GPU as the driver sees it and the
library's own build; a build needs its first error; an installer that found nothing needs the interpreter and the
platform tags it matched wheels against.
"""

from __future__ import annotations

__all__ = ["ASK_NO_DISTRIBUTION", "ask_next", "missing_for"]

_ENV = "the output of `vllm collect-env` (or `python -m torch.utils.collect_env`) from the same environment"
#: pip found no file for this interpreter and platform: what it matched against (pip's own tags)
ASK_NO_DISTRIBUTION = ("`python -V`, the platform (`python -c \"import platform; print(platform.platform(), "
                       "platform.machine())\"`), the wheel tags this pip accepts (`pip debug --verbose`), and the index "
                       "URLs the install used (`pip config list`, `--index-url`/`--extra-index-url`)")
_ASK = {
    "gpu-unused": ("the output of `nvidia-smi` where the program runs, the library's own build information (torch: "
                   "`python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"`; "
                   "another library: its version and how it was installed or built, e.g. its CUDA build option), "
                   "and how the program was started (a container's `--gpus`, `CUDA_VISIBLE_DEVICES`)"),
    "gpu-feature": ("the GPU's name and compute capability (`nvidia-smi --query-gpu=name,compute_cap --format=csv`) and "
                    "the version of the library that printed the message"),
    "installer": ("the installer's whole output from the command on (`pip install -v ...`, `uv pip install -v ...`, "
                  "`conda install ... -v`, `poetry install -vvv`), the requirements asked for, and what it matched "
                  "them against: `python -V` and the platform (pip: `pip debug --verbose`'s tags; conda: `conda info`'s "
                  "platform and channels) and the index or channel URLs"),
    "build": ("the build log from its first error (`... 2>&1 | tee build.log`, then `grep -n -m1 -E \"error:|Error [0-9]|"
              "FAILED:|CMake Error\" build.log` and the lines after it), the compilers' versions (`gcc --version`, "
              "`nvcc --version`), and " + _ENV),
    "cut": ("the rest of the build log: its first `error:` line (`grep -n -m1 -E \"error:|Error [0-9]|FAILED:|Killed\" "
            "build.log`) and its last lines, the jobs it ran (`MAX_JOBS`) and the machine's memory (`free -h`): the "
            "paste stops at a compile step without its result"),
    "killed": ("the kernel's lines of the kill (`sudo dmesg -T | grep -i -E \"killed process|out of memory\"`), the "
               "machine's or container's memory (`free -h`), and " + _ENV),
    "command": ("the output of `which PROGRAM` and `echo $PATH` in the shell that ran it, and how the program was "
                "installed (for nvcc: the CUDA toolkit's directory, `ls -d /usr/local/cuda*/bin`, and `CUDA_HOME`)"),
    "said": "the command you ran and its whole output (the error itself, not a summary of it), and " + _ENV,
    "said-error": "the command you ran and its whole output (the error itself, not a summary of it), and " + _ENV,
}
_MISSING = {
    "cut": "the build's end: the paste stops at a compile step, with neither its error nor its success",
    "command": ("the output of `which PROGRAM` and `echo $PATH` in the shell that ran it, and how the program was "
                "installed (for nvcc: the CUDA toolkit's directory, `ls -d /usr/local/cuda*/bin`, and `CUDA_HOME`)"),
    "said": "the error itself: the paste says the failure in words, without the program's own message",
    "said-error": "the error itself: the paste says there was an error, without the program's own message",
    "gpu-unused": "why the library does not use the GPU: the GPU and driver it runs on, and how the library was built",
    "installer": "what the installer matched against: the interpreter, the platform and the index",
}


def ask_next(kind: str, default: str) -> str:
    """What to paste next after a failure of ``kind`` (``default`` for kinds without an ask of their own)."""
    return _ASK.get(kind, default)


def missing_for(kind: str, default: str) -> str:
    """What the paste lacks to name the cause of a failure of ``kind``."""
    return _MISSING.get(kind, default)
