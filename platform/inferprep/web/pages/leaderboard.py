"""The per-exercise performance leaderboard (issue 19): one board per device kind, pseudonyms only,
and the signed-in user's opt-in toggle for each board (off by default)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse

from ... import interview, perf_board, services
from ..deps import CurrentUser, ExerciseDep, SessionDep
from ..forms import FormDep
from ..templating import templates

router = APIRouter(include_in_schema=False)


def _boards(s, ex, user: int) -> list[dict]:
    if interview.active_session(s, user) is not None:   # other users' results close during a mock interview
        raise services.Locked("other users' results are closed during your mock interview")
    try:
        boards = perf_board.standings(s, ex.slug, viewer=user)
    except perf_board.BoardError as e:
        raise HTTPException(404, str(e)) from None
    return [{"kind": kind, "rows": rows, "opted_in": perf_board.opted_in(s, user, ex.slug, kind) is not None}
            for kind, rows in boards.items()]


@router.get("/exercises/{slug}/leaderboard")
def leaderboard_page(request: Request, ex: ExerciseDep, s: SessionDep, user: CurrentUser):
    return templates().TemplateResponse(request, "perf_leaderboard.html",
                                        {"ex": ex, "boards": _boards(s, ex, user), "nav": "exercises"})


@router.post("/exercises/{slug}/leaderboard")
def set_opt_in(request: Request, form: FormDep, ex: ExerciseDep, s: SessionDep, user: CurrentUser):
    """Form fields: ``kind`` (a device kind of the page) and ``on`` (``1`` to opt in, else out)."""
    kind = str(form.get("kind", ""))
    try:
        perf_board.set_opt_in(s, user, ex.slug, kind, on=str(form.get("on", "")) == "1")
    except perf_board.BoardError as e:
        raise HTTPException(400, str(e)) from None
    return RedirectResponse(f"/exercises/{ex.slug}/leaderboard", status_code=303)
