"""Follow-up questions on the exercise page (issue 18): after the user's code passed the hidden
cases, the Result drawer shows the exercise's ``followups.toml`` questions; each answer is posted
(htmx, or a plain form without JavaScript) and answered with the verdict, the explanation and the
sources. The first answer to a question counts. Within an active mock interview that contains the
exercise the answers go to that session's context (``followups.interview_context``).

Routes: ``GET /exercises/{slug}/followups`` (the panel: a fragment for htmx, else a page) and
``POST /exercises/{slug}/followups/{question_id}``. Both answer 403 (``services.Locked``) before
a pass; cohort mode's sign-in and CSRF apply as to every other form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ... import followups, interview, services
from ..deps import CurrentUser, ExerciseDep, SessionDep
from ..forms import FormDep
from ..templating import templates

router = APIRouter(include_in_schema=False)


@dataclass
class QuestionView:
    """One question as the panel shows it (``shown``: the order an order question's items appear in)."""
    q: followups.Question
    kind: str
    shown: list[int] = field(default_factory=list)
    answered: bool = False
    correct: bool = False
    given_text: str = ""
    right_text: str = ""
    error: str = ""
    fresh: bool = False        # answered by the request that renders it
    reveal: bool = True        # verdict and explanation shown (``followups.revealed``)


def question_view(s, user_id: int, slug: str, q, context: str, rows: dict | None = None,
                  reveal: bool = True) -> QuestionView:
    """``rows``: ``followups.answer_rows`` when the caller read them all at once."""
    v = QuestionView(q=q, kind=q.type, reveal=reveal)
    if isinstance(q, followups.Ordering):
        v.shown = followups.display_order(user_id, slug, q)
    row = rows.get(q.id) if rows is not None else followups.answer_row(s, user_id, slug, q.id, context)
    if row is not None:
        v.answered, v.correct = True, bool(row.correct)
        v.given_text = followups.describe_answer(q, json.loads(row.answer_json))
        v.right_text = followups.right_answer(q)
    return v


def panel_context(s, user_id: int, ex) -> dict:
    """``fu``: the panel's context for ``_followups.html`` (None when the exercise ships no
    follow-ups or the user has not passed yet)."""
    qs = followups.load(ex.folder)
    if not qs:
        return {"fu": None}
    try:
        context = interview.followup_context(s, user_id, ex.slug)
    except services.Locked:
        return {"fu": None}
    rows = followups.answer_rows(s, user_id, ex.slug, context)
    reveal = followups.revealed(context, len(rows), len(qs))
    return {"fu": {"slug": ex.slug, "context": context, "interview": context != followups.PRACTICE,
                   "reveal": reveal, "left": len(qs) - len(rows),
                   "questions": [question_view(s, user_id, ex.slug, q, context, rows, reveal) for q in qs]}}


def _question(ex, question_id: str):
    q = next((q for q in followups.load(ex.folder) if q.id == question_id), None)
    if q is None:
        raise services.NotFound(f"{ex.slug} has no follow-up question {question_id!r}")
    return q


def given_from_form(q, form: dict, shown: list[int]):
    """The answer a form posted, as ``followups.is_correct`` takes it: ``answer`` (a radio's index,
    a number, or the order as the shown labels "3,1,2", counted from 1), or ``choice_<i>`` boxes."""
    if isinstance(q, followups.MultipleChoice):
        picked = sorted(i for i in range(len(q.choices)) if form.get(f"choice_{i}"))
        if not picked:
            raise ValueError("tick at least one choice")
        return picked
    raw = form.get("answer", "")
    if isinstance(raw, bytes):
        raise ValueError("the answer must be text")
    return followups.parse_text(q, raw, shown=shown, base=1 if isinstance(q, followups.Ordering) else 0)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


@router.get("/exercises/{slug}/followups")
def followups_panel(request: Request, ex: ExerciseDep, s: SessionDep, user: CurrentUser):
    if not followups.load(ex.folder):
        raise services.NotFound(f"{ex.slug} has no follow-up questions")
    interview.followup_context(s, user, ex.slug)          # 403 before a pass
    ctx = panel_context(s, user, ex)
    name = "_followups.html" if is_htmx(request) else "followups.html"
    return templates().TemplateResponse(request, name, {**ctx, "ex": ex, "nav": "exercises"})


@router.post("/exercises/{slug}/followups/{question_id}")
def answer_followup(request: Request, question_id: str, form: FormDep, ex: ExerciseDep, s: SessionDep,
                    user: CurrentUser):
    q = _question(ex, question_id)
    context = interview.followup_context(s, user, ex.slug)   # 403 before a pass
    shown = followups.display_order(user, ex.slug, q) if isinstance(q, followups.Ordering) else []
    error = ""
    if followups.answer_row(s, user, ex.slug, q.id, context) is None:
        try:
            given = given_from_form(q, form, shown)
            followups.record_answer(s, user, ex.slug, ex.folder, q.id, given, context=context)
        except ValueError as e:
            error = str(e)
        except services.BadRequest as e:
            error = str(e)
    if not is_htmx(request):
        if error:
            raise services.BadRequest(error)
        return RedirectResponse(f"/exercises/{ex.slug}/followups#fu-{q.id}", status_code=303)
    if context != followups.PRACTICE and not error:
        # within a mock interview the last answer reveals every verdict: re-render the whole panel
        ctx = panel_context(s, user, ex)
        return templates().TemplateResponse(request, "_followups.html", {**ctx, "ex": ex},
                                            headers={"HX-Retarget": "#followups", "HX-Reswap": "innerHTML"})
    v = question_view(s, user, ex.slug, q, context)
    v.error, v.fresh = error, not error
    return templates().TemplateResponse(request, "_followup_question.html",
                                        {"v": v, "slug": ex.slug, "interview": context != followups.PRACTICE},
                                        status_code=200)
