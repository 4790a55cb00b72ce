"""Kubernetes nodes -> hosts, from the labels NVIDIA's GPU Feature Discovery (GFD) publishes. Pure: the
node list comes from ``kubectl get nodes -o json`` or from the ``kubernetes`` client (the CLI reads it).

The label names are GFD's own (NVIDIA/k8s-device-plugin, ``internal/lm/resource.go`` and
``internal/lm/nvml.go``; the catalogue in ``docs/gpu-feature-discovery/README.md``):

- ``nvidia.com/gpu.product``: the NVML name with every run of blanks made one ``-`` and characters other
  than ``[A-Za-z0-9-_. ]`` removed (``NVIDIA-H100-80GB-HBM3``); ``-MIG-<profile>`` appended under MIG's
  single strategy, ``-SHARED`` under time-slicing;
- ``nvidia.com/gpu.count``; ``nvidia.com/gpu.memory`` (MB);
- ``nvidia.com/gpu.compute.major`` / ``.minor``: the compute capability;
- the driver: ``nvidia.com/cuda.driver-version.full`` (and ``.major`` / ``.minor`` / ``.revision``), and
  the deprecated ``nvidia.com/cuda.driver.major`` / ``.minor`` / ``.rev`` that older GFD releases publish
  alone;
- the CUDA the driver serves: ``nvidia.com/cuda.runtime-version.full`` (``.major`` / ``.minor``), and the
  deprecated ``nvidia.com/cuda.runtime.major`` / ``.minor``.

The CPU architecture is Kubernetes' own well-known label ``kubernetes.io/arch`` (``amd64``, ``arm64``),
else ``status.nodeInfo.architecture``. GFD says nothing of Python or glibc: the Python is the one the plan
names (the container image decides it), glibc is left unknown.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from ..host import DriverInfo, Host, HostGpu, PlatformInfo
from ..parsers import machine_text
from ..values import Capability, DriverVersion
from .inventory import Failed, FleetHost, Inventory, InventoryError, clean_name

if TYPE_CHECKING:
    from ..matrix import Matrix

__all__ = ["hosts_from_nodes", "gfd_product"]

_ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
_INT = re.compile(r"[0-9]{1,6}")
# the most GPUs one node's labels may claim: 16 GPUs (the largest NVLink boards) x 7 MIG instances, which GFD
# counts one by one under MIG's single strategy, is 112; a larger count is a hostile or broken label (each GPU
# becomes an entry of the inventory: 1024 of them per node turned 185 KB of labels into a 159 MB inventory)
MAX_GPUS_PER_NODE = 128


def _label(labels: dict[str, Any], *names: str) -> str | None:
    for n in names:
        v = labels.get(n)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _driver(labels: dict[str, Any]) -> tuple[DriverVersion | None, str | None]:
    """The driver version from the new labels, else the deprecated ones; (None, why) when unreadable."""
    full = _label(labels, "nvidia.com/cuda.driver-version.full")
    if full is None:
        for prefix, rev in (("nvidia.com/cuda.driver-version.", "revision"), ("nvidia.com/cuda.driver.", "rev")):
            major, minor = _label(labels, prefix + "major"), _label(labels, prefix + "minor")
            if major and minor:
                full = ".".join(x for x in (major, minor, _label(labels, prefix + rev)) if x)
                break
    if full is None:
        return None, None
    try:
        if len(full) > 32:
            raise ValueError
        return DriverVersion.parse(full), None
    except ValueError:
        return None, f"driver label {full[:40]!r} is not a driver version"


def _cuda(labels: dict[str, Any]) -> Version | None:
    full = _label(labels, "nvidia.com/cuda.runtime-version.full")
    if full is None:
        for prefix in ("nvidia.com/cuda.runtime-version.", "nvidia.com/cuda.runtime."):
            major, minor = _label(labels, prefix + "major"), _label(labels, prefix + "minor")
            if major and minor:
                full = f"{major}.{minor}"
                break
    if full is None or not re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,3}", full):
        return None
    return Version(full)


def gfd_product(name: str) -> str:
    """A GPU name as GFD writes it in ``nvidia.com/gpu.product`` (its ``sanitise``)."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", name).split())


_GFD_NAMES: dict[tuple[str, int], dict[str, Any]] = {}


def _gfd_names(m: Matrix) -> dict[str, Any]:
    """The matrix's GPUs by their GFD product name (lower case), built once per matrix."""
    key = (m.revision, id(m))
    if key not in _GFD_NAMES:
        _GFD_NAMES.clear()
        _GFD_NAMES[key] = {gfd_product(n).lower(): g for g in m.gpus for n in (g.name, *g.names, *g.aliases)}
    return _GFD_NAMES[key]


def _gpus(labels: dict[str, Any], m: Matrix) -> tuple[tuple[HostGpu, ...], str | None]:
    product = _label(labels, "nvidia.com/gpu.product")
    count_text = _label(labels, "nvidia.com/gpu.count")
    if product is None and count_text is None:
        return (), None
    if count_text is None or not _INT.fullmatch(count_text) or not 0 < int(count_text) <= MAX_GPUS_PER_NODE:
        return (), (f"nvidia.com/gpu.count {str(count_text)[:20]!r} is not a count of GPUs (1 to "
                    f"{MAX_GPUS_PER_NODE} on one node)")
    major, minor = _label(labels, "nvidia.com/gpu.compute.major"), _label(labels, "nvidia.com/gpu.compute.minor")
    cc = None
    if major and minor and _INT.fullmatch(major) and _INT.fullmatch(minor):
        try:  # as fleet plan reads it back: a minor of 10 or more is no compute capability
            cc = Capability.parse(f"{int(major)}.{int(minor)}")
        except ValueError:
            return (), f"nvidia.com/gpu.compute.major/minor {major}.{minor} is not a compute capability"
    name = machine_text(product or "NVIDIA GPU", 128)
    # GFD's name is NVML's with blanks made '-': the matrix knows NVML's names
    plain = re.sub(r"-(MIG-.*|SHARED)$", "", name)
    known = _gfd_names(m).get(plain.lower()) or m.find_gpu(plain)
    if known is not None and (cc is None or known.compute_capability == cc):
        name = known.name
    if cc is None and known is not None:
        cc = known.compute_capability
    source = "k8s: GFD labels"
    gpus = tuple(HostGpu(index=i, name=name, compute_capability=cc, source=source,
                         cc_source=source if major else ("matrix" if cc else None)) for i in range(int(count_text)))
    return gpus, None


def _node(item: Any, i: int, m: Matrix, python: Version) -> FleetHost | Failed:
    where = f"items[{i}]"
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        raise InventoryError(f"{where}: expected a Node object with 'metadata'")
    name = clean_name(item["metadata"].get("name"), f"{where}.metadata.name")
    labels = item["metadata"].get("labels") or {}
    if not isinstance(labels, dict):
        raise InventoryError(f"{where}.metadata.labels: expected an object")
    status: dict[str, Any] = item["status"] if isinstance(item.get("status"), dict) else {}
    node_info: dict[str, Any] = status["nodeInfo"] if isinstance(status.get("nodeInfo"), dict) else {}
    arch_text = _label(labels, "kubernetes.io/arch", "beta.kubernetes.io/arch") or node_info.get("architecture")
    machine = _ARCH.get(str(arch_text))
    if machine is None:
        return Failed(host=name, why=f"CPU architecture {str(arch_text)[:20]!r} is not amd64 or arm64")
    gpus, why = _gpus(labels, m)
    driver, dwhy = _driver(labels)
    why = why or dwhy
    if why:
        return Failed(host=name, why=why)
    if gpus and driver is None:
        return Failed(host=name, why="GPU labels without the driver's (GFD's nvidia.com/cuda.driver-version.* "
                                     "or nvidia.com/cuda.driver.*)")
    host = Host(driver=DriverInfo(version=driver, cuda=_cuda(labels), source="k8s: GFD labels" if driver else None,
                                  cuda_source="k8s: GFD labels" if driver else None),
                gpus=gpus, python=python, platform=PlatformInfo(os="linux", machine=machine),
                problems=(f"python: GFD does not publish it; {python} assumed",))
    return FleetHost(name=name, host=host, source="k8s")


def hosts_from_nodes(doc: object, m: Matrix, python: Version) -> Inventory:
    """A ``kubectl get nodes -o json`` document (a ``List`` or ``NodeList``), or one ``Node`` -> Inventory."""
    if isinstance(doc, dict) and doc.get("kind") == "Node":
        doc = {"items": [doc]}
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise InventoryError("expected kubectl get nodes -o json output (an object with 'items')")
    hosts: list[FleetHost] = []
    failed: list[Failed] = []
    names: set[str] = set()
    for i, item in enumerate(doc["items"]):
        got = _node(item, i, m, python)
        if isinstance(got, FleetHost) and got.name in names:  # fleet plan needs each name once
            got = Failed(host=got.name, why=f"items[{i}]: a second node of this name (a cluster's node names are "
                                            "unique): the first one is kept")
        if isinstance(got, FleetHost):
            hosts.append(got)
            names.add(got.name)
        else:
            failed.append(got)
    return Inventory(hosts=tuple(hosts), failed=tuple(failed))
