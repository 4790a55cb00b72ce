"""Hostile strings from the machine and the user, through every artefact vresolve writes.

Each attack runs the real thing: a fake ``nvidia-smi`` on PATH that reports a GPU name built to
inject, the real CLI in a subprocess, and the artefacts read back by their real readers (bash,
fish where installed, python-dotenv, PyYAML). The injected command would create ``MARK`` in the
working directory; no test may find it there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vresolve.parsers import machine_text
from vresolve.render.lockfiles import env_sh, environment_yml, header_text, requirements_text
from vresolve.render.shell import comment, dotenv_value, escape_controls, exports_text, fish_quote, sh_value

from .test_detect import fake_smi

PAYLOAD = "$(touch MARK)`touch MARK`;touch MARK"
# a VBIOS name built to inject: line breaks that end a comment, a command substitution, terminal
# escapes (clear screen, set title, bell), rich markup that does not parse ([/]) and a bidi override
HOSTILE_GPU = f'NVIDIA H100 80GB HBM3\n{PAYLOAD} #\ntouch MARK #\x1b[2J\x1b]0;owned\x07 [/] [bold]x\u202e'
HOSTILE_PATH = f"/opt/cuda '{PAYLOAD}' \\\n\x1b[31m[/]"


def _smi_query(tmp_path: Path, name: str) -> Path:
    q = tmp_path / "query.csv"
    field = '"' + name.replace('"', '""') + '"'  # csv quoting: the name may hold line breaks
    q.write_text(f"0, {field}, GPU-283bb333-7717-fb40-df5e-3812f333d4f7, 9.0, 580.159.04, 143771, 00000000:00:06.0\n")
    return q


def _run(tmp_path: Path, *args: str, name: str = HOSTILE_GPU, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[bytes]:
    bindir = fake_smi(tmp_path, query=str(_smi_query(tmp_path, name)))
    full = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "VRESOLVE_NO_NVML": "1",
            "VRESOLVE_PLAN_CACHE": "0", "VRESOLVE_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    return subprocess.run([sys.executable, "-m", "vresolve", *args], cwd=tmp_path, env=full, capture_output=True,
                          timeout=120)


def _no_mark(tmp_path: Path) -> None:
    assert not (tmp_path / "MARK").exists(), "an injected command ran"


def _code_words(script: str) -> list[str]:
    """The words bash would run or pass, comments dropped (what shlex reads as POSIX sh)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def test_machine_text_makes_one_plain_line() -> None:
    t = machine_text(HOSTILE_GPU)
    assert "\n" not in t and "\x1b" not in t and "\x07" not in t and "\u202e" not in t
    assert t.startswith("NVIDIA H100 80GB HBM3 $(touch MARK)")
    assert len(machine_text("x" * 10_000)) == 256


@pytest.mark.parametrize("fmt", ["human", "json"])
def test_hostile_gpu_name_in_plan_and_detect(tmp_path: Path, fmt: str) -> None:
    for args in (["plan", "--gpu", "auto"], ["detect"]):
        r = _run(tmp_path, *args, *(["--json"] if fmt == "json" else []),
                 env={"LD_LIBRARY_PATH": f"/usr/lib/[/]\x1b[2J:{PAYLOAD}"})
        assert r.returncode == 0, r.stderr.decode()
        out = r.stdout.decode()
        assert "Traceback" not in r.stderr.decode()
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out  # nothing reaches the terminal raw
        if fmt == "json":
            doc = json.loads(out)
            names = [g["name"] for g in doc["host"]["gpus"]]
            assert names == [machine_text(HOSTILE_GPU)]
        else:
            assert "[/]" in out  # shown as characters, not read as markup
    _no_mark(tmp_path)


def test_hostile_gpu_name_in_exports_bash_and_dotenv(tmp_path: Path) -> None:
    from dotenv import dotenv_values

    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--shell", "bash")
    assert r.returncode == 0, r.stderr.decode()
    subprocess.run(["bash", "-c", r.stdout.decode() + "\nenv > env.out"], cwd=tmp_path, check=True)
    _no_mark(tmp_path)
    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--shell", "dotenv")
    assert r.returncode == 0, r.stderr.decode()
    (tmp_path / "x.env").write_bytes(r.stdout)
    values = dotenv_values(tmp_path / "x.env")
    assert values["TORCH_CUDA_ARCH_LIST"] == "9.0" and values["VLLM_TARGET_DEVICE"] == "cuda"


def test_hostile_gpu_name_in_the_source_recipe(tmp_path: Path) -> None:
    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--json")
    assert r.returncode == 0, r.stderr.decode()
    script = json.loads(r.stdout)["script"]
    assert subprocess.run(["bash", "-n"], input=script.encode()).returncode == 0
    words = _code_words(script)
    assert "touch" not in words and "MARK" not in words  # the name stayed inside its comment
    assert all(line.startswith("#") for line in script.splitlines() if "touch MARK" in line)


def test_user_values_never_expand(tmp_path: Path) -> None:
    """``--src-dir '$PWD$(…)'`` and ``--venv`` are literal: only vresolve's own values expand."""
    src, venv = f"$PWD{PAYLOAD}", f'x"{PAYLOAD}"$CUDA_HOME'
    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--src-dir", src, "--venv", venv,
             "--json")
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    script = doc["script"]
    words = _code_words(script)
    assert src in words and f"./{src}" in words  # one word, exactly the characters given
    assert f"{venv}/bin/python" in words
    assert '"$PWD"' not in script.split("git clone", 1)[1].split("\n", 1)[0]
    assert 'export PATH="$CUDA_HOME"/bin:"$PATH"' in script  # vresolve's own values still expand
    for step in doc["steps"]:
        assert shlex.split(step["shell"]) == step["argv"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_reads_every_value_back(tmp_path: Path) -> None:
    values = {"A": HOSTILE_PATH, "B": "ends with a backslash\\", "C": "it's", "D": "\\'", "E": ""}
    script = exports_text(list(values.items()), "fish")
    script += "".join(f"printf '%s\\0' \"${k}\"\n" for k in values)
    r = subprocess.run(["fish", "--no-config", "-c", script], cwd=tmp_path, capture_output=True, check=True)
    assert r.stdout.decode().split("\0")[:-1] == list(values.values())
    _no_mark(tmp_path)


def test_bash_reads_every_value_back(tmp_path: Path) -> None:
    values = {"A": HOSTILE_PATH, "B": "ends with a backslash\\", "C": "it's", "D": "\n", "E": ""}
    script = exports_text(list(values.items()), "bash")
    script += "".join(f"printf '%s\\0' \"${k}\"\n" for k in values)
    r = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, check=True)
    assert r.stdout.decode().split("\0")[:-1] == list(values.values())
    _no_mark(tmp_path)


def test_dotenv_quotes_or_refuses(tmp_path: Path) -> None:
    from dotenv import dotenv_values

    ok = {"A": "/opt/cuda 13", "B": "a$(x)`y`;z", "C": "plain-1.0"}
    (tmp_path / "ok.env").write_text(exports_text(list(ok.items()), "dotenv"))
    assert dotenv_values(tmp_path / "ok.env") == ok
    for bad in ("it's", "a\nB=evil", "back\\slash", " lead", "\x1b[2J"):
        with pytest.raises(ValueError, match="cannot be written as a dotenv value"):
            dotenv_value(bad)


def test_dotenv_refusal_is_a_usage_error(tmp_path: Path) -> None:
    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--shell", "dotenv",
             "--venv", "it's here", name="NVIDIA H200")
    # the venv is not in the exports of a source build with uv; a toolkit path is: plan one that holds a quote
    assert r.returncode == 0, r.stderr.decode()
    toolkit = tmp_path / "cuda it's"
    (toolkit / "bin").mkdir(parents=True)
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    r = _run(tmp_path, "plan", "--gpu", "auto", "--source-build", "always", "--shell", "dotenv", name="NVIDIA H200",
             env={"CUDA_HOME": str(toolkit)})
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "--shell dotenv" in err and "Traceback" not in err, err


def test_comments_hold_any_text() -> None:
    line = comment(HOSTILE_GPU)
    assert "\n" not in line and "\x1b" not in line and line.startswith("# NVIDIA H100")
    assert escape_controls("a\nb", lines=True) == "a\nb"
    assert sh_value(HOSTILE_PATH) == shlex.quote(HOSTILE_PATH)
    assert fish_quote("a\\") == "'a\\\\'"


def _header(gpu: str) -> dict[str, object]:
    return {"vresolve": "0.1.0", "matrix_revision": "0123456789abcdef",
            "stack": {"vllm": "0.33.0", "vllm_variant": "cu130", "vllm_source": "pypi", "torch": "2.14.0",
                      "variant": "cu130", "torch_source": "pypi"},
            "machine": {"gpus": {gpu: "9.0"}, "python": "3.12", "platform": "linux-x86_64", "glibc": "2.35",
                        "min_driver": "580.65.06", "driver_policy": "minor-compat", "cuda": "13.0"}}


def test_lock_files_with_a_hostile_header(tmp_path: Path) -> None:
    from vresolve.lock import read_lock_header

    h = _header(HOSTILE_GPU)
    pins = [("vllm", "0.33.0", ["sha256:" + "a" * 64]), ("torch", "2.14.0", ["sha256:" + "b" * 64])]
    urls = ["https://download.example.org/whl/cu130"]
    req = requirements_text(h, urls, pins)
    for line in req.splitlines():
        assert line.startswith(("#", "--extra-index-url ", "vllm==", "torch==", "    --hash=")), line
    assert read_lock_header(req) == h  # the JSON record survives, escaped
    env = yaml.safe_load(environment_yml(h, "vllm-0.33.0", "3.12", urls, pins))
    assert env == {"name": "vllm-0.33.0", "channels": ["conda-forge"],
                   "dependencies": ["python=3.12", "pip", {"pip": [f"--extra-index-url {urls[0]}",
                                                                   f"vllm==0.33.0 --hash=sha256:{'a' * 64}",
                                                                   f"torch==2.14.0 --hash=sha256:{'b' * 64}"]}]}
    sh = env_sh(h, [("CUDA_HOME", HOSTILE_PATH)])
    r = subprocess.run(["bash", "-c", sh + 'printf %s "$CUDA_HOME"'], cwd=tmp_path, capture_output=True, check=True)
    assert r.stdout.decode() == HOSTILE_PATH
    _no_mark(tmp_path)
    assert "\n#" in header_text(h) and header_text(h).count("\n") == 5


@pytest.mark.parametrize("pin", [("evil\n--index-url http://x", "1.0", []), ("ok", "1.0\n-e .", []),
                                 ("ok", "1.0", ["sha256:ab --trusted-host x"])])
def test_requirements_refuse_what_is_not_plain(pin: tuple[str, str, list[str]]) -> None:
    with pytest.raises(ValueError, match="requirements file"):
        requirements_text(_header("NVIDIA H200"), [], [pin])
    with pytest.raises(ValueError, match="requirements file"):
        requirements_text(_header("NVIDIA H200"), ["https://x.example/\n--index-url http://evil"], [])


def test_doctor_log_lines_reach_the_terminal_escaped(tmp_path: Path) -> None:
    log = tmp_path / "err.log"
    log.write_bytes(b"\x1b]0;owned\x07RuntimeError: CUDA error: no kernel image is available for execution "
                    b"on the device [/] \x1b[2J\n")
    r = _run(tmp_path, "doctor", "--no-env", "--log", str(log), name="NVIDIA H200")
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode in (0, 1), out
    assert "no kernel image" in out and "\x1b" not in out and "\x07" not in out and "Traceback" not in out


@pytest.mark.parametrize("value", ["3." + "9" * 5000, "banana", "3.12\n$(touch MARK)"])
def test_python_override_from_the_environment(tmp_path: Path, value: str) -> None:
    for args in (["plan", "--gpu", "auto"], ["detect"]):
        r = _run(tmp_path, *args, name="NVIDIA H200", env={"VRESOLVE_PYTHON": value})
        err = r.stderr.decode()
        assert r.returncode == 2 and err.count("\n") == 1 and err.startswith("vresolve: error: VRESOLVE_PYTHON"), err
        assert len(err) < 200
    _no_mark(tmp_path)


def test_caches_do_not_grow_without_end(tmp_path: Path) -> None:
    """Every matrix edit or upgrade adds a validated matrix, every new plan an answer: the oldest go."""
    import time

    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(12):
        (cache / f"matrix-old{i:02d}.pickle").write_bytes(b"x")
        (cache / f"plan-old{i:02d}.out").write_bytes(b"x")
        os.utime(cache / f"matrix-old{i:02d}.pickle", ns=(i * 10**9, i * 10**9))
    (cache / "keep-me.txt").write_text("not ours")
    time.sleep(0.01)
    env = {"VRESOLVE_CACHE_DIR": str(cache), "VRESOLVE_PLAN_CACHE": "1"}
    r = _run(tmp_path, "plan", "--gpu", "NVIDIA H200", "--driver", "580.159.04", env=env)
    assert r.returncode == 0, r.stderr.decode()
    matrices = sorted(p.name for p in cache.glob("matrix-*.pickle"))
    assert len(matrices) == 4 and "matrix-old11.pickle" in matrices and "matrix-old00.pickle" not in matrices
    assert len(list(cache.glob("plan-*.out"))) == 13  # under the limit: all kept
    assert (cache / "keep-me.txt").exists()


def test_a_jetsons_recipe_keeps_user_values_literal(tmp_path: Path) -> None:
    """A Jetson's wheel plan (the Jetson index's path): ``--venv`` stays one literal word; only vresolve's own
    ``$CUDA_HOME`` and ``$PATH`` expand; the index, validated at the flag, is one word too."""
    venv = f'x"{PAYLOAD}"$CUDA_HOME'
    r = _run(tmp_path, "plan", "--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64", "--python", "3.10",
             "--jetpack", "6.2", "--jetson-index", "https://jetson.example/a+b/", "--venv", venv, "--json")
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    script = doc["script"]
    assert subprocess.run(["bash", "-n"], input=script.encode()).returncode == 0
    words = _code_words(script)
    assert venv in words and f"{venv}/bin/python" in words and "touch" not in words
    assert "https://jetson.example/a+b/jp6/cu126" in words
    assert 'export PATH="$CUDA_HOME"/bin:"$PATH"' in script and 'export CPATH="$CUDA_HOME"/include' in script
    for step in doc["steps"]:
        assert shlex.split(step["shell"]) == step["argv"]
