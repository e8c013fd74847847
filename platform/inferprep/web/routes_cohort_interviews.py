"""Scheduled mock interviews in cohort mode (issue 18): the instructor schedules one from the
cohort's page and switches review and the leaderboard; a student sees it on the dashboard and the
cohort page, starts it inside the window (the session itself is the ``/interview/{id}`` pages),
reads the report after the window when the instructor allows, and opts in or out of the
pseudonymous leaderboard.

Authorization: the instructor routes start from ``cohorts.teaching_cohort`` and check the
interview belongs to that cohort; the student routes from ``cohort_interviews.for_student`` (or
``for_member`` for the leaderboard, which instructors may read too). Anyone else gets 404.
"""

from __future__ import annotations

from datetime import datetime, timezone

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from .. import cohort_interviews, cohorts, interview
from ..db import session_scope
from ..interview_models import DrawMode
from ..services import BadRequest, Locked, NotFound
from .accounts import SignedIn
from .deps import SessionDep
from .forms import FormDep
from .deps import RowId
from .templating import templates

router = APIRouter(include_in_schema=False)


def _when(form: dict, name: str, label: str) -> datetime:
    text = str(form.get(name, "")).strip()
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{label} {text[:40]!r} is not a date and time like 2026-12-01T18:00 (UTC)") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _teacher_ci(s, user, cohort_id: int, ci_id: int):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    ci = cohort_interviews.for_teacher(s, user, ci_id)
    if ci.cohort_id != c.id:
        raise NotFound(f"no scheduled interview {ci_id}")
    return c, ci


def matrix_context(s, cohort_id: int) -> dict:
    """What ``cohort_matrix.html`` needs for the scheduled interviews: their results (a column
    each), the scopes and lengths of the schedule form."""
    return {"mocks": cohort_interviews.cohort_results(s, cohort_id), "mock_scopes": interview.scopes(),
            "mock_lengths": interview.LENGTHS}


# -- instructor -----------------------------------------------------------------------------------
@router.post("/teach/cohorts/{cohort_id}/interviews")
def schedule(form: FormDep, cohort_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    scope_kind, _, scope = str(form.get("scope", "")).partition(":")
    try:
        minutes = int(str(form.get("minutes", "")))
    except ValueError:
        raise BadRequest("the length is a number of minutes") from None
    cohort_interviews.schedule(
        s, c.id, title=str(form.get("title", "")), scope_kind=scope_kind, scope=scope, minutes=minutes,
        opens_at=_when(form, "opens_at", "opens at"), closes_at=_when(form, "closes_at", "closes at"),
        draw=str(form.get("draw", DrawMode.SAME.value)), review_after=form.get("review_after") == "on",
        leaderboard=form.get("leaderboard") == "on")
    return RedirectResponse(f"/teach/cohorts/{c.id}#interviews", status_code=303)


@router.post("/teach/cohorts/{cohort_id}/interviews/{ci_id}/options")
def options(form: FormDep, cohort_id: RowId, ci_id: RowId, s: SessionDep, user: SignedIn):
    """The two switches (checkboxes: absent means off)."""
    c, ci = _teacher_ci(s, user, cohort_id, ci_id)
    cohort_interviews.set_options(s, ci, review_after=form.get("review_after") == "on",
                                  leaderboard=form.get("leaderboard") == "on")
    return RedirectResponse(f"/teach/cohorts/{c.id}#interviews", status_code=303)


# -- student --------------------------------------------------------------------------------------
@router.get("/cohort/interviews/{ci_id}")
def student_page(request: Request, ci_id: RowId, s: SessionDep, user: SignedIn):
    """One scheduled interview for a student: its window and state, Start inside the window, the
    report after it (when open), the leaderboard link."""
    now = interview.now()
    ci = cohort_interviews.for_student(s, user.id, ci_id)
    session = cohort_interviews.session_of(s, user.id, ci.id)
    rep, review = None, None
    if session is not None:
        try:
            rep = cohort_interviews.student_report(s, user.id, ci.id, now)
        except Locked as e:
            review = str(e)
    return templates().TemplateResponse(request, "cohort_interview.html", {
        "ci": ci, "session": session, "state": cohort_interviews.state(ci, session, now), "report": rep,
        "review": review, "scope_label": cohort_interviews.scope_label(ci.scope_kind, ci.scope),
        "remaining": interview.remaining_seconds(session, now) if session else None, "nav": "cohort"})


@router.post("/cohort/interviews/{ci_id}/start")
def start(ci_id: RowId, s: SessionDep, user: SignedIn):
    session = cohort_interviews.start(s, user.id, ci_id)
    return RedirectResponse(f"/interview/{session.id}", status_code=303)


@router.get("/cohort/interviews/{ci_id}/leaderboard")
def leaderboard_page(request: Request, ci_id: RowId, s: SessionDep, user: SignedIn):
    ci = cohort_interviews.for_member(s, user, ci_id)
    student = cohorts.role_in(s, user.id, ci.cohort_id) == "student"
    if interview.active_session(s, user.id) is not None:   # other users' results close during a session
        raise Locked(interview.lock_reason(s, user.id, "") or "other users' results are closed during your mock interview")
    return templates().TemplateResponse(request, "cohort_leaderboard.html", {
        "ci": ci, "board": cohort_interviews.leaderboard(s, ci, viewer_id=user.id), "student": student,
        "alias": cohort_interviews.alias_of(s, user.id, ci) if student else None, "nav": "cohort"})


@router.post("/cohort/interviews/{ci_id}/leaderboard")
def leaderboard_opt(form: FormDep, ci_id: RowId, s: SessionDep, user: SignedIn):
    """``opt`` = "in" (under a new pseudonym) or "out" (the pseudonym is forgotten)."""
    opt = str(form.get("opt", ""))
    if opt == "in":
        cohort_interviews.opt_in(s, user.id, ci_id)
    elif opt == "out":
        cohort_interviews.opt_out(s, user.id, ci_id)
    else:
        raise BadRequest("opt is in or out")
    return RedirectResponse(f"/cohort/interviews/{ci_id}/leaderboard", status_code=303)


def scheduled_for(request: Request) -> list:
    """``scheduled_interviews(request)`` in templates: the signed-in student's scheduled interviews
    that are upcoming, open or running (``cohort_interviews.StudentView``); empty for anyone else."""
    user = getattr(request.state, "user", None)
    if user is None:
        return []
    with session_scope(request.app.state.settings.db_url) as s:
        return cohort_interviews.student_views(s, user.id, current_only=True)


def install(app) -> None:
    app.include_router(router)
    templates().env.globals["scheduled_interviews"] = scheduled_for
