"""Instructor pages (cohort mode): the cohorts one teaches, a students x exercises matrix with
pass rates and the cases failed most often, the policy, any student's submission, CSV export.

Every handler starts from ``cohorts.teaching_cohort`` or ``cohorts.submission_for_teacher``,
which answer 404 to anyone who does not teach that cohort (admins teach every cohort).
"""

from __future__ import annotations

from datetime import datetime, timezone

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from .. import cohorts, grades_export, services
from ..cohort_models import Unlock
from ..models import Role, Submission, User
from ..services import BadRequest, NotFound
from . import routes_cohort_interviews
from .api.schemas import SubmissionPublic
from .accounts import SignedIn
from .deps import RowId, SessionDep
from .forms import FormDep
from .templating import templates

router = APIRouter(prefix="/teach", include_in_schema=False)
api_router = APIRouter(prefix="/api/teach", tags=["instructor"])


def _need_teacher(user) -> None:
    if not (user.is_instructor or user.is_admin):
        raise NotFound("instructor pages are for instructor accounts (`inferprep admin create-instructor`)")


def _parse_deadline(text: str) -> datetime | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"deadline {text!r} is not a date and time like 2026-12-01T18:00 (UTC)") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@router.get("")
def teach_home(request: Request, s: SessionDep, user: SignedIn):
    _need_teacher(user)
    return templates().TemplateResponse(request, "cohort_teach.html", {
        "cohorts": cohorts.cohorts_of(s, user, None if user.is_admin else Role.INSTRUCTOR.value), "nav": "teach"})


@router.post("/cohorts")
def create_cohort(request: Request, form: FormDep, s: SessionDep, user: SignedIn):
    _need_teacher(user)
    c = cohorts.create_cohort(s, str(form.get("name", "")), instructor_id=user.id)
    return RedirectResponse(f"/teach/cohorts/{c.id}", status_code=303)


@router.get("/cohorts/{cohort_id}")
def cohort_matrix(request: Request, cohort_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    m = cohorts.matrix(s, c)
    titles = {}
    for slug in m.slugs:
        try:
            titles[slug] = services.get_exercise(slug).meta.title
        except NotFound:
            titles[slug] = slug
    return templates().TemplateResponse(request, "cohort_matrix.html", {
        "m": m, "c": c, "titles": titles, "policy": cohorts.policy(s, c.id), "unlocks": list(Unlock),
        "catalog": services.catalog_exercises(),
        "signup_url": f"{request.base_url}signup?code={c.join_code}", "nav": "teach",
        **routes_cohort_interviews.matrix_context(s, c.id)})


@router.post("/cohorts/{cohort_id}/policy")
def set_policy(request: Request, form: FormDep, cohort_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    try:
        per_hour = int(str(form.get("submissions_per_hour", "")).strip() or -1)
    except ValueError:
        raise BadRequest("submissions per hour is a whole number") from None
    cohorts.set_policy(s, c.id, unlock=str(form.get("unlock", "")) or None,
                       submissions_per_hour=None if per_hour < 0 else per_hour)
    return RedirectResponse(f"/teach/cohorts/{c.id}#policy", status_code=303)


@router.post("/cohorts/{cohort_id}/assignments")
def assign(request: Request, form: FormDep, cohort_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    slug = cohorts.exercise_by_name(str(form.get("exercise", "")))      # a title or a slug
    cohorts.assign(s, c.id, slug, _parse_deadline(str(form.get("deadline", ""))))
    return RedirectResponse(f"/teach/cohorts/{c.id}#policy", status_code=303)


@router.post("/cohorts/{cohort_id}/assignments/{slug}/delete")
def unassign(cohort_id: RowId, slug: str, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    cohorts.unassign(s, c.id, cohorts.valid_slug(slug))
    return RedirectResponse(f"/teach/cohorts/{c.id}#policy", status_code=303)


@router.get("/cohorts/{cohort_id}/grades.csv")
def export(cohort_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    return Response(grades_export.export_csv(s, c), media_type="text/csv; charset=utf-8",
                     headers={"Content-Disposition": f'attachment; filename="cohort-{c.id}-grades.csv"'})


@router.get("/cohorts/{cohort_id}/students/{user_id}")
def student_page(request: Request, cohort_id: RowId, user_id: RowId, s: SessionDep, user: SignedIn):
    c = cohorts.teaching_cohort(s, user, cohort_id)
    student = cohorts.student_of(s, c.id, user_id)
    subs = services.list_submissions(s, student.id, limit=500)
    return templates().TemplateResponse(request, "cohort_student.html", {"c": c, "student": student,
                                                                         "subs": subs, "nav": "teach"})


@router.get("/cohorts/{cohort_id}/students/{user_id}/exercises/{slug}")
def student_exercise_page(request: Request, cohort_id: RowId, user_id: RowId, slug: str, s: SessionDep,
                          user: SignedIn):
    """One student's submissions for one exercise (a cell of the matrix)."""
    c = cohorts.teaching_cohort(s, user, cohort_id)
    student = cohorts.student_of(s, c.id, user_id)
    ex = services.get_exercise(cohorts.valid_slug(slug))
    subs = services.list_submissions(s, student.id, ex.slug, limit=500)
    return templates().TemplateResponse(request, "cohort_student.html", {"c": c, "student": student, "ex": ex,
                                                                         "subs": subs, "nav": "teach"})


@router.get("/submissions/{sub_id}")
def submission_page(request: Request, sub_id: RowId, s: SessionDep, user: SignedIn, rejudge: str = ""):
    sub = cohorts.submission_for_teacher(s, user, sub_id)
    return templates().TemplateResponse(request, "cohort_submission.html",
                                        {**_sub_ctx(s, sub), "rejudge": REJUDGE_TEXT.get(rejudge)})


@router.get("/submissions/{sub_id}/row")
def submission_row(request: Request, sub_id: RowId, s: SessionDep, user: SignedIn, rejudge: str = ""):
    """A submission's row of the student pages; while it waits or grades, the row asks for
    itself again a second later (htmx), so a rejudged row shows its new verdict when it exists."""
    sub = cohorts.submission_for_teacher(s, user, sub_id)
    return templates().TemplateResponse(request, "_cohort_sub_row.html",
                                        {"sub": sub, "rejudge": rejudge if rejudge in REJUDGE_TEXT else ""})


REJUDGE_TEXT = {"queued": "Queued for rejudging: the verdict below updates when it is graded.",
                "busy": "Not queued again: this submission is already waiting or being graded."}


@router.post("/submissions/{sub_id}/rejudge")
def rejudge(request: Request, sub_id: RowId, s: SessionDep, user: SignedIn):
    """Grade a finished submission again. From the student pages (htmx) the answer is the
    submission's row, which follows the grading; otherwise the submission's page."""
    sub = cohorts.submission_for_teacher(s, user, sub_id)
    queued = cohorts.rejudge(s, sub.id)
    if queued and request.app.state.worker is not None:
        request.app.state.worker.wake()
    outcome = "queued" if queued else "busy"
    if request.headers.get("hx-request") == "true":
        sub = cohorts.submission_for_teacher(s, user, sub_id)
        return templates().TemplateResponse(request, "_cohort_sub_row.html", {"sub": sub, "rejudge": outcome})
    return RedirectResponse(f"/teach/submissions/{sub.id}?rejudge={outcome}", status_code=303)


def _sub_ctx(s, sub: Submission) -> dict:
    verdict = services.verdict_of(sub)
    return {"sub": sub, "verdict": verdict, "student": s.get(User, sub.user_id),
            "cases": verdict.cases if verdict else services.live_cases(sub),
            "position": services.queue_position(s, sub), "nav": "teach"}


@api_router.get("/submissions/{sub_id}", response_model=SubmissionPublic)
def read_submission(sub_id: RowId, s: SessionDep, user: SignedIn) -> SubmissionPublic:
    """Any submission of a student you teach, with its code and verdict."""
    sub = cohorts.submission_for_teacher(s, user, sub_id)
    return SubmissionPublic.of(sub, position=services.queue_position(s, sub))


@api_router.get("/cohorts/{cohort_id}/grades", response_model=list[dict])
def grades(cohort_id: RowId, s: SessionDep, user: SignedIn) -> list[dict]:
    """The grade export as JSON: one object per student (email, name, best score per assigned
    exercise before its deadline, solved in time)."""
    c = cohorts.teaching_cohort(s, user, cohort_id)
    m = cohorts.matrix(s, c)
    out = []
    for u in m.students:
        cells = {slug: m.cells.get((u.id, slug)) for slug in m.slugs}
        out.append({"user_id": u.id, "email": u.email, "name": u.name,
                    "scores": {slug: (x.best if x else None) for slug, x in cells.items()},
                    "solved": sum(1 for x in cells.values() if x and x.status == "solved" and not x.late)})
    return out


@api_router.post("/submissions/{sub_id}/rejudge", status_code=202)
def api_rejudge(sub_id: RowId, request: Request, s: SessionDep, user: SignedIn) -> dict:
    """Grade a finished submission again; a submission already waiting or grading is left alone."""
    sub = cohorts.submission_for_teacher(s, user, sub_id)
    queued = cohorts.rejudge(s, sub.id)
    if queued and request.app.state.worker is not None:
        request.app.state.worker.wake()
    return {"id": sub.id, "requeued": queued}
