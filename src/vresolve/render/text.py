"""The human output of every command, as rich renderables (colour off when not a TTY or NO_COLOR).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..host import Host, describe_gpus
from ..matrix import Matrix, Provenance
from ..names import INDEX_LABELS

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text


def _t(text: object, style: str = "", *, lines: bool = False) -> Text:
    """Untrusted text for the terminal: a Text (rich reads no markup in it, so ``[/]`` is just
    characters) with every control character escaped (no escape sequence reaches the terminal)."""
    from rich.text import Text

    from .shell import escape_controls

    return Text(escape_controls(str(text), lines=lines), style=style)


def _source_cell(p: Provenance) -> str:
    return p.verified + ("" if len(p.source) == 1 else f" ({len(p.source)} sources)")


def matrix_table_human(m: Matrix, table: str) -> Table:
    """A rich table of one matrix table, one line per row."""
    from rich.table import Table

    t = Table(title=_t(f"{table} ({m.path}, revision {m.revision})"), show_lines=False)
    columns, rows = _TABLES[table](m)
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*map(_t, row))
    return t


def _cuda_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    floors = {c.major: c.minor_compat_driver.linux for c in m.cuda_majors}
    return (("CUDA", "released", "min driver (Linux)", "minor-compat floor", "nvcc archs", "verified"),
            [(str(tk.version), tk.released or "unknown", str(tk.min_driver.linux or "unknown"),
              str(floors.get(tk.version.major, "?") or "none"), f"{tk.nvcc_lowest}..{tk.nvcc_highest}",
              _source_cell(tk.provenance)) for tk in m.toolkits])


def _gpu_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    return (("GPU", "aliases", "CC", "family", "segment", "verified"),
            [(g.name, ", ".join(g.aliases), str(g.compute_capability), g.family, g.segment,
              _source_cell(g.provenance)) for g in m.gpus])


def _torch_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    rows: list[tuple[str, ...]] = []
    for r in m.torch:
        pypi = ", ".join(f"{w.platform.split('-')[1]}:{w.cuda or 'cpu'}" for w in r.wheels)
        comps = "/".join(str(r.companions.get(k, "-")) for k in ("torchvision", "torchaudio", "triton"))
        rows.append((str(r.version), f"{r.python[0]}..{r.python[-1]}" if r.python else "",
                     pypi, " ".join(v.variant for v in r.variants), comps))
    return ("torch", "python", "PyPI CUDA", "variants", "vision/audio/triton"), rows


def _vllm_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    rows: list[tuple[str, ...]] = []
    for vr in m.vllm:
        pins = [str(vr.pins(p).get("torch", "-")).removeprefix("==") if vr.wheels_for(p) else "-"
                for p in ("linux-x86_64", "linux-aarch64")]
        rows.append((str(vr.version), str(vr.requires_python or ""), " / ".join(pins), str(vr.cuda or "-"),
                     str(vr.kernels.archs) if vr.kernels else "-", " ".join(v.variant for v in vr.variants),
                     _source_cell(vr.provenance)))
    return ("vLLM", "python", "torch pin (x86_64 / aarch64)", "CUDA", "kernels", "variants", "verified"), rows


def _issue_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    return ("id", "cause", "severity", "title"), [(k.id, k.cause, k.severity, k.title) for k in m.known_issues]


def _jetson_rows(m: Matrix) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    return (("JetPack", "L4T", "CUDA", "modules", "unified ARM (SBSA)", "python", "NVIDIA torch",
             "Jetson index vLLM", "verified"),
            [(str(j.version), ", ".join(map(str, j.l4t)), str(j.cuda), ", ".join(j.modules),
              ", ".join(j.sbsa_modules) or "-", str(j.python), ", ".join(t.version for t in j.torch) or "-",
              ", ".join(f"{w.vllm} (torch {w.torch}, {w.path})" for w in m.jetson_wheels_for(j.version)) or "-",
              _source_cell(j.provenance)) for j in m.jetpacks])


_TABLES = {"cuda": _cuda_rows, "gpus": _gpu_rows, "torch": _torch_rows, "vllm": _vllm_rows, "issues": _issue_rows,
           "jetson": _jetson_rows}


def detect_human(h: Host) -> Table:
    """The detected machine, one fact per line, with the source that answered it."""
    from rich.table import Table

    t = Table(title="this machine", show_header=True)
    t.add_column("fact")
    t.add_column("value")
    t.add_column("from")
    for row in (*_driver_rows(h), *_machine_rows(h), *_software_rows(h)):
        t.add_row(*map(_t, row))
    for problem in h.problems:
        t.add_row(_t("not learned", "dim"), _t(problem), "")
    return t


def _driver_rows(h: Host) -> list[tuple[str, str, str]]:
    d = h.driver
    rows = []
    if d.version is not None:
        rows.append(("NVIDIA driver", f"{d.version}" + (f" ({d.kernel_module} kernel module)" if d.kernel_module
                                                        else ""), d.source or ""))
        rows.append(("CUDA (driver)", str(d.cuda or "unknown"), d.cuda_source or ""))
    else:
        rows.append(("NVIDIA driver", "not answering" if d.state == "broken" else "none found", ""))
    if d.nvml_library_mismatch:
        rows.append(("NVML", "driver/library version mismatch"
                     + (f" (library {d.library_version})" if d.library_version else ""), ""))
    if d.broken:
        rows.append(("driver state", ("GPUs without a driver" if d.state == "not-installed"
                                      else "installed but not working") + f": {d.failure or 'no probe answered'}", ""))
        rows += [("evidence", e, "") for e in d.evidence]
    if not h.gpus:
        rows.append(("GPUs", "none", ""))
    for g in h.gpus:
        mem = f", {g.memory_mib / 1024:.0f} GiB" if g.memory_mib else ""
        cc = g.compute_capability.sm if g.compute_capability else "sm_?"
        src = g.source or ""
        if g.cc_source and g.cc_source != g.source:
            src += f" (capability: {g.cc_source})"
        rows.append((f"GPU {g.index}", f"{g.name} ({cc}{mem})", src))
    return rows


def _machine_rows(h: Host) -> list[tuple[str, str, str]]:
    p = h.platform
    hints = [x for x in ("WSL" if p.wsl else "", f"container: {p.container}" if p.container else "",
                         f"Jetson: {p.jetson}" if p.jetson else "") if x]
    rows = [("platform", p.tag + (f", glibc {p.glibc}" if p.glibc else "")
             + (f" ({', '.join(hints)})" if hints else ""), ""),
            ("Python", str(h.python), h.python_executable or "")]
    if p.l4t is not None:  # a Jetson: its CUDA is the JetPack's of this L4T release (compat_matrix/jetson.yaml)
        rows.append(("Jetson Linux", f"L4T {p.l4t}", p.l4t_source or ""))
    if h.cpu_count or h.memory_mib:
        rows.append(("CPU / memory", f"{h.cpu_count} cores, {(h.memory_mib or 0) / 1024:.1f} GiB", ""))
    return rows


def _software_rows(h: Host) -> list[tuple[str, str, str]]:
    rows = [("CUDA toolkit", f"{tk.version} at {tk.path}", tk.source) for tk in h.toolkits]
    rows += [(dist.name, dist.version + (f" (CUDA {dist.cuda})" if dist.cuda else ""), dist.location or "")
             for dist in h.installed]
    tr = h.torch_runtime
    if tr is not None:
        rows.append(("torch (runtime)", tr.error, "import torch") if tr.error else
                    ("torch (runtime)", f"{tr.version}, CUDA {tr.cuda}, available={tr.available}, "
                                        f"archs {' '.join(tr.arch_list) or '-'}", "import torch"))
    rows += [(k, v, "build tool") for k, v in h.tools]
    rows += [(k, v, "environment") for k, v in h.env]
    return rows


def plan_human(p: Any, detected_by: str, *, uv: str = "uv", apply: Sequence[str] | None = None) -> list[Any]:
    """Renderables: the stack table, then why, then copy-pasteable commands, the checks (one line each: what,
    and the line it prints), and the next step. ``uv``: the uv command that exists here (the steps name it);
    ``apply``: the flags of this plan, for the line that says ``vresolve apply`` with them runs it."""
    from rich.text import Text

    from .shell import _with_uv, render_install_script, sh_value, shell_line

    r = p.resolution
    if p.checks:  # checks before the install: the plan is shown as its script, which runs them first
        return _recipe_human(stack_table(r, detected_by), p, render_install_script(p, uv), apply)
    out: list[Any] = [stack_table(r, detected_by), Text("Why:", style="bold")]
    out += [_t(f"  - {x}") for x in r.reasons]
    if r.warnings:
        out.append(Text("Warnings:", style="bold yellow"))
        out += [_t(f"  ! {x}") for x in r.warnings]
    out.append(_t(f"Install ({p.installer}, into {p.env_dir}):", "bold"))
    for s in p.steps:
        out += [_t(f"  # {s.why}", "dim"), _t(f"  {shell_line(_with_uv(s.argv, uv))}", lines=True)]
    if p.env:
        out.append(Text("Environment:", style="bold"))
        for (k, v), (_, why) in zip(p.env, p.env_reasons, strict=True):
            out += [_t(f"  # {why}", "dim"), _t(f"  export {k}={sh_value(v)}", lines=True)]
    out += verify_human(p.verify)
    if p.alternatives:
        out.append(Text("Alternatives:", style="bold"))
        out += [_t(f"  - vLLM {a.vllm.version} + torch {a.torch.version}+{a.torch.variant.variant}: {why}")
                for a, why in p.alternatives]
    if apply is not None:
        out.append(next_step(apply))
    return out




def verify_human(checks: Sequence[Any]) -> list[Any]:
    """The checks, one line each: what it checks and the line it prints when it passes (their commands are in
    ``--json``; ``vresolve apply`` runs them)."""
    from rich.text import Text

    if not checks:
        return []
    out: list[Any] = [Text("Verify (each prints the quoted line; --json has their commands):", style="bold")]
    for c in checks:
        gpu = " (needs the GPUs)" if c.needs_gpu else ""
        out.append(_t(f"  - {c.name}{gpu}: {c.expect!r}"))
    return out


def next_step(flags: Sequence[str], what: str = "this plan") -> Text:
    """The line that names the next step: ``vresolve apply`` with this plan's flags runs the plan and its checks."""
    from .shell import shell_line

    return _t(f"Next: {shell_line(('vresolve', 'apply', *flags))} runs {what}, then its checks", "bold")


def stack_table(r: Any, detected_by: str) -> Table:
    from rich.table import Table

    if r.index is not None:
        return _index_table(r, detected_by)
    t = Table(title=_t(f"vLLM stack for {_machine_line(r.host)} ({detected_by})"))
    # every cell a Text: a str cell is read as markup with emoji codes (rich then loads its table of ~3,600 emoji
    # names, ~5 ms of a cold plan), and none of these is markup
    for col in ("package", "version", "build / from"):
        t.add_column(_t(col))
    torch_from = INDEX_LABELS["pypi" if r.torch.pypi else "pytorch"]
    rows = [("vllm", str(r.vllm.version), f"{r.vllm.variant}, {INDEX_LABELS[r.vllm.where]}"),
            ("torch", str(r.torch.version), f"{r.torch.variant.variant}, {torch_from}")]
    rows += [(k, v, "pinned by the vLLM wheel") for k, v in r.companions.items()]
    for row in rows:
        t.add_row(*map(_t, row))
    needs = _t("needs", "bold")
    if r.cuda is not None:
        floor = f"NVIDIA driver >= {r.min_driver}" if r.min_driver else "a driver the matrix cannot name"
        t.add_row(needs, _t(floor), _t(f"CUDA {r.cuda}, {r.request.driver_policy} policy"))
    else:
        t.add_row(needs, _t("no GPU, no driver"), _t("the CPU backend"))
    if r.glibc_floor is not None:
        by = f" ({', '.join(r.glibc_by)})" if r.glibc_by else ""
        t.add_row(_t(""), _t(f"glibc >= {r.glibc_floor}"),
                  _t(f"manylinux_{r.glibc_floor.major}_{r.glibc_floor.minor} wheels{by}"))
    return t


def _machine_line(h: Host) -> str:
    gpus = describe_gpus(h.gpus, capability=False) or "no GPU"
    drv = f"driver {h.driver.version}" if h.driver.version else "driver not given"
    return f"{gpus}, {drv}, Python {h.python_minor}, {h.platform.tag}"


def error_human(err: Any) -> str:
    """pip-style diagnostic text for NoCompatibleStack."""
    return f"error: {err.code}\n" + err.format(head="  × ", causes_head="  ╰─> ", hints_head="  hint: ",
                                               indent="        ")


def source_plan_human(p: Any, detected_by: str, *, uv: str = "uv", apply: Sequence[str] | None = None) -> list[Any]:
    """A source build: its table, why, and the recipe; ``uv``, ``apply``: as for :func:`plan_human`."""
    from .shell import render_script

    return _recipe_human(source_table(p, detected_by), p, render_script(p, uv), apply)


def _index_table(r: Any, detected_by: str) -> Table:
    """A wheel set of a target's own index: what is installed from which path of the Jetson index, for which
    JetPack."""
    from rich.table import Table

    c, w = r.index, r.index.wheels
    t = Table(title=_t(f"vLLM for {_machine_line(r.host)} ({detected_by})"))
    for col in ("package", "version", "from"):
        t.add_column(_t(col))
    where = f"the Jetson index's {w.path} path"
    for row in (("vllm", str(w.vllm), where), ("torch", str(w.torch), where),
                *((k, str(v), where) for k, v in sorted(w.companions.items()))):
        t.add_row(*map(_t, row))
    t.add_row(*map(_t, ("JetPack", str(c.jetpack.version), f"L4T's CUDA {c.jetpack.cuda}")))
    return t


class Commented:
    """Renderables shown as shell comment lines: each line they render to starts with :func:`.shell.comment`'s
    marker, so that a recipe's whole human view, pasted or piped into a shell, runs only the recipe's commands
    (a GPU name holding ``$(...)`` in the title stays inside a comment)."""

    def __init__(self, *items: Any) -> None:
        self.items = items

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        from .shell import comment

        prefix = comment("")
        inner = options.update(width=max(8, options.max_width - len(prefix)))
        for item in self.items:
            for line in Segment.split_lines(console.render(item, inner)):  # (not cropped: soft wrap stays)
                yield Segment(prefix)
                yield from line
                yield Segment.line()


def _recipe_human(table: Any, p: Any, script: str, apply: Sequence[str] | None = None) -> list[Any]:
    """A recipe's human view: every line but the script's a comment (the script's own are comments or commands)."""
    from rich.text import Text

    head: list[Any] = [table, Text("Why:", style="bold")]
    head += [_t(f"  - {x}") for x in p.reasons]
    if p.warnings:
        head.append(Text("Warnings:", style="bold yellow"))
        head += [_t(f"  ! {x}") for x in p.warnings]
    head.append(Text("Recipe (bash):", style="bold"))
    out: list[Any] = [Commented(*head), _t(script, lines=True)]
    if apply is not None:
        out.append(Commented(next_step(apply, "the recipe")))
    return out


def source_table(p: Any, detected_by: str) -> Table:
    """The table that heads a source plan: what is built, against what, with how many jobs."""
    from rich.table import Table

    t = Table(title=_t(f"vLLM source build for {_machine_line(p.host)} ({detected_by})"))
    for col in ("what", "choice"):
        t.add_column(_t(col))
    rows = [("vllm", f"{p.vllm.version} (git tag v{p.vllm.version})"),
            ("torch", p.torch_version + (" (kept)" if p.keep_torch else ""))]
    if p.toolkit is not None:
        rows += [("CUDA toolkit", f"{p.toolkit.version} at {p.cuda_home}"),
                 ("TORCH_CUDA_ARCH_LIST", ";".join(str(c) for c in p.archs))]
    if p.max_jobs == 0:
        rows.append(("kernels", "precompiled (VLLM_USE_PRECOMPILED=1): nothing is compiled"))
    else:
        rows.append(("MAX_JOBS / NVCC_THREADS", f"{p.max_jobs} / {p.nvcc_threads}" if p.max_jobs is not None
                     else "computed on the build machine from its memory and cores"))
    if p.min_driver:
        rows.append(("needs", f"NVIDIA driver >= {p.min_driver}"))
    for row in rows:
        t.add_row(*map(_t, row))
    return t


def likely_words(lead: Any) -> str:
    """A "cause not named" entry's lead, in words: the cause such lines most often had, and how often."""
    others = f"; {lead.others}" if lead.others else ""
    return (f"most often, in labelled public reports showing {lead.lines}: {lead.cause} ({lead.were} of {lead.of}"
            f"{others}); a base rate to check first, not settled by this paste")


def doctor_human(findings: Any, host: Host, env: Any, unclear: Any = (), unknown: frozenset[str] = frozenset(),
                 *, checked: bool = True, nothing: str | None = None) -> list[Any]:
    """One screen: what was checked (unless ``checked`` is false), then each finding with its evidence and fix,
    then the errors whose cause the text does not settle (with what to paste); ``nothing``: why there was no stack
    to check (said instead of "no problems found")."""
    from rich.text import Text

    style = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
    out: list[Any] = []
    from ..doctor import observations

    if checked:
        out.append(Text("checked:", style="bold"))
        out += [_t(f"  - {line}") for line in observations(host, env, unknown)]
    if nothing:
        out.append(_t(nothing, "bold yellow"))
    elif not findings and not unclear:
        out.append(Text("no problems found", style="bold green"))
    for f in findings:
        out.append(_t(f"{f.severity}: {f.title} [{f.cause}]" + (" (from the log)" if f.source == "log" else ""),
                      style[f.severity]))
        out.append(_t(f"  {f.explanation}", lines=True))
        for ev in f.evidence:
            out.append(_t(f"  > {ev}", "dim"))
        out.append(_t("  fix: " + f.fix.replace("\n", "\n       "), lines=True))
    for u in unclear:
        out.append(_t(f"error, cause not named: {u.error}", style["error"]))
        out.append(_t(f"  not shown: {u.missing}", lines=True))
        for ev in u.evidence:
            out.append(_t(f"  > {ev}", "dim"))
        out.append(_t(f"  to name it, paste {u.paste}", lines=True))
        if u.likely is not None:
            out.append(_t(f"  {likely_words(u.likely)}", lines=True))
    return out
