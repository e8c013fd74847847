"""The mock interview on the command line (issue 18, local mode): ``inferprep interview start |
status | finish | report | history`` and ``inferprep hint`` (registered into ``cli.app``).

``interview start`` draws a session into the local database (the same one the web app of
``inferprep serve`` uses, so the session shows on both), writes the drawn exercises' stubs and
statements into a folder and prints the end time; ``inferprep grade SLUG FILE`` records every
grading there (``progress.record_cli_grade``), and those made before the end count toward the
session; ``interview finish`` ends it and prints the report.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
err = Console(stderr=True)

interview_app = typer.Typer(no_args_is_help=True, help="Timed mock interviews drawn from a company's set or a track "
                            "(local mode; the web app shows the same sessions).")


def die(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _local_session():
    """A session on the local database (``Settings``), migrated; exits when cohort mode is set."""
    from . import db
    from .progress import _url
    from .settings import get_settings
    if get_settings().cohort_mode:
        die("mock interviews on the command line are local mode only; in a cohort, take them in the web app")
    return db.session_scope(_url())


def _when(t: datetime) -> str:
    """A time as "14:05 UTC (16:05 local)"."""
    from .interview import _aware
    t = _aware(t)
    local = t.astimezone()
    return f"{t:%Y-%m-%d %H:%M} UTC" + ("" if local.utcoffset() == t.utcoffset() else f" ({local:%H:%M} local)")


def _clock(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def withhold_counterexample(slug: str) -> bool:
    """Whether ``inferprep grade`` should withhold the counterexample of ``slug``: it is an
    exercise of the local user's active mock interview. Best effort: False when the database
    cannot be read."""
    try:
        from . import db, interview
        from .models import LOCAL_USER_ID
        from .progress import _url
        from .settings import get_settings
        if get_settings().cohort_mode:
            return False
        with db.session_scope(_url()) as s:
            return interview.item_in_active_session(s, LOCAL_USER_ID, slug) is not None
    except Exception:  # noqa: BLE001 - grading must not fail for this
        return False


@interview_app.command("start")
def start(directory: Path = typer.Argument(..., help="where to write the stubs and statements"),
          collection: Optional[str] = typer.Option(None, "--collection", help='"Jane Street" or "Google DeepMind"'),
          track: Optional[str] = typer.Option(None, "--track", help="serving, decoding, distributed, roofline or kernels"),
          minutes: int = typer.Option(60, "--minutes", help="30, 45, 60 or 90"),
          seed: Optional[int] = typer.Option(None, "--seed", help="the draw's seed (replay a past session's draw)"),
          force: bool = typer.Option(False, "--force", help="overwrite files of the same names in DIRECTORY")) -> None:
    """Start a timed mock interview: draw its exercises, write their stubs and statements into DIRECTORY."""
    import secrets

    from . import catalog, interview
    from .interview_models import ScopeKind
    from .models import LOCAL_USER_ID
    from .services import BadRequest
    if (collection is None) == (track is None):
        die('give --collection ("Jane Street", "Google DeepMind") or --track (serving, decoding, ...), one of them')
    kind, scope = ((ScopeKind.COLLECTION.value, collection) if collection is not None
                   else (ScopeKind.TRACK.value, track))
    if minutes not in interview.LENGTHS:
        die(f"--minutes must be one of {', '.join(map(str, interview.LENGTHS))}, not {minutes}")
    if seed is not None and not -(2**63) <= seed < 2**63:
        die(f"--seed must lie between -2^63 and 2^63 - 1 (a replayed session's seed), not {seed}")
    replay = seed is not None
    seed = secrets.randbits(62) if seed is None else seed
    with _local_session() as s:
        try:
            label = interview.scope_label(kind, scope)
            current = interview.active_session(s, LOCAL_USER_ID)
            if current is not None:
                die(f"a mock interview is under way (#{current.id}, {_clock(interview.remaining_seconds(current))} "
                    f"left): `inferprep interview status` shows it, `inferprep interview finish` ends it")
            # the draw first (pure, the same seed gives the same one), so that no file is overwritten by surprise
            drawn = interview.draw(interview.candidates(kind, scope), minutes, seed,
                                   interview.recently_passed(s, LOCAL_USER_ID))
        except BadRequest as e:
            die(str(e))
        except ValueError as e:
            die(f"{label}: {e}")
        exs = [catalog.get(slug) for slug, _ in drawn]
        targets = [(directory / f"{ex.module}.py", directory / f"{ex.module}.statement.md") for ex in exs]
        clash = [str(p) for pair in targets for p in pair if p.exists()]
        if clash and not force:
            die(f"{', '.join(clash)} exist; pass --force to overwrite (your work there would be lost), or pick another folder")
        try:
            sess = interview.start_session(s, LOCAL_USER_ID, scope_kind=kind, scope=scope, minutes=minutes,
                                           seed=seed, source="cli", replay=replay)
        except BadRequest as e:
            die(str(e))
        items = interview.session_items(s, sess)
    directory.mkdir(parents=True, exist_ok=True)
    by_slug = {ex.slug: ex for ex in exs}
    table = Table(title=f"Mock interview #{sess.id}: {escape(label)}, {minutes} minutes")
    for col in ("#", "exercise", "role", "difficulty", "points"):
        table.add_column(col, overflow="fold")
    files = []
    for it in items:
        ex = by_slug[it.slug]
        stub, statement = directory / f"{ex.module}.py", directory / f"{ex.module}.statement.md"
        stub.write_text(ex.stub, encoding="utf-8")
        statement.write_text(ex.statement, encoding="utf-8")
        files.append((it.slug, stub, statement))
        table.add_row(str(it.position + 1), it.slug, it.role, ex.meta.difficulty.value, f"{it.points:g}")
    console.print(table)
    console.print("statements:", highlight=False)
    for _, _, statement in files:
        console.print(f"  {statement}", highlight=False, soft_wrap=True)
    console.print(f"[bold]ends at {_when(sess.ends_at)}[/] ({minutes} minutes from now); the draw's seed is {seed}",
                  highlight=False)
    console.print("grade in that folder (every grading before the end counts; --public grades the examples):",
                  highlight=False)
    for slug, stub, _ in files:
        console.print(f"  inferprep grade {slug} {stub}", highlight=False, soft_wrap=True)
    console.print(f"hints: inferprep hint SLUG; in the interview each costs {interview.HINT_PENALTY:.0%} of that "
                  f"exercise's points. Editorials and references stay closed until the end.", highlight=False)
    console.print(f"[dim]scoring: {escape(interview.SCORE_RULE)}[/]", highlight=False)
    console.print("end early: inferprep interview finish · time left: inferprep interview status", highlight=False)


@interview_app.command("status")
def status() -> None:
    """The mock interview under way: time left, and each exercise's attempts, pass and hints so far."""
    from . import interview
    from .models import LOCAL_USER_ID
    with _local_session() as s:
        sess = interview.active_session(s, LOCAL_USER_ID)
        if sess is None:
            past = interview.history(s, LOCAL_USER_ID)
            tail = f"; the last one (#{past[0].id}) scored {past[0].score:.1f}: inferprep interview report {past[0].id}" \
                if past else ""
            console.print(f"no mock interview under way{tail}", highlight=False)
            return
        left = interview.remaining_seconds(sess)
        rep = interview.report(s, sess)
    console.print(f"[bold]mock interview #{sess.id}[/]: {escape(rep.scope_label)}, {sess.minutes} minutes · "
                  f"[bold]{_clock(left)}[/] left (ends at {_when(sess.ends_at)})", highlight=False)
    table = Table()
    for col in ("#", "exercise", "role", "passed", "attempts", "hints"):
        table.add_column(col)
    for it in rep.items:
        table.add_row(str(it.position + 1), escape(it.slug), it.role, "[green]yes[/]" if it.passed else "no",
                      str(it.attempts), str(it.hints_used))
    console.print(table)


def print_report(rep) -> None:
    """An ``interview.InterviewReport`` with rich: one row per exercise, the score and its rule."""
    ended = "time ran out" if rep.finished_by == "time" else "finished"
    table = Table(title=f"Mock interview #{rep.session_id}: {escape(rep.scope_label)}, {rep.minutes} minutes "
                        f"({ended} at {_when(rep.ended_at)})")
    for col in ("#", "exercise", "points", "passed", "1st pass", "attempts", "hints", "follow-ups", "earned"):
        table.add_column(col, no_wrap=col == "exercise",
                         justify="right" if col in ("points", "earned", "attempts", "hints") else "left")
    for it in rep.items:
        fu = f"{sum(f.correct for f in it.followups)}/{len(it.followups)}" if it.followups else "none"
        table.add_row(str(it.position + 1), escape(it.slug), f"{it.points:g}",
                      "[green]yes[/]" if it.passed else "[red]no[/]",
                      f"{it.minutes_to_first_pass:.1f} min" if it.minutes_to_first_pass is not None else "-",
                      str(it.attempts), str(it.hints_used), fu, f"{it.earned:.2f}")
    console.print(table)
    for it in rep.items:
        if it.failing_categories:
            console.print(f"  {escape(it.slug)}: the last attempt failed on {escape(', '.join(it.failing_categories))}",
                          highlight=False)
        unanswered = [f for f in it.followups if not f.answered]
        if unanswered:
            console.print(f"  {escape(it.slug)}: {len(unanswered)} follow-up question(s) unanswered", highlight=False)
    earned, total = sum(i.earned for i in rep.items), sum(i.points for i in rep.items)
    console.print(f"[bold]score {rep.score:.1f} / 100[/]  ({earned:.2f} of {total:g} points)", highlight=False)
    console.print(f"[dim]{escape(rep.rule)}[/]", highlight=False)


@interview_app.command("finish")
def finish() -> None:
    """End the mock interview under way and print its report (or the last one's, if it has ended)."""
    from . import interview
    from .models import LOCAL_USER_ID
    with _local_session() as s:
        sess = interview.active_session(s, LOCAL_USER_ID)
        if sess is not None:
            rep = interview.finish_session(s, LOCAL_USER_ID, sess.id)
        else:
            past = interview.history(s, LOCAL_USER_ID)
            if not past:
                die("no mock interview to finish: start one with `inferprep interview start --collection \"Jane Street\" DIR`")
            rep = interview.report(s, past[0])
            console.print(f"no mock interview under way; the last one (#{past[0].id}) ended at {_when(rep.ended_at)}:",
                          highlight=False)
    print_report(rep)
    console.print("the editorials and references of these exercises are open now (passed or not)", highlight=False)


@interview_app.command("report")
def report_(session_id: int = typer.Argument(..., help="the session's number (inferprep interview history)")) -> None:
    """Print a mock interview's report (the report so far, while it runs)."""
    from . import interview
    from .models import LOCAL_USER_ID
    from .services import NotFound
    if not 0 < session_id < 2**63:
        die(f"no mock interview {session_id}: `inferprep interview history` lists yours")
    with _local_session() as s:
        try:
            sess = interview.get_session(s, LOCAL_USER_ID, session_id)
        except NotFound as e:
            die(str(e))
        rep = interview.report(s, sess)
        running = sess.finished_at is None
    if running:
        console.print("[yellow]still under way: the report so far[/]")
    print_report(rep)


@interview_app.command("history")
def history() -> None:
    """Your past mock interviews with their scores, newest first."""
    from . import interview
    from .models import LOCAL_USER_ID
    with _local_session() as s:
        past = interview.history(s, LOCAL_USER_ID)
        rows = [(p, interview.report(s, p)) for p in past]
    if not rows:
        console.print("no mock interviews yet: inferprep interview start --collection \"Jane Street\" --minutes 30 DIR",
                      highlight=False)
        return
    table = Table(title=f"{len(rows)} mock interviews")
    for col in ("#", "started", "scope", "minutes", "passed", "score", "ended by", "draw"):
        table.add_column(col, justify="right" if col in ("minutes", "score") else "left")
    for p, rep in rows:
        table.add_row(str(p.id), _when(p.started_at), escape(rep.scope_label), str(p.minutes),
                      f"{sum(i.passed for i in rep.items)}/{len(rep.items)}", f"{rep.score:.1f}",
                      "time" if rep.finished_by == "time" else "you", f"replay of seed {p.seed}" if p.replay else "fresh")
    console.print(table)


def hint(slug: str, yes: bool = typer.Option(False, "--yes", "-y", help="reveal without asking (in a mock "
                                             "interview a hint costs 10% of the exercise's points)")) -> None:
    """Reveal the next hint of SLUG and print the hints shown so far (in a mock interview each costs
    10% of that exercise's points)."""
    from . import catalog, interview, services
    from .models import LOCAL_USER_ID
    try:
        ex = catalog.get(slug)
    except catalog.CatalogError as e:
        die(str(e))
    hints = ex.meta.hints
    with _local_session() as s:
        shown = services.hints_shown(s, LOCAL_USER_ID, slug)
        if shown >= len(hints):
            reason = "has no hints" if not hints else f"has {len(hints)} hints, all shown"
            console.print(f"{slug} {reason}", highlight=False)
        else:
            hit = interview.item_in_active_session(s, LOCAL_USER_ID, slug)
            if hit is not None:
                cost = hit[1].points * hit[0].hint_penalty
                console.print(f"{slug} is in your mock interview: a hint costs {hit[0].hint_penalty:.0%} of its points "
                              f"({cost:g} of {hit[1].points:g}); hints used so far: {hit[1].hints_used}", highlight=False)
                if not yes and not typer.confirm("reveal the next hint?", default=False):
                    raise typer.Exit(1)
            shown = interview.use_hint(s, LOCAL_USER_ID, ex)
    for i, h in enumerate(hints[:shown], 1):
        console.print(f"[bold]hint {i}/{len(hints)}[/]: {escape(h)}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(interview_app, name="interview")
    app.command("hint")(hint)
