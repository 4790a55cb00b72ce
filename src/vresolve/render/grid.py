"""The support grid as a picture (matplotlib: PNG, SVG), an HTML table, a terminal table and JSON.

Rows are GPU capabilities grouped by architecture, columns driver branches; a cell is the newest vLLM
``vresolve plan`` finds, coloured by release (older darker, newer lighter), hatched with ``src`` where
only a source build runs and marked ``×`` where nothing does. matplotlib is the optional extra
``vresolve[grid]``; the HTML table and the rest need nothing more.
"""

from __future__ import annotations

import colorsys
import html
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..grid import Grid

__all__ = ["MissingExtra", "release_colours", "grid_view", "grid_html", "grid_image", "grid_text_rows",
           "row_label", "column_label", "NOTHING", "SOURCE"]

NOTHING = "#d9d9d9"  # no stack: light grey, marked ×
SOURCE = "#ffffff"  # only a source build: the release's colour hatched over white


class MissingExtra(Exception):
    """matplotlib is not installed: ``pip install 'vresolve[grid]'``."""


def release_colours(releases: list[str]) -> dict[str, str]:
    """One colour per vLLM release (oldest first in ``releases``): a ramp from deep blue to yellow-green,
    light enough at the new end and dark at the old end for the cell text to switch colour."""
    out = {}
    n = max(1, len(releases) - 1)
    for i, r in enumerate(releases):
        t = i / n
        h, l_, s = 0.66 - 0.48 * t, 0.28 + 0.42 * t, 0.55 + 0.15 * t
        rgb = colorsys.hls_to_rgb(h, l_, s)
        out[r] = "#" + "".join(f"{round(c * 255):02x}" for c in rgb)
    return out


def _dark(hex_colour: str) -> bool:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45


def row_label(family: str, capability: str, names: tuple[str, ...], limit: int = 2, jetpack: str | None = None) -> str:
    short = [_short(n.removeprefix("NVIDIA ").removeprefix("Tesla ")) for n in names[:limit]]
    more = f" +{len(names) - limit}" if len(names) > limit else ""
    jp = f", JetPack {jetpack}, Jetson index" if jetpack else ""
    return f"{family} sm_{capability.replace('.', '')} ({', '.join(short)}{more}{jp})"


def _short(name: str, width: int = 20) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def column_label(branch: int, cuda: tuple[str, ...]) -> str:
    return f"R{branch}"


def grid_view(g: Grid) -> dict[str, Any]:
    """``vresolve matrix grid --json`` (``vresolve.grid/1``)."""
    return {"python": g.python, "platform": g.platform, "driver_policy": g.policy, "matrix_revision": g.revision,
            "columns": [{"branch": c.branch, "driver": c.driver, "cuda": list(c.cuda)} for c in g.columns],
            "rows": [{"family": r.family, "compute_capability": r.capability, "gpus": list(r.names),
                      **({"jetpack": r.jetpack, "from": "the Jetson index"} if r.jetpack else {}),
                      "cells": [{"driver": c.driver, "vllm": g.cells[(r.capability, c.driver)][0],
                                 "kind": g.cells[(r.capability, c.driver)][1]} for c in g.columns]}
                     for r in g.rows]}


def grid_text_rows(g: Grid) -> tuple[list[str], list[list[str]]]:
    """(header, rows) for a terminal table: a version, ``src X`` or ``-``."""
    header = ["GPU", *[column_label(c.branch, c.cuda) for c in g.columns]]
    body = []
    for r in g.rows:
        cells = []
        for c in g.columns:
            v, kind = g.cells[(r.capability, c.driver)]
            cells.append("-" if kind == "none" else f"src {v}" if kind == "source" else str(v))
        body.append([f"{r.family} sm_{r.capability.replace('.', '')}" + (f" JP{r.jetpack}" if r.jetpack else ""),
                     *cells])
    return header, body


def _title(g: Grid) -> str:
    return (f"Newest vLLM by GPU and NVIDIA driver: Python {g.python}, {g.platform}, driver policy {g.policy} "
            f"(vresolve, matrix {g.revision})")


def grid_html(g: Grid, *, built: str) -> str:
    """A self-contained HTML page with the grid as a table (every string escaped)."""
    e = html.escape
    colours = release_colours(g.releases())
    head = "".join(f'<th title="{e(c.driver)}: CUDA {e(", ".join(c.cuda))}">{e(column_label(c.branch, c.cuda))}'
                   f'<br><small>{e(c.driver)}</small></th>' for c in g.columns)
    body = []
    family = None
    for r in g.rows:
        if r.family != family:
            family = r.family
            body.append(f'<tr class="fam"><th colspan="{len(g.columns) + 1}">{e(family)}</th></tr>')
        cells = []
        for c in g.columns:
            v, kind = g.cells[(r.capability, c.driver)]
            if kind == "none":
                cells.append('<td class="none" title="no stack">×</td>')
                continue
            bg = colours[str(v)]
            fg = "#fff" if _dark(bg) else "#000"
            cls = ' class="src"' if kind == "source" else ""
            style = (f"background:repeating-linear-gradient(45deg,{bg} 0 4px,#fff 4px 7px);color:#000"
                     if kind == "source" else f"background:{bg};color:{fg}")
            label = f"src {v}" if kind == "source" else str(v)
            cells.append(f'<td{cls} style="{e(style)}" title="{e(kind)}">{e(label)}</td>')
        body.append(f'<tr><th title="{e(", ".join(r.names))}">{e(row_label(r.family, r.capability, r.names, jetpack=r.jetpack))}</th>'
                    + "".join(cells) + "</tr>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(_title(g))}</title><style>"
            "body{font:13px system-ui,sans-serif;margin:1em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 4px;text-align:center;white-space:nowrap}"
            "th{font-weight:normal;text-align:left}tr.fam th{font-weight:bold;background:#f3f3f3}"
            f"td.none{{background:{NOTHING};color:#555}}</style></head><body>"
            f"<h1>{e(_title(g))}</h1><p>Built {e(built)} from matrix revision {e(g.revision)}. "
            "A cell is the newest vLLM <code>vresolve plan</code> installs as a wheel; <b>src</b>: only a source "
            "build; ×: nothing runs. Columns: NVIDIA driver branches at the newest floor the matrix records.</p>"
            f"<table><thead><tr><th>GPU</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</body></html>\n")


def grid_image(g: Grid, fmt: str) -> bytes:
    """The grid drawn by matplotlib as ``fmt`` (``png`` or ``svg``) bytes; MissingExtra without it."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch, Rectangle
    except ImportError:
        raise MissingExtra("matplotlib is not installed: install the extra with pip install 'vresolve[grid]'") \
            from None
    colours = release_colours(g.releases())
    nr, nc = len(g.rows), len(g.columns)
    fig = Figure(figsize=(3.2 + 0.72 * nc, 1.6 + 0.3 * nr), layout="constrained")
    ax = fig.add_subplot()
    for i, r in enumerate(g.rows):
        for j, c in enumerate(g.columns):
            v, kind = g.cells[(r.capability, c.driver)]
            _cell(ax, Rectangle, i, j, v, kind, colours)
    ax.set_xlim(0, nc)
    ax.set_ylim(nr, 0)
    ax.set_xticks([j + 0.5 for j in range(nc)],
                  [f"{column_label(c.branch, c.cuda)}\n{c.driver}" for c in g.columns], fontsize=6)
    ax.set_yticks([i + 0.5 for i in range(nr)], [row_label(r.family, r.capability, r.names, 1, r.jetpack) for r in g.rows],
                  fontsize=7)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for i in range(1, nr):  # a line between architectures
        if g.rows[i].family != g.rows[i - 1].family:
            ax.axhline(i, color="black", linewidth=1.2)
    ax.set_title(_title(g), fontsize=9, loc="left")
    ax.set_xlabel("NVIDIA driver branch (at the newest floor the matrix records in it)", fontsize=7)
    handles = [Patch(facecolor="white", edgecolor="#555", hatch="///", label="only a source build"),
               Patch(facecolor=NOTHING, edgecolor="#555", label="× nothing runs")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.06), ncol=2, fontsize=7, frameon=False)
    buf = io.BytesIO()
    meta: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
    fig.savefig(buf, format=fmt, dpi=130, metadata=meta)
    return buf.getvalue()


def _cell(ax: Any, rect: Any, i: int, j: int, v: str | None, kind: str, colours: dict[str, str]) -> None:
    if kind == "none":
        ax.add_patch(rect((j, i), 1, 1, facecolor=NOTHING, edgecolor="white", linewidth=0.6))
        ax.text(j + 0.5, i + 0.5, "×", ha="center", va="center", fontsize=7, color="#666")
        return
    bg = colours[str(v)]
    if kind == "source":
        ax.add_patch(rect((j, i), 1, 1, facecolor="white", edgecolor=bg, hatch="////", linewidth=0.6))
        ax.text(j + 0.5, i + 0.5, f"src {v}", ha="center", va="center", fontsize=5.5, color="black",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        return
    ax.add_patch(rect((j, i), 1, 1, facecolor=bg, edgecolor="white", linewidth=0.6))
    ax.text(j + 0.5, i + 0.5, str(v), ha="center", va="center", fontsize=6 if len(str(v)) < 8 else 5,
            color="white" if _dark(bg) else "black")
