"""The index reader and the generator against a real HTTP server on loopback.

The server serves a simple-API page (PEP 691 JSON or PEP 503 HTML, relative URLs) and real
wheel files built here with zipfile; it honours HTTP Range requests unless told not to,
and counts how many bytes it sent, so the tests can prove a wheel is never read whole.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from packaging.requirements import Requirement

from vresolve.errors import PackageIndexError
from vresolve.index import IndexClient, configured_index_url
from vresolve.refresh import derive_cuda, generate, pins_for_platform

VLLM_METADATA = """Metadata-Version: 2.4
Name: vllm
Version: 0.33.0
Requires-Python: <3.15,>=3.11
Requires-Dist: regex
Requires-Dist: torch==2.14.0
Requires-Dist: torchaudio==2.11.0
Requires-Dist: torchvision==0.29.0
Requires-Dist: xformers==0.0.33; platform_machine == "x86_64"
Requires-Dist: flashinfer-python==0.7.2.post1
Requires-Dist: tensorizer>=2.9.0; extra == "tensorizer"

vLLM
"""


def make_wheel(metadata: str, name: str = "vllm", version: str = "0.33.0", padding: int = 300_000,
               members: Sequence[str] | None = None) -> bytes:
    """A real wheel (zip) with a dist-info METADATA and an incompressible payload before it.

    ``members``: the wheel's other file names (empty files; the payload then has a name no reader
    takes for a module); by default the payload is ``<name>/_C.abi3.so``.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        payload = f"{name}/_C.abi3.so" if members is None else f"{name}/payload.bin"
        zf.writestr(payload, os.urandom(padding), compress_type=zipfile.ZIP_STORED)
        for m in members or ():
            zf.writestr(m, b"")
        for i in range(50):
            zf.writestr(f"{name}/mod_{i}.py", f"x = {i}\n")
        zf.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
        zf.writestr(f"{name}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    return buf.getvalue()


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer (vresolve's bounded reads and deadlines do, on purpose) is no server error:
    socketserver would print its traceback into the stderr that tests count. Any other error is still printed."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Server:
    def __init__(self) -> None:  # noqa: C901 - a loopback HTTP server and its handler class, built together
        self.files: dict[str, bytes] = {}
        self.pages: dict[str, tuple[str, bytes]] = {}
        self.ranges = True
        self.sent = 0
        self.requests: list[str] = []
        self.fail_first: dict[str, int] = {}
        self.redirects: dict[str, str] = {}  # path -> Location (301)
        self.delay: dict[str, list[float]] = {}  # path -> seconds to wait before answering, one per request
        self.etags = False  # answer pages with an ETag, and 304 to If-None-Match
        self.custom: dict[str, Callable[[BaseHTTPRequestHandler], None]] = {}  # path -> writes its own answer
        self.ranges_asked: list[str] = []  # every Range header received
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - uv asks for a file's size and range support first
                data = server.files.get(self.path)
                if data is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                if server.ranges:
                    self.send_header("Accept-Ranges", "bytes")
                self.end_headers()

            def _answered_by_hooks(self) -> bool:
                """Record the request, wait if told to; True when a custom handler answered it."""
                server.requests.append(self.path)
                if self.headers.get("Range"):
                    server.ranges_asked.append(self.headers["Range"])
                if self.path in server.custom:
                    server.custom[self.path](self)
                    return True
                if server.delay.get(self.path):
                    import time

                    time.sleep(server.delay[self.path].pop(0))
                return False

            def do_GET(self) -> None:  # noqa: N802
                if self._answered_by_hooks():
                    return
                if self.path in server.redirects:
                    self.send_response(301)
                    self.send_header("Location", server.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if server.fail_first.get(self.path, 0) > 0:
                    server.fail_first[self.path] -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if self.path in server.pages:
                    ctype, body = server.pages[self.path]
                    headers = {"Content-Type": ctype}
                    if server.etags:
                        tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                        if self.headers.get("If-None-Match") == tag:
                            self._send(304, b"", {"ETag": tag})
                            return
                        headers["ETag"] = tag
                    self._send(200, body, headers)
                elif self.path in server.files:
                    data = server.files[self.path]
                    rng = self.headers.get("Range")
                    if rng and server.ranges:
                        start_s, _, end_s = rng.removeprefix("bytes=").partition("-")
                        if not start_s:
                            start, end = len(data) - int(end_s), len(data) - 1
                        else:
                            start, end = int(start_s), min(int(end_s), len(data) - 1)
                        start = max(start, 0)
                        self._send(206, data[start:end + 1],
                                   {"Content-Range": f"bytes {start}-{end}/{len(data)}"})
                    else:
                        self._send(200, data, {})
                else:
                    self._send(404, b"not found", {})

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                server.sent += len(body)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def add_project_json(self, name: str, files: dict[str, bytes], metadata: dict[str, bytes] | None = None) -> None:
        entries = []
        for fn, data in files.items():
            self.files[f"/files/{fn}"] = data
            e: dict[str, Any] = {"filename": fn, "url": f"../../files/{fn}",  # relative, as real indexes do
                                 "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                                 "requires-python": ">=3.11"}
            if metadata and fn in metadata:
                self.files[f"/files/{fn}.metadata"] = metadata[fn]
                e["core-metadata"] = {"sha256": hashlib.sha256(metadata[fn]).hexdigest()}
            entries.append(e)
        body = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": entries}).encode()
        self.pages[f"/simple/{name}/"] = ("application/vnd.pypi.simple.v1+json", body)

    def add_project_html(self, name: str, files: dict[str, bytes]) -> None:
        links = []
        for fn, data in files.items():
            self.files[f"/files/{fn}"] = data
            digest = hashlib.sha256(data).hexdigest()
            links.append(f'<a href="../../files/{fn}#sha256={digest}" data-requires-python="&gt;=3.11">{fn}</a>')
        body = ("<!DOCTYPE html><html><body>" + "<br/>".join(links) + "</body></html>").encode()
        self.pages[f"/simple/{name}/"] = ("text/html", body)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


X86 = "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
ARM = "vllm-0.33.0-cp38-abi3-manylinux_2_28_aarch64.whl"


def test_range_requests_read_metadata_without_the_whole_wheel(server: _Server) -> None:
    wheel = make_wheel(VLLM_METADATA)
    server.add_project_json("vllm", {X86: wheel})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    assert f.url == f"{server.url}/files/{X86}"  # the relative URL, resolved against the page
    assert f.hashes["sha256"] == hashlib.sha256(wheel).hexdigest()
    data, how = client.read_metadata(f)
    assert how == "range"
    assert data.decode() == VLLM_METADATA
    wheel_bytes = server.sent - len(server.pages["/simple/vllm/"][1])
    assert wheel_bytes < len(wheel) / 2, (wheel_bytes, len(wheel))


def test_pep658_metadata_file_is_preferred(server: _Server) -> None:
    wheel = make_wheel(VLLM_METADATA)
    server.add_project_json("vllm", {X86: wheel}, metadata={X86: VLLM_METADATA.encode()})
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    assert f.metadata == {"sha256": hashlib.sha256(VLLM_METADATA.encode()).hexdigest()}
    data, how = client.read_metadata(f)
    assert (data.decode(), how) == (VLLM_METADATA, "pep658")
    assert f"/files/{X86}" not in server.requests


def test_html_simple_api_fallback(server: _Server) -> None:
    server.add_project_html("vllm", {X86: make_wheel(VLLM_METADATA)})
    (f,) = IndexClient(server.url + "/simple/").project_files("vllm")
    assert (f.filename, f.url, f.requires_python) == (X86, f"{server.url}/files/{X86}", ">=3.11")
    assert len(f.hashes["sha256"]) == 64


def test_server_without_range_support_is_refused(server: _Server) -> None:
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)})
    server.ranges = False
    client = IndexClient(server.url + "/simple/")
    (f,) = client.project_files("vllm")
    with pytest.raises(PackageIndexError, match="ignores HTTP range requests; refusing to download the whole wheel"):
        client.read_metadata(f)


def test_5xx_is_retried_then_reported(server: _Server) -> None:
    server.add_project_json("vllm", {X86: make_wheel(VLLM_METADATA)})
    server.fail_first["/simple/vllm/"] = 1
    client = IndexClient(server.url + "/simple/", retries=2)
    assert len(client.project_files("vllm")) == 1
    server.fail_first["/simple/vllm/"] = 5
    with pytest.raises(PackageIndexError, match=r"gave up after 3 attempts \(HTTP 503\)"):
        IndexClient(server.url + "/simple/", retries=2).project_files("vllm")


def test_404_is_an_error(server: _Server) -> None:
    with pytest.raises(PackageIndexError, match=r"/simple/nothing/: HTTP 404"):
        IndexClient(server.url + "/simple/").project_files("nothing")


def test_generate_vllm_document(server: _Server) -> None:
    server.add_project_json("vllm", {
        X86: make_wheel(VLLM_METADATA), ARM: make_wheel(VLLM_METADATA),
        "vllm-0.3.3-cp310-cp310-manylinux1_x86_64.whl": make_wheel(VLLM_METADATA, version="0.3.3"),  # too old
    })
    doc = generate(IndexClient(server.url + "/simple/"), "vllm", workers=2)
    (release,) = doc["releases"]
    assert release["version"] == "0.33.0"
    x86 = next(w for w in release["wheels"] if w["filename"] == X86)
    arm = next(w for w in release["wheels"] if w["filename"] == ARM)
    assert x86["requires"] == {"flashinfer-python": "==0.7.2.post1", "torch": "==2.14.0",
                               "torchaudio": "==2.11.0", "torchvision": "==0.29.0", "xformers": "==0.0.33"}
    assert "xformers" not in arm["requires"]  # its marker is false on aarch64
    assert x86["requires_python"] == "<3.15,>=3.11"
    # METADATA, and the zip's central directory (the compiled extensions it lists)
    assert (x86["source"], x86["verified"]) == ([f"{X86}:vllm-0.33.0.dist-info/METADATA",
                                                 f"{X86}:(zip central directory)"], "observed")


def test_pins_for_platform_and_cuda() -> None:
    reqs = [Requirement(r) for r in (
        'cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"',
        'triton~=3.8.0; platform_system == "Linux" and python_version < "3.15"',
        'opt-einsum>=3.3; extra == "opt-einsum"')]
    assert pins_for_platform(reqs, ("triton", "opt-einsum"), "linux-x86_64", ["3.12"]) == {"triton": "~=3.8.0"}
    assert pins_for_platform(reqs, ("triton",), "linux-x86_64", ["3.15"]) == {}
    assert derive_cuda(reqs) == "13.0"
    assert derive_cuda([Requirement('nvidia-cuda-runtime-cu11==11.7.99; platform_machine == "x86_64"')]) == "11.7"
    assert derive_cuda([Requirement("nvidia-cuda-runtime-cu12==12.8.90")]) == "12.8"
    assert derive_cuda([Requirement("filelock")]) is None


def test_index_url_from_configuration(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("UV_NO_CONFIG", "1")  # uv's files are tested in test_index_config.py
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://127.0.0.1:9/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert configured_index_url() == ("http://127.0.0.1:9/simple", str(conf))
    monkeypatch.setenv("UV_DEFAULT_INDEX", "http://127.0.0.1:8/simple")
    assert configured_index_url() == ("http://127.0.0.1:8/simple", "UV_DEFAULT_INDEX")
    assert configured_index_url("http://x/simple") == ("http://x/simple", "--index-url")
