"""The likely cause of an error no cause's facts settle (issue 25, stop 36): an observed base rate, said as one.

Where a paste shows a failure whose cause its facts do not settle, its "cause not named" entry (exit 1) also says which
cause its kind of line most often had in the labelled excerpts of public threads (``compat_matrix/likely_causes.yaml``,
counted by ``bench/likely_causes.py`` from tests/data/corpus and tests/data/heldout): a lead, never a finding, never
without a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from vresolve.cli import main
from vresolve.doctor.evidence import read_evidence
from vresolve.doctor.likely import features

from .conftest import DATA, ROOT, doctor_paste, doctor_text

HELDOUT = DATA / "heldout"
CORPUS = DATA / "corpus"


def test_the_table_is_what_the_labels_give() -> None:
    # regenerated from every labelled excerpt: an excerpt added or relabelled, or a feature read otherwise, shows here
    proc = subprocess.run([sys.executable, "bench/likely_causes.py", "check"], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def _lead(doc: dict) -> dict | None:
    return doc["unclear"][0].get("likely") if doc["unclear"] else None


def test_pip_finding_no_version_at_all_is_most_often_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    # github.com/cupy/cupy/issues/1719: "Could not find a version that satisfies the requirement cupy-cuda92 (from
    # versions: )" on Windows with Python 3.7, no Python or platform in the error: not settled, most often the Python
    paste = next(HELDOUT.glob("382-*.txt"))
    code, doc = doctor_paste(paste, capsys)
    assert code == 1 and doc["findings"] == [], "a lead is no finding"
    lead = _lead(doc)
    assert lead is not None and lead["cause"] == "python-unsupported" and lead["were"] <= lead["of"]
    assert "from versions: none" in lead["lines"]
    assert any("cupy-cuda92" in line for line in lead["evidence"])
    assert main(["doctor", "--no-env", "--log", str(paste)]) == 1
    said = capsys.readouterr().out
    assert "error, cause not named: No matching distribution found for cupy-cuda92" in said
    assert "most often, in labelled public reports showing pip's" in said and "not settled by this paste" in said


def test_the_features_tell_pips_empty_list_from_a_list_of_others() -> None:
    none = read_evidence("ERROR: Could not find a version that satisfies the requirement foo==1.0 (from versions: "
                         "none)\nERROR: No matching distribution found for foo==1.0\n")
    others = read_evidence("ERROR: Could not find a version that satisfies the requirement torch==2.4 (from versions: "
                           "2.2.1, 2.2.2)\nERROR: No matching distribution found for torch==2.4\n")
    assert "pip:no-matching-distribution:none" in features(none)
    assert "pip:no-matching-distribution:others" in features(others)
    assert not {f for f in features(none) if f.endswith(":others")}


def test_a_lead_only_beside_a_cause_not_named(capsys: pytest.CaptureFixture[str]) -> None:
    for paste in sorted(CORPUS.glob("*.txt"))[:60]:
        code, doc = doctor_paste(paste, capsys)
        assert all("likely" not in u for u in doc["unclear"][1:]), paste.name  # one lead, on the first entry
        assert "labelled public reports" not in json.dumps(doc["findings"]), paste.name


def test_no_likely_cause_without_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # NCCL's INFO lines say NCCL is in use, not that it failed: no failure, no base rate
    code, doc = doctor_text("NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\nNCCL version 2.21.5+cuda12.4\n",
                            tmp_path, capsys)
    assert code == 0 and not doc["unclear"]


def test_a_matrix_without_a_table_names_no_likely_cause(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--matrix", str(DATA / "matrix" / "tiny"), "doctor", "--no-env", "--json", "--log",
                 str(next(HELDOUT.glob("382-*.txt")))])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["unclear"] and _lead(doc) is None


def test_validate_refuses_a_table_naming_no_cause(tiny_copy: Callable[..., Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = ("pastes: 9\nlikely:\n- feature: 'sig:sigbus'\n  cause: not-a-cause\n  were: 5\n  of: 4\n  lower: 0.9\n  source: [x]\n  verified: observed\n")
    matrix = tiny_copy({"likely_causes.yaml": bad})
    assert main(["--matrix", str(matrix), "matrix", "validate"]) == 2
    said = capsys.readouterr().err
    assert "likely_causes.yaml: likely[0]: cause: 'not-a-cause' is not a cause code" in said
    assert "inconsistent counts (5 of 4" in said
