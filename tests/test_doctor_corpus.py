"""Every excerpt of the doctor corpus with a known cause, as a test of ``doctor --no-env --log``.

The corpus (``tests/data/corpus``) holds real text from public threads, each with its source and
the cause the thread establishes. A healthy excerpt must give no error; any other must give its
cause among the findings. The excerpts not judged right yet are strict xfails: one that starts
passing fails the suite until it is taken off the list.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from vresolve.cli import main

CORPUS = Path(__file__).parent / "data" / "corpus"
NOT_YET = {  # what the pasted text itself does not show (see each sidecar's why): doctor says what to paste instead
    "041-python-314-unsupported-vllm-install",  # Python 3.14 and an install command; today's vLLM wheels take 3.14
    "148-uv-installs-cpu-torch-for-vllm-cuda-env",  # shows the working uv run; the failing one is only in prose
    "191-companion-torchaudio-undefined-symbol-node-name-cxx11",  # the title names no library: torch's ABI, then
    "660-nvml-mismatch-nvtop-apt-ubuntu",  # named, but the signature's finding cites nvtop's line without its number
    # pip's "from versions: none" and no Python shown: the interpreter's version, its bits, the platform or the index
    # could each be why, so doctor asks for `python -c "import sys, platform; ..."` instead of naming one
    "808-python-unsupported-torch-from-versions-none-64bit-answer",  # the thread's answer: a 32-bit Python
    "816-python-unsupported-torch-1100-cu113-from-versions-none",  # the thread's answer: Python 3.10 for torch 1.10
    # the matrix knows neither the GeForce 210 (compute capability 1.2) nor torch 1.2's arch list; the driver below
    # CUDA 10.0's floor, a fact too, is named instead
    "956-arch-not-in-build-collect-env-windows7-torch120-geforce-210",
    # the user's own list shows driver 575 (CUDA 12.9), which contradicts "insufficient"; a user's words are not a
    # report's, so the message's driver-too-old stands
    "975-unclear-kvcached-insufficient-driver-575-torch260-cu124-prose-env",
    # a refusal that names what it needs only in words, and no GPU shown: the GPU it ran on is asked for (gpu_claims)
    "048-flash-attn-ampere-only-vllm-engine",  # "FlashAttention only supports Ampere GPUs or newer", no GPU
}


def _labelled() -> list[tuple[str, str]]:
    out = []
    for meta in sorted(CORPUS.glob("*.yaml")):
        cause = yaml.safe_load(meta.read_text())["expected_cause"]
        if cause != "unknown":
            out.append((meta.stem, cause))
    return out


@pytest.mark.parametrize(("name", "cause"), [
    pytest.param(n, c, id=n, marks=pytest.mark.xfail(strict=True, reason="not judged yet") if n in NOT_YET else ())
    for n, c in _labelled()])
def test_corpus_cause(name: str, cause: str) -> None:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["doctor", "--no-env", "--log", str(CORPUS / f"{name}.txt"), "--json"])
    answer = json.loads(out.getvalue())
    findings = answer["findings"]
    if cause == "unclear":  # a failure no cause explains: "cause not named", with its line, exit 1
        assert code == 1 and answer["unclear"] and not [f for f in findings if f["severity"] == "error"], answer
        assert all(e.startswith("pasted line ") for u in answer["unclear"] for e in u["evidence"])
    elif cause == "healthy":
        assert code == 0 and not [f for f in findings if f["severity"] == "error"], findings
    else:
        assert cause in [f["cause"] for f in findings], findings
        # the finding names the pasted lines it used
        assert all(any(e.startswith("pasted line ") for e in f["evidence"]) for f in findings if f["cause"] == cause)
