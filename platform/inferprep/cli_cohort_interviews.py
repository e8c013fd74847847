"""``inferprep cohort interview schedule | list``: scheduled mock interviews for a cohort, on the
database directly (as the other ``inferprep cohort`` commands; issue 18)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

import typer

from .cli_cohort import DB_OPT, _cohort, _session, cohort_app, console, die

interview_app = typer.Typer(no_args_is_help=True,
                            help="Scheduled mock interviews: schedule one for a cohort, list them.")


def _when(text: str, what: str) -> datetime:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        die(f"{what} {text!r} is not like 2026-12-01T18:00 (UTC)")
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@interview_app.command("schedule")
def schedule(cohort: str,
             opens: str = typer.Option(..., help="the window opens (UTC), e.g. 2026-12-01T18:00"),
             closes: str = typer.Option(..., help="the window closes (UTC); at least MINUTES after it opens"),
             title: str = typer.Option("Mock interview", help="what students see"),
             collection: Optional[str] = typer.Option(None, help='draw from a collection, e.g. "Jane Street"'),
             track: Optional[str] = typer.Option(None, help="or from a track, e.g. serving"),
             minutes: int = typer.Option(60, help="30, 45, 60 or 90"),
             draw: str = typer.Option("same", help="same (one set for everyone) or per_student"),
             review: bool = typer.Option(True, help="students may read their report after the window"),
             leaderboard: bool = typer.Option(False, help="enable the pseudonymous opt-in leaderboard"),
             database_url: Optional[str] = DB_OPT) -> None:
    """Schedule a timed mock interview for COHORT (its id or name)."""
    from . import cohort_interviews
    from .services import ServiceError
    if bool(collection) == bool(track):
        die("give one of --collection or --track")
    kind, scope = ("collection", collection) if collection else ("track", track)
    with _session(database_url) as s:
        c = _cohort(s, cohort)
        try:
            ci = cohort_interviews.schedule(s, c.id, title=title, scope_kind=kind, scope=scope, minutes=minutes,
                                            opens_at=_when(opens, "--opens"), closes_at=_when(closes, "--closes"),
                                            draw=draw, review_after=review, leaderboard=leaderboard)
        except ServiceError as e:
            die(str(e))
        console.print(f"scheduled interview #{ci.id} {ci.title!r} for {c.name}: {ci.minutes} min from {scope}, "
                      f"{ci.opens_at:%Y-%m-%d %H:%M} to {ci.closes_at:%Y-%m-%d %H:%M} UTC, draw {ci.draw}",
                      highlight=False, soft_wrap=True)


@interview_app.command("list")
def list_(cohort: str, database_url: Optional[str] = DB_OPT) -> None:
    """COHORT's scheduled interviews with how many students finished each."""
    from . import cohort_interviews
    with _session(database_url) as s:
        c = _cohort(s, cohort)
        for r in cohort_interviews.cohort_results(s, c.id):
            done = sum(x.status == "finished" for x in r.rows.values())
            console.print(f"#{r.ci.id}  {r.ci.title}  {r.ci.minutes} min  {r.ci.scope}  "
                          f"{r.ci.opens_at:%Y-%m-%d %H:%M} to {r.ci.closes_at:%Y-%m-%d %H:%M} UTC  "
                          f"{done}/{len(r.rows)} finished", highlight=False, soft_wrap=True)


def register() -> None:
    """Add ``inferprep cohort interview`` under ``cli_cohort``'s ``cohort`` group (called by ``cli``,
    so that ``cli_cohort`` does not import this module back)."""
    cohort_app.add_typer(interview_app, name="interview")
