"""Remake docs/grid.png and docs/site.png (needs the extra vresolve[grid] and Debian's chromium), and record in
docs/pictures.json what they were made from, so that a test can tell when they are out of date.

    python docs/screenshots.py

The grid is ``vresolve matrix grid --python 3.12 -o docs/grid.png``; the page is ``vresolve site`` for Python
3.12, opened in headless Chromium with an H100 on the R580 driver branch picked, and captured.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

DOCS = Path(__file__).resolve().parent
PICK = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.95.05", "python": "3.12", "installer": "uv"}
RECORD = DOCS / "pictures.json"


def _json(argv: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VRESOLVE_")}
    p = subprocess.run([sys.executable, "-m", "vresolve", *argv, "--json"], env=env, capture_output=True, text=True)
    return json.loads(p.stdout)


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def made_from() -> dict[str, dict[str, str]]:
    """What each picture shows, as digests of the answers it is drawn from (the grid's cells, the picked plan)."""
    grid = _json(["matrix", "grid", "--python", "3.12"])
    cells = {"columns": grid["columns"], "rows": grid["rows"]}
    plan = _json(["plan", "--gpu", PICK["gpu"], "--driver", PICK["driver"], "--python", PICK["python"],
                  "--installer", PICK["installer"]])
    plan.pop("host", None)  # detected_by and the like: the machine that made it, not what the page shows
    return {"grid.png": {"grid": _digest(cells)},
            "site.png": {"grid": _digest(cells), "plan": _digest(plan), "pick": urlencode(PICK)}}


def main() -> None:
    vr = [sys.executable, "-m", "vresolve"]
    subprocess.run([*vr, "matrix", "grid", "--python", "3.12", "-o", str(DOCS / "grid.png")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*vr, "site", "-o", tmp, "--python", "3.12"], check=True)
        subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp}/profile", "--window-size=1400,1900", "--virtual-time-budget=5000",
                        f"--screenshot={DOCS / 'site.png'}", (Path(tmp) / "index.html").as_uri() + "#" + urlencode(PICK)],
                       check=True, capture_output=True)
    RECORD.write_text(json.dumps(made_from(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
