"""What a hostile or broken package index can send, against a real HTTP server on loopback.

Each test serves one attack (bad file names, a METADATA whose hash does not match, answers
without end, malformed zips and METADATA, a full or read-only disk during ``refresh --apply``)
and checks that vresolve ends it with one line and its documented exit code, writes nothing it
should not, and never uses what it could not check.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

import vresolve
from vresolve.cli import main
from vresolve.errors import PackageIndexError
from vresolve.index import IndexClient, Limits
from vresolve.refresh import generate

from .conftest import SHIPPED
from .test_index import ARM, VLLM_METADATA, X86, _Server, make_wheel
from .test_refresh import replay_server

Handler = Callable[[BaseHTTPRequestHandler], None]
MiB = 1024 * 1024


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def replay() -> Iterator[_Server]:
    s = replay_server()
    yield s
    s.close()


def one_line_error(excinfo: pytest.ExceptionInfo[PackageIndexError]) -> str:
    text = str(excinfo.value)
    assert "\n" not in text and text.isprintable(), text
    return text


def matrix_copy(tmp: Path) -> Path:
    dest = tmp / "matrix"
    shutil.copytree(SHIPPED, dest)
    return dest


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stream(status: int, headers: dict[str, str], parts: Iterator[bytes], pause: float = 0.0) -> Handler:
    """A handler that sends ``parts`` one by one (until the client hangs up)."""

    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        try:
            for part in parts:
                h.wfile.write(part)
                h.wfile.flush()
                if pause:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass

    return handle


def repeat(part: bytes, times: int, head: bytes = b"", tail: bytes = b"") -> Iterator[bytes]:
    yield head
    for _ in range(times):
        yield part
    yield tail


# ---------------------------------------------------------------------------------------- 1. listings


def corrupt_names(s: _Server, names: list[str], bad: bytes = b"\xff") -> None:
    """The listing of vllm, with ``bad`` (invalid UTF-8) inside each of ``names``."""
    ctype, body = s.pages["/simple/vllm/"]
    for fn in names:
        raw = fn.encode()
        body = body.replace(b'"filename": "' + raw, b'"filename": "' + raw.replace(b"vllm-", b"vllm" + bad + b"-"))
    s.pages["/simple/vllm/"] = (ctype, body)


def test_undecodable_file_names_are_skipped_and_reported(replay: _Server, caplog: pytest.LogCaptureFixture) -> None:
    corrupt_names(replay, [X86, ARM])
    client = IndexClient(replay.url + "/simple/")
    files = client.project_files("vllm")
    assert len(files) == 164 - 2 and X86 not in {f.filename for f in files}
    assert len(client.skipped) == 2 and all("its name is not valid text" in s for s in client.skipped)
    (record,) = [r for r in caplog.records if r.name == "vresolve.index"]
    assert "skipped 2 listed file(s)" in record.getMessage() and "\n" not in record.getMessage()


def test_apply_refuses_a_matrix_that_would_not_validate(replay: _Server, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: vLLM 0.33.0's two wheels listed under undecodable names drop the release."""
    corrupt_names(replay, [X86, ARM])
    matrix = matrix_copy(tmp_path)
    vllm = matrix / "wheels" / "vllm.yaml"
    vllm.write_text(vllm.read_text() + "\n")  # so that the file differs, and a refresh would rewrite it
    before = snapshot(matrix)
    code = main(["matrix", "refresh", "--matrix", str(matrix), "--index-url", replay.url + "/simple/",
                 "--package", "vllm", "--apply", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("\n") == 1 and "would not validate, so nothing was written" in err and "'0.33.0'" in err
    assert snapshot(matrix) == before
    assert main(["plan", "--gpu", "H100", "--driver", "580.95.05", "--matrix", str(matrix), "--json"]) == 0


def test_listed_files_that_cannot_be_used_are_skipped(server: _Server) -> None:
    wheel = make_wheel(VLLM_METADATA)
    digest = hashlib.sha256(wheel).hexdigest()
    server.files[f"/files/{X86}"] = wheel

    def entry(filename: str, url: str = f"../../files/{X86}", sha: str = digest) -> dict[str, object]:
        return {"filename": filename, "url": url, "hashes": {"sha256": sha}}

    entries = [entry(X86),
               entry(X86.replace("vllm-", "evil-")),  # another project's wheel in vllm's listing
               entry("vllm-0.33.0-" + "x" * 300 + "-cp38-abi3-manylinux_2_28_x86_64.whl"),
               entry(ARM, url="file:///etc/passwd"),
               entry(ARM.replace("aarch64", "ppc64le"), sha="zz"),
               entry("vllm-0.32.0.tar.gz\n"),  # a control character
               entry("vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl"),  # listed twice, with two hashes
               entry("vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl", sha="0" * 64)]
    server.pages["/simple/vllm/"] = ("application/vnd.pypi.simple.v1+json",
                                     json.dumps({"meta": {"api-version": "1.1"}, "files": entries}).encode())
    client = IndexClient(server.url + "/simple/")
    assert [f.filename for f in client.project_files("vllm")] == [X86]
    reasons = [s.partition(": ")[2].partition(": ")[2] for s in client.skipped]
    assert reasons == ["a wheel of 'evil', not of 'vllm'", "a file name of 348 characters (at most 255)",
                       "its URL is not an http(s) URL", "a malformed hash", "its name is not valid text",
                       "listed more than once", "listed more than once"]


def test_html_listing_with_undecodable_names(server: _Server) -> None:
    wheel = make_wheel(VLLM_METADATA)
    server.files[f"/files/{X86}"] = wheel
    bad = X86.encode().replace(b"vllm-", b"vllm\xfe-")
    server.pages["/simple/vllm/"] = ("text/html", b"<html><body>" + b"".join(
        b'<a href="../../files/' + fn + b'">' + fn + b"</a><br/>" for fn in (X86.encode(), bad)) + b"</body></html>")
    client = IndexClient(server.url + "/simple/")
    assert [f.filename for f in client.project_files("vllm")] == [X86]
    assert len(client.skipped) == 1 and "vllm\\udcfe-0.33.0" in client.skipped[0]


# ---------------------------------------------------------------------------------------- 2. PEP 658 hashes


TAMPERED = VLLM_METADATA.replace("torch==2.14.0", "torch==2.13.0")


def test_pep658_metadata_whose_hash_does_not_match_is_refused(server: _Server) -> None:
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)}, metadata={X86: VLLM_METADATA.encode()})
    server.files[f"/files/{X86}.metadata"] = TAMPERED.encode()  # the index announced the real one's hash
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError) as e:
        client.read_metadata(f)
    assert f"/files/{X86}.metadata: its sha256 is {hashlib.sha256(TAMPERED.encode()).hexdigest()}, but the index " \
           "announced" in one_line_error(e)
    with pytest.raises(PackageIndexError, match="but the index announced"):
        generate(IndexClient(server.url + "/simple/"), "vllm")


@pytest.mark.parametrize("attr", ["data-dist-info-metadata", "data-core-metadata"])
def test_pep658_hash_in_an_html_listing(server: _Server, attr: str) -> None:
    real = hashlib.sha256(VLLM_METADATA.encode()).hexdigest()
    server.files[f"/files/{X86}"] = make_wheel(VLLM_METADATA)
    server.files[f"/files/{X86}.metadata"] = TAMPERED.encode()
    server.pages["/simple/vllm/"] = ("text/html", f'<a href="../../files/{X86}" {attr}="sha256={real}">{X86}</a>'.encode())
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError, match="but the index announced"):
        client.read_metadata(f)
    server.files[f"/files/{X86}.metadata"] = VLLM_METADATA.encode()  # the real one is used
    assert IndexClient(server.url + "/simple/").read_metadata(f) == (VLLM_METADATA.encode(), "pep658")


# ---------------------------------------------------------------------------------------- 3. unbounded answers


def bomb_wheel(extra: int, *, lie: bool = False, compress_type: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A wheel whose METADATA is followed by ``extra`` zero bytes (a deflate bomb); with ``lie``, its
    central directory says the METADATA is as small as the real one."""
    buf = io.BytesIO()
    name = "vllm-0.33.0.dist-info/METADATA"
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("vllm/__init__.py", "")
        info = zipfile.ZipInfo(name)
        info.compress_type = compress_type
        with zf.open(info, "w") as w:
            w.write(VLLM_METADATA.encode())
            zeros = bytes(MiB)
            for _ in range(extra // MiB):
                w.write(zeros)
    data = bytearray(buf.getvalue())
    if lie:
        cd = data.rindex(b"PK\x01\x02")  # the METADATA's entry in the central directory: the last one
        assert data[cd + 46:cd + 46 + len(name)] == name.encode()
        data[cd + 24:cd + 28] = struct.pack("<I", len(VLLM_METADATA))  # its uncompressed size
    return bytes(data)


@pytest.mark.parametrize("lie", [False, True], ids=["honest-size", "lying-size"])
def test_deflate_bomb_in_the_wheel(server: _Server, lie: bool) -> None:
    server.add_project_json("vllm", {X86: bomb_wheel(200 * MiB, lie=lie)})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError) as e:
        client.read_metadata(f)
    msg = one_line_error(e)
    assert f"/files/{X86}: " in msg
    if lie:  # inflated only as far as the directory says, then the CRC does not match
        assert "not a readable wheel (zip): BadZipFile: Bad CRC-32" in msg
    else:
        assert f"vllm-0.33.0.dist-info/METADATA is {200 * MiB + len(VLLM_METADATA)} bytes uncompressed, " \
               "over the limit of 4 MiB" in msg


def test_metadata_member_compressed_another_way_is_refused(server: _Server) -> None:
    """bzip2 and lzma are inflated without an output bound by zipfile: a wheel's METADATA is deflated."""
    server.add_project_json("vllm", {X86: bomb_wheel(0, compress_type=zipfile.ZIP_BZIP2)})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError, match="is compressed with method 12"):
        client.read_metadata(f)


@pytest.mark.parametrize("declared", [False, True], ids=["streamed", "content-length"])
def test_huge_metadata_file(server: _Server, declared: bool) -> None:
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)}, metadata={X86: VLLM_METADATA.encode()})
    headers = {"Content-Length": str(300 * MiB + len(VLLM_METADATA))} if declared else {}
    server.custom[f"/files/{X86}.metadata"] = stream(200, headers, repeat(b"\n" * MiB, 300, VLLM_METADATA.encode()))
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError) as e:
        client.read_metadata(f)
    assert f"/files/{X86}.metadata: the answer is" in one_line_error(e) and "over the limit of 4 MiB" in str(e.value)


def test_huge_listing_page(server: _Server) -> None:
    head = b'{"meta": {"api-version": "1.1"}, "name": "vllm", "files": ['
    server.custom["/simple/vllm/"] = stream(200, {"Content-Type": "application/vnd.pypi.simple.v1+json"},
                                            repeat(b" " * MiB, 1536, head, b"]}"))
    with pytest.raises(PackageIndexError) as e:
        IndexClient(server.url + "/simple/").project_files("vllm")
    assert one_line_error(e) == f"{server.url}/simple/vllm/: the answer is over the limit of 64 MiB"


def test_compressed_listing_is_bounded_after_inflating(server: _Server) -> None:
    head = b'{"meta": {"api-version": "1.1"}, "name": "vllm", "files": ['
    body = gzip.compress(head + b" " * (100 * MiB) + b"]}", compresslevel=9)
    assert len(body) < 1 * MiB
    server.custom["/simple/vllm/"] = stream(200, {"Content-Type": "application/vnd.pypi.simple.v1+json",
                                                  "Content-Encoding": "gzip", "Content-Length": str(len(body))},
                                            iter([body]))
    with pytest.raises(PackageIndexError, match="the answer is over the limit of 64 MiB"):
        IndexClient(server.url + "/simple/").project_files("vllm")


def test_an_answer_that_drips_meets_the_deadline(server: _Server) -> None:
    page = json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm", "files": []}).encode()
    server.custom["/simple/vllm/"] = stream(200, {"Content-Type": "application/vnd.pypi.simple.v1+json",
                                                  "Content-Length": str(len(page))},
                                            (page[i:i + 1] for i in range(len(page))), pause=0.5)
    client = IndexClient(server.url + "/simple/", timeout=5, limits=Limits(deadline=1.5))
    with pytest.raises(PackageIndexError) as e:
        client.project_files("vllm")
    assert one_line_error(e) == f"{server.url}/simple/vllm/: no complete answer within 1.5 s (the limit for one request)"


def test_a_central_directory_too_large_to_read_is_never_asked_for(server: _Server) -> None:
    """A 3 GiB "wheel" whose end record points at a 2 GiB central directory."""
    total, size_cd = 3 * 1024 * MiB, 2 * 1024 * MiB
    eocd = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, size_cd, total - 22 - size_cd, 0)
    tail = bytes(64 * 1024 - len(eocd)) + eocd

    def handle(h: BaseHTTPRequestHandler) -> None:
        if h.headers.get("Range") == f"bytes=-{len(tail)}":
            stream(206, {"Content-Range": f"bytes {total - len(tail)}-{total - 1}/{total}",
                         "Content-Length": str(len(tail))}, iter([tail]))(h)
        else:
            stream(416, {"Content-Length": "0"}, iter([]))(h)

    server.add_project_json("vllm", {X86: b""})
    server.custom[f"/files/{X86}"] = handle
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    for read in (client.read_metadata, client.read_members):
        with pytest.raises(PackageIndexError) as e:
            read(f)
        assert "reading it needs more than 16 MiB of range requests (the limit for one wheel)" in one_line_error(e)
    assert server.ranges_asked == [f"bytes=-{len(tail)}"] * 2


def test_a_range_answer_longer_than_asked_is_refused(server: _Server) -> None:
    wheel = make_wheel(VLLM_METADATA)

    def handle(h: BaseHTTPRequestHandler) -> None:  # the whole file, whatever was asked, labelled as asked
        first, _, last = h.headers["Range"].removeprefix("bytes=").partition("-")
        start, end = (len(wheel) - int(last), len(wheel) - 1) if not first else (int(first), int(last))
        stream(206, {"Content-Range": f"bytes {start}-{end}/{len(wheel)}"}, iter([wheel]))(h)

    server.add_project_json("vllm", {X86: wheel})
    server.custom[f"/files/{X86}"] = handle
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError, match=r"the answer is over the limit of 65536 bytes"):
        client.read_metadata(f)


# ---------------------------------------------------------------------------------------- 4. malformed data


def test_garbage_instead_of_a_zip(server: _Server) -> None:
    server.add_project_json("vllm", {X86: os.urandom(200_000)})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    for read in (client.read_metadata, client.read_members):
        with pytest.raises(PackageIndexError) as e:
            read(f)
        assert "not a readable wheel (zip): BadZipFile: File is not a zip file" in one_line_error(e)


def test_garbage_central_directory(server: _Server) -> None:
    wheel = bytearray(make_wheel(VLLM_METADATA))
    eocd = wheel.rindex(b"PK\x05\x06")
    size_cd, offset_cd = struct.unpack("<II", wheel[eocd + 12:eocd + 20])
    wheel[offset_cd:offset_cd + size_cd] = os.urandom(size_cd)
    server.add_project_json("vllm", {X86: bytes(wheel)})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError) as e:
        client.read_metadata(f)
    assert "not a readable wheel (zip): BadZipFile" in one_line_error(e)


@pytest.mark.parametrize("content_range", ["bytes 0-65535/10", "bytes 0-99/65536", "bytes */65536", "bytes 1-0/2"])
def test_inconsistent_content_range(server: _Server, content_range: str) -> None:
    wheel = make_wheel(VLLM_METADATA)
    server.add_project_json("vllm", {X86: wheel})
    server.custom[f"/files/{X86}"] = stream(206, {"Content-Range": content_range, "Content-Length": "65536"},
                                            iter([wheel[-65536:]]))
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError) as e:
        client.read_metadata(f)
    assert "range answer" in one_line_error(e)


@pytest.mark.parametrize(("entry", "why"), [
    ({"filename": 123, "url": "../../files/x.whl"}, "files[0].filename: expected str, got int"),
    ({"filename": X86, "url": None}, "files[0].url: expected str, got null"),
    ({"filename": X86, "url": "x", "hashes": {"sha256": 1}}, "files[0].hashes: expected an object of strings"),
    ({"filename": X86, "url": "x", "core-metadata": "yes"},
     "files[0].core-metadata: expected a boolean or an object, got str"),
    ("vllm.whl", "files[0]: expected an object, got str"),
])
def test_json_listing_with_fields_of_the_wrong_type(server: _Server, entry: object, why: str) -> None:
    server.pages["/simple/vllm/"] = ("application/vnd.pypi.simple.v1+json", json.dumps({"files": [entry]}).encode())
    with pytest.raises(PackageIndexError) as e:
        generate(IndexClient(server.url + "/simple/"), "vllm")
    assert one_line_error(e) == f"{server.url}/simple/vllm/: malformed PEP 691 JSON answer ({why})"


def test_json_nested_too_deep(server: _Server) -> None:
    server.pages["/simple/vllm/"] = ("application/vnd.pypi.simple.v1+json", b'{"files": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    with pytest.raises(PackageIndexError, match="malformed PEP 691 JSON answer"):
        IndexClient(server.url + "/simple/").project_files("vllm")


@pytest.mark.parametrize(("metadata", "why"), [
    (VLLM_METADATA.replace("Requires-Dist: regex", "Requires-Dist: torch (=="), "'torch (==' is invalid for 'requires-dist'"),
    (VLLM_METADATA.replace("Requires-Python: <3.15,>=3.11", "Requires-Python: >=3.x"), "is invalid for 'requires-python'"),
    (VLLM_METADATA.replace("Name: vllm\n", ""), "'name' is a required field"),
    (VLLM_METADATA.replace("Version: 0.33.0", "Version: 0.1.0"),
     "is the METADATA of vllm 0.1.0, not of vllm 0.33.0"),
    (VLLM_METADATA.replace("Requires-Dist: regex", "Requires-Dist: regex\udcff"),
     "cannot read its requires-dist (not valid text)"),
])
def test_malformed_metadata(server: _Server, metadata: str, why: str) -> None:
    data = metadata.encode("utf-8", "surrogateescape")
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)}, metadata={X86: data})
    with pytest.raises(PackageIndexError) as e:
        generate(IndexClient(server.url + "/simple/"), "vllm")
    msg = one_line_error(e)
    assert msg.startswith(f"{server.url}/files/{X86}: its METADATA") and why in msg, msg


def test_a_cuda_runtime_pin_that_is_no_version(server: _Server) -> None:
    torch = "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    meta = ("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n"
            "Requires-Dist: nvidia-cuda-runtime-cu12===not-a-version\n")
    server.add_project_json("torch", {torch: make_wheel(meta, "torch", "2.9.0")}, metadata={torch: meta.encode()})
    with pytest.raises(PackageIndexError, match=r"its METADATA: Invalid version: 'not-a-version'"):
        generate(IndexClient(server.url + "/simple/"), "torch")


def test_markers_on_any_environment_name_are_evaluated(server: _Server) -> None:
    meta = VLLM_METADATA.replace("Requires-Dist: regex", 'Requires-Dist: regex; platform_release == "6.1"')
    server.add_project_json("vllm", {X86: make_wheel(meta)}, metadata={X86: meta.encode()})
    (release,) = generate(IndexClient(server.url + "/simple/"), "vllm")["releases"]
    assert release["wheels"][0]["requires"]["torch"] == "==2.14.0"


def test_refresh_reports_malformed_index_data_in_one_line(server: _Server, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    server.add_project_json("vllm", {X86: os.urandom(100_000)})
    matrix = matrix_copy(tmp_path)
    before = snapshot(matrix)
    code = main(["matrix", "refresh", "--matrix", str(matrix), "--index-url", server.url + "/simple/",
                 "--package", "vllm", "--apply", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and err.startswith("vresolve: error: ") and "BadZipFile" in err
    assert snapshot(matrix) == before


# ---------------------------------------------------------------------------------------- 5, 7. writing


_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from vresolve.cli import main
sys.exit(main(sys.argv[2:]))
"""


def refresh_in_subprocess(replay: _Server, matrix: Path, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(vresolve.__file__).parents[1]), "VRESOLVE_CACHE_DIR": ""}
    argv = ["matrix", "refresh", "--matrix", str(matrix), "--index-url", replay.url + "/simple/",
            "--package", "torch", "--package", "vllm", "--apply", "--quiet"]
    cmd = [sys.executable, "-c", _LIMITED, str(fsize), *argv] if fsize else [sys.executable, "-m", "vresolve", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)


def both_changed(matrix: Path) -> dict[str, bytes]:
    """torch's (23 KB) and vllm's (100 KB) files made to differ, so that a refresh rewrites both."""
    for name in ("torch", "vllm"):
        f = matrix / "wheels" / f"{name}.yaml"
        f.write_text(f.read_text() + "\n")
    return snapshot(matrix)


def test_apply_on_a_full_disk_writes_no_file(replay: _Server, tmp_path: Path) -> None:
    """A file size limit between the two files' sizes: torch's new file fits, vllm's does not."""
    matrix = matrix_copy(tmp_path)
    before = both_changed(matrix)
    done = refresh_in_subprocess(replay, matrix, fsize=60_000)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"vresolve: error: --matrix: cannot write '{matrix}/wheels/vllm.yaml' (File too large); " \
           "the matrix is unchanged" in done.stderr
    assert snapshot(matrix) == before  # torch's file is not replaced either, and no temporary file is left


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs of 2 MiB (needs root and a kernel that lets this process mount)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                                           capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_apply_on_a_full_tmpfs_writes_no_file(replay: _Server, small_fs: Path) -> None:
    matrix = matrix_copy(small_fs)
    before = both_changed(matrix)
    st = os.statvfs(small_fs)
    (small_fs / "filler").write_bytes(bytes(st.f_bavail * st.f_frsize - 60_000))  # 60 KB left: torch's fits
    done = refresh_in_subprocess(replay, matrix)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "(No space left on device); the matrix is unchanged" in done.stderr
    assert snapshot(matrix) == before


def test_apply_to_a_read_only_matrix(replay: _Server, small_fs: Path) -> None:
    matrix = matrix_copy(small_fs)
    before = both_changed(matrix)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    done = refresh_in_subprocess(replay, matrix)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "(Read-only file system); the matrix is unchanged" in done.stderr
    assert snapshot(matrix) == before


def test_apply_to_an_unwritable_matrix_directory(replay: _Server, tmp_path: Path) -> None:
    matrix = matrix_copy(tmp_path)
    before = both_changed(matrix)
    (matrix / "wheels").chmod(0o555)
    try:
        try:
            (matrix / "wheels" / "probe").touch()
        except PermissionError:
            pass
        else:
            pytest.skip("this process writes through permission bits (root): see the read-only tmpfs test")
        done = refresh_in_subprocess(replay, matrix)
    finally:
        (matrix / "wheels").chmod(0o755)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "(Permission denied)" in done.stderr
    assert snapshot(matrix) == before


def test_an_unwritable_cache_is_no_error(replay: _Server, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    client = IndexClient(replay.url + "/simple/", cache_dir=blocker / "index")
    doc = generate(client, "torch")
    assert len(doc["releases"]) == 28
    warnings = [r.getMessage() for r in caplog.records if r.name == "vresolve.index"]
    assert len(warnings) == 1 and "cannot write the index cache" in warnings[0]


# ---------------------------------------------------------------------------------------- 6. retries


def test_retry_after_is_honoured(server: _Server) -> None:
    """The server limits the rate like a real one: a retry before its Retry-After gets another 503."""
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)})
    ctype, page = server.pages["/simple/vllm/"]
    not_before: list[float] = []

    def handle(h: BaseHTTPRequestHandler) -> None:
        now = time.monotonic()
        if not not_before or now < not_before[0]:
            not_before[:] = [now + 0.95]
            stream(503, {"Retry-After": "1", "Content-Length": "0"}, iter([]))(h)
        else:
            stream(200, {"Content-Type": ctype, "Content-Length": str(len(page))}, iter([page]))(h)

    server.custom["/simple/vllm/"] = handle
    client = IndexClient(server.url + "/simple/", retries=1)
    assert [f.filename for f in client.project_files("vllm")] == [X86]
    assert client.requests == 2 and server.requests.count("/simple/vllm/") == 2


def test_connection_refused_is_one_line(tmp_path: Path) -> None:
    s = _Server()
    url = s.url
    s.close()  # nothing listens there any more
    with pytest.raises(PackageIndexError) as e:
        IndexClient(url + "/simple/", retries=1).project_files("vllm")
    assert one_line_error(e) == f"{url}/simple/vllm/: connection refused (gave up after 2 attempts)"


# ---------------------------------------------------------------------------------------- fuzzing


def test_any_listing_is_files_or_an_index_error() -> None:
    """Whatever bytes a listing holds: a list of files, or a PackageIndexError of one line."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                               lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                               max_leaves=12)
    entry = st.fixed_dictionaries({}, optional={
        "filename": st.sampled_from([X86, "vllm-0.1.tar.gz", "x\udcff.whl"]) | json_values,
        "url": st.sampled_from(["../../files/a.whl", "file:///etc/passwd", "http://[::1"]) | json_values,
        "hashes": st.dictionaries(st.sampled_from(["sha256", "md5", "x"]), st.text("0123456789abcdefz", max_size=70))
        | json_values,
        "core-metadata": json_values, "yanked": json_values, "requires-python": json_values, "size": json_values})
    pages = st.one_of(st.builds(lambda files: json.dumps({"files": files}).encode("utf-8", "surrogateescape"),
                                st.lists(entry, max_size=4)),
                      st.binary(max_size=200))
    s = _Server()
    try:
        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(page=pages, html=st.booleans())
        def check(page: bytes, html: bool) -> None:
            s.pages["/simple/vllm/"] = ("text/html" if html else "application/vnd.pypi.simple.v1+json", page)
            try:
                files = IndexClient(s.url + "/simple/", retries=0).project_files("vllm")
            except PackageIndexError as e:
                assert "\n" not in str(e)
            else:
                assert all(f.filename.isprintable() and f.url.startswith("http://") for f in files)

        check()
    finally:
        s.close()


def test_any_damaged_wheel_is_metadata_or_an_index_error() -> None:
    """A real wheel with bytes overwritten anywhere: its METADATA and members, or a PackageIndexError."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    wheel = make_wheel(VLLM_METADATA, padding=20_000)
    s = _Server()
    s.add_project_json("vllm", {X86: wheel})
    (f,) = IndexClient(s.url + "/simple/").project_files("vllm")
    try:
        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(edits=st.lists(st.tuples(st.integers(0, len(wheel) - 1), st.binary(min_size=1, max_size=8)),
                              min_size=1, max_size=4), tail=st.booleans())
        def check(edits: list[tuple[int, bytes]], tail: bool) -> None:
            data = bytearray(wheel)
            for at, new in edits:
                at = len(wheel) - 1 - at % 2000 if tail else at  # most of what is read is near the end
                data[at:at + len(new)] = new
            s.files[f"/files/{X86}"] = bytes(data[:len(wheel)])
            client = IndexClient(s.url + "/simple/", retries=0)
            for read in (client.read_metadata, client.read_members):
                try:
                    read(f)
                except PackageIndexError as e:
                    assert "\n" not in str(e)

        check()
    finally:
        s.close()


def test_a_retried_answer_with_an_endless_body_is_not_read(server: _Server) -> None:
    """urllib3 reads a retried answer's body to the end before retrying: a 503 that never ends must not stall."""
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)})
    ctype, page = server.pages["/simple/vllm/"]
    answers = [stream(503, {}, repeat(b" " * MiB, 100_000)),  # 100 GB, no Content-Length
               stream(200, {"Content-Type": ctype, "Content-Length": str(len(page))}, iter([page]))]
    server.custom["/simple/vllm/"] = lambda h: answers.pop(0)(h)
    client = IndexClient(server.url + "/simple/", retries=1, limits=Limits(deadline=60))
    assert [f.filename for f in client.project_files("vllm")] == [X86]
    assert client.requests == 2


def test_a_redirect_with_an_endless_body_is_not_read(server: _Server) -> None:
    """requests reads a redirect's body to the end before following it: one that never ends must not stall."""
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)})
    server.pages["/mirror/simple/vllm/"] = server.pages.pop("/simple/vllm/")
    server.files[f"/mirror/files/{X86}"] = server.files[f"/files/{X86}"]
    server.custom["/simple/vllm/"] = stream(301, {"Location": "/mirror/simple/vllm/"}, repeat(b" " * MiB, 100_000))
    client = IndexClient(server.url + "/simple/", limits=Limits(deadline=60))
    (f,) = client.project_files("vllm")
    assert f.url == f"{server.url}/mirror/files/{X86}" and client.requests == 2


def test_headers_that_drip_meet_the_deadline(server: _Server) -> None:
    """The deadline holds while the status line and headers arrive too, not only the body."""

    def handle(h: BaseHTTPRequestHandler) -> None:
        try:
            h.wfile.write(b"HTTP/1.0 200 OK\r\nX-Drip: ")
            for _ in range(60_000):  # one header line of 60,000 bytes, one every half second: some 8 hours
                h.wfile.write(b"a")
                h.wfile.flush()
                time.sleep(0.5)
        except (BrokenPipeError, ConnectionResetError):
            pass

    server.custom["/simple/vllm/"] = handle
    client = IndexClient(server.url + "/simple/", timeout=5, retries=2, limits=Limits(deadline=1.5))
    with pytest.raises(PackageIndexError) as e:
        client.project_files("vllm")
    assert one_line_error(e) == f"{server.url}/simple/vllm/: no complete answer within 1.5 s (the limit for one request)"


def test_piped_stderr_is_not_wrapped_at_80_columns(replay: _Server, tmp_path: Path) -> None:
    """A CI log or a file gets whole lines: refresh's summary (over 80 characters) is one line on a pipe."""
    matrix = matrix_copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(vresolve.__file__).parents[1]), "VRESOLVE_CACHE_DIR": ""}
    env.pop("COLUMNS", None)
    done = subprocess.run([sys.executable, "-m", "vresolve", "matrix", "refresh", "--matrix", str(matrix),
                           "--index-url", replay.url + "/simple/", "--package", "vllm"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    (summary,) = [line for line in done.stderr.splitlines() if "file(s) changed" in line]
    assert len(summary) > 80 and summary.endswith("the cache"), done.stderr
