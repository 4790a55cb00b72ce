"""Random hostile strings (Hypothesis) in every field detection reads, through every renderer.

The machine is real: a fake ``nvidia-smi`` on PATH prints each example's GPU name, and detection
reads it as it reads a real one. The artefacts are read back by their real readers: bash runs the
exports, PyYAML reads environment.yml, json reads the JSON. No example may raise anything but the
dialect refusals vresolve documents, leave a live injected command, or put a control character
on the terminal.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace
from packaging.version import Version
from rich.console import Console

from vresolve.detect.probes import detect_host
from vresolve.host import Toolkit
from vresolve.matrix import load_matrix
from vresolve.plan import build_plan
from vresolve.plan.source import plan_source_build
from vresolve.render import plan_human, plan_view, source_plan_human, source_plan_view
from vresolve.render.lockfiles import env_sh, environment_yml, requirements_text
from vresolve.render.shell import exports_text, render_script
from vresolve.resolve import Request, resolve

from .test_detect import fake_smi, overrides

MATRIX = load_matrix()

FRAGMENTS = ["\n", "\r", "\r\n", "\x1b[2J", "\x1b]0;t\x07", "\x00", "\x7f", "\x85", "\u2028", "\u202e", "\ufeff",
             "$(touch MARK)", "`touch MARK`", ";touch MARK;", "&& touch MARK", "|touch MARK", "'", '"', "\\",
             "$PWD", "$CUDA_HOME", "$PATH", "${IFS}", "#", "[/]", "[bold]", "%s", "{}", ":", ",", " ", "\t", "*",
             "~", "!", "-e", "--index-url http://x", "&x", "*x", "- y", "key: v"]
hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=12).map("".join)
no_nul = hostile.map(lambda s: s.replace("\x00", ""))
CONTROLS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0))]


def _terminal(renderables: list[object]) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=120, color_system=None, highlight=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def _bash_env(script: str, names: list[str], cwd: Path) -> list[str]:
    probe = script + "".join(f'printf "%s\\0" "${n}"\n' for n in names)
    r = subprocess.run(["bash", "-c", probe], cwd=cwd, capture_output=True, check=True)
    return r.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


# CI runs a fixed set of 60 examples; VRESOLVE_FUZZ_EXAMPLES=N searches N random ones
_EXAMPLES = int(os.environ.get("VRESOLVE_FUZZ_EXAMPLES", "0"))


@settings(max_examples=_EXAMPLES or 60, deadline=None, derandomize=not _EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpu=hostile, toolkit=no_nul, venv=no_nul.filter(bool), src=no_nul.filter(bool))
def test_random_machine_and_user_strings(tmp_path: Path, gpu: str, toolkit: str, venv: str, src: str) -> None:
    matrix = MATRIX
    q = tmp_path / "query.csv"
    field = '"' + gpu.replace('"', '""') + '"'
    q.write_text(f"0, {field}, GPU-1, 9.0, 580.159.04, 143771, 00000000:00:06.0\n", encoding="utf-8",
                 errors="surrogateescape")
    host = detect_host(overrides(tmp_path, fake_smi(tmp_path, query=str(q))), installed=False)
    for g in host.gpus:  # a plain line, whatever the VBIOS said
        assert not any(c in g.name for c in (*CONTROLS, "\n", "\u2028", "\u202e"))
    host = replace(host, toolkits=(Toolkit(version=Version("13.0.88"), path="/opt/" + toolkit, source="PATH"),))
    request = Request(cpu=not host.gpus)
    res = resolve(host, matrix, request)
    plan = build_plan(matrix, res, env_dir=venv)
    assert json.loads(json.dumps(plan_view(plan, "probe")))
    assert not any(c in _terminal(plan_human(plan, "probe")) for c in CONTROLS if c not in "\n")
    sp = plan_source_build(host, matrix, request, env_dir=venv, src_dir=src)
    script = render_script(sp)
    assert subprocess.run(["bash", "-n"], input=script.encode("utf-8", "surrogateescape")).returncode == 0
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, "#"
    words = list(lexer)
    assert src in words and f"./{src}" in words  # the user's value is one word, exactly
    assert json.loads(json.dumps(source_plan_view(sp, "probe")))
    assert not any(c in _terminal(source_plan_human(sp, "probe")) for c in CONTROLS if c not in "\n")
    env = list(sp.env)
    assert _bash_env(exports_text(env, "bash"), [k for k, _ in env], tmp_path) == _expanded(env, tmp_path)
    try:
        exports_text(env, "dotenv")
    except ValueError as e:
        assert "cannot be written as a dotenv value" in str(e)
    header = {"vresolve": "0", "matrix_revision": "r", "stack": {
        "vllm": "0.33.0", "vllm_variant": "cu130", "vllm_source": "pypi", "torch": "2.14.0", "variant": "cu130",
        "torch_source": "pypi"}, "machine": {"gpus": {g.name: "9.0" for g in host.gpus} or {gpu: "9.0"},
                                             "python": "3.12", "platform": "linux-x86_64", "min_driver": None,
                                             "driver_policy": "minor-compat", "cuda": None}}
    pins = [("vllm", "0.33.0", ["sha256:" + "0" * 64])]
    req = requirements_text(header, [], pins)
    assert [ln for ln in req.splitlines() if not ln.startswith("#")] == ["vllm==0.33.0 \\", "    --hash=sha256:" + "0" * 64]
    assert yaml.safe_load(environment_yml(header, "v", "3.12", [], pins))["name"] == "v"
    sh = env_sh(header, env)
    assert _bash_env(sh, [k for k, _ in env], tmp_path) == _expanded(env, tmp_path)
    assert not (tmp_path / "MARK").exists()


def _expanded(env: list[tuple[str, str]], cwd: Path) -> list[str]:
    """What bash makes of the exports, in order: vresolve's own values expand ``$PWD``, ``$CUDA_HOME``
    and ``$PATH``; every other value is its characters."""
    from vresolve.plan.steps import Expand

    seen = {"PWD": str(cwd), "PATH": os.environ.get("PATH", ""), "CUDA_HOME": os.environ.get("CUDA_HOME", "")}
    out = []
    for k, v in env:
        if isinstance(v, Expand):
            v = re.sub(r"\$(PWD|CUDA_HOME|PATH)", lambda m: seen[m[1]], v)  # one pass, as bash expands
        seen[k] = v
        out.append(v)
    return out
