"""Which index vresolve reads: the installers' configuration as data, where pip cannot be imported (as under
``uv tool install``); and what a network failure prints (one line per index, exit 1 when nothing was compared)."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

import vresolve
from vresolve.errors import PackageIndexError, UsageError
from vresolve.index import IndexClient, configured_index_url, index_for_uv
from vresolve.index.config import find_index

from .test_hardening_index import matrix_copy
from .test_index import _Server
from .test_lock import _plan, index  # noqa: F401 - index is a fixture

SRC = str(Path(vresolve.__file__).parents[1])
_ENV_VARS = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL", "UV_CONFIG_FILE", "UV_NO_CONFIG",
             "PIP_CONFIG_FILE", "VIRTUAL_ENV")


def _system_sets_an_index() -> bool:
    """A machine-wide pip.conf or uv.toml with an index would take the place of the default the test expects."""
    import configparser

    if Path("/etc/uv/uv.toml").exists():
        return True
    cp = configparser.RawConfigParser()
    cp.read([p for p in ("/etc/pip.conf", "/etc/xdg/pip/pip.conf") if Path(p).exists()])
    return any(cp.has_option(s, "index-url") for s in ("global", "install"))


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, XDG dirs and the working directory in tmp_path; no installer variable set."""
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    for d in ("home", "xdg", "xdgdirs", "proj/sub"):
        (tmp_path / d).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "xdgdirs"))
    monkeypatch.chdir(tmp_path / "proj" / "sub")
    return tmp_path


# the child has no pip: a package named pip that cannot be imported comes first on its path
_NO_PIP = "raise ImportError('no pip in this environment (as in uv tool install)')\n"
_CHILD = """
import json, sys
try:
    import pip  # noqa: F401
    sys.exit("pip is importable")
except ImportError:
    pass
from vresolve.index import configured_index_url
print(json.dumps(configured_index_url(sys.argv[1] or None)))
"""


def _without_pip(tmp: Path, env: dict[str, str], cwd: Path, flag: str = "") -> tuple[str, str]:
    blocker = tmp / "nopip"
    (blocker / "pip").mkdir(parents=True, exist_ok=True)
    (blocker / "pip" / "__init__.py").write_text(_NO_PIP)
    full = {k: v for k, v in os.environ.items() if k not in _ENV_VARS}
    full.update(env, PYTHONPATH=os.pathsep.join([str(blocker), SRC]))
    r = subprocess.run([sys.executable, "-c", _CHILD, flag], env=full, cwd=cwd, capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    url, origin = json.loads(r.stdout)
    return url, origin


@pytest.mark.skipif(_system_sets_an_index(), reason="this machine's /etc configures an index")
def test_precedence_without_pip(tmp_path: Path) -> None:
    """Each source in turn, the most important first, in an interpreter where ``import pip`` fails."""
    home, xdg, proj = tmp_path / "home", tmp_path / "xdg", tmp_path / "proj"
    for d in (home, xdg / "uv", xdg / "pip", proj / "sub", tmp_path / "xdgdirs"):
        d.mkdir(parents=True, exist_ok=True)
    project_uv = proj / "uv.toml"
    project_uv.write_text('index-url = "http://127.0.0.1:9/project-uv/simple"\n')
    user_uv = xdg / "uv" / "uv.toml"
    user_uv.write_text('[[index]]\nname = "extra"\nurl = "http://127.0.0.1:9/not-default/simple"\n'
                       '[[index]]\nname = "mine"\nurl = "http://127.0.0.1:9/user-uv/simple"\ndefault = true\n')
    pip_conf = xdg / "pip" / "pip.conf"
    pip_conf.write_text("[global]\nindex-url = http://127.0.0.1:9/pip-global/simple\n"
                        "[install]\nindex-url = http://127.0.0.1:9/pip-install/simple\n")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg), "XDG_CONFIG_DIRS": str(tmp_path / "xdgdirs"),
           "UV_DEFAULT_INDEX": "http://127.0.0.1:9/uv-default/simple",
           "UV_INDEX_URL": "http://127.0.0.1:9/uv-index-url/simple",
           "PIP_INDEX_URL": "http://127.0.0.1:9/pip-env/simple"}
    cwd = proj / "sub"

    def answer(flag: str = "") -> tuple[str, str]:
        return _without_pip(tmp_path, env, cwd, flag)

    assert answer("http://127.0.0.1:9/flag/simple") == ("http://127.0.0.1:9/flag/simple", "--index-url")
    assert answer() == ("http://127.0.0.1:9/uv-default/simple", "UV_DEFAULT_INDEX")
    del env["UV_DEFAULT_INDEX"]
    assert answer() == ("http://127.0.0.1:9/uv-index-url/simple", "UV_INDEX_URL")
    del env["UV_INDEX_URL"]
    assert answer() == ("http://127.0.0.1:9/pip-env/simple", "PIP_INDEX_URL")
    del env["PIP_INDEX_URL"]
    # uv's files: an [[index]] marked default (the user's) over any file's index-url (the project's), as uv does
    assert answer() == ("http://127.0.0.1:9/user-uv/simple", str(user_uv))
    user_uv.unlink()
    assert answer() == ("http://127.0.0.1:9/project-uv/simple", str(project_uv))
    project_uv.unlink()
    # pip's files: [install] over [global]
    assert answer() == ("http://127.0.0.1:9/pip-install/simple", str(pip_conf))
    pip_conf.write_text("[global]\nindex-url = http://127.0.0.1:9/pip-global/simple\n")
    assert answer() == ("http://127.0.0.1:9/pip-global/simple", str(pip_conf))
    pip_conf.unlink()
    # nothing configured: uv's default, as uv's own help names it
    url, origin = answer()
    assert origin == "uv's default" and url.startswith("https://") and "127.0.0.1" not in url


def test_uv_files(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj, sub = isolated / "proj", isolated / "proj" / "sub"
    # a pyproject.toml without [tool.uv] is passed over; [tool.uv] of one above is the project's
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    (proj / "pyproject.toml").write_text('[tool.uv]\nindex-url = "http://127.0.0.1:9/top/simple"\n'
                                         '[tool.uv.pip]\nindex-url = "http://127.0.0.1:9/pip-table/simple"\n')
    # [pip] index-url over the top-level one (uv pip's reading)
    assert configured_index_url() == ("http://127.0.0.1:9/pip-table/simple", str(proj / "pyproject.toml"))
    # uv.toml over pyproject.toml in one directory (pyproject.toml is then not read at all)
    (proj / "uv.toml").write_text('index-url = "http://127.0.0.1:9/top/simple"\n')
    assert configured_index_url() == ("http://127.0.0.1:9/top/simple", str(proj / "uv.toml"))
    (proj / "uv.toml").write_text('index-url = "http://127.0.0.1:9/top/simple"\n'
                                  '[pip]\nindex-url = "http://127.0.0.1:9/pip-section/simple"\n')
    assert configured_index_url() == ("http://127.0.0.1:9/pip-section/simple", str(proj / "uv.toml"))
    # an [[index]] in the name=URL form; a relative path is a directory beside the file
    (isolated / "xdg" / "uv").mkdir()
    (isolated / "xdg" / "uv" / "uv.toml").write_text('[[index]]\nurl = "./wheels"\ndefault = true\n')
    assert configured_index_url()[0] == (isolated / "xdg" / "uv" / "wheels").as_uri()
    monkeypatch.setenv("UV_DEFAULT_INDEX", "mine=http://127.0.0.1:9/named/simple")
    assert configured_index_url() == ("http://127.0.0.1:9/named/simple", "UV_DEFAULT_INDEX")
    monkeypatch.delenv("UV_DEFAULT_INDEX")
    # UV_CONFIG_FILE: that file only; UV_NO_CONFIG: none
    only = isolated / "only.toml"
    only.write_text('index-url = "http://127.0.0.1:9/only/simple"\n')
    monkeypatch.setenv("UV_CONFIG_FILE", str(only))
    assert configured_index_url() == ("http://127.0.0.1:9/only/simple", str(only))
    monkeypatch.delenv("UV_CONFIG_FILE")
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # and no pip file either
    assert find_index() is None
    # a file uv would refuse is an error naming it
    monkeypatch.delenv("UV_NO_CONFIG")
    (proj / "uv.toml").write_text("index-url = \n")
    with pytest.raises(UsageError, match=r"uv\.toml: not valid TOML"):
        configured_index_url()


def test_pip_files(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    user = isolated / "xdg" / "pip" / "pip.conf"
    user.parent.mkdir()
    user.write_text("[global]\nindex-url = http://127.0.0.1:9/user/simple\n")
    venv = isolated / "venv"
    venv.mkdir()
    (venv / "pip.conf").write_text("[global]\nindex-url = http://u:p%40ss@127.0.0.1:9/venv/simple\n")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    # the later file wins; '%' is no interpolation (pip reads raw)
    assert configured_index_url() == ("http://u:p%40ss@127.0.0.1:9/venv/simple", str(venv / "pip.conf"))
    env_file = isolated / "env.conf"
    env_file.write_text("[install]\nindex-url = http://127.0.0.1:9/env/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(env_file))
    assert configured_index_url() == ("http://127.0.0.1:9/env/simple", str(env_file))
    # pip.conf is read for matrix refresh, and given to uv pip compile (which reads no pip file); uv's own not
    assert index_for_uv() == "http://127.0.0.1:9/env/simple"
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/uv/simple")
    assert index_for_uv() is None and index_for_uv("http://127.0.0.1:9/flag/") == "http://127.0.0.1:9/flag/"
    monkeypatch.setenv("PIP_INDEX_URL", "ftp://127.0.0.1/simple")
    monkeypatch.delenv("UV_INDEX_URL")
    with pytest.raises(UsageError, match="^PIP_INDEX_URL: 'ftp://"):
        configured_index_url()


def test_refresh_names_the_index_and_never_its_password(isolated: Path, tmp_path: Path) -> None:
    """A subprocess without pip: ``matrix refresh --offline`` says which index and from where, without the password."""
    env = {k: v for k, v in os.environ.items() if k not in _ENV_VARS}
    (tmp_path / "nopip" / "pip").mkdir(parents=True)
    (tmp_path / "nopip" / "pip" / "__init__.py").write_text(_NO_PIP)
    env.update(HOME=str(isolated / "home"), XDG_CONFIG_HOME=str(isolated / "xdg"), COLUMNS="200",
               XDG_CONFIG_DIRS=str(isolated / "xdgdirs"), PYTHONPATH=os.pathsep.join([str(tmp_path / "nopip"), SRC]),
               PIP_INDEX_URL="http://alice:s3cret@127.0.0.1:9/simple/", VRESOLVE_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "vresolve", "matrix", "refresh", "--offline", "--package", "vllm"],
                       env=env, cwd=isolated / "proj", capture_output=True, text=True, timeout=120, check=False)
    assert r.stderr.splitlines()[0] == "index: http://127.0.0.1:9/simple/ (from PIP_INDEX_URL), offline: from the cache"
    assert r.returncode == 1 and "not in the cache" in r.stderr  # nothing cached: nothing to compare
    assert "s3cret" not in r.stderr + r.stdout and "alice" not in r.stderr + r.stdout


def test_credentials_go_to_the_index_host_only() -> None:
    seen: list[str | None] = []

    def listing(h: BaseHTTPRequestHandler) -> None:
        seen.append(h.headers.get("Authorization"))
        h.send_response(404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    s = _Server()
    s.custom["/simple/vllm/"] = listing
    try:
        url = s.url.replace("http://", "http://bob:p%40ss@") + "/simple/"
        with pytest.raises(PackageIndexError) as e:
            IndexClient(url, retries=0).project_files("vllm")
    finally:
        s.close()
    assert seen == ["Basic " + base64.b64encode(b"bob:p@ss").decode()]
    assert str(e.value) == f"{s.url}/simple/vllm/: HTTP 404"  # the URL named without its credentials


# ---------------------------------------------------------------------------------------- network failures


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()  # nothing listens there any more
    return port


def _refresh(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k not in _ENV_VARS}, "PYTHONPATH": SRC, "COLUMNS": "300",
           "VRESOLVE_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-m", "vresolve", "matrix", "refresh", *argv], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _status_server(status: int) -> _Server:
    """A loopback index that answers ``status`` to vllm's listing and to every variant index torch.yaml names."""
    from vresolve.matrix import load_matrix

    s = _Server()

    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Length", "0")
        h.end_headers()

    for variant in {v.variant for t in load_matrix().torch for v in t.variants}:
        s.custom[f"/whl/{variant}/torch/"] = answer
    s.custom["/simple/vllm/"] = answer
    return s


@pytest.mark.parametrize("status", [None, 500, 404])
def test_an_unreachable_index_is_one_line_and_exit_1(status: int | None, tmp_path: Path) -> None:
    s = _status_server(status) if status else None
    base = s.url if s else f"http://127.0.0.1:{_closed_port()}"
    try:
        r = _refresh(["--index-url", base + "/simple/", "--package", "vllm", "--quiet"], tmp_path)
    finally:
        if s:
            s.close()
    why = {None: "connection refused (gave up after 4 attempts)", 500: "gave up after 4 attempts (HTTP 500)",
           404: "HTTP 404"}[status]
    assert r.stderr == f"vresolve: error: {base}/simple/vllm/: {why}\n" and r.returncode == 1


@pytest.mark.parametrize("status", [None, 500, 404])
def test_unreachable_torch_variant_indexes_are_one_line_and_exit_1(status: int | None, tmp_path: Path) -> None:
    """The main index answers (an empty listing); every variant index of PyTorch's fails the same way."""
    main_index = _Server()
    main_index.add_project_json("torchvision", {})
    s = _status_server(status) if status else None
    torch_index = (s.url if s else f"http://127.0.0.1:{_closed_port()}") + "/whl"
    matrix = matrix_copy(tmp_path)
    torch_yaml = matrix / "torch.yaml"
    text, n = re.subn(r'(?m)^(index:\n  url: )"[^"]*"', rf'\1"{torch_index}"', torch_yaml.read_text(), count=1)
    torch_yaml.write_text(text)
    assert n == 1
    try:
        r = _refresh(["--matrix", str(matrix), "--index-url", main_index.url + "/simple/", "--package",
                      "torchvision", "--torch-variants", "--quiet"], tmp_path)
    finally:
        main_index.close()
        if s:
            s.close()
    lines = r.stderr.splitlines()
    assert r.returncode == 1, r.stderr
    why = {None: "connection refused (gave up after 2 attempts)", 500: "gave up after 2 attempts (HTTP 500)",
           404: "HTTP 404"}[status]
    assert len(lines) == 2 and lines[0].startswith(f"PyTorch index {torch_index}/<variant>/torch/ for cpu, cu1")
    assert lines[0].endswith(f": {why}") and lines[1].startswith("1 file(s) changed, not written")


# ---------------------------------------------------------------------------------------- lock


def test_lock_resolves_from_the_index_refresh_reads(index: _Server, isolated: Path,  # noqa: F811
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """uv reads no pip file: lock gives it pip.conf's index; uv's own variables it finds itself, over pip's."""
    from vresolve.lock import compile_lock

    monkeypatch.setenv("UV_CACHE_DIR", str(isolated / "uv-cache"))
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    conf = isolated / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {index.url}/simple/\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    m, plan = _plan()
    assert compile_lock(plan, m).packages == 4 and "/simple/vllm/" in index.requests
    dead = f"http://127.0.0.1:{_closed_port()}/simple/"
    conf.write_text(f"[global]\nindex-url = {dead}\n")
    monkeypatch.setenv("UV_INDEX_URL", index.url + "/simple/")
    index.requests.clear()
    assert compile_lock(plan, m).packages == 4 and "/simple/vllm/" in index.requests
