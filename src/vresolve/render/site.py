"""``vresolve site``: one self-contained HTML file (inline CSS, inline JavaScript, the plans as inline JSON;
nothing fetched when it is viewed) where a person picks a GPU, a driver branch, a Python and an installer
and sees the plan: its commands, its exports, its reasons and warnings, and what a newer driver unlocks.

Safety: the page's own text is written with :func:`html.escape`; every string from the matrix or a plan
travels only inside the JSON block (``<``, ``>``, ``&`` and the JavaScript line separators escaped as
``\\uXXXX``, so nothing in it can close the ``<script>``), and the script puts it on the page only through
``textContent`` and ``new Option`` (never ``innerHTML``), so a hostile string stays text.
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..names import index_label

__all__ = ["GPU_TOKEN", "page_html", "slim_plan", "StringTable", "embed_json"]

#: stands for the planned GPU's name inside the shared plans; the page puts the picked GPU's name there.
#: NUL: no string of a plan holds one (machine and matrix strings lose their control characters).
GPU_TOKEN = "\u0000"


class StringTable:
    """Strings stored once and referred to by number: most reasons and steps recur across the grid."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self._ids.get(s)
        if i is None:
            i = self._ids[s] = len(self.strings)
            self.strings.append(s)
        return i


def _tok(s: str, gpu: str) -> str:
    if GPU_TOKEN in s:
        raise ValueError("a plan string holds a NUL character")
    return s.replace(gpu, GPU_TOKEN)


def slim_plan(code: int, plan: dict[str, Any], exports: str, gpu: str, st: StringTable) -> dict[str, Any]:
    """What the page shows of one ``vresolve plan --json`` answer, strings numbered in ``st``, the planned
    GPU's name (``gpu``) replaced by :data:`GPU_TOKEN`."""
    def s(x: str) -> int:
        return st(_tok(x, gpu))

    if code != 0:
        err = plan.get("error") or {}
        return {"error": {"message": s(err.get("message", "")), "causes": [s(c) for c in err.get("causes", [])],
                          "hints": [s(h) for h in err.get("hints", [])]}}
    # where each wheel comes from, as the plan's table names it (PyPI, PyTorch index), not the JSON's token
    stack = {k: index_label(v) if k.endswith("_source") else v for k, v in (plan.get("stack") or {}).items()
             if isinstance(v, str)}
    return {"stack": stack, "requires": {k: v for k, v in (plan.get("requires") or {}).items() if isinstance(v, str)},
            "steps": [s(step["shell"]) for step in plan.get("steps", [])], "exports": s(exports),
            "reasons": [s(r) for r in plan.get("reasons", [])], "warnings": [s(w) for w in plan.get("warnings", [])],
            "alternatives": [{"min_driver": a.get("min_driver"), "vllm": (a.get("stack") or {}).get("vllm"),
                              "why": s(a.get("why_not_chosen", ""))} for a in plan.get("alternatives", [])]}


def embed_json(obj: Any) -> str:
    """``obj`` as JSON that is inert inside a ``<script type="application/json">`` element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                   ("\u2029", "\\u2029")):
        text = text.replace(c, esc)
    return text


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1400px;padding:1em;color:#111}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .3em}
.pick{display:flex;flex-wrap:wrap;gap:.8em 1.2em;align-items:end;background:#f4f6f8;padding:.8em;border-radius:6px}
.pick label{display:flex;flex-direction:column;font-size:.85em;color:#333}
select{font-size:1em;padding:.2em;max-width:30em}
pre{background:#0f1720;color:#e6edf3;padding:.7em;border-radius:5px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;margin:.3em 0}dt{color:#555}dd{margin:0;font-family:monospace}
#verdict{font-size:1.15em;font-weight:600;margin:.8em 0 .2em}.err{color:#a40000}
table.grid{border-collapse:collapse;font-size:11px}table.grid td,table.grid th{border:1px solid #ddd;padding:1px 3px;
text-align:center;white-space:nowrap}table.grid th{font-weight:normal}table.grid td{cursor:pointer}
table.grid td.none{background:#e4e4e4;color:#666}table.grid td.src{background:repeating-linear-gradient(45deg,#fff 0 4px,#eee 4px 7px)}
table.grid td.sel{outline:3px solid #e0005a;outline-offset:-2px}table.grid tr.fam th{background:#f4f6f8;font-weight:600;text-align:left}
footer{margin-top:2em;color:#555;font-size:.85em}
"""

_JS = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const S = i => D.strings[i];
const $ = id => document.getElementById(id);
const capOf = {};
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls; return e; }
function fill(list, items) {
  list.replaceChildren(...items.map(t => el("li", t)));
  const h = list.previousElementSibling;  // an empty list's heading is hidden with it
  list.hidden = !items.length; if (h && h.tagName === "H2") h.hidden = !items.length;
}
function init() {
  const gpu = $("gpu");
  for (const a of D.archs) {
    const g = document.createElement("optgroup"); g.label = a.family;
    for (const [name, cap] of a.gpus) { capOf[name] = cap; g.appendChild(new Option(name + " (sm_" + cap.replace(".", "") + ")", name)); }
    gpu.appendChild(g);
  }
  for (const d of D.drivers) $("driver").appendChild(new Option("R" + d.branch + ": " + d.driver + " or newer (CUDA " + d.cuda.join(", ") + ")", d.driver));
  for (const p of D.pythons) $("python").appendChild(new Option(p, p));
  for (const i of D.installers) $("installer").appendChild(new Option(i, i));
  for (const id of ["gpu", "driver", "python", "installer"]) $(id).value = D.initial[id];
  fromHash();
  for (const id of ["gpu", "driver", "python", "installer"]) $(id).addEventListener("change", () => { toHash(); show(); });
  window.addEventListener("hashchange", () => { fromHash(); show(); });
  show();
}
function fromHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  for (const id of ["gpu", "driver", "python", "installer"]) {
    const v = q.get(id);
    if (v !== null && [...$(id).options].some(o => o.value === v)) $(id).value = v;
  }
}
function toHash() {
  const q = new URLSearchParams();
  for (const id of ["gpu", "driver", "python", "installer"]) q.set(id, $(id).value);
  history.replaceState(null, "", "#" + q.toString());
}
function planFor(cap, driver, python, installer) {
  const i = D.index[[cap, driver, python, installer].join("|")];
  return i === undefined ? null : D.plans[i];
}
function show() {
  const name = $("gpu").value, cap = capOf[name], driver = $("driver").value, py = $("python").value, inst = $("installer").value;
  const sub = t => t.split(D.token).join(name);
  const p = planFor(cap, driver, py, inst);
  $("host").textContent = name + " (sm_" + cap.replace(".", "") + "), driver " + driver + ", Python " + py + ", " + D.platform + ", " + inst;
  $("ok").hidden = !p || !!p.error; $("failed").hidden = !p || !p.error;
  if (!p) { $("verdict").textContent = "not computed for these choices"; return; }
  if (p.error) {
    const old = D.unsupported[cap];  // no choice on the page runs vLLM on this GPU: said plainly, no hints
    $("verdict").textContent = old ? "No vLLM runs on this GPU" : "No vLLM runs here"; $("verdict").className = "err";
    $("error").textContent = old ? sub(old) : sub(S(p.error.message));
    fill($("causes"), p.error.causes.map(i => sub(S(i))));
    fill($("hints"), old ? [] : p.error.hints.map(i => sub(S(i))));
  } else {
    const s = p.stack;
    $("verdict").className = "";
    $("verdict").textContent = "vLLM " + s.vllm + (s.install_kind === "source" ? ", built from source" : "") + " with torch " + s.torch;
    $("stack").replaceChildren(...Object.keys(s).sort().flatMap(k => { const dd = el("dd", s[k]); dd.dataset.key = k; return [el("dt", k), dd]; }));
    $("min-driver").textContent = p.requires.min_driver || "";
    $("policy").textContent = p.requires.driver_policy || "";
    $("commands").textContent = p.steps.map(i => sub(S(i))).join("\n");
    $("exports").textContent = sub(S(p.exports));
    fill($("reasons"), p.reasons.map(i => sub(S(i))));
    fill($("warnings"), p.warnings.map(i => sub(S(i))));
    fill($("alternatives"), p.alternatives.map(a => sub(S(a.why))));
  }
  fill($("unlocks"), unlocks(cap, driver, py, inst));
  drawGrid(cap, driver, py);
}
function newest(p) { return p && !p.error ? p.stack.vllm + (p.stack.install_kind === "source" ? " (source build)" : "") : null; }
function unlocks(cap, driver, py, inst) {
  const out = []; let seen = newest(planFor(cap, driver, py, inst)); let after = false;
  for (const d of D.drivers) {
    if (d.driver === driver) { after = true; continue; }
    if (!after) continue;
    const v = newest(planFor(cap, d.driver, py, inst));
    if (v && v !== seen) { out.push("driver " + d.driver + " or newer (R" + d.branch + "): vLLM " + v); seen = v; }
  }
  if (!out.length) out.push("nothing more: no newer driver branch in the matrix changes the answer");
  return out;
}
function drawGrid(selCap, selDriver, py) {
  const t = $("grid"), rows = [];
  const head = el("tr"); head.appendChild(el("th", "GPU \\ driver"));
  for (const d of D.drivers) { const th = el("th", "R" + d.branch); th.title = d.driver; head.appendChild(th); }
  rows.push(head);
  for (const a of D.archs) {
    const f = el("tr", undefined, "fam"); const th = el("th", a.family); th.colSpan = D.drivers.length + 1; f.appendChild(th); rows.push(f);
    for (const cap of a.caps) {
      const tr = el("tr"); const names = a.gpus.filter(g => g[1] === cap).map(g => g[0]);
      const h = el("th", "sm_" + cap.replace(".", "")); h.title = names.join(", "); tr.appendChild(h);
      for (const d of D.drivers) {
        const p = planFor(cap, d.driver, py, "uv"); let td;
        if (!p || p.error) td = el("td", "\u00d7", "none"); else td = el("td", p.stack.vllm, p.stack.install_kind === "source" ? "src" : "");
        if (p && !p.error && p.stack.install_kind !== "source") td.style.background = D.colours[p.stack.vllm] || "";
        if (p && !p.error && p.stack.install_kind !== "source" && D.dark.includes(p.stack.vllm)) td.style.color = "#fff";
        if (cap === selCap && d.driver === selDriver) td.classList.add("sel");
        td.addEventListener("click", () => { $("gpu").value = D.caps[cap]; $("driver").value = d.driver; toHash(); show(); });
        tr.appendChild(td);
      }
      rows.push(tr);
    }
  }
  t.replaceChildren(...rows);
}
init();
"""


def page_html(data: dict[str, Any], *, title: str, revision: str, built: str, version: str) -> str:
    e = html.escape
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'\">"
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{e(title)}</h1>"
        "<p>Pick a GPU, an NVIDIA driver branch, a Python and an installer: the plan below is what "
        "<code>vresolve plan --gpu NAME --driver VERSION --python X.Y --installer I --json</code> answers, "
        "computed in advance for every choice. Cells of the grid: the newest vLLM (uv); click one to pick it.</p>"
        "<div class=\"pick\"><label>GPU<select id=\"gpu\"></select></label>"
        "<label>NVIDIA driver<select id=\"driver\"></select></label>"
        "<label>Python<select id=\"python\"></select></label>"
        "<label>installer<select id=\"installer\"></select></label></div>"
        "<p id=\"host\"></p><p id=\"verdict\"></p>"
        "<section id=\"ok\"><dl id=\"stack\"></dl>"
        "<p>Needs driver &ge; <code id=\"min-driver\"></code> (policy <code id=\"policy\"></code>).</p>"
        "<h2>Commands</h2><pre id=\"commands\"></pre>"
        "<h2>Exports</h2><pre id=\"exports\"></pre>"
        "<h2>Why</h2><ul id=\"reasons\"></ul><h2>Warnings</h2><ul id=\"warnings\"></ul>"
        "<h2>Not chosen</h2><ul id=\"alternatives\"></ul></section>"
        "<section id=\"failed\" hidden><p id=\"error\" class=\"err\"></p><h2>Why not</h2><ul id=\"causes\"></ul>"
        "<h2>What would work</h2><ul id=\"hints\"></ul></section>"
        "<h2>A newer driver would unlock</h2><ul id=\"unlocks\"></ul>"
        "<h2>The grid</h2><div style=\"overflow-x:auto\"><table class=\"grid\" id=\"grid\"></table></div>"
        f"<footer>Built {e(built)} by vresolve {e(version)} from compatibility matrix revision "
        f"<code id=\"revision\">{e(revision)}</code>; {e(str(data.get('platform', '')))}, driver policy "
        f"{e(str(data.get('policy', '')))}. Every plan was computed by vresolve's resolver; run "
        "<code>vresolve plan</code> on the machine itself to have its exact driver, glibc and GPUs checked.</footer>"
        f"<script type=\"application/json\" id=\"data\">{embed_json(data)}</script>"
        f"<script>{_JS}</script></body></html>\n")
