"""``vresolve fleet``: inventories from ``detect --json`` files and from Kubernetes nodes (kubectl's JSON with
GPU Feature Discovery's labels), ``fleet plan`` on the real resolver and matrix, the Ray runtime_env of
``fleet lock``, and bad input. The Ray cluster itself is in test_fleet_ray.py.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from packaging.version import Version

from vresolve.cli import main
from vresolve.fleet.k8s import hosts_from_nodes
from vresolve.matrix import load_matrix
from vresolve.render.fleet import runtime_env

K8S = Path(__file__).parent / "data" / "k8s" / "nodes.json"


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def detect_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, gpus: str, driver: str,
                platform: str = "linux-x86_64") -> Path:
    """What ``vresolve detect --json`` writes on a machine with these GPUs and driver (its overrides)."""
    for k, v in {"VRESOLVE_GPUS": gpus, "VRESOLVE_DRIVER": driver, "VRESOLVE_PLATFORM": platform,
                 "VRESOLVE_PYTHON": "3.12", "VRESOLVE_NO_NVML": "1"}.items():
        monkeypatch.setenv(k, v)
    code, out, _ = run(["detect", "--json"])
    assert code == 0
    f = tmp_path / f"{name}.json"
    f.write_text(out)
    return f


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    files = [detect_file(tmp_path, monkeypatch, "h100-a", "H100", "570.86.15"),
             detect_file(tmp_path, monkeypatch, "h100-b", "H100", "570.86.15"),
             detect_file(tmp_path, monkeypatch, "a100-a", "A100", "550.54.15"),
             detect_file(tmp_path, monkeypatch, "gh200-a", "GH200", "580.65.06", "linux-aarch64")]
    for k in ("VRESOLVE_GPUS", "VRESOLVE_DRIVER", "VRESOLVE_PLATFORM"):
        monkeypatch.delenv(k)
    return files


def plan_json(*argv: str) -> dict:
    code, out, err = run(["fleet", "plan", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def test_plan_from_detect_files(mixed: list[Path]) -> None:
    p = plan_json(*map(str, mixed))
    assert p["schema"] == "vresolve.fleet/1" and p["hosts"] == 4
    groups = {tuple(g["hosts"]): g for g in p["groups"]}
    assert set(groups) == {("h100-a", "h100-b"), ("a100-a",), ("gh200-a",)}
    per = p["common"]["per_platform"]
    assert per["linux-x86_64"]["host"]["driver"] == "550.54.15"  # the oldest x86 driver
    assert sorted(g["compute_capability"] for g in per["linux-x86_64"]["host"]["gpus"]) == ["8.0", "9.0"]
    assert per["linux-aarch64"]["host"]["driver"] == "580.65.06"
    assert {v["stack"]["vllm"] for v in per.values()} == {p["common"]["stack"]["vllm"]}
    common = Version(p["common"]["stack"]["vllm"])
    best = {k: Version(g["stack"]["vllm"]) for k, g in groups.items()}
    assert common == min(best.values()) < best[("gh200-a",)]
    (b,) = p["blocking"]
    assert set(b["hosts"]) == {"h100-a", "h100-b", "a100-a"} and b["upgrade"].startswith("driver >= ")
    assert b["unlocks"] == {"vllm": str(best[("gh200-a",)])}
    # the same plan, resolved for one machine: the blocker's driver floor is the one the unlocked stack needs
    code, out, _ = run(["plan", "--gpu", "GH200", "--driver", "580.65.06", "--python", "3.12",
                        "--platform", "linux-aarch64", "--json"])
    assert json.loads(out)["requires"]["min_driver"] == b["upgrade"].split(">= ")[1]


def test_human_table(mixed: list[Path]) -> None:
    code, out, _ = run(["fleet", "plan", *map(str, mixed)])
    assert code == 0
    assert "4 hosts in 3 groups" in out and "Common stack" in out and "held back by 3 node(s)" in out


def test_a_gpu_generation_that_holds_the_cluster_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [detect_file(tmp_path, monkeypatch, "h100", "H100", "580.65.06"),
             detect_file(tmp_path, monkeypatch, "v100", "V100", "580.65.06")]
    p = plan_json(*map(str, files))
    v100 = Version(next(g for g in p["groups"] if g["hosts"] == ["v100"])["stack"]["vllm"])
    h100 = Version(next(g for g in p["groups"] if g["hosts"] == ["h100"])["stack"]["vllm"])
    assert Version(p["common"]["stack"]["vllm"]) == min(v100, h100)
    if v100 < h100:  # no driver helps an old GPU: the nodes are named, with no upgrade
        (b,) = p["blocking"]
        assert b["hosts"] == ["v100"] and b["upgrade"] is None and "sm_70" in b["why"]


def test_k8s_inventory_from_gfd_labels(tmp_path: Path) -> None:
    inv_file = tmp_path / "inv.json"
    code, out, err = run(["fleet", "detect", "--k8s", str(K8S), "--python", "3.12", "--json", "-o", str(inv_file)])
    assert code == 0, err
    inv = json.loads(out)
    assert inv == json.loads(inv_file.read_text())
    hosts = {h["name"]: h["host"] for h in inv["inventory"]}
    assert list(hosts) == ["cpu-control-0", "gpu-h100-0", "gpu-h100-1", "gpu-a100-0", "gpu-gh200-0"]
    assert hosts["cpu-control-0"]["gpus"] == [] and hosts["cpu-control-0"]["driver"]["version"] is None
    h100 = hosts["gpu-h100-0"]
    assert len(h100["gpus"]) == 8 and h100["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"  # the matrix's name
    assert h100["gpus"][0]["compute_capability"] == "9.0"
    assert (h100["driver"]["version"], h100["driver"]["cuda"]) == ("570.86.15", "12.8")
    a100 = hosts["gpu-a100-0"]  # an older GFD: only the deprecated cuda.driver.* / cuda.runtime.* labels
    assert (a100["driver"]["version"], a100["driver"]["cuda"]) == ("550.54.15", "12.4")
    assert hosts["gpu-gh200-0"]["platform"]["machine"] == "aarch64"
    assert {h["source"] for h in inv["inventory"]} == {"k8s"}
    p = plan_json(str(inv_file))
    (b,) = p["blocking"]
    assert b["hosts"] == ["gpu-h100-0", "gpu-h100-1", "gpu-a100-0"]
    assert set(p["common"]["per_platform"]) == {"linux-x86_64", "linux-aarch64"}


def _node(labels: dict[str, str], arch: str = "amd64") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "labels": {"kubernetes.io/arch": arch,
                                                                                      **labels}}}


def test_k8s_driver_label_spellings_agree() -> None:
    m = load_matrix(None)
    gpu = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.compute.major": "8",
           "nvidia.com/gpu.compute.minor": "9"}
    spellings = [{"nvidia.com/cuda.driver-version.full": "535.104.05"},
                 {"nvidia.com/cuda.driver-version.major": "535", "nvidia.com/cuda.driver-version.minor": "104",
                  "nvidia.com/cuda.driver-version.revision": "05"},
                 {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104",
                  "nvidia.com/cuda.driver.rev": "05"}]
    for labels in spellings:
        (h,) = hosts_from_nodes(_node({**gpu, **labels}), m, Version("3.12")).hosts
        assert str(h.host.driver.version) == "535.104.05"
        assert [str(g.compute_capability) for g in h.host.gpus] == ["8.9", "8.9"]
    # a GPU node without any driver label, or with an unknown architecture: reported, not fatal
    inv = hosts_from_nodes({"items": [_node(gpu), _node({}, arch="s390x")]}, m, Version("3.12"))
    assert inv.hosts == () and [f.why[:20] for f in inv.failed] == ["GPU labels without t", "CPU architecture 's3"]


@pytest.mark.parametrize(("content", "expected"), [
    ("not json", "is not JSON"),
    ('{"schema": "vresolve.plan/1"}', "is not 'vresolve.fleet/1'"),
    ('{"schema": "vresolve.fleet/1", "inventory": [{"name": "a", "host": {"gpus": "x"}}]}', "inventory[0].host.gpus"),
    ('{"schema": "vresolve.fleet/1", "inventory": [{"name": "", "host": {}}]}', "inventory[0].name"),
    ('{"schema": "vresolve.fleet/1", "inventory": [{"name": "a", "host": {"python": "2.7"}}]}', "python"),
    ('{"schema": "vresolve.fleet/1", "inventory": []}', "no host to plan for"),
])
def test_bad_inventory_is_one_line_exit_2(tmp_path: Path, content: str, expected: str) -> None:
    f = tmp_path / "inv.json"
    f.write_text(content)
    code, out, err = run(["fleet", "plan", str(f)])
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1, err


def test_bad_k8s_input_and_duplicate_names(tmp_path: Path, mixed: list[Path]) -> None:
    f = tmp_path / "nodes.json"
    f.write_text('{"kind": "List"}')
    code, _, err = run(["fleet", "detect", "--k8s", str(f)])
    assert code == 2 and "expected kubectl get nodes -o json output" in err
    code, _, err = run(["fleet", "plan", str(mixed[0]), str(mixed[0])])
    assert code == 2 and "named twice" in err


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as on a machine without vresolve[ray]
    code, _, err = run(["fleet", "detect", "--ray"])
    assert code == 2 and "pip install 'vresolve[ray]'" in err
    code, _, err = run(["fleet", "doctor", "--ray"])
    assert code == 2 and "pip install 'vresolve[ray]'" in err
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    code, _, err = run(["fleet", "detect", "--k8s"])
    assert code == 2 and "pip install 'vresolve[k8s]'" in err


def test_runtime_env_binds_each_lock_to_its_architecture() -> None:
    x86 = ("# vresolve-lock: {}\n--extra-index-url https://example.org/whl/cu128\n"
           "torch==2.10.0+cu128 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\nvllm==0.19.1 \\\n    --hash=sha256:cc\n")
    arm = "torch==2.10.0 \\\n    --hash=sha256:dd\n"
    env = runtime_env({"linux-x86_64": x86, "linux-aarch64": arm},
                      {"linux-x86_64": {"A": "1", "B": "x"}, "linux-aarch64": {"A": "1", "B": "y"}})
    assert env["pip"]["packages"] == [
        "--extra-index-url https://example.org/whl/cu128",
        "torch==2.10.0 ; platform_machine == 'aarch64' --hash=sha256:dd",
        "torch==2.10.0+cu128 ; platform_machine == 'x86_64' --hash=sha256:aa --hash=sha256:bb",
        "vllm==0.19.1 ; platform_machine == 'x86_64' --hash=sha256:cc"]
    assert env["env_vars"] == {"A": "1"}
    one = runtime_env({"linux-x86_64": x86}, {"linux-x86_64": {}})
    assert one["pip"]["packages"][1] == "torch==2.10.0+cu128 --hash=sha256:aa --hash=sha256:bb"


def _orin(tmp_path: Path) -> Path:
    """An Orin under JetPack 6.2 as detect describes it (L4T 36.4.3, L4T's driver)."""
    from vresolve.host import DriverInfo, Host, HostGpu, PlatformInfo
    from vresolve.values import Capability, DriverVersion

    host = Host(driver=DriverInfo(version=DriverVersion.parse("540.4.0"), source="nvidia-smi (Jetson: L4T's driver)"),
                gpus=(HostGpu(index=0, name="Orin (nvgpu)", compute_capability=Capability.parse("8.7")),),
                python=Version("3.10"), platform=PlatformInfo(os="linux", machine="aarch64", jetson="Jetson AGX Orin",
                                                              l4t=Version("36.4.3"), l4t_source="/etc/nv_tegra_release"))
    f = tmp_path / "orin.json"
    f.write_text(json.dumps({"schema": "vresolve.detect/1", "host": host.to_dict()}))
    return f


def test_fleet_lock_on_a_loopback_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The common stack locked by real uv against a real index on loopback, and the runtime_env's pins
    accepted by real pip (hashes required) from that index."""
    import subprocess

    from .conftest import TINY
    from .test_index import _Server, make_wheel
    from .test_lock import _meta

    s = _Server()
    for name, (version, requires) in {"vllm": ("0.33.0", ["torch==2.14.0", "torchvision==0.29.0", "tinydep>=1.0"]),
                                      "torch": ("2.14.0", ["tinydep"]), "torchvision": ("0.29.0", ["torch==2.14.0"]),
                                      "tinydep": ("1.0", [])}.items():
        fn = f"{name}-{version}-py3-none-any.whl"
        s.add_project_json(name, {fn: make_wheel(_meta(name, version, requires), name, version, padding=1000)})
    try:
        monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
        files = [detect_file(tmp_path, monkeypatch, f"h200-{i}", "H200", "580.159.04") for i in range(2)]
        files.append(_orin(tmp_path))  # a Jetson: left out of the locks, and said so
        out = tmp_path / "locks"
        code, stdout, err = run(["--matrix", str(TINY), "fleet", "lock", *map(str, files), "--python", "3.12",
                                 "--index-url", s.url + "/simple/", "-o", str(out), "--json"])
        assert code == 0, err
        report = json.loads(stdout)
        assert report["apart"] == ["orin"]
        (lock,) = report["locks"]
        assert lock["platform"] == "linux-x86_64" and lock["stack"]["vllm"] == "0.33.0"
        req = (out / "linux-x86_64" / "requirements.txt").read_text()
        assert "# vresolve-lock:" in req and "--hash=sha256:" in req
        env = json.loads((out / "runtime_env.json").read_text())
        pins = [p for p in env["pip"]["packages"] if not p.startswith("-")]
        assert sorted(p.split("==")[0] for p in pins) == ["tinydep", "torch", "torchvision", "vllm"]
        assert all("--hash=sha256:" in p for p in pins)
        rfile = tmp_path / "runtime-env-requirements.txt"
        rfile.write_text("\n".join(env["pip"]["packages"]) + "\n")  # what Ray's pip plugin installs from
        res = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--require-hashes", "--no-deps",
                              "--index-url", s.url + "/simple/", "--python-version", "3.12", "--only-binary", ":all:",
                              "--target", str(tmp_path / "t"), "-r", str(rfile)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Would install tinydep-1.0 torch-2.14.0 torchvision-0.29.0 vllm-0.33.0" in res.stdout
    finally:
        s.close()


def test_drift_against_the_lock_and_between_nodes() -> None:
    from vresolve.cli.fleet_doctor import drift_findings
    from vresolve.host import Host, InstalledDist

    def node(torch: str | None, vllm: str = "0.19.1") -> Host:
        dists = [InstalledDist(name="vllm", version=vllm)] + ([InstalledDist(name="torch", version=torch)] if torch else [])
        return Host(installed=tuple(dists))

    nodes = {"a": node("2.10.0"), "b": node("2.10.0+cu128"), "c": node("2.10.0+cu126"), "d": node(None)}
    lock = {"stack": {"vllm": "0.19.1", "torch": "2.10.0", "variant": "cu128"}}
    found = drift_findings(nodes, dict.fromkeys(nodes, lock))
    assert [(hosts, f.title) for hosts, f in found] == [(("c", "d"), "torch differs on 2 node(s)")]
    assert "c: torch 2.10.0+cu126, not the lock's torch 2.10.0+cu128" in found[0][1].explanation
    # no lock: the nodes against each other (the most common version)
    found = drift_findings({"a": node("2.10.0"), "b": node("2.10.0"), "c": node("2.9.0", vllm="0.18.0")},
                           dict.fromkeys("abc"))
    assert [(hosts, f.cause) for hosts, f in found] == [(("c",), "fleet-drift"), (("c",), "fleet-drift")]
    assert drift_findings({"a": node("2.10.0"), "b": node("2.10.0")}, {}) == []


def test_k8s_live_through_the_official_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--k8s`` with no FILE: the kubernetes client, the user's kubeconfig, an API server on loopback that
    answers GET /api/v1/nodes with the fixture (what a cluster answers kubectl)."""
    pytest.importorskip("kubernetes", reason="the Kubernetes client is not installed (pip install 'vresolve[k8s]')")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = json.loads(K8S.read_text())
    body["kind"], body["metadata"] = "NodeList", {"resourceVersion": "4412093"}
    seen: list[str] = []

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.path.split("?")[0])
            data = json.dumps(body).encode() if self.path.startswith("/api/v1/nodes") else b"{}"
            self.send_response(200 if self.path.startswith("/api/v1/nodes") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cfg = tmp_path / "kubeconfig"
        cfg.write_text(f"""apiVersion: v1
kind: Config
clusters:
- cluster: {{server: "http://127.0.0.1:{server.server_address[1]}"}}
  name: lab
contexts:
- context: {{cluster: lab, user: me}}
  name: lab
current-context: lab
users:
- name: me
  user: {{token: not-a-secret}}
""")
        monkeypatch.setenv("KUBECONFIG", str(cfg))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        code, out, err = run(["fleet", "detect", "--k8s", "--python", "3.12", "--json"])
        assert code == 0, out + err
        assert seen == ["/api/v1/nodes"]
        live = json.loads(out)
        code, out, _ = run(["fleet", "detect", "--k8s", str(K8S), "--python", "3.12", "--json"])
        assert live == json.loads(out)  # the same hosts as from kubectl's JSON
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    code, _, err = run(["fleet", "detect", "--k8s"])
    assert code == 2 and "no usable kubeconfig" in err


def _ladder_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glibc_known: bool) -> list[Path]:
    """Two H200 nodes as detect describes them; without glibc, as a Kubernetes node records none."""
    files = [detect_file(tmp_path, monkeypatch, f"h200-{i}", "H200", "580.159.04") for i in range(2)]
    if not glibc_known:
        for f in files:
            d = json.loads(f.read_text())
            d["host"]["platform"]["glibc"] = None
            f.write_text(json.dumps(d))
    return files


def test_fleet_lock_climbs_for_nodes_of_unknown_glibc_and_takes_glibc(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """No glibc known: the lowest manylinux with every wheel (2.31, llguidance's case). --glibc X.Y: that one,
    no climb; too old for the closure, the error's hint names --glibc, which fleet lock takes."""
    from .conftest import TINY
    from .test_lock import ladder_index

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    s = ladder_index({"gdep": ["manylinux_2_31_x86_64"]})
    try:
        files = _ladder_fleet(tmp_path, monkeypatch, glibc_known=False)
        base = ["--matrix", str(TINY), "fleet", "lock", *map(str, files), "--python", "3.12", "--index-url",
                s.url + "/simple/"]
        code, stdout, err = run([*base, "-o", str(tmp_path / "a"), "--json"])
        assert code == 0, err
        (lock,) = json.loads(stdout)["locks"]
        assert lock["glibc"] == "2.31"
        assert lock["glibc_note"] == "no wheel of gdep for manylinux_2_28; locked for glibc >= 2.31"
        assert f"linux-x86_64: {lock['glibc_note']}" in err.splitlines()
        req = (tmp_path / "a" / "linux-x86_64" / "requirements.txt").read_text()
        assert '"glibc":"2.31"' in req and "gdep==1.0" in req

        code, stdout, err = run([*base, "--glibc", "2.35", "-o", str(tmp_path / "b"), "--json"])
        assert code == 0, err
        (lock,) = json.loads(stdout)["locks"]
        assert (lock["glibc"], lock["glibc_note"]) == ("2.35", None)

        code, _, err = run([*base, "--glibc", "2.28", "-o", str(tmp_path / "c")])
        assert code == 1 and "trying manylinux" not in err
        assert "say so with --glibc X.Y" in err and not (tmp_path / "c" / "linux-x86_64").exists()
        out = io.StringIO()
        with redirect_stdout(out), pytest.raises(SystemExit):
            main(["fleet", "lock", "--help"])
        assert "--glibc X.Y" in out.getvalue()  # the flag the hint names is fleet lock's, and it works:
        code, _, err = run([*base, "--glibc", "2.31", "-o", str(tmp_path / "c")])
        assert code == 0, err
    finally:
        s.close()


@pytest.mark.parametrize("action", ["plan", "lock"])
@pytest.mark.parametrize("value", ["2.x", "3.10", "2.35.1", "", "2." + "9" * 5000])
def test_fleet_glibc_refuses_bad_values_in_one_line(action: str, value: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    files = _ladder_fleet(tmp_path, monkeypatch, glibc_known=True)
    code, stdout, err = run(["fleet", action, *map(str, files), "--glibc", value,
                             *(["-o", str(tmp_path / "out")] if action == "lock" else [])])
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "--glibc" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_fleet_plan_glibc_is_every_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _ladder_fleet(tmp_path, monkeypatch, glibc_known=False)
    p = plan_json(*map(str, files), "--glibc", "2.35")
    assert p["common"]["per_platform"]["linux-x86_64"]["host"]["glibc"] == "2.35"
