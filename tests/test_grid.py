"""``vresolve matrix grid`` and ``vresolve site``: the grid's cells are what ``vresolve plan`` answers, its
columns come from the matrix's driver floors, the picture needs the ``grid`` extra, and the page, opened in a
real headless Chromium (Debian's ``chromium``), shows for a GPU and driver picked on it the plan that
``vresolve plan --json`` prints for the same inputs; matrix strings stay text on the page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest

from vresolve.cli.grid import columns, rows
from vresolve.errors import UsageError
from vresolve.matrix import load_matrix
from vresolve.values import DriverVersion

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
HOSTILE = 'NVIDIA H100 <img src=x onerror=alert(1)></script><b>&amp;</b>'
EPOCH = "1764460800"  # 2025-11-30 00:00 UTC


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    # the validated matrix cached once for this module's processes (the page's build runs the plan command
    # hundreds of times), apart from the user's cache
    _ENV["VRESOLVE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


_ENV: dict[str, str] = {}


def vresolve(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SOURCE_DATE_EPOCH": EPOCH, **_ENV}
    p = subprocess.run([sys.executable, "-m", "vresolve", *argv], capture_output=True, text=True, env=env,
                       timeout=600)
    if check and p.returncode not in (0, 1):
        raise AssertionError(f"vresolve {argv}: exit {p.returncode}: {p.stderr}")
    return p


def plan_json(gpu: str, driver: str, python: str, installer: str, *extra: str) -> tuple[int, dict[str, object]]:
    p = vresolve("plan", "--gpu", gpu, "--driver", driver, "--python", python, "--platform", "linux-x86_64",
                 "--installer", installer, *extra, "--json")
    return p.returncode, json.loads(p.stdout)


# ---- the grid -------------------------------------------------------------------------------------------

def test_columns_are_the_matrix_driver_branches() -> None:
    m = load_matrix()
    cs = columns(m)
    # the toolkits of the CUDA majors some torch build is built for (CUDA 9 and 10 are doctor's, not the grid's)
    built = min(v.cuda.major for r in m.torch for v in r.variants if v.cuda is not None)
    tks = [t for t in m.toolkits if t.version.major >= built]
    assert len(tks) < len(m.toolkits)
    floors = {t.min_driver.linux for t in tks} | {u.min_driver.linux for t in tks for u in t.updates} \
        | {c.minor_compat_driver.linux for c in m.cuda_majors}
    floors.discard(None)
    assert [c.branch for c in cs] == sorted({f.key[0] for f in floors if f is not None})
    for c in cs:  # each column is the newest floor of its branch
        d = DriverVersion.parse(c.driver)
        assert d in floors
        assert all(f <= d for f in floors if f is not None and f.key[0] == c.branch)
    assert any(c.driver == "580.95.05" and "13.0" in c.cuda for c in cs)


def test_rows_are_architecture_capabilities_with_gpus() -> None:
    m = load_matrix()
    rs = rows(m, "linux-x86_64")
    families = [a.family for a in m.architectures]
    assert [families.index(r.family) for r in rs] == sorted(families.index(r.family) for r in rs)
    assert ("hopper", "9.0") in {(r.family, r.capability) for r in rs}
    for r in rs:
        assert all(str(g.compute_capability) == r.capability for g in m.gpus if g.name in r.names)
        assert "," not in r.names[0]
    # Jetson modules are not x86_64 machines: sm_87 (Orin) only on aarch64
    assert "8.7" not in {r.capability for r in rs}
    assert "8.7" in {r.capability for r in rows(m, "linux-aarch64")}


@pytest.fixture(scope="module")
def grid_json() -> dict[str, object]:
    p = vresolve("matrix", "grid", "--python", "3.12", "--json")
    assert p.returncode == 0, p.stderr
    d: dict[str, object] = json.loads(p.stdout)
    return d


@pytest.mark.parametrize(("cap", "branch"), [("9.0", 570), ("9.0", 580), ("7.0", 580), ("12.0", 520), ("3.7", 470)])
def test_grid_cells_are_what_plan_answers(grid_json: dict[str, object], cap: str, branch: int) -> None:
    assert grid_json["schema"] == "vresolve.grid/1"
    row = next(r for r in grid_json["rows"] if r["compute_capability"] == cap)  # type: ignore[attr-defined]
    col = next(c for c in grid_json["columns"] if c["branch"] == branch)  # type: ignore[attr-defined]
    cell = next(c for c in row["cells"] if c["driver"] == col["driver"])
    code, plan = plan_json(row["gpus"][0], col["driver"], "3.12", "uv", "--driver-policy", "minor-compat")
    if code == 1:
        assert cell == {"driver": col["driver"], "vllm": None, "kind": "none"}
    else:
        stack = plan["stack"]
        assert isinstance(stack, dict)
        assert cell == {"driver": col["driver"], "vllm": stack["vllm"],
                        "kind": "source" if stack["install_kind"] == "source" else "wheel"}


def test_grid_shows_the_known_landmarks(grid_json: dict[str, object]) -> None:
    cells = {(r["compute_capability"], c["driver"]): c for r in grid_json["rows"]  # type: ignore[attr-defined]
             for c in r["cells"]}
    # vLLM 0.33.0's PyPI wheel is CUDA 13.0: H100 needs the R580 branch for it, and older drivers get older vLLM
    assert cells[("9.0", "580.95.05")]["vllm"] == "0.33.0"
    assert cells[("9.0", "570.124.06")]["vllm"] != "0.33.0"
    # Kepler runs no vLLM at all
    assert {c["kind"] for (cap, _), c in cells.items() if cap == "3.7"} == {"none"}


def test_grid_html_table(tmp_path: Path) -> None:
    out = tmp_path / "grid.html"
    p = vresolve("matrix", "grid", "--python", "3.12", "-o", str(out))
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "<table>" in text and "0.33.0" in text and "R580" in text
    assert "http" not in text  # nothing fetched when viewed


def test_grid_bad_output_and_python(tmp_path: Path) -> None:
    p = vresolve("matrix", "grid", "-o", str(tmp_path / "grid.txt"), check=False)
    assert p.returncode == 2 and ".png, .svg or .html" in p.stderr and "Traceback" not in p.stderr
    p = vresolve("matrix", "grid", "--python", "three", check=False)
    assert p.returncode == 2 and "--python" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = vresolve("matrix", "grid", "--python", "3.12", "-o", str(tmp_path / "missing" / "x" / "g.html"), check=False)
    assert p.returncode == 0  # a missing directory is made
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    if os.access(tmp_path / "ro", os.W_OK):  # root writes anyway
        return
    p = vresolve("matrix", "grid", "--python", "3.12", "-o", str(tmp_path / "ro" / "g.html"), check=False)
    assert p.returncode == 2 and "cannot write" in p.stderr


def test_png_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    # matplotlib made unimportable in a real process (whether or not it is installed)
    code = ("import sys; sys.modules['matplotlib'] = None; from vresolve._entry import main; "
            f"raise SystemExit(main(['matrix', 'grid', '-o', {str(tmp_path / 'g.png')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **_ENV}, timeout=120)
    assert p.returncode == 2
    assert "vresolve[grid]" in p.stderr and "matplotlib" in p.stderr
    assert not (tmp_path / "g.png").exists()


def test_png_and_svg(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the picture needs the extra vresolve[grid] (matplotlib)")
    png, svg = tmp_path / "g.png", tmp_path / "g.svg"
    assert vresolve("matrix", "grid", "--python", "3.12", "-o", str(png)).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert vresolve("matrix", "grid", "--python", "3.12", "-o", str(svg)).returncode == 0
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "0.33.0" in text


# ---- the page in a real browser -------------------------------------------------------------------------

class _Shown(HTMLParser):
    """What the page shows: the text of each element with an id, lists as their items, the stack as key->value,
    and every element's tag (to see that no matrix string became an element)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: dict[str, str] = {}
        self.items: dict[str, list[str]] = {}
        self.stack: dict[str, str] = {}
        self.tags: list[str] = []
        self.options: list[tuple[str, str]] = []
        self._open: list[tuple[str, str | None, dict[str, str | None]]] = []
        self._buf: dict[int, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        self._open.append((tag, a.get("id"), a))
        self._buf[len(self._open)] = []

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            depth = len(self._open)
            t, id_, a = self._open.pop()
            text = "".join(self._buf.pop(depth, []))
            if self._open:
                self._buf[len(self._open)].append(text)
            if id_:
                self.text[id_] = text
            if t == "li" and self._open and self._open[-1][1]:
                self.items.setdefault(str(self._open[-1][1]), []).append(text)
            if t == "dd" and a.get("data-key"):
                self.stack[str(a["data-key"])] = text
            if t == "option":
                self.options.append((str(a.get("value")), text))
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._open:
            self._buf[len(self._open)].append(data)


def open_page(page: Path, tmp_path: Path, **choices: str) -> _Shown:
    """The page's DOM after its script ran, in headless Chromium, with the choices picked through the URL."""
    url = page.resolve().as_uri() + "#" + urlencode(choices)
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=5000",
                        "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    shown = _Shown()
    shown.feed(p.stdout)
    shown.close()
    return shown


needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason="no /usr/bin/chromium (install Debian's: apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("site")
    p = vresolve("site", "-o", str(out), "--python", "3.12", "--installer", "uv,pip", "--json")
    assert p.returncode == 0, p.stderr
    return out / "index.html", json.loads(p.stdout)


def test_site_is_self_contained(site: tuple[Path, dict[str, object]]) -> None:
    page, summary = site
    text = page.read_text()
    assert summary["schema"] == "vresolve.site/1" and summary["bytes"] == len(text.encode())
    assert summary["plans"] == len(rows(load_matrix(), "linux-x86_64")) * len(columns(load_matrix())) * 2
    assert "<link" not in text and " src=" not in text.split('<script type="application/json"')[0]
    assert "default-src 'none'" in text  # the browser itself refuses any fetch
    assert load_matrix().revision in text and "2025-11-30" in text


@needs_chromium
@pytest.mark.parametrize(("gpu", "driver", "installer"), [
    ("NVIDIA H100 PCIe", "570.124.06", "pip"),  # not the GPU the plans were computed for: its name in the reasons
    ("NVIDIA H100 80GB HBM3", "580.95.05", "uv"),
    ("NVIDIA GeForce RTX 5090", "575.57.08", "uv"),
    ("NVIDIA GeForce RTX 5090", "470.82.01", "uv"),  # nothing runs with this driver: the error, causes, hints
])
def test_page_shows_what_plan_answers(site: tuple[Path, dict[str, object]], tmp_path: Path, gpu: str, driver: str,
                                      installer: str) -> None:
    shown = open_page(site[0], tmp_path, gpu=gpu, driver=driver, python="3.12", installer=installer)
    assert (f"{gpu} (sm_" in shown.text["host"]) and f"driver {driver}" in shown.text["host"]
    code, plan = plan_json(gpu, driver, "3.12", installer)
    if code == 1:
        err = plan["error"]
        assert isinstance(err, dict)
        assert shown.text["error"] == err["message"]
        assert shown.items.get("causes", []) == err["causes"]
        assert shown.items.get("hints", []) == err["hints"]
        return
    assert shown.text["commands"] == "\n".join(s["shell"] for s in plan["steps"])  # type: ignore[attr-defined]
    exports = vresolve("plan", "--gpu", gpu, "--driver", driver, "--python", "3.12", "--platform", "linux-x86_64",
                       "--installer", installer, "--shell", "bash").stdout
    assert shown.text["exports"] == exports
    assert shown.items.get("reasons", []) == plan["reasons"]
    assert shown.items.get("warnings", []) == plan["warnings"]
    assert shown.items.get("alternatives", []) == [a["why_not_chosen"] for a in plan["alternatives"]]  # type: ignore
    stack = plan["stack"]
    assert isinstance(stack, dict)
    from vresolve.names import index_label

    # the same stack, each index named as the plan's table names it ("PyPI", not the JSON's "pypi")
    assert shown.stack == {k: index_label(v) if k.endswith("_source") else v for k, v in stack.items()
                           if isinstance(v, str)}
    assert "pypi" not in shown.stack.values()
    assert shown.text["min-driver"] == plan["requires"]["min_driver"]  # type: ignore[index]


@needs_chromium
def test_page_says_what_a_newer_driver_unlocks(site: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    shown = open_page(site[0], tmp_path, gpu="NVIDIA H100 PCIe", driver="570.124.06", python="3.12", installer="uv")
    unlocks = shown.items["unlocks"]
    assert unlocks and unlocks[0].startswith("driver 580.95.05 or newer (R580): vLLM ")
    _, plan = plan_json("NVIDIA H100 PCIe", "580.95.05", "3.12", "uv")
    assert unlocks[0].endswith("vLLM " + plan["stack"]["vllm"])  # type: ignore[index]


@needs_chromium
def test_page_keeps_matrix_strings_as_text(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """A GPU name full of markup, added to a copy of the matrix: the page (and the HTML grid) show it as text."""
    mx = tmp_path_factory.mktemp("matrix") / "compat_matrix"
    shutil.copytree(ROOT / "compat_matrix", mx)
    gpus = (mx / "gpus.yaml").read_text()
    row = ('  - name: "NVIDIA H100 PCIe"\n    aliases: ["H100 PCIe"]\n')
    assert row in gpus
    (mx / "gpus.yaml").write_text(gpus.replace(row, f'  - name: {json.dumps(HOSTILE)}\n    aliases: ["H100 PCIe"]\n'))
    assert vresolve("--matrix", str(mx), "matrix", "validate").returncode == 0
    out = tmp_path / "site"
    assert vresolve("--matrix", str(mx), "site", "-o", str(out), "--python", "3.12", "--installer", "uv").returncode == 0
    raw = (out / "index.html").read_text()
    assert "<img" not in raw and raw.count("</script>") == 2  # the page's two scripts, nothing from the name
    shown = open_page(out / "index.html", tmp_path, gpu=HOSTILE, driver="580.95.05", python="3.12", installer="uv")
    assert "img" not in shown.tags and shown.tags.count("script") == 2
    assert (HOSTILE, f"{HOSTILE} (sm_90)") in shown.options
    _, plan = plan_json("H100 PCIe", "580.95.05", "3.12", "uv", "--matrix", str(mx))
    assert shown.items["reasons"] == plan["reasons"]
    assert any(HOSTILE in r for r in shown.items["reasons"])
    html_grid = tmp_path / "g.html"
    assert vresolve("--matrix", str(mx), "matrix", "grid", "--python", "3.12", "-o", str(html_grid)).returncode == 0
    assert "<img" not in html_grid.read_text()


def test_an_orin_row_is_planned_from_the_jetson_index() -> None:
    """On aarch64, Orin's row is planned for the newest JetPack whose Jetson-index path has vLLM wheels for it (the
    driver columns do not apply: a Jetson's driver is L4T's); the other rows are planned as before."""
    p = vresolve("matrix", "grid", "--platform", "linux-aarch64", "--python", "3.10", "--family", "ampere", "--json")
    assert p.returncode == 0, p.stderr
    rows_ = {r["compute_capability"]: r for r in json.loads(p.stdout)["rows"]}
    orin = rows_["8.7"]
    assert (orin["jetpack"], orin["from"]) == ("6.2.1", "the Jetson index")
    assert {(c["vllm"], c["kind"]) for c in orin["cells"]} == {("0.14.0", "wheel")}
    assert "jetpack" not in rows_["8.0"]


# ---- where the page opens, and a GPU too old for any vLLM ------------------------------------------------

def page_data(page: Path) -> dict[str, object]:
    """The JSON the page's script reads (its initial choices among it)."""
    text = page.read_text()
    start = text.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    d: dict[str, object] = json.loads(text[start:text.index("</script>", start)])
    return d


@pytest.fixture(scope="module")
def small_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("small-site")
    p = vresolve("site", "-o", str(out), "--python", "3.12", "--installer", "uv", "--family", "kepler,ampere,hopper",
                 "-q")
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr
    return out / "index.html"


def test_the_page_opens_on_an_h100_at_the_newest_driver(small_site: Path) -> None:
    d = page_data(small_site)
    newest = columns(load_matrix())[-1].driver
    assert d["initial"] == {"gpu": "NVIDIA H100 80GB HBM3", "driver": newest, "python": "3.12", "installer": "uv"}
    code, plan = plan_json("NVIDIA H100 80GB HBM3", newest, "3.12", "uv")
    assert code == 0 and plan["stack"]["install_kind"] == "wheel"  # type: ignore[index]


def test_without_hopper_the_page_opens_on_the_newest_row_with_a_wheel(tmp_path: Path) -> None:
    p = vresolve("site", "-o", str(tmp_path), "--python", "3.12", "--installer", "pip", "--family", "kepler,ampere",
                 "-q")
    assert p.returncode == 0, p.stderr
    d = page_data(tmp_path / "index.html")
    ampere = [r for r in rows(load_matrix(), "linux-x86_64") if r.family == "ampere"]
    assert d["initial"] == {"gpu": ampere[-1].names[0], "driver": columns(load_matrix())[-1].driver,
                            "python": "3.12", "installer": "pip"}


def test_a_gpu_no_vllm_supports_is_said_too_old(small_site: Path) -> None:
    d = page_data(small_site)
    unsupported = d["unsupported"]
    assert isinstance(unsupported, dict) and sorted(unsupported) == ["3.5", "3.7"]  # Kepler; not Ampere or Hopper
    text = unsupported["3.5"].replace(str(d["token"]), "Tesla K40m")
    assert text.startswith("Tesla K40m (sm_35) is too old for vLLM: its compute capability 3.5 is below")
    assert "sm_80, ampere" in text and "no driver, Python or installer changes that" in text
    assert "--python" not in text


@needs_chromium
def test_the_page_shows_the_h100_first_and_a_k40m_as_too_old(small_site: Path, tmp_path: Path) -> None:
    shown = open_page(small_site, tmp_path)
    assert shown.text["host"].startswith("NVIDIA H100 80GB HBM3 (sm_90), driver ")
    assert shown.text["verdict"].startswith("vLLM ")
    shown = open_page(small_site, tmp_path, gpu="Tesla K40m")
    assert shown.text["verdict"] == "No vLLM runs on this GPU"
    assert shown.text["error"].startswith("Tesla K40m (sm_35) is too old for vLLM")
    assert shown.items.get("hints", []) == []  # no advice to change Python
    _, plan = plan_json("Tesla K40m", columns(load_matrix())[-1].driver, "3.12", "uv")
    assert shown.items["causes"] == plan["error"]["causes"]  # type: ignore[index]


def test_shared_plan_runs_answer_as_separate_ones(tmp_path: Path) -> None:
    # compute_answers runs its plans in one scope that shares the matrix, the parser and each (host, request)'s
    # resolution between runs: every answer (exports too, refusals too, asked twice) is what a plan run on its own
    # gives, and the scope ends with the run: a matrix changed afterwards is read again
    from vresolve.cli import shared as cli_shared
    from vresolve.cli.grid import compute_answers, plan_answer, plan_argv

    m = load_matrix()
    rs, newest = rows(m, "linux-x86_64"), columns(m)[-1].driver
    gpus = [rs[0].names[0], next(r.names[0] for r in rs if r.capability == "7.0"),
            next(r.names[0] for r in rs if r.capability == "9.0")]
    argvs = [plan_argv(g, d, py, installer=inst, platform="linux-x86_64", policy="minor-compat", matrix=None)
             for g in gpus for d in ("450.80.02", newest) for py in ("3.9", "3.12") for inst in ("uv", "conda")]
    shared = compute_answers([*argvs, *argvs], exports=True, workers=1)
    assert cli_shared._SHARED is None
    alone = [plan_answer(a, exports=True) for a in argvs]
    assert shared == [*alone, *alone]
    assert {a.code for a in alone} == {0, 1} and any(a.exports for a in alone)
    # a matrix read in the scope is not kept past it
    copy = tmp_path / "compat_matrix"
    shutil.copytree(ROOT / "compat_matrix", copy)
    argv = plan_argv(gpus[2], newest, "3.12", installer="uv", platform="linux-x86_64", policy="minor-compat",
                     matrix=str(copy))
    assert compute_answers([argv], workers=1)[0].code == 0
    (copy / "vllm.yaml").write_text("vllm: [not, a, release]\n")
    with pytest.raises(UsageError, match="exit 2"):
        plan_answer(argv)
