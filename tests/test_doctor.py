"""doctor on real throwaway virtual environments (a real CPU torch, stand-in vLLM packages) and logs."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from vresolve.cli import main
from vresolve.detect import library_shadows, probe_environment
from vresolve.doctor import diagnose, worst_exit_code
from vresolve.host import DriverInfo, EnvReport, Host, HostGpu, ModuleReport, PlatformInfo, TorchRuntime
from vresolve.matrix import Matrix, load_matrix
from vresolve.values import Capability, DriverVersion

from .conftest import DATA, SHIPPED

WHEELS = Path("/opt/wheels")  # this workplace's CPU torch for Python 3.11 (see the machine's notes)


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


def gpu_host() -> Host:
    return Host(driver=DriverInfo(version=DriverVersion.parse("580.159.04"), cuda=Version("13.0")),
                gpus=(HostGpu(index=0, name="NVIDIA H200", compute_capability=Capability(9, 0)),),
                python=Version("3.11.7"), platform=PlatformInfo(os="linux", machine="x86_64"))


def _site(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def _stand_in(site: Path, name: str, version: str, requires: list[str], files: dict[str, str]) -> None:
    """An installed distribution made by hand: its modules and a dist-info with METADATA."""
    for rel, text in files.items():
        f = site / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text("")


@pytest.fixture(scope="module")
def cpu_torch_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the real CPU build of torch 2.13.0, a vllm 0.31.0 without _C, a torchvision for another torch."""
    wheel = sorted(WHEELS.glob("torch-2.13.0+cpu-cp311-*.whl")) if WHEELS.is_dir() else []
    if not wheel or sys.version_info[:2] != (3, 11):
        pytest.skip("no CPU torch wheel on this machine for this Python (needs /opt/wheels, Python 3.11)")
    root = tmp_path_factory.mktemp("cpu-torch-env")
    venv.create(root, with_pip=True)
    py = root / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--find-links", str(WHEELS), str(wheel[0])],
                   check=True, capture_output=True, text=True)
    site = _site(py)
    _stand_in(site, "vllm", "0.31.0", ["torch==2.13.0"],
              {"vllm/__init__.py": "__version__ = '0.31.0'\n"})  # an install whose compiled extension is missing
    _stand_in(site, "torchvision", "0.27.0", ["torch==2.12.0"], {"torchvision/__init__.py": "__version__ = '0.27.0'\n"})
    return py


def test_cpu_torch_and_missing_vllm_c_on_a_gpu_machine(cpu_torch_env: Path, matrix: Matrix) -> None:
    env = probe_environment(str(cpu_torch_env))
    assert env.torch is not None and env.torch.version.startswith("2.13.0") and env.torch.cuda is None
    assert env.module("vllm._C").error == "ModuleNotFoundError: No module named 'vllm._C'"
    findings = diagnose(gpu_host(), matrix, env, reinstall=["uv venv --python 3.11 --seed .venv-vllm"])
    by_cause = {f.cause: f for f in findings}
    assert by_cause["cpu-only-build"].severity == "error"
    assert "uv venv --python 3.11" in by_cause["cpu-only-build"].fix  # the corrected plan
    assert by_cause["companion-mismatch"].severity == "warning"
    assert "torchvision requires torch==2.12.0; installed torch 2.13.0+cpu" in by_cause["companion-mismatch"].evidence
    assert "source-tree-shadowing" not in by_cause
    assert worst_exit_code(findings) == 1


def test_source_checkout_shadows_the_installed_vllm(cpu_torch_env: Path, matrix: Matrix, tmp_path: Path) -> None:
    checkout = tmp_path / "vllm-checkout"
    (checkout / "vllm").mkdir(parents=True)
    (checkout / "csrc").mkdir()
    (checkout / "vllm" / "__init__.py").write_text("__version__ = '0.33.0.dev0'\n")
    (checkout / "setup.py").write_text("# vLLM's setup.py\n")
    (checkout / "CMakeLists.txt").write_text("project(vllm_extensions)\n")
    env = probe_environment(str(cpu_torch_env), cwd=str(checkout))  # as `cd vllm && python -c 'import vllm'`
    assert env.module("vllm").origin == str(checkout / "vllm" / "__init__.py")
    findings = diagnose(gpu_host(), matrix, env)
    shadow = next(f for f in findings if f.cause == "source-tree-shadowing")
    assert shadow.severity == "error" and any(str(checkout) in e for e in shadow.evidence)
    # the same error, without the checkout in the way, is a CPU-torch problem instead
    assert "source-tree-shadowing" not in {f.cause for f in diagnose(gpu_host(), matrix,
                                                                         probe_environment(str(cpu_torch_env)))}


def _env_without_c(torch_version: str, pin: str) -> EnvReport:
    """What the live probe reports for a vLLM 0.26.0 package directory (it pins torch 2.11.0) without its extension."""
    site = "/venv/lib/python3.12/site-packages"
    return EnvReport(python="/venv/bin/python", torch=TorchRuntime(version=torch_version, cuda="13.0", available=True,
                                                                  arch_list=("sm_90", "sm_100")),
                     modules=(ModuleReport(name="torch", origin=f"{site}/torch/__init__.py", version=torch_version),
                              ModuleReport(name="vllm", origin=f"{site}/vllm/__init__.py", version="0.26.0"),
                              ModuleReport(name="vllm._C_stable_libtorch",
                                           error="ModuleNotFoundError: No module named 'vllm._C_stable_libtorch'",
                                           traceback="ModuleNotFoundError: No module named "
                                                     "'vllm._C_stable_libtorch'")),
                     requires=(("vllm", (f"torch=={pin}",)),))


def test_vllm_without_its_extension_beside_the_torch_it_pins(matrix: Matrix) -> None:
    """torch is the CUDA build vLLM pins: the install lacks the extension (not a CPU torch, not another ABI)."""
    causes = {f.cause: f for f in diagnose(gpu_host(), matrix, _env_without_c("2.11.0+cu130", "2.11.0"))}
    assert set(causes) & {"cpu-only-build", "torch-abi-mismatch"} == set(), causes
    found = causes["incomplete-install"]
    assert found.severity == "error" and "vllm==0.26.0" in found.fix
    assert "vllm requires torch==2.11.0; installed torch 2.11.0+cu130 (CUDA 13.0)" in found.evidence
    # beside another torch, the same missing module is that torch's ABI
    other = {f.cause for f in diagnose(gpu_host(), matrix, _env_without_c("2.10.0+cu130", "2.11.0"))}
    assert "torch-abi-mismatch" in other and "incomplete-install" not in other


def test_library_shadows(tmp_path: Path) -> None:
    (tmp_path / "libcudnn.so.8").write_bytes(b"")
    (tmp_path / "libnccl.so.2").write_bytes(b"")
    (tmp_path / "libfoo.so").write_bytes(b"")
    assert library_shadows({"LD_LIBRARY_PATH": f"/nonexistent:{tmp_path}"}) == (
        (str(tmp_path), ("libcudnn.so.8", "libnccl.so.2")),)


def test_clean_environment_has_no_findings(matrix: Matrix) -> None:
    host = Host(python=Version("3.11.7"), platform=PlatformInfo(os="linux", machine="x86_64"))
    env = probe_environment(sys.executable)  # vresolve's own venv: no torch, no vllm
    assert diagnose(host, matrix, env) == []


def test_nvml_mismatch_and_old_gpu_from_host(matrix: Matrix) -> None:
    host = Host(driver=DriverInfo(version=DriverVersion.parse("550.54.15"), nvml_library_mismatch=True),
                gpus=(HostGpu(index=0, name="Tesla T4", compute_capability=Capability(7, 5)),),
                problems=("nvidia-smi: Failed to initialize NVML: Driver/library version mismatch",))
    causes = {f.cause: f.severity for f in diagnose(host, matrix)}
    assert causes == {"nvml-driver-mismatch": "error", "gpu-too-old-for-feature": "info"}


def test_cli_doctor_log_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = (DATA / "logs").glob("cuda-variant-mismatch__*.txt")
    text = next(iter(sorted(log))).read_text()
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["doctor", "--no-env", "--log", "-", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "vresolve.doctor/1" and code == 1
    assert [f["cause"] for f in d["findings"] if f["source"] == "log"][0] == "cuda-variant-mismatch"
    assert set(d["findings"][0]) == {"cause", "severity", "title", "explanation", "fix", "evidence", "source"}


def test_cli_doctor_bad_log_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--log", "/nonexistent/log.txt"]) == 2
    assert capsys.readouterr().err == ("vresolve: error: --log: cannot read '/nonexistent/log.txt' "
                                       "(No such file or directory)\n")




def test_libcudart_in_a_log_is_set_against_the_installed_torch(matrix: Matrix) -> None:
    from vresolve.host import EnvReport, TorchRuntime

    log = "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
    env = EnvReport(python="python", torch=TorchRuntime(version="2.14.0", cuda="13.0", available=True))
    (f,) = [f for f in diagnose(gpu_host(), matrix, env, log=log) if f.source == "log"]
    assert f.cause == "cuda-variant-mismatch"
    assert "torch is built with CUDA 13.0; the failing library asks for CUDA 12's runtime" in f.explanation
    assert "torch.version.cuda = 13.0" in f.evidence


@pytest.mark.parametrize(("env", "cause"), [
    ((("CUDA_VISIBLE_DEVICES", ""),), "gpu-not-visible"),
    ((("CUDA_VISIBLE_DEVICES", "-1"),), "gpu-not-visible"),
    ((("NVIDIA_VISIBLE_DEVICES", "void"),), "gpu-not-visible"),
    ((("CUDA_VISIBLE_DEVICES", "0,1"),), "library-not-found"),
    ((), "library-not-found"),
])
def test_hidden_gpus_are_not_a_missing_library(matrix: Matrix, env: tuple[tuple[str, str], ...], cause: str) -> None:
    """torch sees no GPU: hidden by the environment (gpu-not-visible), or a driver library that does not load."""
    from vresolve.host import EnvReport, TorchRuntime

    host = Host(driver=DriverInfo(version=DriverVersion.parse("580.159.04")), env=env,
                gpus=(HostGpu(index=0, name="NVIDIA H200", compute_capability=Capability(9, 0)),))
    torch = TorchRuntime(version="2.11.0+cu130", cuda="13.0", available=False, error="No CUDA GPUs are available")
    findings = [f for f in diagnose(host, matrix, EnvReport(python="python", torch=torch))
                if f.cause in ("gpu-not-visible", "library-not-found")]
    assert [(f.cause, f.severity) for f in findings] == [(cause, "error")]
    if cause == "gpu-not-visible":
        assert any("VISIBLE_DEVICES=" in e for e in findings[0].evidence)


def test_a_pasted_collect_env_is_judged_by_the_same_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """``doctor --no-env --log``: a collect_env report from another machine, its facts judged (not this machine's)."""
    report = Path(__file__).parent / "data" / "corpus" / "004-collect-env-vllm-new-format-cpu-torch-rtx3090.txt"
    assert main(["doctor", "--no-env", "--log", str(report), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["cause"] for f in doc["findings"]] == ["cpu-only-build"]
    assert any("GeForce RTX 3090" in e for e in doc["findings"][0]["evidence"])
    assert doc["host"]["gpus"][0]["source"].startswith("pasted line ")
    # the fix carries the corrected plan for the pasted machine (its GPU, driver, Python and platform)
    fix = doc["findings"][0]["fix"]
    assert "uv venv --python 3.12 " in fix and "uv pip install" in fix and " vllm==" in fix


def test_no_corrected_plan_from_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A paste that does not show the Python gets no plan computed for a default one."""
    log = tmp_path / "paste.txt"
    log.write_text("PyTorch version: 2.6.0+cpu\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n"
                   "Nvidia driver version: 570.124.06\n")
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["cause"] == "cpu-only-build" and "uv pip install --python" not in finding["fix"]


@pytest.mark.parametrize("name", ["002-collect-env-vllm-healthy-wsl-rtx4070.txt", "006-collect-env-healthy-a100-cu128.txt",
                                  "076-collect-env-tpu-v5p-healthy.txt"])
def test_healthy_pasted_reports_give_no_error(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    report = Path(__file__).parent / "data" / "corpus" / name
    assert main(["doctor", "--no-env", "--log", str(report), "--json"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "error"]


def test_markdown_report_keeps_hostile_text_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``doctor --format markdown``: a log line cannot add a link, image, heading or HTML to the comment
    (read back with markdown-it, the parser rich uses)."""
    from markdown_it import MarkdownIt

    log = tmp_path / "log.txt"
    hostile = ("# Heading [click](https://evil.example/) ![x](https://evil.example/x.png) <script>alert(1)</script> "
               "```` ` *bold* _u_ | cell |")
    log.write_text(f"RuntimeError: CUDA error: no kernel image is available for execution on the device {hostile}\n"
                   f"1. {hostile}\n")
    assert main(["doctor", "--no-env", "--log", str(log), "--format", "markdown"]) == 1
    text = capsys.readouterr().out
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    flat = [t for tok in tokens for t in (tok.children or [tok])]
    assert not [t for t in flat if t.type in ("link_open", "image", "html_inline", "html_block", "table_open")]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["vresolve doctor"]
    code = "\n".join(t.content for t in tokens if t.type == "fence")
    assert hostile in code  # the evidence line, exactly, inside a fenced block


def test_a_big_log_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """The signatures read a log's first 4 MiB and last 12 MiB; the evidence reader reads it all, a line at a time."""
    import io as _io

    from vresolve.doctor.logs import LOG_HEAD, LOG_TAIL, KeptLog

    first = b"PyTorch version: 2.8.0+cpu\n"
    last = b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    filler = b"INFO 05-16 18:10:11 [engine.py:123] Avg prompt throughput: 12.3 tokens/s\n" * 500_000  # ~37 MB
    kept = KeptLog(_io.BytesIO(first + filler + last))
    kept.drain()
    text = kept.text()
    assert kept.size == len(first + filler + last)
    assert text.startswith(first.decode()) and text.endswith(last.decode())
    assert len(text) <= LOG_HEAD + LOG_TAIL + 100 and "bytes in the middle not read by the signatures" in text
    log = tmp_path / "big.log"
    log.write_bytes(first + b"GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n" + filler + last)
    r = subprocess.run([sys.executable, "-m", "vresolve", "doctor", "--no-env", "--log", str(log), "--json"],
                       capture_output=True, text=True, timeout=300)
    causes = {f["cause"] for f in json.loads(r.stdout)["findings"]}
    assert {"cpu-only-build", "arch-not-in-build"} <= causes, r.stderr


def _paste(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[Path, dict]:
    """``doctor --no-env --log`` on ``text``: the paste's file, and the --json answer (exit 1: something found)."""
    log = tmp_path / "log.txt"
    log.write_text(text)
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    return log, json.loads(capsys.readouterr().out)


def test_an_error_the_paste_does_not_explain_says_what_to_paste(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """vllm._C missing, and nothing shows torch: no guess; the error, what is missing, and what to paste."""
    log, out = _paste(tmp_path, capsys, "Traceback (most recent call last):\n"
                      '  File "/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 9, in <module>\n'
                      "ModuleNotFoundError: No module named 'vllm._C'\n")
    assert [f for f in out["findings"] if f["severity"] == "error"] == []
    (unclear,) = out["unclear"]
    assert unclear["error"] == "No module named 'vllm._C'" and "torch" in unclear["missing"]
    assert "vllm collect-env" in unclear["paste"] and unclear["evidence"][0].startswith("pasted line 3:")
    assert main(["doctor", "--no-env", "--log", str(log)]) == 1
    human = capsys.readouterr().out
    assert "cause not named" in human and "vllm collect-env" in human
    assert main(["doctor", "--no-env", "--log", str(log), "--format", "markdown"]) == 1
    assert "**error, cause not named:**" in capsys.readouterr().out
    # with a CPU torch beside it, the same line has its cause
    log.write_text(log.read_text() + "PyTorch version: 2.8.0+cpu\n")
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert "cpu-only-build" in {f["cause"] for f in out["findings"]} and out["unclear"] == []


def test_kept_log_cites_the_line_numbers_of_the_whole_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line kept in the tail of a big log is cited by its number in the whole log, not in the kept text."""
    import io as _io

    from vresolve.doctor import logs

    monkeypatch.setattr(logs, "LOG_HEAD", 64)
    monkeypatch.setattr(logs, "LOG_TAIL", 256)
    data = "".join(f"line {i}\n" for i in range(5000)).encode()
    kept = logs.KeptLog(_io.BytesIO(data))
    kept.drain()
    assert "bytes in the middle not read" in kept.text()
    assert kept.cite(["line 3", "line 4990", "no such line"]) == (
        "pasted line 4: line 3", "pasted line 4991: line 4990", "no such line")


@pytest.mark.parametrize(("text", "cause"), [
    # xFormers' own table, without its first line: built for another torch than the one it runs with
    ("    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cu118)\n", None),
    ("xFormers was built for:\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)\n"
     "    Python  3.10.13 (you have 3.10.12)\n", "companion-mismatch"),
    ("xFormers was built for:\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cu121)\n"
     "    Python  3.10.13 (you have 3.12.1)\n", "companion-mismatch"),
    # a kill seen before the build's own lines
    ("Error: Process completed with exit code 137.\n[12/340] Building CUDA object csrc/x.cu.o\n", "build-oom"),
    ("Error: Process completed with exit code 137.\n", None),  # no build: a container's OOM kill, not a build's
])
def test_pasted_facts_in_any_order(text: str, cause: str | None, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.txt"
    log.write_text(text)
    main(["doctor", "--no-env", "--log", str(log), "--json"])
    causes = {f["cause"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert causes == ({cause} if cause else set())


@pytest.mark.parametrize(("torch", "cause"), [("2.11.0+cu130", "incomplete-install"),
                                              ("2.10.0+cu130", "torch-abi-mismatch"),
                                              ("2.11.0+cpu", "cpu-only-build")])
def test_pasted_vllm_without_its_extension_is_judged_by_the_torch_beside_it(
        torch: str, cause: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.26.0's wheel pins torch 2.11.0 (the matrix): the same missing module, three causes."""
    log = tmp_path / "log.txt"
    log.write_text(f"vllm                      0.26.0\ntorch                     {torch}\n"
                   '  File "/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 9, in <module>\n'
                   "ModuleNotFoundError: No module named 'vllm._C_stable_libtorch'\n")
    assert main(["doctor", "--no-env", "--log", str(log), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    errors = {f["cause"] for f in out["findings"] if f["severity"] == "error"}
    assert cause in errors and not {"incomplete-install", "torch-abi-mismatch", "cpu-only-build"} - {cause} & errors
    assert out["unclear"] == []
    if cause == "incomplete-install":
        (found,) = [f for f in out["findings"] if f["cause"] == cause]
        assert "vllm==0.26.0" in found["fix"] and "<" not in found["fix"].split("`")[1]


def test_a_failed_build_cut_short_says_what_to_paste_and_not_shown_facts_are_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pip build cut before its error: no cause guessed; the failure, and what to paste; the facts the paste does
    not show are said to be not shown (never their defaults: no 'CPU build', no 'no GPU')."""
    _, out = _paste(tmp_path, capsys, "* Torch version: 2.5.1\n$ pip install flash-attn\nCollecting flash-attn\n"
                    "  Installing build dependencies ... done\n  Getting requirements to build wheel ... error\n"
                    "  error: subprocess-exited-with-error\n")
    assert out["findings"] == []
    (unclear,) = out["unclear"]
    assert unclear["error"] == "Getting requirements to build wheel ... error" and "pip install -v" in unclear["paste"]
    assert out["observations"][0] == "NVIDIA driver not shown; GPUs not shown"
    assert "torch 2.5.1 (CUDA not shown)" in out["observations"][2]


@pytest.mark.parametrize("text, said", [
    ("", "is empty"), ("   \n\n\t\n", "is empty"),
    ("hello there, this is just some prose\nand nothing else\n", "holds nothing doctor can read"),
])
def test_an_empty_or_unreadable_paste_says_so(text: str, said: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Never 'no problems found' over a paste doctor could not read: one line, exit 2, what to paste."""
    log = tmp_path / "log.txt"
    log.write_text(text)
    from vresolve.cli import main

    code = main(["doctor", "--no-env", "--log", str(log)])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "collect-env" in err and len(err.strip().splitlines()) == 1


def test_a_version_that_is_not_one_is_trimmed_or_dropped_where_it_is_read(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # held-out 024 (lm-sys/FastChat#399): prose's "torch2.0.0+ transformers4.28.0.dev0" once raised InvalidVersion
    # out of doctor (a traceback): the version is read as 2.0.0
    log = tmp_path / "paste.txt"
    log.write_text("My GPU is 8*TeslsV100 32G, the software environment is python3.10+cuda11.6+torch2.0.0+ "
                   "transformers4.28.0.dev0, I run the training script\n")
    code = main(["doctor", "--no-env", "--log", str(log), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert "torch 2.0.0 (CUDA not shown) (whether it sees a GPU: not shown)" in answer["observations"]


@given(st.text(alphabet="0123456789.+-_abcrvpostdevcu", max_size=14))
def test_every_dist_version_kept_parses(version: str) -> None:
    from vresolve.doctor.evidence.model import Dist

    kept = Dist(name="torch", version=version).version
    assert kept is None or Version(kept) is not None
