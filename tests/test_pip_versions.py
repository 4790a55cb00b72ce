"""pip's "Could not find a version that satisfies the requirement PKG (from versions: LIST)" judged from facts
(doctor/pip_versions.py, compat_matrix/pythons.yaml): real pastes named python-unsupported with the facts that show
it, and look-alikes (a platform without wheels, an index that did not answer, an index without the build, a release
that does not exist, a package the matrix does not know, a healthy install) never named it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence
from vresolve.matrix import load_matrix
from vresolve.matrix.pythons import known_release, wheel_pythons

from .conftest import DATA, ROOT, doctor_paste

HELDOUT = DATA / "heldout"  # development material now (all below 800): pip pastes of issue 25's measurements
CORPUS = DATA / "corpus"


def _paste(directory: Path, number: str) -> Path:
    return next(directory.glob(f"{number}-*.txt"))


def _causes(answer: dict[str, Any]) -> list[str]:
    return [f["cause"] for f in answer["findings"]]


# ---------------------------------------------------------------------------------------------------------------
# real pastes: the cause, and the facts the finding says
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("number", "says"), [
    ("405", "torch==2.5.1 ships wheels for Python 3.9-3.13 (the matrix); this Python is 3.14.4"),  # cu118, 3.14
    ("406", "today torch has wheels for Python 3.10 on Linux x86_64 from 1.11.0 on"),  # none, Jan 2022
    ("521", "today torch has wheels for Python 3.11 from 1.13.0 on"),
    ("522", "today torch has wheels for Python 3.12 from 2.2.0 on"),  # python:3.12-slim image
    ("523", "the interpreter is likely Python 3.11"),  # 1.12.0 older than every version offered, Python not read
    ("611", "torch 1.13.1 ships wheels for Python 3.7-3.10 on Windows (the matrix); this Python is 3.11"),
    ("612", "torch 2.5.1 ships wheels for Python 3.9-3.12 on Windows (the matrix); this Python is 3.13"),
    ("707", "No tensorflow release the matrix knows ships wheels for Python 3.13"),
    ("708", "the interpreter is likely Python 3.8"),  # inferred from the releases offered (2.2.0-2.13.1)
])
def test_heldout_development_pastes_are_python_unsupported(number: str, says: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, answer = doctor_paste(_paste(HELDOUT, number), capsys)
    assert code == 1 and _causes(answer) == ["python-unsupported"], answer
    finding = answer["findings"][0]
    assert says in finding["explanation"]
    assert any("satisfies the requirement" in line or "No matching distribution" in line for line in finding["evidence"])
    assert "{" not in finding["title"] + finding["explanation"] + finding["fix"]  # every placeholder filled


def test_a_fact_of_the_matrix_and_what_today_supports_are_said_apart(
        capsys: pytest.CaptureFixture[str]) -> None:
    """405: the pinned release's Pythons exclude the one shown (an error); 406: "none" for a Python today's releases
    support (the index of the day, a 32-bit Python...: said as what it is; a failed install is an error)."""
    assert doctor_paste(_paste(HELDOUT, "405"), capsys)[1]["findings"][0]["severity"] == "error"
    finding = doctor_paste(_paste(HELDOUT, "406"), capsys)[1]["findings"][0]
    assert finding["severity"] == "error" and "A 32-bit Python" in finding["explanation"]
    assert "the paste predates those releases" in finding["explanation"]


def test_the_fix_names_the_release_and_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    fix = doctor_paste(_paste(HELDOUT, "612"), capsys)[1]["findings"][0]["fix"]
    assert fix.startswith("Install torch 2.6.0 or later, or use Python 3.12 (supported: 3.9-3.12).")


def test_a_32_bit_interpreter_gets_no_wheel(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/pytorch#41005 (corpus 807): C:\\Python\\Python37-32 -- the maintainer: use a 64-bit Python."""
    code, answer = doctor_paste(_paste(CORPUS, "807"), capsys)
    assert code == 1 and _causes(answer) == ["python-unsupported"]
    assert "32-bit interpreter" in answer["findings"][0]["explanation"]
    assert any("Python37-32" in line for line in answer["findings"][0]["evidence"])


# ---------------------------------------------------------------------------------------------------------------
# look-alikes: never python-unsupported
# ---------------------------------------------------------------------------------------------------------------

def test_a_platform_without_wheels_is_not_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    """Held-out 524 (labelled unclear): a macOS Framework Python 3.11 offered torch up to 2.2.2 -- 2.6.0 has 3.11
    wheels, but none for Intel Macs: cause not named, and the platform said."""
    code, answer = doctor_paste(_paste(HELDOUT, "524"), capsys)
    assert code == 1 and not answer["findings"]
    assert "none for macOS x86_64 (Intel)" in answer["unclear"][0]["missing"]


@pytest.mark.parametrize("number", ["805", "809", "810", "811", "812", "813", "818"])
def test_corpus_look_alikes_stay_unclear(number: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An index that did not answer (805), an index of a CUDA variant no torch is built for (809), Intel Macs past
    their last release (810-813), a release that never existed (818)."""
    code, answer = doctor_paste(_paste(CORPUS, number), capsys)
    assert code == 1 and "python-unsupported" not in _causes(answer) and answer["unclear"]


def test_an_index_that_did_not_answer_says_nothing_of_the_interpreter(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """405's lines (Python 3.14, "from versions: none", which alone name it) after pip's retries through a proxy."""
    text = _paste(HELDOUT, "405").read_text().replace(
        "Looking in indexes: https://<index>/whl/cu118\n",
        "Looking in indexes: https://<index>/whl/cu118\nWARNING: Retrying (Retry(total=4, connect=None, read=None, "
        "redirect=None, status=None)) after connection broken by 'ProxyError('Cannot connect to proxy.')': "
        "/whl/cu118/torch/\n")
    log = tmp_path / "proxy.txt"
    log.write_text(text)
    code, answer = doctor_paste(log, capsys)
    assert code == 1 and not answer["findings"]
    assert "it did not answer" in answer["unclear"][0]["missing"]


def test_an_index_without_the_build_is_not_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    """Corpus 809 (visualbruno/ComfyUI-Trellis2#131): the cu131 index -- no torch is built for CUDA 13.1."""
    answer = doctor_paste(_paste(CORPUS, "809"), capsys)[1]
    assert "cu131, which no torch release the matrix knows is built for" in answer["unclear"][0]["missing"]


def test_a_version_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torch==2.7.3 while pip lists 2.7.0, 2.7.1 and later: a typo, not the interpreter."""
    log = tmp_path / "typo.txt"
    log.write_text("ERROR: Could not find a version that satisfies the requirement torch==2.7.3 (from versions: "
                   "2.7.0, 2.7.1, 2.8.0, 2.9.0)\nERROR: No matching distribution found for torch==2.7.3\n")
    code, answer = doctor_paste(log, capsys)
    assert code == 1 and not answer["findings"]
    assert "no torch release the matrix knows matches ==2.7.3" in answer["unclear"][0]["missing"]


def test_a_package_the_matrix_does_not_know(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pin newer than everything offered, for a package whose releases the matrix does not know."""
    log = tmp_path / "other.txt"
    log.write_text("Python 3.12.3\nERROR: Could not find a version that satisfies the requirement numpy==9.9.9 "
                   "(from versions: 1.26.0, 1.26.4, 2.0.0)\nERROR: No matching distribution found for numpy==9.9.9\n")
    code, answer = doctor_paste(log, capsys)
    assert code == 1 and not answer["findings"] and answer["unclear"]


@pytest.mark.parametrize(("pin", "offered", "named"), [
    ("onnxruntime-gpu==1.16.3", "1.17.0, 1.17.1, 1.18.0, 1.20.1", True),  # heldout 775: older than every one offered
    ("onnxruntime-gpu==1.17.5", "1.17.0, 1.17.1, 1.18.0, 1.20.1", False),  # inside the range: a typo, not the Python
    ("onnxruntime-gpu>=1.16", "1.17.0, 1.18.0", False),  # not an exact release
    ("onnxruntime-gpu==1.16.3", "none", False),  # nothing offered: the index or the platform, not settled here
])
def test_a_pin_older_than_every_release_offered(pin: str, offered: str, named: bool, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Any package: an exact release older than every release pip offers this interpreter predates it (the
    ``pip-pin-older-than-every-offered`` row); a pin inside the range, a range, or nothing offered is not that."""
    log = tmp_path / "pin.txt"
    log.write_text(f"ERROR: Could not find a version that satisfies the requirement {pin} (from versions: {offered})\n"
                   f"ERROR: No matching distribution found for {pin}\n")
    code, answer = doctor_paste(log, capsys)
    assert ("python-unsupported" in _causes(answer)) is named and code == 1


def test_a_healthy_install_log_is_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ok.txt"
    log.write_text("Python 3.12.3\nLooking in indexes: https://<index>/whl/cu124\nCollecting torch==2.5.1\n"
                   "  Downloading torch-2.5.1+cu124-cp312-cp312-linux_x86_64.whl (908.3 MB)\n"
                   "Successfully installed torch-2.5.1+cu124\n")
    code, answer = doctor_paste(log, capsys)
    assert code == 0 and not answer["findings"] and not answer.get("unclear")


# ---------------------------------------------------------------------------------------------------------------
# the same judgement with a live environment, and in human words
# ---------------------------------------------------------------------------------------------------------------

def test_with_a_live_environment_too(tmp_path: Path) -> None:
    """``doctor --log FILE`` (this process's environment probed, a machine without a GPU): the paste's cause is
    named as with ``--no-env``, in human words and in JSON."""
    env = {**os.environ, "PATH": "/usr/bin:/bin", "VRESOLVE_NO_NVML": "1", "VRESOLVE_PLAN_CACHE": "0",
           "VRESOLVE_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    log = str(_paste(HELDOUT, "611"))
    human = subprocess.run([sys.executable, "-m", "vresolve", "doctor", "--log", log], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    assert human.returncode == 1, human.stderr
    assert "[python-unsupported]" in human.stdout and "this Python is 3.11" in human.stdout
    out = subprocess.run([sys.executable, "-m", "vresolve", "doctor", "--log", log, "--json"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    answer = json.loads(out.stdout)
    assert out.returncode == 1 and answer["schema"] == "vresolve.doctor/1"
    assert "python-unsupported" in _causes(answer)


def test_human_output_without_an_environment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--no-env", "--log", str(_paste(HELDOUT, "708"))]) == 1
    out = capsys.readouterr().out
    assert "pip offers no tensorflow wheel for this interpreter" in out and "likely Python 3.8" in out


# ---------------------------------------------------------------------------------------------------------------
# the facts: the matrix's Python lists, and what the reader takes from a paste
# ---------------------------------------------------------------------------------------------------------------

def test_python_lists_per_platform() -> None:
    m = load_matrix()
    assert Version("3.13") in wheel_pythons(m, "torch", "2.5.1", "linux-x86_64")[0]  # torch.yaml's list
    assert Version("3.13") not in wheel_pythons(m, "torch", "2.5.1", "windows-x86_64")[0]  # pythons.yaml's row
    assert wheel_pythons(m, "torch", "2.6.0", "macos-x86_64")[0] == ()  # no Intel Mac wheels after 2.2
    assert Version("3.7") in wheel_pythons(m, "torch", "2.2.2", "macos-x86_64")[0] or \
        Version("3.8") in wheel_pythons(m, "torch", "2.2.2", "macos-x86_64")[0]
    assert wheel_pythons(m, "torch", "1.13.1", "windows-x86_64")[0][-1] == Version("3.10")
    assert wheel_pythons(m, "torch", "1.13.1", "linux-x86_64")[0][-1] == Version("3.11")  # 1.13's beta 3.11
    assert wheel_pythons(m, "tensorflow", "2.13.1", "linux-x86_64")[0] == tuple(map(Version, ("3.8", "3.9", "3.10",
                                                                                               "3.11")))
    assert wheel_pythons(m, "tensorflow", "2.13.1", "windows-x86_64") is None  # not known: never a default
    assert known_release(m, "torch", Version("1.13.1")) and known_release(m, "torch", Version("2.5.1+cu124"))
    assert not known_release(m, "torch", Version("2.7.3")) and not known_release(m, "tensorflow", Version("2.13.1"))


def test_what_the_reader_takes_from_a_pip_paste() -> None:
    e = read_evidence(
        "C:\\Python\\Python37-32\\Scripts>pip install torch\n"
        "Looking in indexes: https://<index>/simple, https://<index>/whl/cu124\n"
        "ERROR: Could not find a version that satisfies the requirement torch==2.5.1 (from versions: none)\n"
        "could not find a version that satisfies the requirement tensorflow==1.2 (from versions: 1.13.1, 2.0.0)\n"
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] ...'))': /simple/torch/\n")
    events = {(ev.value.action, ev.value.name, ev.value.offered) for ev in e.installer}
    assert ("no-matching-distribution", "torch", ()) in events
    assert ("no-matching-distribution", "tensorflow", ("1.13.1", "2.0.0")) in events
    assert {ev.value.detail for ev in e.installer if ev.value.action == "index"} == {
        "https://<index>/simple", "https://<index>/whl/cu124"}
    assert any(ev.value.action == "index-unreachable" for ev in e.installer)
    assert e.value("python_bits") == 32 and e.value("python") == "3.7" and e.value("system") == "windows"


@pytest.mark.parametrize(("line", "python", "system"), [
    ('  File "C:\\Python313\\Lib\\subprocess.py", line 419, in check_call', "3.13", "windows"),
    ("/Library/Frameworks/Python.framework/Versions/3.11/bin/pip", "3.11", "darwin"),
    ("I tested torch 2.1.1 with Docker image python:3.12-slim", "3.12", None),
    ("Python Version: (Python 3.13.0)", "3.13.0", None),
    ("Python 3.11.1 , even with nightly version of PyTorch: ERROR: No matching distribution found for torch", "3.11.1",
     None),
])
def test_the_python_and_platform_from_paths_images_and_words(line: str, python: str, system: str | None) -> None:
    e = read_evidence(line + "\n")
    assert e.value("python") == python and e.value("system") == system



# ---------------------------------------------------------------------------------------------------------------
# pythons.yaml's format: matrix validate refuses what doctor could not read
# ---------------------------------------------------------------------------------------------------------------

_BAD_PYTHONS = """\
packages:
  - name: torch
    wheels_only: true
    source: x
    verified: secondary
    releases:
      - releases: ["1.13.1"]
        python: {all: ["3.10", "3.9"], solaris: ["3.9"], linux-x86_64: ["3.9.1"]}
        source: x
        verified: primary
      - releases: ["not a version"]
        python: {}
        source: x
        verified: believed
  - name: Torch
    wheels_only: yes please
    source: x
    verified: primary
    releases: []
"""


def test_validate_refuses_a_bad_pythons_table(tiny_copy: Any) -> None:
    from vresolve.errors import MatrixError

    path = tiny_copy({"pythons.yaml": _BAD_PYTHONS})
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    said = "\n".join(str(p) for p in info.value.problems)
    for expected in ("expected ascending Python versions", "unknown platform", "Python version (MAJOR.MINOR)",
                     "invalid release or specifier", "expected at least one platform", "verified",
                     "package listed twice", "wheels_only"):
        assert expected in said, said


def test_a_matrix_without_pythons_yaml_still_judges_torch_from_torch_yaml(tiny_copy: Any) -> None:
    """pythons.yaml is optional: torch.yaml's `python` lists still answer for the releases it holds."""
    m = load_matrix(tiny_copy())
    assert m.pythons == ()
    release = m.torch[0]
    found = wheel_pythons(m, "torch", release.version, "windows-x86_64")
    assert found is not None and found[0] == tuple(Version(f"{p.major}.{p.minor}") for p in release.python)


def test_a_list_of_versions_wrapped_over_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow/tensorflow#61873 (corpus 819): the reporter's paste wraps pip's list over three lines; read whole,
    it shares only Python 3.7, which TensorFlow 2.12 has no wheel for."""
    e = read_evidence(_paste(CORPUS, "819").read_text())
    offered = next(ev.value.offered for ev in e.installer if ev.value.offered)
    assert offered[0] == "1.13.1" and offered[-1] == "2.11.0" and "2.2.0" in offered and "2.7.2" in offered
    code, answer = doctor_paste(_paste(CORPUS, "819"), capsys)
    assert code == 1 and _causes(answer) == ["python-unsupported"]
    assert "every release offered has wheels for Python 3.7 only" in answer["findings"][0]["explanation"]
