"""``inferprep followups SLUG``: the follow-up questions an interviewer asks once the code works
(issue 18), on the command line. They open after a pass recorded in the local database (``inferprep
grade`` records one; so does the web app in local mode: the same database). ``--answer QID VALUE``
records one answer and prints the verdict, the explanation and the sources; the first answer to a
question counts. Within an active mock interview that contains the exercise the answers count for
that session (``interview.followup_context``), and their verdicts wait until every question of
the exercise is answered.

VALUE: a choice's index (single), indices "0,2" (multiple), a number (number; its unit may follow),
or the listed items' labels in your order "2,0,1" (order). Indices and labels count from 0, as listed.
Exit code: 0 for a listing or a right answer (or one held back in a mock interview), 1 for a wrong
one, 2 for an error."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from .cli_common import die as _die

console = Console(soft_wrap=True)   # long prompts and URLs stay on one line (copyable)


def die(message: str, code: int = 2) -> None:
    """``cli_common.die`` for plain text (messages here quote prompts and answers with brackets)."""
    _die(escape(message), code)


def _print_question(n: int, q, shown: list[int], row, reveal: bool = True) -> None:
    from . import followups
    console.print(f"\n[bold]{n}. {escape(q.id)}[/] [dim]({q.type})[/]", highlight=False)
    console.print(q.prompt.strip(), markup=False, highlight=False)
    if isinstance(q, (followups.SingleChoice, followups.MultipleChoice)):
        for i, c in enumerate(q.choices):
            console.print(f"  [{i}] {c}", markup=False, highlight=False)
        console.print("  answer: " + ("one index, e.g. 1" if q.type == "single" else "the indices that apply, e.g. 0,2"),
                      style="dim", markup=False, highlight=False)
    elif isinstance(q, followups.NumberAnswer):
        console.print(f"  answer: a number in {q.unit} (right within {q.tolerance:.0%})", style="dim",
                      markup=False, highlight=False)
    elif isinstance(q, followups.Ordering):
        for label, i in enumerate(shown):
            console.print(f"  [{label}] {q.items[i]}", markup=False, highlight=False)
        console.print("  answer: the labels in your order, first to last, e.g. "
                      + ",".join(str(i) for i in reversed(range(len(shown)))), style="dim", markup=False, highlight=False)
    if row is not None:
        _print_result(q, row, reveal)


def _print_result(q, row, reveal: bool = True) -> None:
    from . import followups
    given = followups.describe_answer(q, json.loads(row.answer_json))
    if not reveal:
        console.print(f"  [bold]recorded[/]: {escape(given)} (in a mock interview the verdicts and explanations "
                      "show once every question here is answered)", highlight=False)
        return
    if row.correct:
        console.print(f"  [green bold]right[/]: {escape(given)}", highlight=False)
    else:
        console.print(f"  [red bold]wrong[/]: {escape(given)}; the answer: {escape(followups.right_answer(q))}",
                      highlight=False)
    console.print(q.explanation.strip(), markup=False, highlight=False)
    console.print("Sources:", style="dim")
    for src in q.sources:
        console.print(f"  - {src}", markup=False, highlight=False)


def followups_command(slug: str = typer.Argument(..., help="the exercise"),
                      answer: Optional[tuple[str, str]] = typer.Option(
                          None, "--answer", metavar="QID VALUE",
                          help="answer question QID: an index, indices \"0,2\", a number, or an order \"2,0,1\"")) -> None:
    """The follow-up questions of SLUG once your code passed (or answer one with --answer QID VALUE)."""
    from . import catalog, db, followups, interview, services
    from .models import LOCAL_USER_ID
    from .progress import _url
    try:
        ex = catalog.get(slug)
    except catalog.CatalogError as e:
        die(str(e))
    try:
        qs = followups.load(ex.folder)
    except followups.MalformedFollowups as e:
        die(str(e))
    if not qs:
        die(f"{slug} has no follow-up questions")
    user = LOCAL_USER_ID
    with db.session_scope(_url()) as s:
        try:
            context = interview.followup_context(s, user, slug)
        except services.Locked as e:
            die(f"{e}: grade your solution first (inferprep grade {slug} FILE)")
        where = "this mock interview" if context != followups.PRACTICE else "practice"
        if answer is None:
            console.print(f"[bold]{escape(ex.meta.title)}[/]: {len(qs)} follow-up questions ({where}; your first "
                          "answer to each counts)", highlight=False)
            rows = followups.answer_rows(s, user, slug, context)
            reveal = followups.revealed(context, len(rows), len(qs))
            for n, q in enumerate(qs, 1):
                shown = followups.display_order(user, slug, q) if isinstance(q, followups.Ordering) else []
                _print_question(n, q, shown, rows.get(q.id), reveal)
            raise typer.Exit(0)
        qid, value = answer
        q = next((q for q in qs if q.id == qid), None)
        if q is None:
            die(f"{slug} has no follow-up question {qid!r}; its questions: {', '.join(q.id for q in qs)}")
        row = followups.answer_row(s, user, slug, q.id, context)
        if row is not None:
            console.print("You answered this one before; the first answer counts.", style="yellow")
        else:
            shown = followups.display_order(user, slug, q) if isinstance(q, followups.Ordering) else None
            try:
                given = followups.parse_text(q, value, shown=shown, base=0)
                row = followups.record_answer(s, user, slug, ex.folder, q.id, given, context=context)
            except ValueError as e:
                die(str(e))
            except services.ServiceError as e:
                die(str(e))
        console.print(f"answer recorded for {where}", style="dim", highlight=False)
        reveal = followups.revealed(context, len(followups.answer_rows(s, user, slug, context)), len(qs))
        _print_result(q, row, reveal)
        raise typer.Exit((0 if row.correct else 1) if reveal else 0)   # the exit code would tell too


def register(app: typer.Typer) -> None:
    app.command("followups")(followups_command)
