"""matrix refresh --apply of a release the curated files have not seen, against a loopback index serving real
wheel zips: the row it writes (unverified, with what it carried), validate's list of rows awaiting review, and the
resolver's use of such a row (second, with a warning)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from vresolve._atomic import write_atomic
from vresolve.cli import main
from vresolve.matrix import dump_yaml, load_matrix, matrix_to_dicts

from .conftest import DATA, SHIPPED
from .test_index import _Server, make_wheel
from .test_refresh import replay_server

RECORDED = DATA / "index"


def _add_release(s: _Server, package: str, old: str, new: str, *, replace: dict[str, str] | None = None) -> list[str]:
    """Serve ``package`` ``new``: a copy of ``old``'s wheels (real zips) whose METADATA says ``new`` (and
    ``replace``'s substitutions); the file names served."""
    metadata = json.load(gzip.open(RECORDED / "metadata.json.gz", "rt"))
    members = json.load(gzip.open(RECORDED / "members.json.gz", "rt"))
    page_path = f"/simple/{package}/"
    ctype, body = s.pages[page_path]
    doc = json.loads(body)
    added = []
    for f in [f for f in doc["files"] if f["filename"].startswith(f"{package}-{old}-")]:
        name = f["filename"].replace(f"-{old}-", f"-{new}-")
        url = f"../../packages/new/{name}"
        if f["filename"] not in metadata:  # listed only: refresh reads one wheel per platform of torch
            doc["files"].append({**f, "filename": name, "url": url})
            continue
        text = metadata[f["filename"]].replace(f"\nVersion: {old}\n", f"\nVersion: {new}\n")
        for a, b in (replace or {}).items():
            text = text.replace(a, b)
        mem = [m.replace(f"{package}-{old}.dist-info", f"{package}-{new}.dist-info")
               for m in members.get(f["filename"]) or []] or None
        data = make_wheel(text, package, new, padding=2000, members=mem)
        s.files["/" + url.lstrip("./")] = data
        doc["files"].append({**f, "filename": name, "url": url, "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                             "size": len(data)})
        added.append(name)
    s.pages[page_path] = (ctype, json.dumps(doc).encode())
    assert added
    return added


@pytest.fixture
def index() -> Iterator[_Server]:
    s = replay_server()
    yield s
    s.close()


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    root = tmp_path / "matrix"
    shutil.copytree(SHIPPED, root)
    return root


def _refresh(index: _Server, matrix: Path, package: str, *more: str) -> int:
    return main(["matrix", "refresh", "--matrix", str(matrix), "--index-url", index.url + "/simple/",
                 "--package", package, "--quiet", *more])


def _row(matrix: Path, file: str, version: str) -> dict:
    doc = yaml.safe_load((matrix / file).read_text())
    return next(r for r in doc["releases"] if r["version"] == version)


def test_an_unseen_vllm_release_gets_an_unverified_row_that_names_what_it_carries(
        index: _Server, matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    served = _add_release(index, "vllm", "0.33.0", "0.34.0")  # its METADATA pins torch==2.14.0, like 0.33.0's
    before = (matrix / "vllm.yaml").read_text()
    assert _refresh(index, matrix, "vllm") == 0  # without --apply: a diff of both files, nothing written
    out = capsys.readouterr().out
    assert "+++ b/wheels/vllm.yaml" in out and "+++ b/vllm.yaml" in out and '+  - version: "0.34.0"' not in before
    assert (matrix / "vllm.yaml").read_text() == before

    assert _refresh(index, matrix, "vllm", "--apply") == 0
    wheels = yaml.safe_load((matrix / "wheels" / "vllm.yaml").read_text())
    rel = next(r for r in wheels["releases"] if r["version"] == "0.34.0")
    assert sorted(w["filename"] for w in rel["wheels"]) == sorted(served)
    assert all(w["requires"]["torch"] == "==2.14.0" and w["requires_python"] == "<3.15,>=3.11" for w in rel["wheels"])
    assert all("vllm._C_stable_libtorch" in w["extensions"] for w in rel["wheels"])

    text = (matrix / "vllm.yaml").read_text()
    assert text.startswith(before.rstrip("\n")) and "0.34.0" not in before  # appended; every other line as it was
    row = _row(matrix, "vllm.yaml", "0.34.0")
    prev = _row(matrix, "vllm.yaml", "0.33.0")
    assert row["verified"] == "unverified"
    # vLLM's METADATA names no CUDA runtime: its CUDA is carried too, and named as carried
    assert row["carried_from"] == {"version": "0.33.0", "fields": ["cuda", "kernels", "build", "variants"]}
    assert row["cuda"] == prev["cuda"] and row["kernels"] == prev["kernels"]
    assert row["build"]["verified"] == "unverified" and row["build"]["cuda_archs"] == prev["build"]["cuda_archs"]
    # the aarch64 PyPI build is carried (unverified); the CPU build, whose torch pins are per release, is not
    assert [(v["variant"], v["where"], v["verified"]) for v in row["variants"]] == [("cu130", "pypi", "unverified")]
    assert row["source"] == sorted(f"{f}:vllm-0.34.0.dist-info/METADATA" for f in served)
    assert "carried from 0.33.0" in row["note"] and not row["note"].endswith(".")

    m = load_matrix(matrix, cache=False)
    r = next(r for r in m.vllm if str(r.version) == "0.34.0")
    assert not r.provenance.trusted and str(r.carried_from) == "0.33.0" and r.carried == (
        "cuda", "kernels", "build", "variants")
    assert {w.filename for w in r.wheels} == set(served)
    # the writer gives the field back: load(dump(load(x))) == load(x)
    out = matrix.parent / "dumped"
    for name, doc in matrix_to_dicts(m).items():
        write_atomic(out / name, dump_yaml(doc))
    assert load_matrix(out, cache=False).vllm == m.vllm

    # validate passes and lists the row awaiting review; --json too
    capsys.readouterr()
    assert main(["matrix", "validate", "--matrix", str(matrix)]) == 0
    out = capsys.readouterr().out
    assert "1 release row awaiting review" in out
    assert "  vllm.yaml 0.34.0: cuda, kernels, build, variants carried from 0.33.0\n" in out
    assert main(["matrix", "validate", "--matrix", str(matrix), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True
    assert [(x["file"], x["version"], x["carried_from"], x["carried"]) for x in report["awaiting_review"]] == [
        ("vllm.yaml", "0.34.0", "0.33.0", ["cuda", "kernels", "build", "variants"])]
    assert main(["matrix", "validate", "--matrix", str(matrix), "--quiet"]) == 0
    assert capsys.readouterr().out == ""

    # a second refresh changes nothing: the row is there now
    assert _refresh(index, matrix, "vllm", "--json") == 0
    assert json.loads(capsys.readouterr().out)["changes"] == {}


def test_the_shipped_matrix_has_no_row_awaiting_review(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "validate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["awaiting_review"] == []


def _plan(matrix: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["plan", "--matrix", str(matrix), "--gpu", "H100", "--driver", "580.95.05", "--python", "3.12",
                 "--glibc", "2.35", "--json", *more])
    return code, json.loads(capsys.readouterr().out)


def test_the_resolver_uses_the_unverified_release_only_when_nothing_verified_fits(
        index: _Server, matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _add_release(index, "vllm", "0.33.0", "0.34.0")
    assert _refresh(index, matrix, "vllm", "--apply") == 0
    # newer, and it would run here, but unverified: the cautious first pass finds the verified 0.33.0, and takes it
    code, plan = _plan(matrix, capsys)
    assert code == 0 and plan["stack"]["vllm"] == "0.33.0"
    assert not [w for w in plan["warnings"] if "unverified" in w]
    # nothing verified fits ==0.34.0: the second pass takes the unverified row, and the plan says so
    code, plan = _plan(matrix, capsys, "--vllm", "==0.34.0")
    assert code == 0 and plan["stack"]["vllm"] == "0.34.0" and plan["stack"]["torch"] == "2.14.0"
    warned = [w for w in plan["warnings"] if "unverified" in w]
    assert warned and "vLLM 0.34.0" in warned[0] and "carried from 0.33.0" in warned[0]
    # the same request on the shipped matrix has no such release at all
    code, _ = _plan(SHIPPED, capsys, "--vllm", "==0.34.0")
    assert code == 1


def test_a_refresh_whose_new_row_would_not_validate_writes_nothing(
        index: _Server, matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """all or none, the new row included: a torch pin that torch.yaml does not know is refused as before"""
    _add_release(index, "vllm", "0.33.0", "0.34.0", replace={"Requires-Dist: torch==2.14.0": "Requires-Dist: torch==2.99.0"})
    before = {p.relative_to(matrix): p.read_bytes() for p in matrix.rglob("*") if p.is_file()}
    assert _refresh(index, matrix, "vllm", "--apply") == 1
    assert "torch 2.99.0 is not in torch.yaml's releases" in capsys.readouterr().err
    assert {p.relative_to(matrix): p.read_bytes() for p in matrix.rglob("*") if p.is_file()} == before


def test_an_unseen_vllm_release_between_two_rows_goes_between_them(index: _Server, matrix: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _add_release(index, "vllm", "0.32.0", "0.32.5")
    assert main(["matrix", "refresh", "--matrix", str(matrix), "--index-url", index.url + "/simple/",
                 "--package", "vllm", "--apply"]) == 0
    err = capsys.readouterr().err
    assert "vllm.yaml: new release rows marked unverified" in err and "2 file(s) changed, written" in err
    versions = [r["version"] for r in yaml.safe_load((matrix / "vllm.yaml").read_text())["releases"]]
    assert versions[-3:] == ["0.32.0", "0.32.5", "0.33.0"]
    assert _row(matrix, "vllm.yaml", "0.32.5")["carried_from"]["version"] == "0.32.0"
    assert main(["matrix", "validate", "--matrix", str(matrix), "--quiet"]) == 0


def test_a_vllm_wheel_that_names_its_cuda_runtime_gives_the_row_its_cuda(index: _Server, matrix: Path) -> None:
    _add_release(index, "vllm", "0.33.0", "0.34.0",
                 replace={"Requires-Dist: torch==2.14.0": "Requires-Dist: torch==2.14.0\n"
                                                          "Requires-Dist: nvidia-cuda-runtime==13.0.96"})
    assert _refresh(index, matrix, "vllm", "--apply") == 0
    row = _row(matrix, "vllm.yaml", "0.34.0")
    assert row["cuda"] == "13.0" and "cuda" not in row["carried_from"]["fields"]
    wheels = yaml.safe_load((matrix / "wheels" / "vllm.yaml").read_text())
    assert {w.get("cuda") for r in wheels["releases"] if r["version"] == "0.34.0" for w in r["wheels"]} == {"13.0"}


def test_an_unseen_torch_release_gets_an_unverified_row(index: _Server, matrix: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # triton pinned exactly (2.15.0's wheels ask ~=3.9.0, which names no one release)
    _add_release(index, "torch", "2.15.0", "2.16.0", replace={"triton~=3.9.0": "triton==3.9.1"})
    assert _refresh(index, matrix, "torch", "--apply") == 0
    row = _row(matrix, "torch.yaml", "2.16.0")
    prev = _row(matrix, "torch.yaml", "2.15.0")
    assert row["verified"] == "unverified" and row["carried_from"] == {"version": "2.15.0", "fields": ["variants"]}
    assert row["python"] == prev["python"]  # the wheels' CPython tags
    assert [v["variant"] for v in row["variants"]] == [v["variant"] for v in prev["variants"]]
    assert all(v["verified"] == "unverified" for v in row["variants"])
    # PyPI's default per platform: the variant whose CUDA the wheel's METADATA requires (the same as 2.15.0's here)
    assert {v["variant"]: v.get("pypi_default") for v in row["variants"] if v.get("pypi_default")} == {
        v["variant"]: v.get("pypi_default") for v in prev["variants"] if v.get("pypi_default")}
    assert row["companions"] == {"triton": "3.9.1"}  # torch's own pin; no torchvision/torchaudio wheel pins 2.16.0
    capsys.readouterr()
    assert main(["matrix", "validate", "--matrix", str(matrix), "--json"]) == 0
    review = json.loads(capsys.readouterr().out)["awaiting_review"]
    assert [(x["file"], x["version"], x["carried"]) for x in review] == [("torch.yaml", "2.16.0", ["variants"])]


def test_validate_refuses_carried_facts_in_a_verified_row_or_from_an_unknown_release(matrix: Path,
                                                                                    capsys: pytest.CaptureFixture[str]
                                                                                    ) -> None:
    f = matrix / "vllm.yaml"
    text = f.read_text()
    anchor = '  - version: "0.33.0"\n'
    assert anchor in text
    f.write_text(text.replace(anchor, anchor + '    carried_from: {version: "0.40.0", fields: [kernels, wheels]}\n'))
    assert main(["matrix", "validate", "--matrix", str(matrix)]) == 2
    err = capsys.readouterr().err
    assert "carried_from: a row with carried facts is verified: unverified (it is primary)" in err
    assert "carried_from.fields[1]: unknown field 'wheels'" in err
    assert "carried_from.version: 0.40.0 is not an older release of vllm.yaml" in err
