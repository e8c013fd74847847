"""Case selection in ``inferprep mutate``: the same mutants graded exact and selected, in one run.

For each exercise, the same evenly spread sample of mutants is graded twice per round, once
``exact`` (every mutant on every case) and once with case selection (the default), the order
alternating between rounds so that a machine getting busier favours neither. Reports, per mode,
the wall time, the gradings made (trusting a selection and grading a survivor again cost extra
gradings) and the hidden cases run, the ratio exact / selected of the wall times (median over
rounds), and whether both modes classified every mutant alike (they must).

    .venv/bin/python bench/mutate_selection.py [SLUG ...] [--mutants 24] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["flash-attention-forward", "fp8-attention", "moe-calibration", "ridge-point"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="*", default=DEFAULT)
    ap.add_argument("--mutants", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "platform"))
    from inferprep import catalog
    from inferprep.mutate.engine import mutate_exercise
    from inferprep.runner import judge

    real = judge.grade
    tally = {"gradings": 0, "cases": 0}

    def counting(*a, **kw):
        v = real(*a, **kw)
        tally["gradings"] += 1
        tally["cases"] += len(v.cases)
        return v

    judge.grade = counting
    print(f"{'exercise':26s} {'mode':8s} {'wall s':>8s} {'gradings':>9s} {'cases':>7s}  agree")
    bad = 0
    for slug in args.slugs:
        ex = catalog.get(slug)
        walls: dict[bool, list[float]] = {True: [], False: []}
        results: dict[bool, dict] = {}
        for r in range(args.rounds):
            for exact in ((True, False) if r % 2 == 0 else (False, True)):
                tally.update(gradings=0, cases=0)
                t0 = time.perf_counter()
                run = mutate_exercise(ex, max_mutants=args.mutants, jobs=1, exact=exact, n_differential=2)
                walls[exact].append(time.perf_counter() - t0)
                got = {o.mutant.key: o.result for o in run.outcomes}
                agree = results.setdefault(exact, got) == got and (not results.get(not exact) or results[not exact] == got)
                bad += not agree
                print(f"{slug:26s} {'exact' if exact else 'selected':8s} {walls[exact][-1]:8.1f} {tally['gradings']:9d} "
                      f"{tally['cases']:7d}  {'yes' if agree else 'NO'}", flush=True)
        ratio = statistics.median(walls[True]) / statistics.median(walls[False])
        print(f"{slug:26s} exact / selected wall time (median of {args.rounds}): {ratio:.2f}x", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
