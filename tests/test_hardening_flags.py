"""Every value-taking flag of every command, fuzzed (Hypothesis): an answer (0), no stack or problems
found (1), or a short error (2); never an exception, never a traceback.

The flags are read off the parser itself, so a flag added later is fuzzed too. Commands that would
reach the network are pointed at a closed loopback port (and ``refresh`` is offline); detection runs
with an empty PATH, so no fuzzed ``--nvidia-smi`` can name a real program.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vresolve.cli import main
from vresolve.cli.args import build_parser

FRAGMENTS = ["\n", "\x1b[2J", "\x00", "$(touch MARK)", "'", '"', "\\", "[/]", "../", "/", "-h", "--help", "=",
             ",", "nan", "inf", "-1", "0", "1e308", "9" * 5000, "http://[::1", "file://", "H100", "0xH100", "sm_90",
             "cu128", "3.12", "580.159.04", ">=0", "none", "auto", "requirements,conda", "\u202e"]
values = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30),
                   st.lists(st.sampled_from(FRAGMENTS), max_size=4).map("".join))
DATA = Path(__file__).parent / "data"
CLOSED = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens there


def _value_flags() -> list[tuple[tuple[str, ...], str]]:
    """(command words, flag) for every option that takes a value, read off the parser."""
    out = []
    sub = next(a for a in build_parser("*")._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        nested = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        commands = [((name, n), p) for n, p in nested.choices.items()] if nested else [((name,), parser)]
        for words, p in commands:
            for a in p._actions:
                if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction):
                    out.append((words, a.option_strings[-1]))
    return out


FLAGS = _value_flags()
BASE = {  # what each command needs to stay on this machine and end quickly
    ("plan",): ["--gpu", "H100", "--json"],
    ("lock",): ["--gpu", "H100", "--index-url", CLOSED, "--timeout", "5", "-o", "out", "--json"],
    ("apply",): ["--gpu", "H100", "--json"],  # no --yes: it stops before it changes anything (exit 2)
    ("doctor",): ["--no-env", "--log", "log.txt", "--json"],
    ("detect",): ["--json", "--timeout", "2"],
    ("matrix", "validate"): ["--json"],
    ("matrix", "show"): ["--json"],
    ("matrix", "refresh"): ["--offline", "--index-url", CLOSED, "--json"],
    ("fleet", "detect"): ["--k8s", str(DATA / "k8s" / "nodes.json"), "--json"],
    ("fleet", "plan"): [str(DATA / "fleet" / "inventory.json"), "--json"],
    ("fleet", "lock"): [str(DATA / "fleet" / "inventory.json"), "--index-url", CLOSED, "--timeout", "5", "-o", "out",
                        "--json"],
    ("fleet", "doctor"): ["--ray", "127.0.0.1:9", "--timeout", "5", "--json"],  # refused: no Ray cluster there
    ("matrix", "grid"): ["--family", "kepler", "--python", "3.12", "--json"],
    ("site",): ["-o", "site", "--family", "kepler", "--python", "3.12", "--installer", "uv", "--json"],
    ("completion",): ["bash", "--json"],
}


def test_the_fuzz_covers_every_command() -> None:
    assert {words for words, _ in FLAGS} == set(BASE)
    assert len(FLAGS) >= 40


# CI runs a fixed set of 150 examples; VRESOLVE_FUZZ_EXAMPLES=N searches N random ones
_EXAMPLES = int(os.environ.get("VRESOLVE_FUZZ_EXAMPLES", "0"))


@settings(max_examples=_EXAMPLES or 150, deadline=None, derandomize=not _EXAMPLES,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(FLAGS), values)
def test_every_flag_fuzzed(tmp_path_factory: pytest.TempPathFactory, flag: tuple[tuple[str, ...], str],
                           value: str) -> None:
    words, name = flag
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "log.txt").write_text("RuntimeError: CUDA error: no kernel image is available for execution\n")
    cwd = os.getcwd()
    env = {k: os.environ.get(k) for k in ("PATH", "VRESOLVE_NO_NVML", "VRESOLVE_CACHE_DIR")}
    os.chdir(tmp)
    os.environ.update(PATH=str(tmp), VRESOLVE_NO_NVML="1", VRESOLVE_CACHE_DIR=str(tmp / "cache"))
    try:
        base = list(BASE[words])
        if name in base:  # the fuzzed flag replaces the base's value
            i = base.index(name)
            del base[i:i + 2]
        if words == ("site",) and name == "--output":  # the page is written: keep it inside tmp
            value = "site-" + value
        argv = [*words, *base, f"{name}={value}"]
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's own usage errors
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(cwd)
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = out.getvalue() + err.getvalue()
    assert code in (0, 1, 2), (argv, text[-500:])
    assert "Traceback" not in text, (argv, text[-2000:])
    if code == 2 and out.getvalue().strip().startswith("{"):
        assert "error" in json.loads(out.getvalue()), argv
    assert len(err.getvalue()) < 5000, (argv, err.getvalue()[:300])
    assert not (tmp / "MARK").exists()
