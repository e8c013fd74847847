"""``inferprep mutate``: run the mutants of several exercises, print tables and survivors, write
the report. The command's options live in ``inferprep.cli``; this is its body."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import paths
from ..settings import get_settings
from ..catalog import Exercise
from .engine import CONFIRMED_FILE, ConfirmedEquivalents, ExerciseRun, mutate_exercise
from .report import exercise_table, markdown, operator_table


def run_mutate(exercises: list[Exercise], *, console: Console, err: Console, jobs: int = 1,
               operators: list[str] | None = None, max_mutants: int | None = None, salt: int,
               device: str = "cpu", sandbox_mode: str | None = None, diffs: bool = True,
               report: Path | None = None, command: str = "inferprep mutate", cache: bool = True,
               exact: bool = False, only: set[str] | None = None) -> int:
    """Mutate ``exercises`` one after the other; print per-exercise and per-operator tables, the
    survivors' diffs (``diffs``) and every error; write the Markdown ``report`` if asked.
    The report is rewritten after each exercise (marked partial until the last), so a long run
    that is stopped still leaves what it measured. ``cache``: keep the listed equivalents the
    differential check confirmed in the data folder, so the next run skips their extra salts.
    ``exact``: grade every mutant on every case (``mutate.selection``). ``only``: grade just the
    mutants with these ids (``Mutant.id``; a survivor's regrade while a grader is being fixed). Returns the exit code: 1
    when an exercise has an error (its reference fails, its ``equivalent.toml`` is malformed or wrong), else 0."""
    t0 = time.perf_counter()
    runs: list[ExerciseRun] = []
    confirmed = None
    if cache:
        confirmed = ConfirmedEquivalents(get_settings().data_dir / CONFIRMED_FILE)

    def write_report() -> None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(markdown(runs, command=command, seconds=time.perf_counter() - t0, salt=salt, jobs=jobs,
                                   root=paths.content_root(), operators=operators, planned=len(exercises),
                                   max_mutants=max_mutants, exact=exact),
                          encoding="utf-8")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        for ex in exercises:
            task = progress.add_task(ex.slug, total=None)
            run = mutate_exercise(ex, operators=operators, salt=salt, jobs=jobs, max_mutants=max_mutants,
                                  device=device, sandbox_mode=sandbox_mode, confirmed=confirmed, exact=exact, only=only,
                                  on_start=lambda n, task=task: progress.update(task, total=n),
                                  on_outcome=lambda _o, task=task: progress.advance(task))
            progress.remove_task(task)
            split = ", ".join(f"{k} {v:.0f} s" for k, v in run.phase_seconds.items() if v >= 0.5)
            err.print(f"{ex.slug}: {run.summary()} in {run.seconds:.0f} s" + (f" (grading: {split})" if split else ""),
                      highlight=False)
            runs.append(run)
            if report is not None:
                write_report()
    console.print(exercise_table(runs))
    if len(runs) > 1 or len(operators or ()) != 1:
        console.print(operator_table(runs))
    if diffs:
        for run in runs:
            for o in run.survivors:
                console.print(f"[bold]{escape(run.slug)}[/] survivor {o.mutant.id}: {escape(o.mutant.description)}",
                              highlight=False)
                console.print(o.mutant.diff(run.reference, run.reference_path), markup=False, highlight=False,
                              soft_wrap=True)
    bad = 0
    for run in runs:
        for e in run.errors:
            err.print(f"[bold red]error:[/] {escape(run.slug)}: {escape(e)}", highlight=False)
        bad += bool(run.errors)
    if report is not None:
        err.print(f"wrote {report}", highlight=False)
    return 1 if bad else 0
