"""Render mutation runs: rich tables for the terminal, Markdown for ``docs/grader-strength.md``."""

from __future__ import annotations

import datetime as _dt
import subprocess
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from .engine import (DETECTED, DIFFERENTIAL_BUDGET_S, DIFFERENTIAL_SALTS, MIN_DIFFERENTIAL_SALTS, MIN_MUTANT_TIME_S,
                     MUTANT_TIME_FACTOR, SCORE_GOAL,
                     ExerciseRun, Outcome, Result, count, non_equivalent, score)
from .operators import OPERATORS

COLUMNS = (Result.KILLED, Result.INPUT_CHECKS, Result.TIMED_OUT, Result.SURVIVED, Result.EQUIVALENT,
           Result.GRADER_ERROR)
HEADERS = ("killed", "input checks only", "timed out", "survived", "equivalent", "grader errors")


def _pct(s: float | None) -> str:
    return "-" if s is None else f"{s:.1%}"


def _row(outcomes: list[Outcome]) -> list[str]:
    valid = len(outcomes) - count(outcomes, Result.INVALID)
    return [str(valid)] + [str(count(outcomes, r)) for r in COLUMNS] + [_pct(score(outcomes))]


def by_operator(runs: list[ExerciseRun]) -> dict[str, list[Outcome]]:
    """Every outcome of ``runs`` grouped by operator, in ``OPERATORS`` order."""
    out: dict[str, list[Outcome]] = {name: [] for name in OPERATORS}
    for run in runs:
        for o in run.outcomes:
            out[o.mutant.operator].append(o)
    return {k: v for k, v in out.items() if v}


def every_outcome(runs: list[ExerciseRun]) -> list[Outcome]:
    return [o for run in runs for o in run.outcomes]


def _table(title: str, first: str) -> Table:
    t = Table(title=title)
    t.add_column(first, no_wrap=True)
    for h in ("mutants",) + HEADERS + ("score",):
        t.add_column(h, justify="right")
    return t


def exercise_table(runs: list[ExerciseRun]) -> Table:
    t = _table("mutants per exercise (score = detected / non-equivalent)", "exercise")
    for run in runs:
        s = run.score
        style = "red" if run.errors or (s is not None and s < SCORE_GOAL) else "green"
        cells = _row(run.outcomes)
        cells[-1] = f"[{style}]{cells[-1]}[/]"
        t.add_row(escape(run.slug), *cells)
    if len(runs) > 1:
        t.add_row("[bold]all[/]", *_row(every_outcome(runs)))
    return t


def operator_table(runs: list[ExerciseRun]) -> Table:
    t = _table("mutants per operator", "operator")
    for name, outcomes in by_operator(runs).items():
        t.add_row(name, *_row(outcomes))
    return t


def git_commit(root: Path) -> str:
    """The short commit of ``root``'s checkout (``+changes`` when the content differs from it), or
    "unknown" outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--", "reference", "graders", "tests/wrong", "platform/inferprep")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + (" +changes" if dirty else "")


HOW = f"""\
## How this is measured

`inferprep mutate` makes small, deliberate mistakes (mutants) in each reference solution
(`reference/<module>.py`) and grades every mutant as a submission against the hidden grader. A
grader that rejects a mutant has *detected* it. Only code the exercise's entrypoints reach is
mutated (helpers kept for the editorial cannot change what a grader sees); messages, annotations,
docstrings and `assert`s are left alone. The operators model classic slips of this
material:

| operator | mistake |
|---|---|
{{operators}}

- Each mutant is graded fail-fast (stop at the first failing core case) through the warm pool in
  one process, so a mutant costs a fork, not an `import torch`; all gradings of a run use one salt,
  so a run is reproducible. Unless the run is `--exact`, a mutant is graded first on the cases that
  can notice it: those that call an entrypoint whose code reaches the top-level statement it
  changed (a case that calls nothing else runs the reference's own code). The reference must pass
  each such selection before it is used, and a mutant that passes its cases is graded again on
  every case, so a survivor always survived the whole grader. A mutant's CPU-time limit is {MUTANT_TIME_FACTOR} x the reference's own
  grading time (at least {MIN_MUTANT_TIME_S:g} s, at most the exercise's limit).
- **killed**: a core case failed. **input checks only**: the core cases passed and an input check
  (a promised `ValueError`) failed: the verdict model's "Passed; input checks 3/4", detected but
  shown apart. **timed out**: stopped by the time limit (detected, shown apart). **survived**: the
  grader passed it. **grader errors**: the grader crashed on the mutant's output (a grader bug;
  counted as not detected). Mutants that do not compile are left out.
- **score** = (killed + input checks only + timed out) / (mutants - equivalent). The goal is
  {SCORE_GOAL:.0%} for every exercise.
- **equivalent**: a mutant listed in `tests/wrong/<module>/equivalent.toml` (by operator, the
  mutated line's text and occurrence, with a one-line reason) that a differential check confirms:
  it passes every case, input checks included, under the run's salt and {MIN_DIFFERENTIAL_SALTS} to
  {DIFFERENTIAL_SALTS} more salts (as many as fit in about {DIFFERENTIAL_BUDGET_S:g} s of the reference's
  grading time: the per-exercise table's `salts` column). An entry the check refutes, or that matches no mutant any more, is an error.
- Under the extra salts a listed mutant is graded only on the cases that can notice it and that
  depend on the salt. A case that ends before the grader first reads its salt draws the same data
  and makes the same checks under every salt (every random choice of a grader derives from it),
  so grading it again would only repeat the run's salt; the `salt-blind cases` column counts them.
  A listed mutant that only salt-blind cases can notice is confirmed by the run's salt alone:
  for such graders the extra salts never were new evidence.

Why our own generator and not a library: mutmut (3.x) and cosmic-ray (8.x) are built around
running a test command per mutant (mutmut also rewrites the code under test into trampolines
that its pytest plugin switches), so each mutant would pay a process start and `import torch`
(about 1.3 s here), the cost this tool exists to avoid; their operators are generic (numbers,
comparisons, booleans) and know nothing of dtypes, rounding functions, in-place tensor methods or
`tril`/`triu`. Generating mutants is the easy part (about 400 lines over Python's `ast`, every
edit verified to parse to exactly the intended tree); grading them through our judge is what
matters, and no library does that.
"""


def markdown(runs: list[ExerciseRun], *, command: str, seconds: float, salt: int, jobs: int,
             root: Path, operators: list[str] | None = None, now: _dt.datetime | None = None,
             planned: int | None = None, max_mutants: int | None = None, exact: bool = False) -> str:
    """The report as Markdown: headline, per exercise, per operator, survivors' diffs, method.
    ``planned``: how many exercises the run will cover, when more than ``runs`` (a partial report);
    ``max_mutants``: the per-exercise sample size, when the run graded a sample."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    outcomes = every_outcome(runs)
    s = score(outcomes)
    det = count(outcomes, *DETECTED)
    below = [r for r in runs if r.score is not None and r.score < SCORE_GOAL]
    lines = [
        "# Grader strength: mutation testing",
        "",
        f"Generated by `{command}` on {now:%Y-%m-%d %H:%M} UTC at commit {git_commit(root)}: "
        f"{len(runs)} exercises, operators {', '.join(operators) if operators else 'all'}, salt {salt:#x}, "
        f"{jobs} job(s), {'every mutant on every case' if exact else 'cases selected per mutant'}, "
        f"{seconds / 60:.1f} min. Regenerate with `make mutate`.",
        "",
        f"**Overall: {_pct(s)}** of {non_equivalent(outcomes)} non-equivalent mutants detected ({det}); "
        f"{count(outcomes, Result.SURVIVED)} survived, {count(outcomes, Result.EQUIVALENT)} equivalent. "
        f"{len(runs) - len(below)} of {len(runs)} exercises reach {SCORE_GOAL:.0%}.",
        "",
    ]
    phases: dict[str, float] = {}
    for r in runs:
        for k, v in r.phase_seconds.items():
            phases[k] = phases.get(k, 0.0) + v
    if any(v >= 30 for v in phases.values()):
        lines += ["Grading time by phase, summed over jobs: " + ", ".join(
            f"{k} {v / 60:.1f} min" for k, v in phases.items() if v >= 30) + ".", ""]
    n_eq = count(outcomes, Result.EQUIVALENT)
    blind = sum(r.salt_blind_equivalents for r in runs)
    if n_eq:
        lines += [f"Of the {n_eq} equivalents, {blind} can be noticed only by salt-blind cases and were "
                  f"confirmed under the run's salt alone; the others also under the extra salts.", ""]
    errors = [(r.slug, e) for r in runs for e in r.errors]
    if errors:
        lines += ["## Errors", ""] + [f"- `{slug}`: {e}" for slug, e in errors] + [""]
    head = "| {} | mutants | " + " | ".join(HEADERS) + " | score |"
    rule = "|---|" + "---:|" * (len(HEADERS) + 2)
    lines += ["## Per exercise", "", "Lowest score first; `salts`: the extra salts of the differential check; "
              "`salt-blind cases`: hidden cases that end before the grader reads its salt; the "
              "last column is the exercise's time in this run.", "",
              head.format("exercise") + " salts | salt-blind cases | seconds |", rule + "---:|---:|---:|"]
    for r in sorted(runs, key=lambda r: (r.score if r.score is not None else 2.0, r.slug)):
        lines.append(f"| `{r.slug}` | " + " | ".join(_row(r.outcomes))
                     + f" | {r.differential_salts} | {r.salt_blind_cases}/{r.cases} | {r.seconds:.0f} |")
    lines += ["", "## Per operator", "", head.format("operator"), rule]
    for name, outs in by_operator(runs).items():
        lines.append(f"| `{name}` | " + " | ".join(_row(outs)) + " |")
    lines += ["", "## Survivors", "",
              "Each survivor is a mistake the hidden cases do not catch: kill it with a new hidden case, "
              "or list it in `equivalent.toml` with its reason.", ""]
    for r in runs:
        if not r.survivors:
            continue
        lines += [f"<details><summary><code>{r.slug}</code>: {len(r.survivors)} survivor(s)</summary>", "",
                  "```diff"]
        for o in r.survivors:
            lines.append(o.mutant.diff(r.reference, r.reference_path).rstrip("\n"))
        lines += ["```", "", "</details>", ""]
    ops = "\n".join(f"| `{name}` | {' '.join((fn.__doc__ or '').split()).replace('``', '`')} |"
                    for name, fn in OPERATORS.items())
    lines.append(HOW.replace("{operators}", ops))
    return "\n".join(lines)
