"""The command line in-process: JSON contracts, exit codes, one-line input errors."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from vresolve import _entry
from vresolve.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "NVIDIA H200", "--driver", "580.159.04", "--python", "3.12", "--json"], capsys)
    assert code == 0
    assert out.index('"alternatives"') < out.index('"host"') < out.index('"schema"')  # sorted keys
    d = json.loads(out)
    assert d["schema"] == "vresolve.plan/1"
    assert d["host"] == {"driver": "580.159.04", "cuda_driver": None, "python": "3.12", "platform": "linux-x86_64",
                         "glibc": None,  # another machine's glibc is not this one's: unknown without --glibc
                         "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0", "count": 1}],
                         "detected_by": "given on the command line"}
    assert {k: d["stack"][k] for k in ("vllm", "torch", "torchvision", "torchaudio", "variant", "vllm_variant",
                                       "cuda", "python", "install_kind")} == {
        "vllm": "0.33.0", "torch": "2.14.0", "torchvision": "0.29.0", "torchaudio": "2.11.0", "variant": "cu130",
        "vllm_variant": "cu130", "cuda": "13.0", "python": "3.12", "install_kind": "wheel"}
    assert d["requires"] == {"min_driver": "580.65.06", "driver_policy": "minor-compat", "glibc": "2.31"}  # llguidance, in the closure
    # FlashInfer asks for cuda-python>=12.0 only: held on CUDA 13 (an old all-in-one release overwrites cuda-bindings)
    assert d["steps"][-2]["argv"] == ["uv", "pip", "install", "--python", ".venv-vllm/bin/python", "vllm==0.33.0",
                                      "torch==2.14.0", "torchvision==0.29.0", "torchaudio==2.11.0",
                                      "cuda-python>=13.0,<14"]
    assert d["steps"][-1]["argv"] == [".venv-vllm/bin/vllm", "download-kernels"]  # the wheel ships the command
    assert d["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0"}
    assert [v["expect"] for v in d["verify"]] == ["vllm 0.33.0: compiled extensions load", "torch CUDA 13.0",
                                                  "cuda available True 1", "arch list covers every GPU"]
    assert d["alternatives"] == [] and d["reasons"]


def test_plan_pip_uses_only_pip_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "H100", "--driver", "550.54.15", "--python", "3.12", "--installer", "pip",
                        "--json"], capsys)
    assert code == 0
    steps = json.loads(out)["steps"]
    assert steps[0]["argv"] == ["python3.12", "-m", "venv", ".venv-vllm"]
    for s in steps[1:]:
        assert s["argv"][:4] == [".venv-vllm/bin/python", "-m", "pip", "install"]
        assert not {"--python", "--torch-backend", "--index-strategy", "--seed"} & set(s["argv"])
    torch_step, vllm_step = steps[1]["argv"], steps[2]["argv"]
    assert torch_step[4:6] == ["--index-url", "https://download.pytorch.org/whl/cu126"]
    assert "torch==2.13.0+cu126" in torch_step and "torch==2.13.0+cu126" in vllm_step  # the same torch, kept
    assert "vllm==0.30.0+cu129" in vllm_step


def test_plan_conda(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "H200", "--driver", "580.159.04", "--python", "3.12", "--installer", "conda",
                        "--json"], capsys)
    d = json.loads(out)
    assert d["steps"][0]["argv"] == ["conda", "create", "-y", "-n", "vllm-0.33.0", "python=3.12", "pip"]
    assert d["steps"][1]["argv"][:7] == ["conda", "run", "-n", "vllm-0.33.0", "python", "-m", "pip"]
    assert d["verify"][0]["argv"][:4] == ["conda", "run", "-n", "vllm-0.33.0"]


def test_plan_no_stack_exit_1_with_causes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "A100", "--driver", "470.82.01", "--python", "3.10", "--driver-policy",
                        "toolkit", "--json"], capsys)
    assert code == 1
    d = json.loads(out)
    assert d["schema"] == "vresolve.plan/1" and d["error"]["code"] == "no-compatible-stack"
    assert any("serves CUDA 11.4 at most under the toolkit policy" in c for c in d["error"]["causes"])
    assert d["error"]["hints"]
    code, out, err = run(["plan", "--gpu", "A100", "--driver", "470.82.01", "--python", "3.10", "--driver-policy",
                          "toolkit"], capsys)
    assert code == 1 and out == "" and "The conflict is caused by:" in err and "hint:" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["plan", "--gpu", "H2000"], "vresolve: error: --gpu: unknown GPU 'H2000' (did you mean 'H200', 'T2000', 'P2000'?)"),
    (["plan", "--gpu", "H100", "--driver", "5x0"],
     "vresolve: error: --driver: invalid driver version '5x0' (expected a version such as '580.65.06')"),
    (["plan", "--gpu", "H100", "--python", "three"],
     "vresolve: error: --python: invalid Python version 'three' (expected X.Y such as '3.12')"),
    (["plan", "--gpu", "H100", "--vllm", "latest!"],
     "vresolve: error: --vllm: invalid version or range 'latest!' (expected e.g. '0.10.1' or '>=0.9,<0.11')"),
    (["plan", "--gpu", "H100", "--variant", "rocm6"],
     "vresolve: error: --variant: invalid variant 'rocm6' (expected 'cpu' or 'cuXYZ' such as 'cu128')"),
    (["plan", "--gpu", "sm_9x"], "vresolve: error: --gpu: unknown GPU 'sm_9x' (expected a GPU name such as 'H100' "
                                 "or 'NVIDIA GeForce RTX 4090', or sm_XY)"),
    (["plan", "--installer", "poetry"], "vresolve: error: vresolve plan: argument --installer: invalid choice: "
                                        "'poetry' (choose from 'uv', 'pip', 'conda')"),
    (["matrix", "--matrix", "/nonexistent", "validate"],
     "vresolve: error: matrix directory '/nonexistent' does not exist (expected a compat_matrix/ directory)"),
])
def test_bad_input_is_one_line_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out, err) == (2, "", message + "\n")


def test_plan_by_capability_and_shell_exports(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--gpu", "sm_90,sm_80", "--driver", "580.95.05", "--python", "3.12", "--shell",
                        "bash"], capsys)
    assert (code, out) == (0, "export CUDA_DEVICE_ORDER=PCI_BUS_ID\nexport TORCH_CUDA_ARCH_LIST='8.0;9.0'\n")
    code, out, _ = run(["plan", "--gpu", "sm_90", "--driver", "580.95.05", "--python", "3.12", "--shell", "fish"],
                       capsys)
    assert out == "set -gx TORCH_CUDA_ARCH_LIST 9.0\n"


def test_matrix_validate_reports_every_problem_as_json(tiny_copy: Callable[..., Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        doc["gpus"][0]["compute_capability"] = "9.x"

    path = tiny_copy({"gpus.yaml": edit})
    code, out, _ = run(["matrix", "validate", "--matrix", str(path), "--json"], capsys)
    assert code == 2
    assert json.loads(out) == {"schema": "vresolve.matrix.validate/1", "error": {
        "code": "invalid-matrix", "message": "1 problem in the matrix:\n  gpus.yaml: gpus[0] 'NVIDIA H200': "
        "compute_capability: invalid compute capability '9.x' (expected MAJOR.MINOR such as '8.6')",
        "problems": [{"file": "gpus.yaml", "row": "gpus[0] 'NVIDIA H200'", "field": "compute_capability",
                      "message": "invalid compute capability '9.x' (expected MAJOR.MINOR such as '8.6')"}]}}


def test_matrix_show_vllm_lists_every_release_with_torch_pins(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["matrix", "show", "vllm", "--json"], capsys)
    rows = json.loads(out)["rows"]
    versions = [r["version"] for r in rows]
    assert versions[0] == "0.4.0" and versions[-1] == "0.33.0" and len(versions) == 79
    assert all(r["torch"] and all(r["torch"].values()) for r in rows)
    assert rows[-1]["torch"] == {"linux-aarch64": "2.14.0", "linux-x86_64": "2.14.0"}


def test_plan_output_cache(tiny_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_copy()
    argv = ["plan", "--gpu", "H200", "--driver", "580.159.04", "--python", "3.12", "--json", "--matrix", str(path)]
    assert _entry.main(argv) == 0
    first = capsys.readouterr().out
    cache = Path(os.environ["VRESOLVE_CACHE_DIR"])
    assert len(list(cache.glob("plan-*.out"))) == 1
    assert _entry.main(argv) == 0
    assert capsys.readouterr().out == first  # answered from the cache
    # an edited matrix is a different input
    f = path / "vllm.yaml"
    f.write_text(f.read_text().replace("min_compute_capability: \"7.5\"", "min_compute_capability: \"9.0\""))
    assert _entry.main(argv) == 0
    assert capsys.readouterr().out == first
    assert len(list(cache.glob("plan-*.out"))) == 2
    # --gpu auto probes the machine: kept under a key that has the machine's facts (tests/test_plan_cache_auto.py)
    assert _entry.main(["plan", "--gpu", "auto", "--json", "--matrix", str(path)]) in (0, 1)
    capsys.readouterr()
    assert len(list(cache.glob("plan-*.out"))) == 3
    assert b"plan-auto-output/1" in max(cache.glob("plan-*.out"), key=lambda f: f.stat().st_mtime_ns).read_bytes()


def test_explanation_hints_keep_the_whole_request(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: the 'drop the vLLM constraint' hint re-resolved without --pypi-only, and offered a build
    (0.8.5.post1+cu118, a release asset) that the same command without --vllm does not find."""
    args = ["plan", "--gpu", "A100", "--driver", "470.82.01", "--python", "3.10", "--pypi-only", "--json"]
    code, out, _ = run([*args, "--vllm", "0.33.0"], capsys)
    hints = json.loads(out)["error"]["hints"]
    assert code == 1 and not [h for h in hints if "drop the vLLM constraint" in h], hints
    code, _, _ = run(args, capsys)
    assert code == 1  # consistent: without --vllm nothing runs here either
    # without --pypi-only the hint is right, and names what the unconstrained plan gives
    code, out, _ = run([*args[:-2], "--json", "--vllm", "0.33.0"], capsys)
    assert any("drop the vLLM constraint (==0.33.0): vLLM 0.8.5.post1 runs here" in h
               for h in json.loads(out)["error"]["hints"])


def test_precompiled_recipe_says_only_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: --precompiled edited a finished build recipe, and kept its reasons that a toolkit is
    installed with conda and that CMake builds the arch, although neither step is in it."""
    code, out, _ = run(["plan", "--gpu", "RTX 5090", "--driver", "580.95.05", "--python", "3.12", "--precompiled",
                        "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    text = " ".join(d["reasons"])
    assert "conda" not in text and "CMake" not in text and "precompiled" in text
    assert not [s for s in d["steps"] if "conda" in s["argv"] or "--no-build-isolation" in s["argv"]]
    assert d["env"].get("VLLM_USE_PRECOMPILED") == "1" and "MAX_JOBS" not in d["env"] and "CUDA_HOME" not in d["env"]
    assert d["steps"][-1]["argv"][-2:] == ["-e", "./vllm-src"]


def test_human_plan_exports_are_quoted_for_a_shell(capsys: pytest.CaptureFixture[str]) -> None:
    """The Environment section is copied into a shell: a value with ';' must be quoted there too."""
    code, out, _ = run(["plan", "--gpu", "sm_90,sm_80", "--driver", "580.95.05", "--python", "3.12"], capsys)
    assert code == 0 and "  export TORCH_CUDA_ARCH_LIST='8.0;9.0'\n" in out


@pytest.mark.parametrize("columns", [None, "1", "45", "200", "x"])
def test_help_is_argparses_own_at_every_width(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser made for ``vresolve --help`` (commands only listed, the width found without shutil) prints what
    argparse prints for the parser of every command, as wide as argparse's own formatter makes it."""
    import argparse
    import shutil

    from vresolve.cli.args import _columns, build_parser

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert _columns() == shutil.get_terminal_size().columns
    top, every = build_parser(None), build_parser("*")
    assert top.format_help() == every.format_help()
    every.formatter_class = argparse.HelpFormatter  # argparse's, which asks shutil for the width
    assert top.format_help() == every.format_help()
    assert build_parser("plan").parse_args(["--matrix", "x", "detect"]).command == "detect"  # a listed command


def test_only_the_console_script_leaves_its_objects_to_the_exit(capsys: pytest.CaptureFixture[str]) -> None:
    """The console script (main() with no argv: the process is the command) freezes what it made, so that the
    interpreter's exit skips collecting it; a library caller's main(argv) leaves the collector as it was."""
    import gc
    import subprocess
    import sys

    frozen = gc.get_freeze_count()
    assert _entry.main(["plan", "--gpu", "NVIDIA H200", "--driver", "580.159.04", "--python", "3.12", "--json"]) == 0
    capsys.readouterr()
    assert gc.get_freeze_count() == frozen
    script = ("import gc, sys; from vresolve._entry import main; "
              "sys.argv = ['vresolve', 'plan', '--gpu', 'NVIDIA H200', '--driver', '580.159.04', '--json']; "
              "code = main(); print(code, gc.get_freeze_count() > 0, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[-1] == "0 True"
    assert json.loads(p.stdout)["stack"]["vllm"] == "0.33.0"  # the whole answer was written before the exit
