"""The command line: ``inferprep list | show | start | grade | run | check-exercise | ...`` (typer + rich)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table

from . import catalog
from .cli_common import (STATUS_STYLE, console, die, err, print_detail,  # noqa: F401 - also cli's names
                         print_verdict, read_submission_file)
from .verdict import CaseResult, Status

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Practise LLM inference-engineering interview questions with hidden graders.")


def _exercise(slug: str) -> catalog.Exercise:
    try:
        return catalog.get(slug)
    except catalog.CatalogError as e:
        die(str(e))


def _local_status() -> dict[str, str]:
    try:
        from .progress import local_status
        return local_status()
    except Exception:  # noqa: BLE001 - progress is a convenience; never block listing
        return {}


@app.command("list")
def list_(track: Optional[str] = typer.Option(None, help="only this track (serving, decoding, distributed, roofline, kernels)"),
          as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List exercises: track, difficulty, kind and your status."""
    try:
        exs = catalog.all_exercises()
    except catalog.CatalogError as e:
        die(str(e))
    if track:
        try:
            t = catalog.Track(track)
        except ValueError:
            die(f"unknown track {track!r}; tracks: {', '.join(x.value for x in catalog.Track)}")
        exs = [e for e in exs if e.meta.track == t]
    status = _local_status()
    if as_json:
        print(json.dumps([{"slug": e.slug, "title": e.meta.title, "track": e.meta.track.value,
                           "difficulty": e.meta.difficulty.value, "kind": e.meta.kind.value,
                           "sources": e.meta.sources, "status": status.get(e.slug, "untouched"),
                           "unavailable": e.unavailable} for e in exs], indent=2))
        return
    # Narrow terminals get the columns that matter; wide ones the title and sources too.
    wide = console.width >= 150
    cols = ["slug", "track", "difficulty", "kind", "status"] + (["title", "sources"] if wide else [])
    table = Table(title=f"{len(exs)} exercises")
    for col in cols:
        table.add_column(col, no_wrap=col in ("slug", "status"))
    for e in exs:
        st = "unavailable" if e.unavailable else status.get(e.slug, "untouched")
        style = {"solved": "green", "attempted": "yellow", "unavailable": "red"}.get(st, "dim")
        row = [e.slug, e.meta.track.value, e.meta.difficulty.value, e.meta.kind.value, f"[{style}]{st}[/]"]
        if wide:
            row += [escape(e.meta.title), ", ".join(e.meta.sources)]
        table.add_row(*row)
    console.print(table)
    for e in exs:
        if e.unavailable:
            console.print(f"[red]unavailable[/] {e.slug}: {escape(e.unavailable)}", highlight=False)


_TEX = {r"\\le": "≤", r"\\ge": "≥", r"\\leq": "≤", r"\\geq": "≥", r"\\neq": "≠", r"\\cdot": "·",
        r"\\times": "×", r"\\leftarrow": "←", r"\\rightarrow": "→", r"\\to": "→", r"\\approx": "≈",
        r"\\infty": "∞", r"\\sum": "Σ", r"\\alpha": "α", r"\\beta": "β", r"\\theta": "θ",
        r"\\in": "∈", r"\\lfloor": "⌊", r"\\rfloor": "⌋", r"\\lceil": "⌈", r"\\rceil": "⌉", r"\\,": " ",
        r"\\;": " ", r"\\!": "", r"\\{": "{", r"\\}": "}", r"\\mid": "|", r"\\log": "log", r"\\exp": "exp",
        r"\\max": "max", r"\\min": "min", r"\\left": "", r"\\right": "", r"\\ldots": "…", r"\\dots": "…", r"\\%": "%"}


def plain_math(markdown: str) -> str:
    """Terminal rendering of ``$...$`` math: common macros to Unicode, ``$`` and braces dropped
    (the web page renders the real thing with KaTeX)."""
    import re

    def conv(m: "re.Match") -> str:
        t = m.group(1)
        for k in sorted(_TEX, key=len, reverse=True):
            t = re.sub(k + (r"(?![A-Za-z])" if k[-1].isalpha() else ""), _TEX[k], t)
        t = re.sub(r"\\(?:mathrm|text|mathbf|operatorname)\{([^{}]*)\}", r"\1", t)
        t = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", t)
        t = re.sub(r"\\binom\{([^{}]*)\}\{([^{}]*)\}", r"C(\1, \2)", t)
        t = t.replace("^\\top", "ᵀ").replace("^\\star", "*").replace("^{\\top}", "ᵀ")
        # a one-character exponent or index reads fine bare; a longer one keeps its grouping
        t = re.sub(r"\^\{([^{}])\}", r"^\1", t)
        t = re.sub(r"_\{([^{}])\}", r"_\1", t)
        t = re.sub(r"\^\{([^{}]*)\}", r"^(\1)", t)
        t = re.sub(r"_\{([^{}]*)\}", r"_(\1)", t)
        t = re.sub(r"\\(?:mathbb|texttt|mathcal|boldsymbol)\{([^{}]*)\}", r"\1", t)
        t = re.sub(r"\\(?:big|Big|bigg|Bigg|mathrel|displaystyle)\b", "", t)
        t = t.replace("\\circ", "∘").replace("\\partial", "∂").replace("\\sqrt", "√").replace("\\ln", "ln")
        return t
    markdown = re.sub(r"\$\$(.+?)\$\$", lambda m: "`" + conv(m).strip() + "`", markdown, flags=re.S)
    return re.sub(r"(?<![\\$])\$([^$\n]+?)\$", conv, markdown)


@app.command()
def show(slug: str) -> None:
    """Print an exercise's statement."""
    ex = _exercise(slug)
    console.print(Markdown(plain_math(ex.statement)))
    console.print(f"\n[dim]entrypoints: {', '.join(ex.meta.entrypoints)} · start with:[/] inferprep start {slug}")


@app.command()
def start(slug: str, directory: Path = typer.Argument(Path("."), help="where to write the stub"),
          force: bool = typer.Option(False, help="overwrite an existing file")) -> None:
    """Write the stub to DIRECTORY/<module>.py and print the command that grades it."""
    ex = _exercise(slug)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{ex.module}.py"
    if target.exists() and not force:
        die(f"{target} exists; pass --force to overwrite it (your work there would be lost)")
    target.write_text(ex.stub, encoding="utf-8")
    console.print(f"wrote [bold]{target}[/]\nread the statement: inferprep show {slug}\n"
                  f"grade the public examples: inferprep grade {slug} {target} --public\n"
                  f"grade the hidden cases:    inferprep grade {slug} {target}", soft_wrap=True)


@app.command()
def grade(slug: str, file: Path,
          device: str = typer.Option("auto", help="cpu, cuda or auto"),
          public: bool = typer.Option(False, "--public", help="grade the public examples only"),
          as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
          sandbox: Optional[str] = typer.Option(None, help="auto, bwrap or none (default: auto)"),
          no_record: bool = typer.Option(False, "--no-record", help="do not record this grading in the local database"),
          perf: Optional[bool] = typer.Option(None, "--perf/--no-perf", help=(
              "time a passing submission against the reference (exercises with a perf stage; "
              "default: on for cuda, off for cpu)"))) -> None:
    """Grade FILE against SLUG's hidden cases (or --public examples). Exit code 0 only on a pass."""
    from .runner import judge
    ex = _exercise(slug)
    if ex.unavailable:
        die(escape(f"{slug} cannot be graded on this install: {ex.unavailable}"))
    code = read_submission_file(file)
    try:
        dev = judge.resolve_device(device, ex)
    except (judge.DeviceUnavailable, ValueError) as e:
        die(str(e))

    def progress(c: CaseResult) -> None:
        if not as_json:
            mark = "[green]✓[/]" if c.passed else f"[red]✗ {c.status.value}[/]"
            err.print(f"  {mark} {escape(c.name)}", highlight=False)

    if not as_json:
        err.print(f"grading [bold]{file}[/] against {slug} ({'public examples' if public else 'hidden cases'}, {dev})")
    from .cli_interview import withhold_counterexample   # shown once a mock interview that drew it ends
    v = judge.grade(ex, code, device=dev, public=public, sandbox_mode=sandbox, progress=progress,
                    counterexample=not withhold_counterexample(slug), perf=perf)
    if not no_record:
        try:
            from .progress import record_cli_grade
            record_cli_grade(ex, code, v)
        except Exception as e:  # noqa: BLE001 - recording is best effort; the verdict stands
            err.print(f"[dim]note: could not record this grading locally ({e})[/]")
    if as_json:
        print(v.model_dump_json(indent=2))
    else:
        print_verdict(v)
    raise typer.Exit(0 if v.ok else 1)


@app.command("run")
def run_scratch(slug: str, file: Path,
                scratch: Path = typer.Option(..., "--scratch", metavar="SNIPPET.py",
                                             help="Python lines to run with FILE bound to the name `solution`"),
                device: str = typer.Option("auto", help="cpu, cuda or auto"),
                as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
                sandbox: Optional[str] = typer.Option(None, help="auto, bwrap or none (default: auto)")) -> None:
    """Run a scratch SNIPPET.py against FILE in the sandbox, under SLUG's limits, and print its output.
    Nothing is graded or recorded. Exit code 0 when the snippet ran to its end."""
    from .runner import judge
    from .runner import scratch as scratch_runner
    ex = _exercise(slug)
    code, snippet = read_submission_file(file), read_submission_file(scratch)
    try:
        dev = judge.resolve_device(device, ex)
    except (judge.DeviceUnavailable, ValueError) as e:
        die(str(e))
    r = scratch_runner.run(ex, code, snippet, device=dev, sandbox_mode=sandbox)
    if as_json:
        print(r.model_dump_json(indent=2))
        raise typer.Exit(0 if r.ok else 1)
    console.print(r.stdout, markup=False, highlight=False, end="")
    if r.stderr.strip():
        err.print(r.stderr, markup=False, highlight=False, style="dim", end="")
    if r.traceback or r.message:
        err.print(r.traceback or r.message, markup=False, highlight=False, style="red", end="\n")
    style = "green" if r.ok else STATUS_STYLE[Status(r.status)]
    err.print(f"[{style} bold]{r.label}[/]  ·  {r.cpu_s:.2f} s CPU of {r.time_limit_s:g} s  ·  {r.seconds:.2f} s "
              f"on {r.device}  ·  scratch run, not graded", highlight=False)
    raise typer.Exit(0 if r.ok else 1)


@app.command("check-exercise")
def check_exercise(slug: Optional[str] = typer.Argument(None), all_: bool = typer.Option(False, "--all"),
                   device: str = typer.Option("cpu"), sandbox: Optional[str] = typer.Option(None),
                   salt: Optional[int] = typer.Option(None, help="the salt every grading runs under "
                                                      "[default: check.CHECK_SALT]"),
                   mutate: bool = typer.Option(False, "--mutate", help="also grade the reference's mutants "
                                               "and require the mutation score (inferprep mutate)")) -> None:
    """Check an exercise: metadata, statement, reference passes, stub and wrong variants fail, and
    the grader's hidden cases come from its salt, not from the submission's text."""
    from .check import CHECK_SALT, check_exercise as run_check
    if not slug and not all_:
        die("give a SLUG or --all")
    slugs = [e.slug for e in catalog.all_exercises()] if all_ else [slug]
    bad = 0
    for s in slugs:
        console.print(f"[bold]{s}[/]")
        rep = run_check(s, device=device, sandbox_mode=sandbox, salt=CHECK_SALT if salt is None else salt, mutate=mutate,
                        on_finding=lambda f: console.print(f"  {'[green]ok[/]' if f.ok else '[red]FAIL[/]'} {f.what}"
                                                           f"{'  [dim]' + f.detail + '[/]' if f.detail else ''}", highlight=False))
        bad += not rep.ok
    if bad:
        die(f"{bad} of {len(slugs)} exercise(s) failed their checks", 1)


@app.command()
def mutate(slugs: Optional[list[str]] = typer.Argument(None, help="the exercises to mutate"),
           all_: bool = typer.Option(False, "--all", help="every exercise"),
           jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="gradings at once (threads, each on the warm pool)"),
           operators: Optional[str] = typer.Option(None, help="comma-separated operator names [default: all]"),
           max_mutants: Optional[int] = typer.Option(None, min=1, help="at most this many mutants per exercise, "
                                                     "spread evenly (a sample)"),
           report: Optional[Path] = typer.Option(None, help="write the Markdown report here "
                                                 "(docs/grader-strength.md)"),
           salt: Optional[int] = typer.Option(None, help="the salt every grading runs under "
                                              "[default: mutate.MUTATE_SALT]"),
           device: str = typer.Option("cpu"), sandbox: Optional[str] = typer.Option(None),
           diffs: bool = typer.Option(True, "--diffs/--no-diffs", help="print each survivor's diff"),
           cache: bool = typer.Option(True, "--cache/--no-cache", help=(
               "skip the extra salts of listed equivalents already confirmed for the same mutant and grader "
               "(kept in the data folder)")),
           exact: bool = typer.Option(False, "--exact", help=(
               "grade every mutant on every hidden case (by default a mutant is graded first on the cases "
               "that call code reaching it, and again on all cases if it passes them)")),
           mutant_ids: Optional[list[str]] = typer.Option(None, "--mutant", help=(
               "grade only the mutant with this id (as the survivors list shows it, e.g. "
               "compare@12:8#0); repeat for more; one SLUG only"))) -> None:
    """Mutation testing: grade small mistakes made in each reference solution and report how many
    the grader detects (per exercise, per operator, survivors' diffs). Exit code 1 when an
    exercise's reference fails or its equivalent.toml is wrong."""
    from .mutate import MUTATE_SALT, OPERATORS
    from .mutate.command import run_mutate
    if bool(slugs) == all_:
        die("give SLUG ... or --all (not both)")
    ops = [o.strip() for o in operators.split(",") if o.strip()] if operators is not None else None
    if ops is not None and (not ops or any(o not in OPERATORS for o in ops)):
        die(f"unknown operator in {operators!r}; operators: {', '.join(OPERATORS)}")
    if mutant_ids and (all_ or len(set(slugs)) != 1):
        die("--mutant needs exactly one SLUG")
    try:
        exs = catalog.all_exercises() if all_ else [_exercise(s) for s in dict.fromkeys(slugs)]
    except catalog.CatalogError as e:
        die(str(e))
    if mutant_ids:
        from .mutate.mutants import generate
        known = {m.id for m in generate(exs[0].reference_path.read_text(encoding="utf-8"), ops,
                                        exs[0].meta.entrypoints)}
        unknown = [i for i in mutant_ids if i not in known]
        if unknown:
            die(f"no mutant {', '.join(unknown)} of {exs[0].slug} (ids look like compare@12:8#0)")
    code = run_mutate(exs, console=console, err=err, jobs=jobs, operators=ops, max_mutants=max_mutants,
                      salt=MUTATE_SALT if salt is None else salt, device=device, sandbox_mode=sandbox,
                      diffs=diffs, report=report, command="inferprep " + " ".join(sys.argv[1:]),
                      cache=cache, exact=exact, only=set(mutant_ids) if mutant_ids else None)
    raise typer.Exit(code)


@app.command()
def serve(host: Optional[str] = typer.Option(None, help="address to bind [env INFERPREP_HOST; default 127.0.0.1]"),
          port: Optional[int] = typer.Option(None, help="port [env INFERPREP_PORT; default 8000]"),
          database_url: Optional[str] = typer.Option(None, help="SQLAlchemy URL [env INFERPREP_DATABASE_URL; "
                                                     "default SQLite in the data dir]"),
          data_dir: Optional[Path] = typer.Option(None, help="where the SQLite database lives [env INFERPREP_DATA_DIR; "
                                                  "default: your user data folder]"),
          grading_threads: Optional[int] = typer.Option(None, help="embedded grading worker threads [env INFERPREP_GRADING_THREADS]"),
          device: Optional[str] = typer.Option(None, help="auto, cpu or cuda [env INFERPREP_DEVICE]"),
          cohort: Optional[bool] = typer.Option(None, "--cohort", help="cohort mode: accounts, roles, instructors "
                                                "[env INFERPREP_COHORT_MODE]"),
          allow_unsandboxed: Optional[bool] = typer.Option(None, "--allow-unsandboxed", help="cohort mode: grade "
                                                           "without bubblewrap anyway [env INFERPREP_ALLOW_UNSANDBOXED]")) -> None:
    """Serve the web platform (local mode: one user, no login) with an embedded grading worker."""
    import uvicorn
    from .settings import Settings
    from .web import create_app
    overrides = {k: v for k, v in dict(host=host, port=port, database_url=database_url, data_dir=data_dir,
                                       grading_threads=grading_threads, device=device, cohort_mode=cohort,
                                       allow_unsandboxed=allow_unsandboxed).items() if v is not None}
    try:
        settings = Settings(**overrides)
    except ValueError as e:
        die(str(e))
    where = settings.db_url if not settings.is_sqlite else settings.db_url.removeprefix("sqlite:///")
    err.print(f"inferprep: http://{settings.host}:{settings.port}  ·  database {where}", highlight=False)
    try:
        web_app = create_app(settings)
    except RuntimeError as e:   # cohort mode without bubblewrap
        die(str(e))
    uvicorn.run(web_app, host=settings.host, port=settings.port, log_level="info")


db_app = typer.Typer(no_args_is_help=True, help="The database: migrations.")
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def db_upgrade(database_url: Optional[str] = typer.Option(None, help="SQLAlchemy URL [env INFERPREP_DATABASE_URL]"),
               revision: str = typer.Argument("head")) -> None:
    """Apply the database migrations (serve does this on start in local mode)."""
    from . import db
    from .settings import Settings
    settings = Settings(**({"database_url": database_url} if database_url else {}))
    db.upgrade(settings.db_url, revision)
    console.print(f"database at {revision}: {settings.db_url}", highlight=False)


from .cli_cohort import register as _register_hosting  # noqa: E402 - admin, cohort, worker, submit

_register_hosting(app)

from .cli_cohort_interviews import register as _register_cohort_interviews  # noqa: E402 - cohort interview

_register_cohort_interviews()

from .cli_interview import register as _register_interview  # noqa: E402 - interview, hint

_register_interview(app)

from .cli_followups import register as _register_followups  # noqa: E402 - followups (issue 18)

_register_followups(app)


@app.callback()
def _at_exit() -> None:
    """Before the CLI exits, finish the background clean-ups (uid sweep) and stop the warm pool,
    so that nothing a submission started outlives the command."""
    import atexit

    def done() -> None:
        # Only what this command loaded: importing at exit fails, and `list` must not pay for torch.
        process = sys.modules.get("inferprep.runner.process")
        forkserver = sys.modules.get("inferprep.runner.forkserver")
        if process is not None:
            process.drain_cleanups()
        if forkserver is not None:
            forkserver.shutdown()
    atexit.register(done)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
