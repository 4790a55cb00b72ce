"""The command line's conventions (issue 27): -q/-v where they act, one meaning of --python, a quiet exit on a
closed pipe, whole tables when piped, a schema name per JSON shape, shell completion, a prompt for
``doctor --log -`` on a terminal, ``-V``."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vresolve.cli import main

DATA = Path(__file__).parent / "data"
CLOSED = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens there
H100 = ["--gpu", "H100", "--driver", "580.95.05", "--python", "3.12"]
LOG = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **extra}


def vresolve(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vresolve", *argv], capture_output=True, text=True, env=_env(),
                          timeout=300, **kw)


# 1. -q / -v: each acts where it is offered, and is refused where it would do nothing

def test_plan_quiet_prints_only_what_to_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, full, _ = run(["plan", *H100], capsys)
    assert code == 0 and "Why:" in full
    code, quiet, _ = run(["plan", *H100, "-q"], capsys)
    assert code == 0 and "Why:" not in quiet and "vLLM stack" not in quiet
    plan = json.loads(run(["plan", *H100, "--json"], capsys)[1])
    from vresolve._proc import uv_command

    uv = shlex.quote(uv_command())  # uv named as the human plan names it: a path where no uv is on PATH
    shown = [uv + s["shell"][2:] if s["argv"][0] == "uv" else s["shell"] for s in plan["steps"]]
    assert quiet.splitlines() == shown + [f"export {k}={v}" for k, v in plan["env"].items()]
    assert all(f"  {line}" in full for line in quiet.splitlines())
    code, script, _ = run(["plan", *H100, "--source-build", "always", "-q"], capsys)
    assert code == 0 and script.startswith("#!/usr/bin/env bash") and "Why:" not in script


def test_doctor_quiet_leaves_out_what_was_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.txt"
    log.write_text(LOG)
    _, full, _ = run(["doctor", "--no-env", "--log", str(log)], capsys)
    _, quiet, _ = run(["doctor", "--no-env", "--log", str(log), "-q"], capsys)
    assert "checked:" in full and "checked:" not in quiet
    assert quiet.strip() and quiet.strip() in full  # the findings themselves are kept


def test_matrix_validate_quiet_says_nothing_when_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["matrix", "validate"], capsys)[1].startswith("matrix OK")
    assert run(["matrix", "validate", "-q"], capsys)[:2] == (0, "")


def test_quiet_silences_progress_of_lock_and_refresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = ["lock", *H100, "--index-url", CLOSED, "--offline", "-o", str(tmp_path / "out")]
    code, _, err = run(lock, capsys)
    assert code != 0 and "uv pip compile: resolving" in err
    code, _, err = run([*lock, "-q"], capsys)
    assert code != 0 and "uv pip compile: resolving" not in err and err.startswith("vresolve: error:")
    refresh = ["matrix", "refresh", "--offline", "--index-url", CLOSED, "--package", "vllm"]
    code, _, err = run(refresh, capsys)
    assert code != 0 and "index: " in err and "METADATA" in err
    code, _, err = run([*refresh, "-q"], capsys)
    assert code != 0 and "index: " not in err and "METADATA" not in err and err.startswith("vresolve: error:")


@pytest.mark.parametrize("argv", [
    ["plan", *H100, "-v"], ["detect", "-q"], ["detect", "-v"], ["matrix", "show", "-q"], ["matrix", "grid", "-v"],
    ["site", "-o", "x", "-v"], ["fleet", "plan", str(DATA / "fleet" / "inventory.json"), "-q"],
    ["completion", "bash", "-q"], ["-q", "plan"], ["doctor", "-v"],
])
def test_verbosity_flags_are_refused_where_they_would_do_nothing(argv: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "unrecognized arguments: -" in err


def test_help_says_what_quiet_and_verbose_do() -> None:
    from vresolve.cli.args import build_parser

    helps = {" ".join(words): " ".join(p.format_help().split()) for words, p in _commands(build_parser("*"))}
    assert "print only what to run" in helps["plan"]
    assert "the installer's own output" in helps["apply"] and "only the outcome" in helps["apply"]
    assert "--quiet" in helps["lock"] and "--quiet" in helps["fleet lock"] and "--quiet" in helps["matrix refresh"]
    assert "--quiet" not in helps["matrix show"] and "--verbose" not in helps["plan"]


def test_apply_quiet_leaves_out_the_preview() -> None:
    """apply asks on a terminal: without -q the plan preview comes first, with -q only the question ('n': no
    change)."""
    outs = []
    for extra in ([], ["-q"]):
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "vresolve", "apply", *H100, "--venv", "never-made", *extra],
                             stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), text=True)
        os.close(slave)
        os.write(master, b"n\n")
        out, err = p.communicate(timeout=300)
        os.close(master)
        outs.append(out)
        assert not Path("never-made").exists() and "Traceback" not in err
    assert "uv pip install" in outs[0] and "uv pip install" not in outs[1]


# 2. --python is a version everywhere; doctor's interpreter is --interpreter

def test_doctor_interpreter_and_python(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["doctor", "--interpreter", sys.executable, "--json", "--timeout", "120"], capsys)
    assert code in (0, 1) and json.loads(out)["schema"] == "vresolve.doctor/1"
    for value in (sys.executable, "3.12"):
        code, out, err = run(["doctor", "--python", value], capsys)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and "--interpreter EXE" in err
    assert "--interpreter" in vresolve("doctor", "--help").stdout
    assert "--python" not in vresolve("doctor", "--help").stdout


# 3. a closed pipe: no traceback

@pytest.mark.parametrize("argv", [["plan", *H100], ["matrix", "show", "torch"], ["matrix", "show", "torch", "--json"],
                                  ["detect"]])
def test_closed_pipe_is_a_quiet_exit(argv: list[str]) -> None:
    p = subprocess.Popen([sys.executable, "-m", "vresolve", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=_env())
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # the reader is gone before the first write
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 141 and err == ""


def test_head_on_a_pipe_is_quiet() -> None:
    for cmd in ("plan --gpu H100 --driver 580.95.05", "matrix show torch"):
        r = subprocess.run(["bash", "-c", f"set -o pipefail; '{sys.executable}' -m vresolve {cmd} | head -1"],
                           capture_output=True, text=True, env=_env(), timeout=300)
        assert r.returncode in (0, 141) and r.stderr == "" and len(r.stdout.splitlines()) == 1


# 4. piped output: whole cells

def test_piped_tables_are_not_cut() -> None:
    from vresolve.matrix import load_matrix
    from vresolve.render.text import _TABLES

    m = load_matrix(None)
    for table in ("torch", "vllm", "gpus", "cuda"):
        out = vresolve("matrix", "show", table).stdout
        assert "…" not in out
        _, rows = _TABLES[table](m)
        assert all(cell in out for row in rows for cell in row), table  # every arch list and source whole
    for argv in (["detect", "--torch"], ["plan", *H100]):
        r = vresolve(*argv)
        assert r.returncode == 0 and "…" not in r.stdout, argv
    assert sys.executable in vresolve("detect", "--torch").stdout  # the interpreter's whole path


# 5. one schema name per JSON shape

def _commands(parser: Any) -> list[tuple[tuple[str, ...], Any]]:
    import argparse

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, p in sub.choices.items():
        nested = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        out += [((name, n), q) for n, q in nested.choices.items()] if nested else [((name,), p)]
    return out


def _json_runs(tmp: Path) -> dict[tuple[str, ...], list[list[str]]]:
    log = tmp / "log.txt"
    log.write_text(LOG)
    inventory = str(DATA / "fleet" / "inventory.json")
    return {
        ("plan",): [["plan", *H100], ["plan", *H100, "--source-build", "always"],
                    ["plan", "--gpu", "K80", "--driver", "470.82.01", "--source-build", "never"],
                    ["plan", "--gpu", "Jetson AGX Orin", "--driver", "540.4.0", "--platform", "linux-aarch64",
                     "--python", "3.10", "--jetpack", "6.2", "--jetson-index", "https://jetson.example/"]],
        ("lock",): [["lock", *H100, "--index-url", CLOSED, "--offline", "-o", str(tmp / "lock")]],
        ("apply",): [["apply", *H100]],  # refused without --yes: the error shape
        ("doctor",): [["doctor", "--no-env", "--log", str(log)]],
        ("detect",): [["detect"]],
        ("matrix", "validate"): [["matrix", "validate"]],
        ("matrix", "show"): [["matrix", "show"]] + [["matrix", "show", t] for t in
                                                     ("cuda", "gpus", "torch", "vllm", "issues", "jetson")],
        ("matrix", "refresh"): [["matrix", "refresh", "--offline", "--index-url", CLOSED]],
        ("matrix", "grid"): [["matrix", "grid", "--family", "kepler", "--python", "3.12"]],
        ("site",): [["site", "-o", str(tmp / "site"), "--family", "kepler", "--python", "3.12"]],
        ("fleet", "detect"): [["fleet", "detect", "--k8s", str(DATA / "k8s" / "nodes.json")]],
        ("fleet", "plan"): [["fleet", "plan", inventory]],
        ("fleet", "lock"): [["fleet", "lock", inventory, "--index-url", CLOSED, "--offline", "-o", str(tmp / "fl")]],
        ("fleet", "doctor"): [["fleet", "doctor", "--ray", "127.0.0.1:9", "--timeout", "5"]],
        ("completion",): [["completion", s] for s in ("bash", "zsh", "fish")],
    }


# DESIGN.md's documented schemas that name a family of shapes, told apart by a field
FAMILIES = {"vresolve.plan/1": lambda d: d["stack"]["install_kind"] + (" jetson" if "jetson" in d else ""),
            "vresolve.fleet/1": lambda d: "inventory" if "inventory" in d else "plan"}


def test_one_schema_name_per_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vresolve.cli.args import build_parser

    runs = _json_runs(tmp_path)
    assert {words for words, _ in _commands(build_parser("*"))} == set(runs)  # every command is collected
    shapes: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    by_command: dict[tuple[str, ...], set[str]] = {}
    for words, argvs in runs.items():
        for argv in argvs:
            main([*argv, "--json"])
            doc = json.loads(capsys.readouterr().out)
            name = doc["schema"]
            by_command.setdefault(words, set()).add(name)
            if set(doc) == {"schema", "error"}:  # a failure: the same name as the success would have
                continue
            kind = FAMILIES[name](doc) if name in FAMILIES else ""
            shapes.setdefault((name, kind), set()).add(tuple(sorted(doc)))
    shared = {k: v for k, v in shapes.items() if len(v) > 1}
    assert not shared, shared
    assert by_command[("matrix", "show")] == {f"vresolve.matrix.{t}/1" for t in
                                              ("summary", "cuda", "gpus", "torch", "vllm", "issues", "jetson")}
    assert by_command[("fleet", "detect")] == by_command[("fleet", "plan")] == {"vresolve.fleet/1"}
    assert by_command[("matrix", "validate")] == {"vresolve.matrix.validate/1"}
    assert by_command[("fleet", "lock")] == {"vresolve.fleet.lock/1"}
    assert by_command[("fleet", "doctor")] == {"vresolve.fleet.doctor/1"}
    assert len({n for names in by_command.values() for n in names}) >= 16


# 6. completion

def test_bash_completion_loads() -> None:
    script = vresolve("completion", "bash").stdout
    r = subprocess.run(["bash", "-c", "source /dev/stdin; complete -p vresolve"], input=script, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "vresolve" in r.stdout and r.stderr == ""
    exe = shutil.which("vresolve") or ""
    if exe:
        r = subprocess.run(["bash", "-c", f"source <('{exe}' completion bash); complete -p vresolve"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "vresolve" in r.stdout


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_completion_name_every_command(shell: str) -> None:
    from vresolve.cli.args import COMMANDS, build_parser

    r = vresolve("completion", shell)
    assert r.returncode == 0
    for words, _ in _commands(build_parser("*")):
        assert all(w in r.stdout for w in words), words
    assert all(name in r.stdout for name in COMMANDS)
    if shell == "fish":
        assert "complete -c vresolve -n __fish_use_subcommand -a plan" in r.stdout
        assert "-l interpreter" in r.stdout and "-l gpu" in r.stdout
    if shutil.which(shell):
        check = [shell, "-n"] if shell == "zsh" else [shell, "--no-execute"]
        assert subprocess.run(check, input=r.stdout, text=True, capture_output=True).returncode == 0


# 7. doctor --log - on a terminal

def _doctor_stdin(stdin_is_tty: bool) -> tuple[str, int]:
    """(stderr before the log is read, exit code) of doctor --log - with a terminal or a pipe on stdin."""
    argv = [sys.executable, "-m", "vresolve", "doctor", "--no-env", "--log", "-", "--json"]
    if not stdin_is_tty:
        r = subprocess.run(argv, input=LOG, capture_output=True, text=True, env=_env(), timeout=300)
        return r.stderr, r.returncode
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    os.close(slave)
    assert p.stderr is not None
    ready, _, _ = select.select([p.stderr], [], [], 120)  # the prompt, before anything is typed
    prompt = os.read(p.stderr.fileno(), 4096).decode() if ready else ""
    os.write(master, LOG.encode() + b"\x04")  # the paste, then one Ctrl-D
    try:
        p.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # still waiting for input: it did not take the one Ctrl-D as the end
        p.kill()
        p.communicate()
    os.close(master)
    return prompt, p.returncode


def test_log_from_a_terminal_prompts_and_from_a_pipe_does_not() -> None:
    prompt, code = _doctor_stdin(True)
    assert prompt.strip() == "vresolve: paste the log, then press Ctrl-D on a line of its own" and code == 1
    err, code = _doctor_stdin(False)
    assert "paste" not in err and code == 1


# 8. -V

def test_capital_v_prints_the_version() -> None:
    from vresolve import __version__

    for flag in ("-V", "--version"):
        r = vresolve(flag)
        assert (r.returncode, r.stdout, r.stderr) == (0, f"vresolve {__version__}\n", "")


def test_usage_errors_name_the_program_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "--bogus"], capsys)[2] == "vresolve: error: unrecognized arguments: --bogus\n"
    code, _, err = run(["plan", "--installer", "poetry"], capsys)  # a subcommand's parser still names itself
    assert code == 2 and err.startswith("vresolve: error: vresolve plan: argument --installer: invalid choice")
