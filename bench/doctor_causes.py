"""How many corpus excerpts ``doctor --no-env --log`` judges right, per expected cause.

    PYTHONPATH=src python bench/doctor_causes.py [DIR] [--misses]

DIR holds ``NNN-slug.txt`` excerpts with ``NNN-slug.yaml`` sidecars (default: tests/data/corpus). An excerpt
labelled with a cause is right when that cause is among the findings; one labelled ``healthy`` is right when
no finding is an error. Excerpts labelled ``unknown`` are counted apart: they must give no false error either.
Where sidecars say ``cause_in_paste`` (the blind sets from stop 35 on), the faulty excerpts are also counted by it:
those whose own lines show the cause, and those whose cause only the thread's answer names. Misses whose "cause not
named" entry leads with the label's cause (``likely``: a base rate) are counted apart: they are not named.
"""

from __future__ import annotations

import argparse
import io
import json
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml

from vresolve.cli import main as vresolve


def judge(txt: Path) -> tuple[list[dict], list[dict]]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        vresolve(["doctor", "--no-env", "--log", str(txt), "--json"])
    if not out.getvalue():  # an input error (an empty paste, nothing readable)
        return [], []
    answer = json.loads(out.getvalue())
    if "error" in answer:  # an input error said as JSON: nothing readable, judged as no finding
        return [], []
    return answer["findings"], answer.get("unclear", [])


def _says_nothing_wrong(stem: str, cause: str, findings: list[dict], unclear: list[dict], healthy_unclear: list[str]) -> bool:
    """Whether a faulty paste got "no problems found" (no error, no warning, no "cause not named"): the answer never to
    give. A healthy paste that got "cause not named" is noted in ``healthy_unclear``."""
    if cause in ("healthy", "unknown"):
        if unclear:
            healthy_unclear.append(stem)
        return False
    return not unclear and all(f["severity"] == "info" for f in findings)


def _leads(cause: str, unclear: list[dict]) -> Counter[bool]:
    """Of a faulty paste judged wrong: whether its "cause not named" leads with the label's cause (True) or another."""
    if cause in ("healthy", "unknown", "unclear"):
        return Counter()
    return Counter((u.get("likely") or {}).get("cause") == cause for u in unclear if u.get("likely"))


def _summary(total: Counter[str], right: Counter[str], silent: int, wrong: int, quiet: int,
             unclear_healthy: list[str]) -> None:
    named = [c for c in total if c not in ("healthy", "unknown")]
    n, r = sum(total[c] for c in named), sum(right[c] for c in named)
    print(f"causes named right: {r}/{n} ({100 * r / max(n, 1):.0f} %); no finding {silent}, other cause {wrong}")
    print(f"faulty pastes with no error, no warning and no \"cause not named\": {quiet}/{n}")
    for extra in ("healthy", "unknown"):
        if total[extra]:
            print(f"{extra} without an error: {right[extra]}/{total[extra]}")
    if unclear_healthy:
        print(f"healthy or unknown with \"cause not named\": {len(unclear_healthy)} ({', '.join(unclear_healthy)})")
    for cause in sorted(named, key=lambda c: (-total[c], c)):
        print(f"  {cause:26} {right[cause]}/{total[cause]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/corpus")
    ap.add_argument("--misses", action="store_true", help="list every excerpt judged wrong, with what doctor said")
    ap.add_argument("--others", action="store_true",
                    help="list every error or warning whose cause is not the label's, beside a right one too (the "
                         "look-alikes audit)")
    args = ap.parse_args()
    total: Counter[str] = Counter()
    right: Counter[str] = Counter()
    silent = wrong = quiet = led = led_wrong = 0
    unclear_healthy: list[str] = []
    misses: list[str] = []
    others: list[str] = []
    shown: Counter[tuple[str, bool]] = Counter()  # (cause_in_paste, named right) of the faulty excerpts that say it
    for sidecar in sorted(args.corpus.glob("*.yaml")):
        label = yaml.safe_load(sidecar.read_text()) or {}
        cause = label.get("expected_cause", "unknown")
        findings, unclear = judge(sidecar.with_suffix(".txt"))
        others += [f"{sidecar.stem}: labelled {cause}, {f['severity']} {f['cause']}: {f['title']}" for f in findings
                   if f["cause"] != cause and f["severity"] != "info"]
        errors = [f["cause"] for f in findings if f["severity"] == "error"]
        causes = [f["cause"] for f in findings]
        ok = not errors if cause in ("healthy", "unknown") else cause in causes
        if cause == "unclear":  # a failure no cause explains: listed as "cause not named", no cause guessed
            ok, causes = bool(unclear) and not errors, causes + ["unclear"] * bool(unclear)
        total[cause] += 1
        right[cause] += ok
        leads = _leads(cause, unclear) if not ok else Counter()
        led, led_wrong = led + leads[True], led_wrong + leads[False]
        if "cause_in_paste" in label and cause not in ("healthy", "unknown"):
            shown[(str(label["cause_in_paste"]).lower() in ("yes", "true"), ok)] += 1
        quiet += _says_nothing_wrong(sidecar.stem, cause, findings, unclear, unclear_healthy)
        if not ok:
            if cause not in ("healthy", "unknown"):
                silent += not causes
                wrong += bool(causes)
            misses.append(f"{sidecar.stem}: expected {cause}, got {causes or 'nothing'}")
    _summary(total, right, silent, wrong, quiet, unclear_healthy)
    print(f"misses whose \"cause not named\" leads with the label's cause (a base rate, not named): {led}; "
          f"with another: {led_wrong}")
    for in_paste, words in ((True, "the paste shows its cause"), (False, "only the thread's answer names it")):
        if n := shown[(in_paste, True)] + shown[(in_paste, False)]:
            print(f"where {words} (cause_in_paste): {shown[(in_paste, True)]}/{n} ({100 * shown[(in_paste, True)] / n:.0f} %)")
    if args.misses:
        print("\n".join(misses))
    if args.others:
        print("\n".join(others))


if __name__ == "__main__":
    main()
