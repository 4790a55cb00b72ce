"""NCCL over InfiniBand/RoCE failing (corpus 600-606, real pastes): named nccl-misconfigured with the InfiniBand row's
words and fix; NCCL's INFO probes of the same layer are not failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


@pytest.mark.parametrize("name", ["600-nccl-ib-completion-status12-recv", "601-nccl-ib-completion-error4-gdr-h100",
                                  "604-nccl-ibv-modify-qp-no-device-vllm", "606-horovod-ibvwrap-create-qp-nccl21"])
def test_an_infiniband_failure_is_named_with_its_fix(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--no-env", "--log", str(CORPUS / f"{name}.txt"), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    (ib,) = [f for f in findings if f["cause"] == "nccl-misconfigured"]
    assert "InfiniBand" in ib["title"] and ib["severity"] == "error"
    for knob in ("NCCL_IB_HCA", "NCCL_IB_DISABLE=1", "NCCL_DEBUG=INFO", "ibstat", "nvidia-peermem"):
        assert knob in ib["fix"]
    assert all(e.startswith("pasted line") for e in ib["evidence"])


def test_the_completion_status_and_the_failed_call_are_read() -> None:
    text = (CORPUS / "600-nccl-ib-completion-status12-recv.txt").read_text()
    # ("nccl-in-use": NCCL's own lines say it runs, a context the P2P rule reads, not a failure)
    assert [(s.value.code, s.value.detail) for s in read_evidence(text).signals if s.value.code != "nccl-in-use"] == [
        ("nccl-ib-failure", "12"), ("nccl-ib-failure", "5")]
    text = (CORPUS / "604-nccl-ibv-modify-qp-no-device-vllm.txt").read_text()
    # NCCL's own INFO "Call to ibv_set_ece failed" (a probe) is not a failure; its WARN on ibv_modify_qp is
    assert [(s.value.code, s.value.detail, s.line) for s in read_evidence(text).signals
            if s.value.code != "nccl-in-use"] == [("nccl-ib-failure", "ibv_modify_qp", 6)]


def test_healthy_infiniband_lines_are_not_failures() -> None:
    healthy = ("node08:6561:6561 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ibs3:10.252.0.211<0>\n"
               "flow-matic:820398:820779 [0] NCCL INFO NET/IB : No device found.\n"
               "x:1:1 [0] NCCL INFO Call to ibv_set_ece failed with error Operation not supported errno 95\n")
    e = read_evidence(healthy)
    assert [s.value.code for s in e.signals] == ["nccl-in-use"] and e.failures == ()  # NCCL runs; nothing failed
