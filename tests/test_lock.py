"""Locks: real uv against a real index on loopback (tiny wheels made here), and the reference profiles."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from vresolve.cli import build_parser, main
from vresolve.errors import PackageIndexError
from vresolve.host import DriverInfo, Host, HostGpu, PlatformInfo
from vresolve.lock import check_lock, compile_lock, lock_header, read_lock_header, write_lock
from vresolve.matrix import load_matrix
from vresolve.plan import build_plan
from vresolve.resolve import Request, resolve
from vresolve.values import Capability, DriverVersion

from .conftest import ROOT, TINY
from .test_index import _Server, make_wheel

LOCKFILES = ROOT / "lockfiles"


def _meta(name: str, version: str, requires: list[str]) -> str:
    return "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                      *(f"Requires-Dist: {r}" for r in requires)]) + "\n"


@pytest.fixture
def index() -> _Server:
    """A PEP 691 index on loopback holding vllm 0.33.0 -> torch 2.14.0, torchvision 0.29.0 -> tinydep."""
    s = _Server()
    wheels = {
        "vllm": ("0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
        "torch": ("2.14.0", ["tinydep"]),
        "torchvision": ("0.29.0", ["torch==2.14.0"]),
        "tinydep": ("1.0", []),
    }
    for name, (version, requires) in wheels.items():
        fn = f"{name}-{version}-py3-none-any.whl"
        s.add_project_json(name, {fn: make_wheel(_meta(name, version, requires), name, version, padding=1000)})
    yield s
    s.close()


def _plan():  # type: ignore[no-untyped-def]
    m = load_matrix(TINY)
    host = Host(driver=DriverInfo(version=DriverVersion.parse("580.159.04")),
                gpus=(HostGpu(index=0, name="NVIDIA H200", compute_capability=Capability(9, 0)),),
                python=Version("3.12.0"), platform=PlatformInfo(os="linux", machine="x86_64"))
    return m, build_plan(m, resolve(host, m, Request()))


def test_lock_with_real_uv_on_a_loopback_index(index: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    m, plan = _plan()
    lock = compile_lock(plan, m, index_url=index.url + "/simple/")
    assert lock.packages == 4
    req = lock.files["requirements"]
    header = read_lock_header(req)
    assert header == lock_header(plan, m)
    assert header["machine"] == {"gpus": {"NVIDIA H200": "9.0"}, "min_driver": "580.65.06", "cuda": "13.0",
                                 "driver_policy": "minor-compat", "python": "3.12", "platform": "linux-x86_64",
                                 "glibc": "2.28"}  # no glibc given, no floor known: manylinux_2_28
    wheel = index.files["/files/tinydep-1.0-py3-none-any.whl"]
    assert f"tinydep==1.0 \\\n    --hash=sha256:{hashlib.sha256(wheel).hexdigest()}\n" in req
    assert [line.split("==")[0] for line in req.splitlines() if "==" in line] == ["tinydep", "torch", "torchvision", "vllm"]
    pylock = lock.files["pylock"]
    assert 'created-by = "vresolve"' in pylock and "[tool.vresolve" in pylock
    assert "tinydep==1.0 --hash=sha256:" in lock.files["conda"] and "python=3.12" in lock.files["conda"]
    assert "export TORCH_CUDA_ARCH_LIST=9.0" in lock.files["env"]
    out = tmp_path / "out"
    written = write_lock(lock, out, ["requirements", "pylock", "conda", "env"])
    assert sorted(p.name for p in written) == ["env.sh", "environment.yml", "pylock.toml", "requirements.txt"]
    yaml.safe_load((out / "environment.yml").read_text())  # valid YAML
    # deterministic: the same inputs give byte-identical files
    again = compile_lock(plan, m, index_url=index.url + "/simple/")
    assert again.files == lock.files and check_lock(again, out, ["requirements", "pylock", "conda", "env"]) == []
    # the index changes (a newer tinydep): --check says so, naming the cause
    index.add_project_json("tinydep", {
        "tinydep-1.0-py3-none-any.whl": wheel,
        "tinydep-1.1-py3-none-any.whl": make_wheel(_meta("tinydep", "1.1", []), "tinydep", "1.1", padding=1000)})
    newer = compile_lock(plan, m, index_url=index.url + "/simple/", offline=False)
    assert check_lock(newer, out, ["requirements"]) == [f"{out / 'requirements.txt'}: out of date (the index's answer changed)"]


def test_failed_lock_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    m, plan = _plan()
    dead = _Server()
    url = dead.url + "/simple/"
    dead.close()  # nothing listens there any more
    with pytest.raises(PackageIndexError):
        compile_lock(plan, m, index_url=url, retries=1, timeout=60)
    assert not (tmp_path / "out").exists()


def test_reference_lockfiles_match_the_current_plans() -> None:
    """The plan part of every reference lock is current (offline; `lock --check` re-resolves the closure)."""
    profiles = yaml.safe_load((LOCKFILES / "profiles.yaml").read_text())
    parser = build_parser()
    from vresolve.cli.args import plan_inputs

    assert len(profiles) >= 4
    for name, flags in profiles.items():
        args = parser.parse_args(["lock", *shlex.split(flags)])
        m, host, request, _ = plan_inputs(args)
        expected = lock_header(build_plan(m, resolve(host, m, request)), m)
        for f in ("requirements.txt", "environment.yml", "env.sh"):
            header = read_lock_header((LOCKFILES / name / f).read_text())
            assert header is not None, f"{name}/{f}"
            machine = header["machine"]
            if host.platform.glibc is None:  # no --glibc: the lock climbed from the plan's floor to where it landed
                assert Version(machine["glibc"]) >= Version(expected["machine"]["glibc"]), f"{name}/{f}"
                machine = {**machine, "glibc": expected["machine"]["glibc"]}
            assert (header["stack"], machine) == (expected["stack"], expected["machine"]), (
                f"{name}/{f} is out of date: vresolve lock --profiles lockfiles/profiles.yaml -o lockfiles "
                "--format requirements,conda,env")


@pytest.mark.network
@pytest.mark.skipif(os.environ.get("VRESOLVE_NETWORK_TESTS") != "1", reason="opt-in: VRESOLVE_NETWORK_TESTS=1")
def test_reference_lockfiles_are_current_against_the_index(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["lock", "--profiles", str(LOCKFILES / "profiles.yaml"), "-o", str(LOCKFILES), "--format",
                 "requirements,conda,env", "--check", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, [e["stale"] for e in report["locks"]]


@pytest.mark.parametrize("glibc, locked", [("2.28", "1.0"), ("2.36", "1.1")])
def test_lock_targets_the_hosts_glibc_and_every_package_has_a_wheel_for_it(
        glibc: str, locked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llguidance's case: its newest release has only manylinux_2_31 wheels (and an sdist). A lock for a
    glibc 2.28 machine takes the older release with a 2_28 wheel, never the sdist; one for 2.36 the newest."""
    from msgspec.structs import replace

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = _Server()
    try:
        for name, (version, requires) in {"vllm": ("0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "gdep>=1.0"]),
                                          "torch": ("2.14.0", []), "torchvision": ("0.29.0", ["torch==2.14.0"])}.items():
            s.add_project_json(name, {f"{name}-{version}-py3-none-any.whl":
                                      make_wheel(_meta(name, version, requires), name, version, padding=1000)})
        s.add_project_json("gdep", {
            "gdep-1.0-cp312-cp312-manylinux_2_28_x86_64.whl": make_wheel(_meta("gdep", "1.0", []), "gdep", "1.0", padding=1000),
            "gdep-1.1-cp312-cp312-manylinux_2_31_x86_64.whl": make_wheel(_meta("gdep", "1.1", []), "gdep", "1.1", padding=1000),
            "gdep-1.1.tar.gz": b"not a real sdist: building it must never be needed",
        })
        m, plan = _plan()
        host = replace(plan.resolution.host, platform=PlatformInfo(os="linux", machine="x86_64", glibc=Version(glibc)))
        plan = build_plan(m, resolve(host, m, Request()))
        lock = compile_lock(plan, m, index_url=s.url + "/simple/")
        req = lock.files["requirements"]
        assert f"gdep=={locked} \\\n    --hash=sha256:" in req
        assert req.count("--hash=") == 4  # one wheel each: no sdist hash for gdep
        assert read_lock_header(req)["machine"]["glibc"] == glibc
        assert f"manylinux_{glibc.replace('.', '_')}" in " ".join(lock.uv_argv)
    finally:
        s.close()


# ------------------------------------------------------------------ the manylinux ladder (target glibc unknown)

H200 = ["--gpu", "H200", "--driver", "580.159.04", "--python", "3.12"]


def ladder_index(deps: dict[str, list[str]], *, vllm_requires: tuple[str, ...] = ()) -> _Server:
    """vllm 0.33.0 -> torch, torchvision and each of ``deps``, whose only wheels carry the given platform tags
    (each with an sdist beside them, as llguidance has: --no-build never takes it)."""
    s = _Server()
    requires = ["torch==2.14.0", "torchvision==0.29.0", *deps, *vllm_requires]
    for name, (version, reqs) in {"vllm": ("0.33.0", requires), "torch": ("2.14.0", []),
                                  "torchvision": ("0.29.0", ["torch==2.14.0"])}.items():
        s.add_project_json(name, {f"{name}-{version}-py3-none-any.whl":
                                  make_wheel(_meta(name, version, reqs), name, version, padding=1000)})
    for name, tags in deps.items():
        files = {f"{name}-1.0-cp312-cp312-{tag}.whl": make_wheel(_meta(name, "1.0", []), name, "1.0", padding=1000)
                 for tag in tags}
        s.add_project_json(name, {**files, f"{name}-1.0.tar.gz": b"not a real sdist: never built"})
    return s


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("deps, glibc, missing", [
    ({"gdep": ["manylinux_2_31_x86_64"]}, "2.31", "no wheel of gdep for manylinux_2_28"),
    # the lowest rung where every package has a wheel, not the first where one more has: 2.34, climbed one at a time
    ({"gdep": ["manylinux_2_31_x86_64"], "hdep": ["manylinux_2_34_x86_64", "manylinux_2_17_aarch64"]}, "2.34",
     "no wheel of gdep, hdep for manylinux_2_28 to manylinux_2_33"),
])
def test_lock_for_an_unknown_glibc_climbs_to_the_lowest_manylinux_with_every_wheel(
        deps: dict[str, list[str]], glibc: str, missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.33.0's case: the plan's floor is 2.28 (no --glibc: a plan for another machine), llguidance has
    manylinux_2_31 wheels only. The lock lands on the lowest glibc whose closure has every wheel, and says so."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index(deps)
    out = tmp_path / "out"
    try:
        argv = ["lock", "--matrix", str(TINY), *H200, "--index-url", s.url + "/simple/", "-o", str(out)]
        code, _, err = _cli(argv, capsys)
        assert code == 0, err
        note = f"{missing}; locked for glibc >= {glibc}"
        assert note in err.splitlines()
        rungs = [line.rsplit(" on ", 1)[1] for line in err.splitlines() if line.startswith("uv pip compile: resolving")]
        expected = [f"x86_64-manylinux_{g}" for g in ("2_28", "2_31", "2_32", "2_33", "2_34")]
        assert rungs == expected[:expected.index(f"x86_64-manylinux_{glibc.replace('.', '_')}") + 1]
        assert "no wheel of gdep for manylinux_2_28: trying manylinux_2_31" in err
        for f in ("requirements.txt", "pylock.toml", "environment.yml", "env.sh"):
            assert read_lock_header((out / f).read_text())["machine"]["glibc"] == glibc, f
        req = (out / "requirements.txt").read_text()
        assert f"; linux-x86_64, glibc >= {glibc}\n" in req  # the header's words too
        assert "gdep==1.0 \\\n    --hash=sha256:" in req and req.count("--hash=") == 3 + len(deps)  # wheels only
        # the same lock again is up to date (the ladder is deterministic), and --json says where it landed
        code, stdout, err = _cli([*argv, "--check", "--json"], capsys)
        assert code == 0, err
        (entry,) = json.loads(stdout)["locks"]
        assert entry["glibc"] == glibc and entry["glibc_note"] == note and entry["stale"] == []
    finally:
        s.close()


def test_lock_with_a_known_glibc_or_a_closure_wheel_needs_no_climb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index({"gdep": ["manylinux_2_17_x86_64"]})
    try:
        code, stdout, err = _cli(["lock", "--matrix", str(TINY), *H200, "--index-url", s.url + "/simple/",
                                  "-o", str(tmp_path / "out"), "--json"], capsys)
        assert code == 0, err
        (entry,) = json.loads(stdout)["locks"]
        assert (entry["glibc"], entry["glibc_note"]) == ("2.28", None)  # the plan's floor: one run of uv
        assert "locked for glibc" not in err
    finally:
        s.close()


def test_no_wheel_on_any_rung_fails_as_before_having_tried_every_rung(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index({"armdep": ["manylinux_2_17_aarch64"], "gdep": ["manylinux_2_31_x86_64"]})
    out = tmp_path / "out"
    try:
        code, stdout, err = _cli(["lock", "--matrix", str(TINY), *H200, "--index-url", s.url + "/simple/",
                                  "-o", str(out)], capsys)
        assert code == 1 and stdout == ""
        tried = [line.rsplit("manylinux_", 1)[1] for line in err.splitlines()
                 if line.startswith("uv pip compile: resolving")]
        assert tried == ["2_28", "2_31", "2_32", "2_33", "2_34", "2_35", "2_36", "2_37", "2_38", "2_39", "2_40"]
        assert "No wheel of armdep" in err and "manylinux_2_28 to manylinux_2_40" in err
        assert "must be built from source" in err and "--glibc" not in err.split("could not resolve")[-1]
        assert not out.exists()
    finally:
        s.close()


def test_a_known_glibc_never_climbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """--glibc 2.28 is the target machine's: no wheel for it is the error (with its hint), not a climb."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index({"gdep": ["manylinux_2_31_x86_64"]})
    try:
        code, _, err = _cli(["lock", "--matrix", str(TINY), *H200, "--glibc", "2.28", "--index-url",
                             s.url + "/simple/", "-o", str(tmp_path / "out")], capsys)
        assert code == 1
        assert [line for line in err.splitlines() if line.startswith("uv pip compile: resolving")] == [
            "uv pip compile: resolving vLLM 0.33.0's closure for Python 3.12 on x86_64-manylinux_2_28"]
        assert "has no wheel for x86_64-manylinux_2_28" in err and "say so with --glibc X.Y" in err
        assert "trying manylinux" not in err and not (tmp_path / "out").exists()
    finally:
        s.close()


@pytest.mark.parametrize("why", ["conflict", "index down"])
def test_only_a_missing_wheel_climbs(why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conflict or an index that cannot be read fails at the first rung, as before: one run of uv."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    s = ladder_index({} if why == "conflict" else {"gdep": ["manylinux_2_31_x86_64"]},
                     vllm_requires=("nodep>=1",) if why == "conflict" else ())
    url = s.url + "/simple/"
    if why == "index down":
        s.close()
    m, plan = _plan()
    seen: list[str] = []
    try:
        with pytest.raises(PackageIndexError) as e:
            compile_lock(plan, m, index_url=url, retries=0, timeout=60, progress=seen.append)
    finally:
        s.close()
    assert len([msg for msg in seen if msg.startswith("uv pip compile: resolving")]) == 1, seen
    assert "trying manylinux" not in " ".join(seen)
    assert ("could not read the package index" if why == "index down" else "nodep") in str(e.value)


def test_a_known_glibc_newer_than_uv_names_locks_for_uvs_newest(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc 2.41 (uv's --python-platform stops at manylinux_2_40, which such a machine runs): uv targets 2_40,
    the header keeps the machine's glibc. One older than any manylinux is refused, naming it."""
    from msgspec.structs import replace

    from vresolve.errors import UsageError

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index({"gdep": ["manylinux_2_31_x86_64"]})
    try:
        m, plan = _plan()
        for glibc in ("2.41", "2.12"):
            host = replace(plan.resolution.host, platform=PlatformInfo(os="linux", machine="x86_64",
                                                                       glibc=Version(glibc)))
            p = build_plan(m, resolve(host, m, Request()))
            if glibc == "2.12":
                with pytest.raises(UsageError, match="glibc 2.12"):
                    compile_lock(p, m, index_url=s.url + "/simple/")
                continue
            lock = compile_lock(p, m, index_url=s.url + "/simple/")
            assert "x86_64-manylinux_2_40" in lock.uv_argv and lock.header["machine"]["glibc"] == "2.41"
            assert lock.glibc_note is None
    finally:
        s.close()


def test_a_missing_wheel_is_named_by_its_package_never_its_version() -> None:
    """uv's own words for vLLM 0.33.0's closure on manylinux_2_28 (llguidance ships only 2_31 wheels), as seen."""
    from vresolve.lock import _without_wheels

    said = ("  cause: Because llguidance{platform_machine == 'aarch64' or platform_machine == 'arm64' or "
            "platform_machine == 'x86_64'}>=1.7.0,<=1.7.6 has no usable wheels and only the following versions of "
            "llguidance{platform_machine == 'aarch64'} are available:\n"
            "hint: Wheels are required for `llguidance` because building from source is disabled for all packages")
    assert _without_wheels(said) == ["llguidance"]
