"""Every vLLM release 0.4.0-0.33.0: the plan's verify step and doctor follow what its wheel ships.

The compiled extension modules of each wheel were read off its zip directory (``matrix refresh``);
``vllm._C`` is gone from 0.24.0 on (``vllm._C_stable_libtorch`` instead), so a check that imports
``vllm._C`` fails on every correct install of a newer vLLM.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vresolve.doctor import diagnose
from vresolve.host import DriverInfo, EnvReport, Host, HostGpu, ModuleReport, PlatformInfo, TorchRuntime
from vresolve.matrix import Matrix, load_matrix
from vresolve.plan import build_plan, extension_check
from vresolve.resolve import NoCompatibleStack, Request, resolve
from vresolve.values import Capability, DriverVersion, core_extension

from .conftest import SHIPPED

SITE = "/env/lib/python3.12/site-packages"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(SHIPPED)


def _host(python: str, gpus: bool = True) -> Host:
    return Host(driver=DriverInfo(version=DriverVersion.parse("580.159.04") if gpus else None),
                gpus=(HostGpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability=Capability(9, 0)),) if gpus else (),
                python=Version(python), platform=PlatformInfo(os="linux", machine="x86_64"))


def test_every_release_records_its_extensions_and_the_main_module_moved(matrix: Matrix) -> None:
    for r in matrix.vllm:
        for w in r.wheels:
            assert w.extensions, w.filename
            core = core_extension(w.extensions)
            assert core in w.extensions
            assert core == ("vllm._C" if r.version < Version("0.24.0") else "vllm._C_stable_libtorch"), w.filename
    newest = matrix.vllm_release(Version("0.33.0"))
    assert newest is not None and "vllm._C" not in newest.wheels_for("linux-x86_64")[0].extensions


def test_the_verify_step_of_every_release_expects_exactly_what_its_wheel_ships(matrix: Matrix) -> None:
    planned = 0
    for r in sorted(matrix.vllm, key=lambda r: r.version):
        res = None
        for py in ("3.12", "3.11", "3.10", "3.9"):
            try:
                res = resolve(_host(py), matrix, Request(vllm=SpecifierSet(f"=={r.version}")))
                break
            except NoCompatibleStack:
                continue
        if res is None:
            continue
        plan = build_plan(matrix, res)
        check = plan.verify[0]
        shipped = res.vllm.wheel.extensions if res.vllm.wheel else ()
        script, expect = extension_check(r.version, shipped)
        assert check.argv[-1] == script and check.expect == expect == f"vllm {r.version}: compiled extensions load"
        assert repr(sorted(shipped)).replace("'", '"') in script  # the list the check requires
        planned += 1
    assert planned >= 70  # nearly every release plans on an H100 with driver 580 (older Pythons for old ones)


def _env(version: Version, loaded: list[str], failing: dict[str, str] | None = None,
         cuda: str | None = "12.8") -> EnvReport:
    failing = failing or {}
    mods = [ModuleReport(name="torch", origin=f"{SITE}/torch/__init__.py", version="2.9.0"),
            ModuleReport(name="vllm", origin=f"{SITE}/vllm/__init__.py", version=str(version))]
    found = sorted(set(loaded) | set(failing))
    for m in found:
        mods.append(ModuleReport(name=m, origin=f"{SITE}/{m.replace('.', '/')}.abi3.so", error=failing.get(m)))
    for c in ("vllm._C", "vllm._C_stable_libtorch"):
        if c not in found:
            mods.append(ModuleReport(name=c, error=f"ModuleNotFoundError: No module named '{c}'"))
    return EnvReport(python="/env/bin/python", modules=tuple(mods), vllm_extensions=tuple(found),
                     torch=TorchRuntime(version="2.9.0+cu128", cuda=cuda, available=True, arch_list=("sm_90",),
                                        device_capabilities=("9.0",)))


def test_doctor_of_every_release_judges_the_modules_its_wheel_ships(matrix: Matrix) -> None:
    host = _host("3.12")
    for r in matrix.vllm:
        shipped = list(r.wheels_for("linux-x86_64")[0].extensions)
        core = core_extension(shipped)
        # a correct install: every module there and loading -> nothing about vLLM's kernels
        findings = diagnose(host, matrix, _env(r.version, shipped))
        assert not [f for f in findings if f.severity == "error"], (r.version, findings)
        assert not [f for f in findings if f.cause == "optional-kernel-missing"], (r.version, findings)
        # the main module missing -> an error that names it
        findings = diagnose(host, matrix, _env(r.version, [m for m in shipped if m != core]))
        errors = [f for f in findings if f.severity == "error"]
        assert errors and any(core in " ".join((f.title, *f.evidence)) for f in errors), (r.version, findings)
        # another module the wheel ships missing -> a warning naming it
        other = next((m for m in shipped if m != core), None)
        if other is not None:
            findings = diagnose(host, matrix, _env(r.version, [m for m in shipped if m != other]))
            warn = [f for f in findings if f.cause == "optional-kernel-missing"]
            assert warn and other in " ".join(warn[0].evidence), (r.version, findings)
            assert not [f for f in findings if f.severity == "error"]


def test_doctor_on_a_machine_without_the_driver_counts_libcuda_failures_as_present(matrix: Matrix) -> None:
    shipped = list(matrix.vllm_release(Version("0.33.0")).wheels_for("linux-x86_64")[0].extensions)  # type: ignore[union-attr]
    libcuda = "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"
    env = _env(Version("0.33.0"), ["vllm.fs_io_C", "vllm.spinloop"],
               {m: libcuda for m in shipped if m not in ("vllm.fs_io_C", "vllm.spinloop")})
    findings = diagnose(_host("3.12", gpus=False), matrix, env)
    assert not [f for f in findings if f.severity in ("error", "warning")], findings
    assert any(f.severity == "info" and "vllm._C_stable_libtorch" in f.title for f in findings)
    # the same failure on a machine with a GPU is an error
    findings = diagnose(_host("3.12"), matrix, env)
    assert [f for f in findings if f.severity == "error"]


def test_the_verify_script_runs_against_an_installed_package(tmp_path: Path) -> None:
    """The check itself, run by a real interpreter over a stand-in vllm package: a shipped module missing
    fails it; a file that is not a loadable extension fails it; nothing missing and nothing broken passes."""
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("__version__ = '0.33.0'\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(site))

    def run(expected: list[str]) -> subprocess.CompletedProcess[str]:
        script, _ = extension_check(Version("0.33.0"), expected)
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)

    p = run(["vllm._C_stable_libtorch"])
    assert "MISSING vllm._C_stable_libtorch" in p.stdout and "DO NOT ALL LOAD (0)" in p.stdout
    (site / "vllm" / "_C_stable_libtorch.abi3.so").write_bytes(b"not an ELF file")
    p = run(["vllm._C_stable_libtorch"])
    assert "FAILS vllm._C_stable_libtorch" in p.stdout and "DO NOT ALL LOAD (1)" in p.stdout
    # a real extension module of this interpreter, under vllm's name: it loads
    import _json  # a C extension in the standard library, when built shared

    src = getattr(_json, "__file__", None)
    if src is None or not src.endswith(".so"):
        pytest.skip("this interpreter's _json is built in, not a shared extension")
    (site / "vllm" / "_C_stable_libtorch.abi3.so").unlink()
    (site / "vllm" / "_json.abi3.so").write_bytes(Path(src).read_bytes())
    # another CPython's copy of a module (vLLM 0.20-0.31 ship deep_gemm's _C once per Python) is not loaded
    other = f"cpython-{sys.version_info.major}{sys.version_info.minor + 1}-x86_64-linux-gnu"
    (site / "vllm" / f"_json.{other}.so").write_bytes(b"another Python's build")
    p = run(["vllm._json"])
    assert p.returncode == 0 and "vllm 0.33.0: compiled extensions load (1)" in p.stdout, p.stdout + p.stderr
