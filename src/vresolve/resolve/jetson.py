"""Jetson: the JetPack decides what runs, never the generic aarch64 (SBSA) wheels alone. Pure.

A Jetson's CUDA driver and libraries are Jetson Linux's (L4T), so the CUDA it serves is its JetPack's,
not a desktop driver branch's. Up to JetPack 6 that CUDA is L4T's own build: the aarch64 wheels of
PyPI, the PyTorch index and vLLM's index (built for server ARM) do not run there, whatever their arch
lists say. The answer is NVIDIA's JetPack-specific torch and a vLLM built from source against it, or an
upgrade of JetPack, or a plain refusal. From JetPack 7 Jetson Thor runs CUDA's unified ARM build: the
generic wheels run there when their arch lists cover sm_110 and their CUDA is the JetPack's major.

Where the JetPack comes from: ``--jetpack``, else the L4T release detection read
(``/etc/nv_tegra_release``, ``nvidia-l4t-core``); a board named on the command line without either has
no JetPack, and the answer covers each JetPack of its module.

These are facts the one resolver checks (:func:`.provider.resolve` asks :func:`jetson_answer`): the wheel
sets of the Jetson index are candidates like any index's, made into the resolver's own builds and
:class:`Resolution`; this module never calls the resolver.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec
from msgspec.structs import replace
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..host import DriverInfo, Host, HostGpu
from ..matrix import Gpu, Matrix
from ..matrix.model import JetPack, JetsonWheels, TorchRelease, TorchVariant, VllmRelease
from ..values import Capability, exact_pin
from .candidates import Jetson, JetsonWheelChoice, Request, Resolution, TorchBuild, VllmBuild
from .explain import Cause, NoCompatibleStack

__all__ = ["Jetson", "jetson_of", "jetson_answer", "UnifiedArm", "refusal", "find_jetpack", "with_board_gpu",
           "effective_jetpack", "runs_unified_arm", "JetsonWheelChoice", "jetson_wheel_choice", "wheel_resolution",
           "index_wheels", "is_jetson", "jetson_by_capability", "capability_only_jetson", "named_by_capability"]


def find_jetpack(matrix: Matrix, text: str) -> JetPack | None:
    """The JetPack row of a version ("6.2", "6.2.0"), or None."""
    try:
        v = Version(text)
    except ValueError:
        return None
    return next((j for j in matrix.jetpacks if j.version == v), None)


def _module_of(host: Host, matrix: Matrix) -> tuple[Gpu, HostGpu | None] | None:
    for g in host.gpus:
        row = matrix.find_gpu(g.name)
        if row is not None and row.segment == "jetson":
            return row, g
    board = (host.platform.jetson or "").lower()
    # a Jetson whose GPU was not listed (no NVML before JetPack 6): the board's name names the module
    named = [(len(a), row) for row in matrix.gpus if row.segment == "jetson"
             for a in (row.name, *row.aliases) if board and len(a) > 3 and a.lower() in board]
    if named:
        return max(named, key=lambda x: x[0])[1], None
    # neither (a pasted L4T release alone): the module, when its JetPack supports only one (JetPack 6: Orin)
    jp = _from_l4t(matrix, host.platform.l4t, None)[0] if host.platform.l4t is not None else None
    only = [matrix.find_gpu(m) for m in jp.modules] if jp is not None and len(jp.modules) == 1 else []
    return (only[0], None) if only and only[0] is not None else None


def with_board_gpu(host: Host, matrix: Matrix) -> Host:
    """A detected Jetson whose GPU no probe listed (no NVML/nvidia-smi before JetPack 6): its module's GPU, named
    by the board (the device tree's model), so that it is planned as a Jetson and not for the CPU backend."""
    if host.gpus or not host.platform.jetson:
        return host
    found = _module_of(host, matrix)
    if found is None:
        return host
    row = found[0]
    return replace(host, gpus=(HostGpu(index=0, name=row.name, compute_capability=row.compute_capability,
                                       source="device tree model", cc_source="matrix"),))


def jetson_by_capability(matrix: Matrix, cc: Capability) -> Gpu | None:
    """The Jetson module whose GPU alone has this compute capability (8.7: Orin, 7.2: Xavier, 5.3/6.2: the Tegra
    X1/X2 boards), or None: a capability that some other GPU of gpus.yaml has too (9.0: GH200 and the Hopper
    cards), or none has, names no Jetson."""
    rows = [g for g in matrix.gpus if (g.compute_capability.major, g.compute_capability.minor) == (cc.major, cc.minor)]
    return rows[0] if len(rows) == 1 and rows[0].segment == "jetson" else None


def capability_only_jetson(g: HostGpu, matrix: Matrix) -> Gpu | None:
    """The Jetson module a GPU known only by its capability is (``--gpu sm_87``, an inventory's GPU whose name
    the matrix does not know), or None (a GPU the matrix knows by name, or a capability not only a Jetson's)."""
    if g.compute_capability is None or matrix.find_gpu(g.name) is not None:
        return None
    return jetson_by_capability(matrix, g.compute_capability)


def named_by_capability(host: Host, matrix: Matrix) -> Host:
    """An aarch64 host's GPUs known only by a capability that only a Jetson module has, renamed as that module's
    GPU (as ``--gpu "Jetson AGX Orin"`` names it), so that the host is planned as that Jetson and not with the
    server-ARM (SBSA) wheels. Other hosts are returned as they are: on x86_64 no GPU has such a capability, which
    is the caller's to refuse."""
    if host.platform.machine != "aarch64":
        return host
    gpus = tuple(replace(g, name=row.name, compute_capability=row.compute_capability, cc_source="matrix") if (row := capability_only_jetson(g, matrix)) else g
                 for g in host.gpus)
    return replace(host, gpus=gpus) if gpus != host.gpus else host


def _from_l4t(matrix: Matrix, l4t: Version, module: Gpu | None) -> tuple[JetPack | None, tuple[str, ...]]:
    exact = next((j for j in matrix.jetpacks if l4t in j.l4t), None)
    if exact is not None:
        return exact, ()
    # an L4T update the matrix does not list: the newest JetPack of the same L4T major.minor
    near = [j for j in matrix.jetpacks if any((x.major, x.minor) == (l4t.major, l4t.minor) for x in j.l4t)
            and (module is None or module.name in j.modules)]
    if near:
        j = near[-1]
        return j, (f"L4T {l4t} is not in the matrix; read as JetPack {j.version} (L4T "
                   f"{', '.join(map(str, j.l4t))}), the newest JetPack of L4T {l4t.major}.{l4t.minor}",)
    return None, (f"L4T {l4t} is not in the matrix: its JetPack, and so its CUDA, are not known",)


def jetson_of(host: Host, matrix: Matrix, jetpack: str | None = None) -> Jetson | None:
    """The Jetson this host is, or None: a GPU of gpus.yaml's jetson segment, or a board detection found."""
    found = _module_of(host, matrix)
    if found is None:
        if host.platform.jetson or host.platform.l4t is not None:
            raise NoCompatibleStack(
                f"this is a Jetson ({host.platform.jetson or 'board unknown'}) whose module the matrix does not know",
                causes=[Cause("jetson", "a Jetson's CUDA is its JetPack's: the generic aarch64 wheels are not "
                                        "planned for it")],
                hints=["name its GPU with --gpu (Jetson AGX Orin, Jetson AGX Thor, Jetson Xavier NX, ...)"])
        return None
    module, gpu = found
    if jetpack is not None:
        jp = find_jetpack(matrix, jetpack)
        if jp is None:
            known = ", ".join(str(j.version) for j in matrix.jetpacks) or "none"
            raise NoCompatibleStack(f"JetPack {jetpack} is not in the matrix", causes=[f"known JetPacks: {known}"],
                                    hints=["give one of the known JetPacks with --jetpack"])
        return Jetson(module=module, gpu=gpu, jetpack=jp, how=f"--jetpack {jetpack}")
    l4t = host.platform.l4t
    if l4t is None:
        return Jetson(module=module, gpu=gpu, jetpack=None, how="")
    jp, warnings = _from_l4t(matrix, l4t, module)
    return Jetson(module=module, gpu=gpu, jetpack=jp, warnings=warnings,
                  how=f"L4T {l4t} from {host.platform.l4t_source or 'detection'}")


def _jetpacks_of(matrix: Matrix, j: Jetson) -> list[JetPack]:
    return [jp for jp in matrix.jetpacks if j.module.name in jp.modules]


def _unverified(jp: JetPack) -> str:
    return "" if jp.provenance.trusted else " (unverified)"


def _sbsa(j: Jetson, jp: JetPack) -> bool:
    return j.module.name in jp.sbsa_modules


# -------------------------------------------------------------------------------------- the SBSA path (Thor)


class UnifiedArm(msgspec.Struct, frozen=True, kw_only=True):
    """A Jetson whose JetPack runs CUDA's unified ARM build (Thor): the resolver resolves the generic aarch64 builds
    for ``host`` under ``request`` (the JetPack's CUDA major only), then :meth:`finish` says why and what to mind."""

    host: Host
    request: Request
    jetson: Jetson
    jetpack: JetPack
    assumed: bool
    driver: object  # the driver the machine reported (L4T's), or None

    def finish(self, res: Resolution) -> Resolution:
        j, jp = self.jetson, self.jetpack
        warnings = list(j.warnings)
        if self.assumed:
            warnings.append(f"the JetPack of this {j.module.name} is not known: planned for JetPack {jp.version} "
                            f"(CUDA {jp.cuda}), the first for it; give --jetpack, or plan on the board (--gpu auto)")
        if self.driver is not None:
            warnings.append(f"a Jetson's driver {self.driver} is L4T's, not a desktop branch: read as serving "
                            f"JetPack {jp.version}'s CUDA {jp.cuda}")
        if not jp.provenance.trusted:
            warnings.append(f"JetPack {jp.version}'s facts in the matrix are unverified")
        cuda = res.cuda
        if cuda is not None and (cuda.major, cuda.minor) > (jp.cuda.major, jp.cuda.minor):
            warnings.append(f"this stack's CUDA {cuda} is newer than JetPack {jp.version}'s CUDA {jp.cuda}: it relies "
                            "on minor-version compatibility, which the matrix has not verified on Jetson")
        reason = (f"{j.module.name} (sm_{j.cc.major}{j.cc.minor}) under JetPack {jp.version}{_unverified(jp)} runs "
                  f"CUDA's unified ARM (SBSA) build {jp.cuda}: the generic aarch64 wheels run there when their arch "
                  f"lists cover sm_{j.cc.major}{j.cc.minor}" + (f" ({j.how})" if j.how else ""))
        return replace(res, warnings=(*res.warnings, *warnings), reasons=(reason, *res.reasons))


def _unified_arm(host: Host, matrix: Matrix, request: Request, j: Jetson, jp: JetPack, assumed: bool
                 ) -> UnifiedArm:
    tk = matrix.toolkit(jp.cuda)
    floor = tk.min_driver.linux if tk is not None else None
    drv = DriverInfo(version=floor, cuda=jp.cuda, source=f"JetPack {jp.version}: L4T's driver serves CUDA {jp.cuda}")
    h = replace(host, driver=drv, platform=replace(host.platform, os="linux", machine="aarch64"))
    why = (f"{j.module.name} under JetPack {jp.version} runs CUDA {jp.cuda.major}.x builds only (the unified ARM "
           f"CUDA of its JetPack; other CUDA majors' aarch64 builds are not built for it)")
    return UnifiedArm(host=h, request=replace(request, cuda_major=jp.cuda.major, cuda_major_why=why, generic=True),
                      jetson=j, jetpack=jp, assumed=assumed, driver=host.driver.version)


# -------------------------------------------------------------------------- the JetPack-specific path (Orin, Xavier)


class _Way(msgspec.Struct, frozen=True):
    """A vLLM release that builds from source for this module against a torch NVIDIA publishes for a JetPack."""

    jetpack: JetPack
    torch: str
    vllm: VllmRelease


def _pin(r: VllmRelease) -> Version | None:
    return exact_pin(r.pins("linux-aarch64").get("torch")) or exact_pin(r.pins("linux-x86_64").get("torch"))


def _way(matrix: Matrix, jp: JetPack, cc: Capability, request: Request) -> _Way | None:
    """The newest vLLM (of the request) whose torch pin has the major.minor of a JetPack torch for the JetPack's
    Python, and whose CMake builds for ``cc`` with the JetPack's nvcc."""
    torches = {(Version(t.version).major, Version(t.version).minor): t.version for t in jp.torch
               if t.python == jp.python}
    for r in sorted(matrix.vllm, key=lambda r: r.version, reverse=True):
        if request.vllm and not request.vllm.contains(r.version, prereleases=True):
            continue
        pin, build = _pin(r), r.build
        if pin is None or build is None or not build.use_existing_torch:
            continue
        rp = r.requires_python
        if rp is not None and not rp.contains(str(jp.python), prereleases=True):
            continue
        archs = build.archs_for(jp.cuda) or ()
        if (pin.major, pin.minor) in torches and any(a.major == cc.major and a.minor <= cc.minor for a in archs):
            return _Way(jetpack=jp, torch=torches[(pin.major, pin.minor)], vllm=r)
    return None


def _install_torch_hint(jp: JetPack, index: str | None, version: str) -> str:
    """Install the JetPack's torch ``version`` (the one the vLLM to build pins, by major.minor)."""
    url = _path_url(index, jp.index_path) if index and jp.index_path else index
    where = f"--index-url {url}" if url else "--index-url <the Jetson index>"
    tail = "" if url else (" (the Jetson AI Lab index" + (f", its {jp.index_path} path" if jp.index_path else "")
                           + ": give it with --jetson-index URL to have it written here)")
    return f"install JetPack {jp.version}'s torch: python{jp.python} -m pip install 'torch=={version}' {where}{tail}"


def _torch_cause(jp: JetPack) -> str:
    if not jp.torch:
        return f"no JetPack-specific torch is known for JetPack {jp.version}"
    return (f"torch built for JetPack {jp.version} (Python {jp.python}): {', '.join(t.version for t in jp.torch)}"
            f"{_unverified(jp)}")


def _refuse(matrix: Matrix, request: Request, j: Jetson, index: str | None, host_driver: object = None,
            wheels: bool = True) -> NoCompatibleStack:
    jps = _jetpacks_of(matrix, j)
    sm = f"sm_{j.cc.major}{j.cc.minor}"
    known = ", ".join(str(x.version) for x in jps if not _sbsa(j, x))
    on = (f"JetPack {j.jetpack.version} (CUDA {j.jetpack.cuda}, {j.how})" if j.jetpack else
          f"every JetPack the matrix knows for it ({known})" if known else
          "its JetPack (the matrix lists no JetPack for this module: JetPack 4 and older are not in it)")
    causes = [Cause("jetson", f"{j.module.name} ({sm}) under {on} runs L4T's own CUDA build, not the server-ARM (SBSA) "
                              "CUDA that the aarch64 wheels of PyPI, the PyTorch index and vLLM's index are built for: "
                              "no generic wheel is planned for it")]
    causes += [Cause("jetson", w) for w in j.warnings]
    if host_driver is not None:
        causes.append(Cause("jetson", f"driver {host_driver} is L4T's, not a desktop branch: the CUDA it serves is its "
                                      "JetPack's"))
    hints: list[str] = []
    if j.jetpack is not None:
        current = [j.jetpack]
    else:  # not known: the newest JetPack of this module that gives a way (trusted first), else the newest
        ways = sorted((jp for jp in jps if not _sbsa(j, jp) and _way(matrix, jp, j.cc, request) is not None),
                      key=lambda jp: (jp.provenance.trusted, jp.version))
        current = ways[-1:] or [jp for jp in jps if not _sbsa(j, jp)][-1:]
        if current:
            causes.append(Cause("jetson", f"the JetPack is not known (give --jetpack, or plan on the board with "
                                          f"--gpu auto): the way below is JetPack {current[0].version}'s"))
    for jp in current:
        if wheels:
            _wheel_way(matrix, request, j, jp, causes, hints)
        causes.append(Cause("jetson", _torch_cause(jp)))
        way = _way(matrix, jp, j.cc, request)
        if way is None:
            causes.append(Cause("jetson", f"no vLLM release in the matrix pins a torch published for JetPack "
                                          f"{jp.version} and builds for {sm} with its nvcc {jp.cuda}"))
            continue
        hint = _install_torch_hint(jp, index, way.torch)
        hints.append(hint if j.jetpack is not None else f"on JetPack {jp.version}: {hint}")
        hints.append(f"then build vLLM {way.vllm.version} (it pins torch {_pin(way.vllm)}; use_existing_torch.py drops "
                     f"the pin) from source against that "
                     f"torch on the board: vresolve plan --gpu auto --keep-torch --vllm =={way.vllm.version} (L4T's "
                     f"nvcc {jp.cuda} in /usr/local/cuda, TORCH_CUDA_ARCH_LIST={j.cc.major}.{j.cc.minor})")
    if j.jetpack is not None:
        newer = [jp for jp in jps if jp.version > j.jetpack.version]
        hints += [("or " if hints else "") + h for h in _upgrade_hints(matrix, request, j, newer)]
    if not hints:
        hints.append(f"none: no JetPack for {j.module.name} in the matrix has a torch that a vLLM release builds "
                     f"against for {sm}; vLLM does not run on it short of building torch and vLLM from source "
                     f"(JetPacks known for it: {', '.join(str(jp.version) for jp in jps) or 'none'})")
    what = f"vLLM {request.vllm}".rstrip() if request.vllm else "vLLM"
    return NoCompatibleStack(f"no generic aarch64 wheel of {what} runs on this Jetson ({j.module.name}, {sm}): "
                             "its CUDA is its JetPack's", causes=causes, hints=hints)


def _wheel_way(matrix: Matrix, request: Request, j: Jetson, jp: JetPack, causes: list[Cause], hints: list[str]
               ) -> None:
    """The Jetson index's wheels for this JetPack, when the answer is not already them: the JetPack was not known,
    or the request asks for a vLLM or torch none of them is."""
    allowed = index_wheels(matrix, j.module.name, jp, request)
    if allowed:
        causes.append(Cause("jetson", _wheel_cause(allowed[0], jp)))
        hints.append(f"on JetPack {jp.version}: install them, vresolve plan --gpu auto --jetpack {jp.version} "
                     "--jetson-index URL")
        return
    any_ = index_wheels(matrix, j.module.name, jp, Request())
    if any_:
        have = ", ".join(str(w.vllm) for w in any_)
        causes.append(Cause("jetson", f"the Jetson index's {any_[0].path} path has vLLM {have} for JetPack "
                                      f"{jp.version}: not what --vllm/--torch ask for"))
        hints.append(f"ask for the vLLM it has: --vllm =={any_[0].vllm.public} (with --jetson-index URL)")


def _upgrade_hints(matrix: Matrix, request: Request, j: Jetson, newer: Sequence[JetPack]) -> list[str]:
    out = []
    for jp in reversed(newer):  # the newest JetPack that gives a way
        sets = index_wheels(matrix, j.module.name, jp, request)
        if sets and j.jetpack is not None and sets[0] in index_wheels(matrix, j.module.name, j.jetpack, request):
            break  # the JetPack it runs has the same wheels: an upgrade gives nothing more
        if sets and not _sbsa(j, jp):
            out.append(f"upgrade JetPack to {jp.version}{_unverified(jp)} (L4T {', '.join(map(str, jp.l4t))}), for "
                       f"which the Jetson index's {sets[0].path} path has vLLM {sets[0].vllm} with torch "
                       f"{sets[0].torch}")
            break
        if _sbsa(j, jp):
            out.append(f"upgrade to JetPack {jp.version}{_unverified(jp)}, whose unified ARM CUDA {jp.cuda} "
                       "runs the generic aarch64 wheels that cover it")
            break
        way = _way(matrix, jp, j.cc, request)
        here = _way(matrix, j.jetpack, j.cc, request) if j.jetpack is not None else None
        if way is not None and (here is None or (here.vllm, here.torch) != (way.vllm, way.torch)):
            out.append(f"upgrade JetPack to {jp.version}{_unverified(jp)} (L4T "
                       f"{', '.join(map(str, jp.l4t))}) to build vLLM {way.vllm.version} against its torch "
                       f"{way.torch} there")
            break
        if way is not None:
            break  # the JetPack it runs has the same way: an upgrade gives nothing more
    return out


# ------------------------------------------------------------------ the Jetson index's wheels (Orin on JetPack 6)


def is_jetson(host: Host, matrix: Matrix) -> bool:
    """Whether this host is a Jetson (a board detection found, an L4T release, or a Jetson module's GPU): its
    JetPack decides its stack, so it never shares one with other machines."""
    return bool(host.platform.jetson or host.platform.l4t is not None or _module_of(host, matrix) is not None)


def index_wheels(matrix: Matrix, module: str, jp: JetPack, request: Request) -> list[JetsonWheels]:
    """The wheel sets of the Jetson index for this module under this JetPack that the request allows: newest vLLM
    first, those of trusted rows before unverified ones."""
    out = [w for w in matrix.jetson_wheels_for(jp.version, module)
           if request.vllm.contains(w.vllm, prereleases=True) and request.torch.contains(w.torch, prereleases=True)]
    return sorted(out, key=lambda w: (w.provenance.trusted, w.vllm), reverse=True)


# a path of the Jetson index at the end of a URL the user gave (with pip's or devpi's simple suffix)
_PATH_AT_END = re.compile(r"/((?:jp\d{1,2}|sbsa)/cu\d{3,4})(?:/\+simple|/simple)?/?$")


def _path_url(index: str, path: str) -> str:
    """The URL of an index path: the index given is its root, or already names that path (else NoCompatibleStack)."""
    m = _PATH_AT_END.search(index)
    if m is None:
        return f"{index.rstrip('/')}/{path}"
    if m.group(1) != path:
        raise NoCompatibleStack(
            f"--jetson-index names the Jetson index's {m.group(1)} path; this JetPack's wheels are on {path}",
            causes=[Cause("jetson", f"a Jetson runs the wheels of its JetPack's path only ({path})")],
            hints=[f"give the index's root, or its {path} path, with --jetson-index"])
    return index.rstrip("/")


def _wheel_cause(w: JetsonWheels, jp: JetPack) -> str:
    return (f"the Jetson index's {w.path} path has vLLM {w.vllm} with torch {w.torch} for JetPack {jp.version} "
            f"(Python {w.python}, sm_{'/sm_'.join(f'{c.major}{c.minor}' for c in w.archs)}; seen {w.seen})")


def jetson_wheel_choice(host: Host, matrix: Matrix, request: Request) -> JetsonWheelChoice | None:
    """The Jetson index's wheels for this host, when it is a Jetson on L4T's own CUDA whose JetPack (known) has a
    wheel set the request allows; None otherwise (the other answers: :func:`jetson_answer`). Raises
    NoCompatibleStack when such wheels exist but no index was named: they are installed from it, not guessed."""
    if request.cpu or request.generic:
        return None
    j = jetson_of(host, matrix, request.jetpack)
    return None if j is None else _wheel_choice(host, matrix, request, j)


def _wheel_choice(host: Host, matrix: Matrix, request: Request, j: Jetson) -> JetsonWheelChoice | None:
    if j.jetpack is None or _sbsa(j, j.jetpack):
        return None
    jp = j.jetpack
    sets = index_wheels(matrix, j.module.name, jp, request)
    if not sets:
        return None
    w = sets[0]
    if request.jetson_index is None:
        raise NoCompatibleStack(
            f"vLLM {w.vllm} for this Jetson ({j.module.name}, JetPack {jp.version}) is on the Jetson AI Lab index: "
            "name it with --jetson-index",
            causes=[Cause("jetson", _wheel_cause(w, jp)), *(Cause("jetson", x) for x in j.warnings)],
            hints=[f"vresolve plan --gpu auto --jetson-index URL: the index's root, or its {w.path} path, as NVIDIA's "
                   "Jetson AI Lab pages give it (vresolve writes no index host of its own)",
                   *_refuse(matrix, request, j, None, host.driver.version, wheels=False).hints])
    index = _path_url(request.jetson_index, w.path)
    return JetsonWheelChoice(jetson=j, jetpack=jp, wheels=w, index=index, reasons=_wheel_reasons(host, j, jp, w),
                             warnings=(*j.warnings, *_wheel_warnings(host, jp, w, sets)))


def wheel_resolution(host: Host, request: Request, choice: JetsonWheelChoice) -> Resolution:
    """The Resolution of a wheel set of the Jetson index: its vLLM wheel and its torch as the resolver's builds (from
    the ``jetson-index``), every fact of the choice kept with it (:attr:`Resolution.index`)."""
    w, prov = choice.wheels, choice.wheels.provenance
    cu = w.path.rsplit("/", 1)[1]
    release = VllmRelease(version=Version(w.vllm.public), cuda=w.cuda, kernels=None, variants=(), wheels=(),
                          provenance=prov)
    vllm = VllmBuild(release=release, variant=cu, cuda=w.cuda, where="jetson-index", kernels=None, wheel=None,
                     pins={"torch": SpecifierSet(f"=={w.torch}")}, provenance=prov, trusted=prov.trusted,
                     label=f"vLLM {w.vllm} (the Jetson index's {w.path} path)")
    variant = TorchVariant(variant=cu, cuda=w.cuda, pypi_default=frozenset(), archs={}, provenance=prov)
    torch = TorchBuild(release=TorchRelease(version=w.torch, python=(w.python,), companions=w.companions,
                                            variants=(variant,), wheels=(), provenance=prov),
                       variant=variant, platform=host.platform.tag, pypi=False, where="jetson-index")
    return Resolution(host=host, request=request, vllm=vllm, torch=torch,
                      companions={k: str(v) for k, v in w.companions.items()}, cuda=w.cuda, min_driver=None,
                      ptx_gpus=(), glibc_floor=None, reasons=choice.reasons, warnings=choice.warnings,
                      turned_down=tuple, index=choice)


def _wheel_reasons(host: Host, j: Jetson, jp: JetPack, w: JetsonWheels) -> tuple[str, ...]:
    sm = f"sm_{j.cc.major}{j.cc.minor}"
    found = _wheel_cause(w, jp)
    out = [f"{j.module.name} ({sm}) under JetPack {jp.version} ({j.how or 'given'}) runs L4T's own CUDA {jp.cuda}: "
           "the generic aarch64 wheels are built for server ARM and do not run there",
           found[0].upper() + found[1:],
           f"one index for every package: the {w.path} path serves its own torch, vLLM and companions, and pip and "
           "uv cannot pick another index's build of the same version (PyPI's aarch64 torch of the same number is "
           "not L4T's)"]
    if not w.requires_torch:
        out.append(f"the vLLM wheel names no torch (built with use_existing_torch.py): torch {w.torch}, the one it "
                   "was built and run beside, is pinned in the same command")
    if host.python != w.python:
        out.append(f"the wheels are for Python {w.python} (JetPack {jp.version}'s python3): the environment is made "
                   f"with it, not with Python {host.python_minor}")
    if host.driver.version is not None:
        out.append(f"driver {host.driver.version} is L4T's, not a desktop branch: it serves JetPack {jp.version}'s "
                   f"CUDA {jp.cuda}")
    return tuple(out)


def _wheel_warnings(host: Host, jp: JetPack, w: JetsonWheels, sets: Sequence[JetsonWheels]) -> list[str]:
    out = []
    if w.provenance.verified != "primary":
        out.append(f"the Jetson index's wheels are known from files that name them (newest seen {w.seen}: "
                   f"{w.provenance.source[0]}), not read off the index itself, which vresolve cannot reach: the "
                   "index may have replaced or removed them; the verify step checks what was installed")
    if len(w.sha256) > 1:
        out.append(f"vllm-{w.vllm} was replaced on the index under the same name ({len(w.sha256)} sha256 seen): pin "
                   "it by version, not by a hash recorded elsewhere")
    if not jp.provenance.trusted:
        out.append(f"JetPack {jp.version}'s facts in the matrix are unverified")
    return out


def effective_jetpack(matrix: Matrix, j: Jetson) -> tuple[JetPack | None, bool]:
    """(the JetPack to plan for, whether it was assumed): the known one; else, where every JetPack of the module
    runs the unified ARM build (Thor), the first verified one; else None."""
    if j.jetpack is not None:
        return j.jetpack, False
    jps = _jetpacks_of(matrix, j)
    sbsa = [x for x in jps if _sbsa(j, x) and x.provenance.trusted]
    if sbsa and all(_sbsa(j, x) for x in jps):
        return sbsa[0], True
    return None, False


def runs_unified_arm(matrix: Matrix, j: Jetson) -> bool:
    """Whether the generic aarch64 (SBSA) builds are this Jetson's (a Thor under JetPack 7)."""
    jp, _ = effective_jetpack(matrix, j)
    return jp is not None and _sbsa(j, jp)


def refusal(host: Host, matrix: Matrix, request: Request, j: Jetson) -> NoCompatibleStack:
    """Why no generic wheel runs on this Jetson on L4T's own CUDA, and the way forward: the JetPack's torch and a
    source build, an upgrade of JetPack, or none."""
    return _refuse(matrix, request, j, request.jetson_index, host.driver.version)


def jetson_answer(host: Host, matrix: Matrix, request: Request) -> Resolution | UnifiedArm | None:
    """What a Jetson's facts answer, for the resolver: None (not a Jetson); the Resolution of its JetPack's wheel set
    of the Jetson index (when the request's ``own_index`` makes that index a source of candidates); the generic builds to resolve
    under its JetPack's CUDA (:class:`UnifiedArm`, a Thor); else NoCompatibleStack with the way forward."""
    j = jetson_of(host, matrix, request.jetpack)
    if j is None:
        return None
    choice = _wheel_choice(host, matrix, request, j) if request.own_index else None
    if choice is not None:
        return wheel_resolution(host, request, choice)
    jp, assumed = effective_jetpack(matrix, j)
    if jp is not None and _sbsa(j, jp):
        return _unified_arm(host, matrix, request, j, jp, assumed)
    raise refusal(host, matrix, request, j)
