"""matrix refresh against recorded index answers on a loopback server, and against what real indexes do."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import yaml

from vresolve.cli import main
from vresolve.errors import PackageIndexError
from vresolve.index import IndexClient
from vresolve.refresh import generate, render_wheels_doc

from .conftest import DATA, SHIPPED
from .test_index import _Server, make_wheel

RECORDED = DATA / "index"


def replay_server() -> _Server:
    """The recorded answers for vllm and torch; each wheel a zip holding its recorded METADATA."""
    s = _Server()
    pages = json.load(gzip.open(RECORDED / "simple.json.gz", "rt"))
    metadata = json.load(gzip.open(RECORDED / "metadata.json.gz", "rt"))
    members = json.load(gzip.open(RECORDED / "members.json.gz", "rt"))
    for name, doc in pages.items():
        s.pages[f"/simple/{name}/"] = ("application/vnd.pypi.simple.v1+json", json.dumps(doc).encode())
        for f in doc["files"]:
            if f["filename"] in metadata:
                path = "/" + f["url"].lstrip("./")
                project, version = f["filename"].split("-")[:2]
                s.files[path] = make_wheel(metadata[f["filename"]], project, version, padding=2000,
                                           members=members.get(f["filename"]))
    return s


@pytest.fixture
def replay() -> _Server:
    s = replay_server()
    yield s
    s.close()


@pytest.mark.parametrize("package", ["vllm", "torch"])
def test_recorded_answers_reproduce_the_shipped_pins(replay: _Server, package: str, tmp_path: Path) -> None:
    client = IndexClient(replay.url + "/simple/", cache_dir=tmp_path / "cache")
    doc = generate(client, package, workers=8)
    shipped = yaml.safe_load((SHIPPED / "wheels" / f"{package}.yaml").read_text())
    assert doc == shipped
    assert render_wheels_doc(doc) == (SHIPPED / "wheels" / f"{package}.yaml").read_text()
    assert not [r for r in replay.requests if r.startswith("/pypi/")]  # no per-version JSON endpoints needed


def test_second_run_uses_the_cache_and_offline_needs_nothing(replay: _Server, tmp_path: Path) -> None:
    replay.etags = True
    cache = tmp_path / "cache"
    first = IndexClient(replay.url + "/simple/", cache_dir=cache)
    doc = generate(first, "torch")
    assert first.requests > 50
    second = IndexClient(replay.url + "/simple/", cache_dir=cache)
    assert generate(second, "torch") == doc
    assert second.requests == 1 and second.cache_hits == 57  # one revalidated listing (304), 56 METADATA
    replay.close()
    offline = IndexClient("http://127.0.0.1:9/simple/", cache_dir=cache, offline=True)
    with pytest.raises(PackageIndexError, match="not in the cache"):  # another URL: nothing cached for it
        generate(offline, "torch")
    offline = IndexClient(replay.url + "/simple/", cache_dir=cache, offline=True)
    assert generate(offline, "torch") == doc and offline.requests == 0


def test_redirect_and_relative_urls(replay: _Server, tmp_path: Path) -> None:
    page = replay.pages.pop("/simple/torch/")
    replay.pages["/mirror/simple/torch/"] = page
    replay.redirects["/simple/torch/"] = "/mirror/simple/torch/"
    # the same relative URLs now resolve against /mirror/simple/torch/: serve the files there too
    for path, data in list(replay.files.items()):
        replay.files["/mirror" + path] = data
    doc = generate(IndexClient(replay.url + "/simple/"), "torch")
    assert len(doc["releases"]) == 28
    assert any(r.startswith("/mirror/packages/") for r in replay.requests)


def test_timeouts_are_retried(replay: _Server) -> None:
    replay.delay["/simple/vllm/"] = [2.0]  # the first answer comes too late
    client = IndexClient(replay.url + "/simple/", timeout=0.5, retries=2)
    assert len(client.project_files("vllm")) == 164
    assert replay.requests.count("/simple/vllm/") == 2


@pytest.mark.parametrize("body", [b'{"files": [{"filename": "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86', b"not json",
                                  b'{"meta": {}}'])
def test_truncated_or_invalid_json(replay: _Server, body: bytes) -> None:
    replay.pages["/simple/vllm/"] = ("application/vnd.pypi.simple.v1+json", body)
    with pytest.raises(PackageIndexError, match=r"/simple/vllm/: malformed PEP 691 JSON answer"):
        IndexClient(replay.url + "/simple/", retries=0).project_files("vllm")


def test_apply_writes_nothing_when_a_package_fails(replay: _Server, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    matrix = tmp_path / "matrix"
    shutil.copytree(SHIPPED, matrix)
    before = {p: p.read_bytes() for p in (matrix / "wheels").iterdir()}
    # a trailing blank line makes vllm's file differ, so a refresh would rewrite it
    (matrix / "wheels" / "vllm.yaml").write_text((matrix / "wheels" / "vllm.yaml").read_text() + "\n")
    before["vllm"] = (matrix / "wheels" / "vllm.yaml").read_bytes()
    del replay.pages["/simple/torch/"]  # torch fails (404) after vllm succeeded
    code = main(["matrix", "refresh", "--matrix", str(matrix), "--index-url", replay.url + "/simple/",
                 "--package", "vllm", "--package", "torch", "--apply"])
    assert code == 1 and "HTTP 404" in capsys.readouterr().err
    assert (matrix / "wheels" / "vllm.yaml").read_bytes() == before["vllm"]  # not half-applied


def test_refresh_diff_and_apply(replay: _Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    matrix = tmp_path / "matrix"
    shutil.copytree(SHIPPED, matrix)
    f = matrix / "wheels" / "vllm.yaml"
    f.write_text(f.read_text().replace("torch: ==2.14.0", "torch: ==2.13.0", 1))
    argv = ["matrix", "refresh", "--matrix", str(matrix), "--index-url", replay.url + "/simple/", "--package", "vllm"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "-      torch: ==2.13.0\n+      torch: ==2.14.0\n" in out
    assert main([*argv, "--apply"]) == 0
    assert f.read_text() == (SHIPPED / "wheels" / "vllm.yaml").read_text()


@pytest.mark.network
@pytest.mark.skipif(os.environ.get("VRESOLVE_NETWORK_TESTS") != "1", reason="opt-in: VRESOLVE_NETWORK_TESTS=1")
def test_live_index_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["matrix", "refresh", "--json", "--package", "vllm", "--package", "torch"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["changes"] == {}, "the shipped wheels/*.yaml are current"


def test_torch_variants_from_a_pytorch_style_index() -> None:
    """PyTorch's index is PEP 503 HTML with relative hrefs and local version tags; one variant unreachable."""
    from vresolve.refresh import torch_index_variants

    s = _Server()
    for variant in ("cu128", "cu126"):
        wheels = {f"torch-2.9.0+{variant}-cp312-cp312-manylinux_2_28_x86_64.whl": b"x",
                  f"torch-2.8.0+{variant}-cp312-cp312-manylinux_2_28_x86_64.whl": b"x",
                  f"torch-2.9.0+{variant}-cp312-cp312-win_amd64.whl": b"x"}
        links = "".join(f'<a href="../../{fn}#sha256={"0" * 64}">{fn}</a><br/>' for fn in wheels)
        s.pages[f"/whl/{variant}/torch/"] = ("text/html", links.encode())
    try:
        found, problems = torch_index_variants(s.url + "/whl", ["cu128", "cu126", "cu999"],
                                               lambda u: IndexClient(u, retries=0))
    finally:
        s.close()
    assert found == {"2.9.0": {"cu128", "cu126"}, "2.8.0": {"cu128", "cu126"}}
    assert len(problems) == 1 and problems[0].startswith("cu999: ") and "HTTP 404" in problems[0]
