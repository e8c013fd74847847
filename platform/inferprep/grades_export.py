"""The grade export of a cohort (CSV): the assignment matrix and the scheduled mock interviews.

It sits above ``cohorts`` and ``cohort_interviews`` (which imports ``cohorts``), so neither has to
import the other to write one file.
"""

from __future__ import annotations

from sqlmodel import Session

from . import cohort_interviews
from .cohorts import csv_row, matrix
from .models import Cohort


def export_csv(s: Session, cohort: Cohort) -> str:
    """One row per student: email, name, then per assigned exercise the best hidden-case score
    before its deadline (empty: never graded) and the number solved in time, then per scheduled
    mock interview its score, whether finished and each drawn exercise's pass
    (``cohort_interviews.csv_values``). Every cell goes
    through ``csv_cell`` (no formulas, whatever delimiter the spreadsheet guesses)."""
    m = matrix(s, cohort)
    mocks = cohort_interviews.cohort_results(s, cohort.id)
    out = [csv_row(["email", "name", *m.slugs, "solved", *[h for r in mocks for h in cohort_interviews.csv_columns(r)]])]
    for u in m.students:
        cells = [m.cells.get((u.id, slug)) for slug in m.slugs]
        out.append(csv_row([u.email or "", u.name,
                            *["" if c is None or c.best is None else f"{c.best:.4f}" for c in cells],
                            sum(1 for c in cells if c is not None and c.status == "solved" and not c.late),
                            *[v for r in mocks for v in cohort_interviews.csv_values(r, u.id)]]))
    return "".join(out)
