"""``vresolve fleet``: a cluster's inventory (Ray, Kubernetes, detect files), one stack for every node, its
locks and a Ray runtime_env, and the doctor on every node at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from ..errors import EXIT_OK, UsageError
from .args import _load
from .common import new_console, no_progress, print_json, ray_cluster, shown

_EXTRAS = {"ray": "ray", "kubernetes": "k8s"}
JSON_LIMIT = 256 << 20  # an inventory or a node list: ~150,000 hosts' detect answers, past any cluster
STREAM_TIMEOUT = 300.0  # a pipe or a device named as an input must end within this many seconds


def _need(module: str) -> Any:
    """The optional module, or a one-line error naming the extra that installs it (exit 2)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        extra = _EXTRAS[module.split(".")[0]]
        raise UsageError(f"{module.split('.')[0]} is not installed: pip install 'vresolve[{extra}]'") from None


def _read_json(path: str, what: str) -> Any:
    from .._bounded import InputLimit, read_path_bounded

    where = shown(path, 200)
    try:
        return json.loads(read_path_bounded(path, JSON_LIMIT, STREAM_TIMEOUT).decode("utf-8"))
    except OSError as e:
        raise UsageError(f"{what}: cannot read {where} ({e.strerror or e})") from None
    except InputLimit as e:
        raise UsageError(f"{what}: {where}: {e}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UsageError(f"{what}: {where} is not JSON ({' '.join(str(e).split())[:120]})") from None


def twice_named(names: Iterable[str]) -> str | None:
    """The first name seen a second time, or None: one pass over the names."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return n
        seen.add(n)
    return None


def read_inventory(paths: list[str], m: Any) -> Any:
    """Inventories and detect files, merged, each checked; GPUs named only get the matrix's capability."""
    from msgspec.structs import replace

    from ..detect import fill_capabilities
    from ..fleet.inventory import Inventory, InventoryError, inventory_from_json

    inv = Inventory()
    for p in paths:
        stem = os.path.splitext(os.path.basename(p))[0] or "host"
        try:
            inv = inv.merged(inventory_from_json(_read_json(p, "INVENTORY"), shown(p, 200), default_name=stem))
        except InventoryError as e:
            raise UsageError(f"INVENTORY: {e}") from None
    dup = twice_named(h.name for h in inv.hosts)
    if dup is not None:
        raise UsageError(f"INVENTORY: host {dup!r} is named twice (names must be unique across the files)")
    hosts = tuple(replace(h, host=fill_capabilities(h.host, m)) for h in inv.hosts)
    return replace(inv, hosts=hosts)


def _cmd_detect(args: argparse.Namespace) -> int:
    from ..fleet.inventory import InventoryError

    m = _load(args)
    if args.ray is not None:
        from ..fleet.ray import parse_address

        if args.ray not in ("", "auto"):
            parse_address(args.ray)
        _need("ray")
        from ..fleet.ray import detect_ray
        from ..render.progress import note

        note(f"asking every alive node of {ray_cluster(args.ray)} to run vresolve detect (at most {args.timeout:g} s)"
             " ...", quiet=no_progress(args))
        inv = detect_ray(args.ray or None, args.timeout)
        from msgspec.structs import replace

        from ..detect import fill_capabilities

        inv = replace(inv, hosts=tuple(replace(h, host=fill_capabilities(h.host, m)) for h in inv.hosts))
    elif args.k8s is not None:
        from ..fleet.k8s import hosts_from_nodes
        from .targets import parse_python

        python = parse_python(args.python) if args.python else _this_python()
        doc = _read_json(args.k8s, "--k8s") if args.k8s else _live_nodes()
        try:
            inv = hosts_from_nodes(doc, m, python)
        except InventoryError as e:
            raise UsageError(f"--k8s: {shown(args.k8s or 'the live cluster', 200)}: {e}") from None
    else:
        inv = read_inventory(args.from_files, m)
    doc_out = inv.to_dict()
    from ..render import to_json

    text = to_json(doc_out)
    if len(text.encode("utf-8")) > JSON_LIMIT:  # fleet plan could not read it back
        from .._bounded import mib

        raise UsageError(f"fleet detect: the inventory of {len(inv.hosts)} hosts would be {mib(len(text))}, more "
                         f"than the {mib(JSON_LIMIT)} fleet plan reads")
    if args.output:
        _write(args.output, doc_out)
    if getattr(args, "json", None):
        print_json(doc_out)
    else:
        _print_inventory(inv)
    return EXIT_OK


def _write(path: str, doc: dict[str, Any]) -> None:
    from pathlib import Path

    from .._atomic import write_atomic
    from ..render import to_json

    try:
        write_atomic(Path(path), to_json(doc) + "\n")
    except OSError as e:
        raise UsageError(f"-o: cannot write {shown(path, 200)} ({e.strerror or e})") from None


def _this_python() -> Any:
    from packaging.version import Version

    return Version(f"{sys.version_info.major}.{sys.version_info.minor}")


def _live_nodes() -> Any:
    """``kubectl get nodes -o json``, through the official client: the user's kubeconfig, else the pod's
    service account when run inside the cluster."""
    _need("kubernetes")
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException

    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            config.load_incluster_config()
        else:  # KUBECONFIG as it is now (the client reads it once, when imported)
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None)
    except (ConfigException, OSError) as e:
        raise UsageError(f"--k8s: no usable kubeconfig ({' '.join(str(e).split())[:160]}); "
                         "or give kubectl get nodes -o json output as FILE") from None
    api = client.CoreV1Api()
    try:
        nodes = api.list_node(_request_timeout=60)
    except ApiException as e:
        raise UsageError(f"--k8s: the cluster refused to list nodes ({e.status} {str(e.reason)[:80]})") from None
    except Exception as e:  # urllib3's connection errors: the cluster is out of reach
        raise UsageError(f"--k8s: the cluster did not answer ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:160]})") from None
    return api.api_client.sanitize_for_serialization(nodes)


def _print_inventory(inv: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..host import describe_gpus

    t = Table(title=f"{len(inv.hosts)} hosts, {len(inv.failed)} failed")
    for col in ("node", "source", "platform", "GPUs", "driver", "python"):
        t.add_column(col)
    for h in inv.hosts:
        t.add_row(Text(h.name), h.source, h.host.platform.tag, Text(describe_gpus(h.host.gpus) or "none"),
                  str(h.host.driver.version or "-"), str(h.host.python_minor))
    console = new_console()
    console.print(t)
    for f in inv.failed:
        console.print(Text(f"failed: {f.host}: {f.why}", style="red"))


def fleet_inputs(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """(matrix, inventory, request, python) from the fleet plan flags."""
    from ..resolve import Request
    from .args import _check_values, _jetson_flags, _spec
    from .targets import parse_glibc, parse_python

    m = _load(args)
    args.driver = args.platform = None
    _check_values(args)
    glibc = parse_glibc(args.glibc) if args.glibc is not None else None
    request = Request(vllm=_spec("--vllm", args.vllm), torch=_spec("--torch", args.torch), variant=args.variant,
                      driver_policy=args.driver_policy, pypi_only=args.pypi_only,
                      allow_unknown_glibc=args.allow_unknown_glibc, **_jetson_flags(args))
    inv = read_inventory(args.inventory, m)
    if not inv.hosts:
        raise UsageError("INVENTORY: no host to plan for (every node failed, or the inventory is empty)")
    if glibc is not None:  # the nodes' image's glibc, in place of what the inventory records (Kubernetes: none)
        from msgspec.structs import replace

        inv = replace(inv, hosts=tuple(replace(fh, host=replace(fh.host, platform=replace(fh.host.platform, glibc=glibc)))
                                       for fh in inv.hosts))
    return m, inv, request, parse_python(args.python) if args.python else None


def _cmd_plan(args: argparse.Namespace) -> int:
    from ..fleet.plan import plan_fleet
    from ..render import envelope
    from ..render.fleet import fleet_plan_human, fleet_plan_view

    m, inv, request, python = fleet_inputs(args)
    plan = plan_fleet(inv, m, request, python=python)
    if getattr(args, "json", None):
        print_json(envelope("fleet", fleet_plan_view(plan)))
    else:
        console = new_console()
        for item in fleet_plan_human(plan):
            console.print(item)
    return EXIT_OK if plan.ok else 1


def _cmd_lock(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..fleet.plan import plan_fleet
    from ..lock import compile_lock, write_lock
    from ..plan import build_plan
    from ..render import envelope
    from ..render.fleet import runtime_env
    from .common import check_output_dir

    m, inv, request, python = fleet_inputs(args)
    plan = plan_fleet(inv, m, request, python=python)
    if not plan.common:
        raise UsageError(f"no common stack to lock: {plan.common_error}")
    out = Path(args.output)
    check_output_dir(out)
    quiet = getattr(args, "json", None) or getattr(args, "quiet", None)
    report, reqs = [], {}
    for tag, res in plan.common.items():
        progress = None if quiet else (lambda msg, t=tag: print(f"{t}: {msg}", file=sys.stderr, flush=True))
        lock = compile_lock(build_plan(m, res), m, index_url=args.index_url, offline=args.offline,
                            timeout=args.timeout, progress=progress)
        files = write_lock(lock, out / tag, ("requirements", "pylock", "env"))
        reqs[tag] = (out / tag / "requirements.txt").read_text(encoding="utf-8")
        report.append({"platform": tag, "dir": str(out / tag), "packages": lock.packages,
                       "stack": lock.header["stack"], "files": [str(p) for p in files],
                       "glibc": lock.header["machine"]["glibc"], "glibc_note": lock.glibc_note})
        if lock.glibc_note and not getattr(args, "quiet", None):
            print(f"{tag}: {lock.glibc_note}", file=sys.stderr, flush=True)
    env = runtime_env(reqs, {tag: dict(build_plan(m, r).env) for tag, r in plan.common.items()})
    _write(str(out / "runtime_env.json"), env)
    apart = (f"not in these locks: {len(plan.apart)} Jetson node(s), whose JetPack decides their stack (vresolve "
             "plan on each board; no lock of the Jetson index's wheels, whose files are replaced under the same "
             "name); keep the runtime_env off them") if plan.apart else None
    if getattr(args, "json", None):
        print_json(envelope("fleet.lock", {"locks": report, "runtime_env": str(out / "runtime_env.json"),
                                       "apart": list(plan.apart)}))
    else:
        for item in report:
            s = item["stack"]
            print(f"{item['platform']}: vLLM {s['vllm']} + torch {s['torch']}+{s['variant']}: "
                  f"{item['packages']} packages -> {item['dir']}")
        print(f"Ray runtime_env -> {out / 'runtime_env.json'}")
        if apart:
            print(f"{apart}: {', '.join(plan.apart)}", file=sys.stderr)
    return EXIT_OK


def cmd_fleet(args: argparse.Namespace) -> int:
    action = {"detect": _cmd_detect, "plan": _cmd_plan, "lock": _cmd_lock,
              "doctor": _cmd_doctor}.get(args.fleet_command)
    if action is None:
        raise UsageError("vresolve fleet: expected an action: detect, plan, lock or doctor")
    return action(args)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from ..fleet.ray import parse_address
    from .fleet_doctor import fleet_doctor

    if args.ray not in ("", "auto"):
        parse_address(args.ray)
    _need("ray")
    return fleet_doctor(args)
