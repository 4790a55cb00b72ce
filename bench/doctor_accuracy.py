"""How many of the facts a corpus's sidecars list the evidence reader reads, per kind of fact.

    python bench/doctor_accuracy.py [DIR] [--misses]

DIR holds ``NNN-slug.txt`` excerpts with ``NNN-slug.yaml`` sidecars (default: tests/data/corpus). The comparison
is the tests' (tests/corpus_facts.py): versions as strings, Python by major.minor, GPU names as a set.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests/ (the comparison is theirs)
from tests.corpus_facts import compare  # noqa: E402

from vresolve.doctor.evidence import read_evidence


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/corpus")
    ap.add_argument("--misses", action="store_true", help="list every fact not read")
    args = ap.parse_args()
    expected: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    misses = []
    for sidecar in sorted(args.corpus.glob("*.yaml")):
        facts = (yaml.safe_load(sidecar.read_text()) or {}).get("facts") or {}
        for check in compare(facts, read_evidence(sidecar.with_suffix(".txt").read_bytes())):
            expected[check.key] += 1
            matched[check.key] += check.ok
            if not check.ok:
                misses.append(f"{sidecar.stem}: {check.key}: expected {check.expected!r}, read {check.got!r}")
    total, hit = sum(expected.values()), sum(matched.values())
    print(f"{hit}/{total} facts ({100 * hit / max(total, 1):.1f} %)")
    for key, n in sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {key:28} {matched[key]}/{n}")
    if args.misses:
        print("\n".join(misses))


if __name__ == "__main__":
    main()
