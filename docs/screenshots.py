"""Remake docs/grid.png and docs/site.png (needs the extra vresolve[grid] and Debian's chromium).

    python docs/screenshots.py

The grid is ``vresolve matrix grid --python 3.12 -o docs/grid.png``; the page is ``vresolve site`` for Python
3.12, opened in headless Chromium with an H100 on the R580 driver branch picked, and captured.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

DOCS = Path(__file__).resolve().parent


def main() -> None:
    vr = [sys.executable, "-m", "vresolve"]
    subprocess.run([*vr, "matrix", "grid", "--python", "3.12", "-o", str(DOCS / "grid.png")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*vr, "site", "-o", tmp, "--python", "3.12"], check=True)
        choice = urlencode({"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.95.05", "python": "3.12",
                            "installer": "uv"})
        subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp}/profile", "--window-size=1400,1900", "--virtual-time-budget=5000",
                        f"--screenshot={DOCS / 'site.png'}", (Path(tmp) / "index.html").as_uri() + "#" + choice],
                       check=True, capture_output=True)


if __name__ == "__main__":
    main()
