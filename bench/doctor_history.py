"""How doctor at several revisions scores one set of labelled pastes: whether what was written between them carries to
pastes none of them saw.

    python bench/doctor_history.py DIR REV [REV ...]

Each revision's ``src`` and ``compat_matrix`` are taken with ``git archive`` into a temporary directory, and
``bench/doctor_causes.py`` (this checkout's) scores DIR with them in a fresh Python process. A paste that makes an old
revision raise is counted as judged with no finding, and named. Prints one line per revision: causes named right,
faulty pastes with nothing said ("no problems found"), healthy pastes without an error.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: run in the child: doctor_causes.main with a judge that survives an old revision's crash on one paste
_CHILD = """
import sys
sys.path.insert(0, {bench!r})
import doctor_causes as dc
judge, crashed = dc.judge, []
def tolerant(txt):
    try:
        return judge(txt)
    except Exception:
        crashed.append(txt.name.split("-")[0])
        return [], []
dc.judge = tolerant
sys.argv = ["doctor_causes.py", {folder!r}]
dc.main()
print("crashed:", " ".join(crashed) or "none")
"""
_WANTED = re.compile(r"^(causes named right|faulty pastes with|healthy without|crashed)")


def score(rev: str, folder: Path) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "compat_matrix"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = subprocess.run([sys.executable, "-c", _CHILD.format(bench=str(ROOT / "bench"), folder=str(folder))],
                             env={"PYTHONPATH": str(Path(tmp) / "src"), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, check=True, cwd=tmp).stdout
    return [line for line in out.splitlines() if _WANTED.match(line)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path, help="NNN-slug.txt pastes with NNN-slug.yaml sidecars")
    ap.add_argument("revs", nargs="+", help="git revisions, oldest first")
    args = ap.parse_args()
    for rev in args.revs:
        print(f"{rev}: " + "; ".join(score(rev, args.folder.resolve())))


if __name__ == "__main__":
    main()
