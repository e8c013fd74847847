"""The student's cohort page: the assigned exercises, soonest deadline first, with the student's
status and whether the deadline has passed unsolved (overdue)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from .. import cohort_interviews, cohorts, services
from ..cohort_models import Unlock
from ..models import Role, utcnow
from .accounts import SignedIn
from .deps import SessionDep
from .templating import templates

router = APIRouter(include_in_schema=False)

UNLOCK_TEXT = {Unlock.ON_PASS.value: "after your own passing submission",
               Unlock.AFTER_DEADLINE.value: "after your pass and the exercise's deadline",
               Unlock.NEVER.value: "not in this cohort"}


@router.get("/cohort")
def cohort_page(request: Request, s: SessionDep, user: SignedIn):
    status = services.status_map(s, user.id)
    now = utcnow()
    rows = []
    for c in cohorts.cohorts_of(s, user, Role.STUDENT.value):
        p = cohorts.policy(s, c.id)
        items = []
        for a in cohorts.assignments(s, c.id):
            try:
                title = services.get_exercise(a.slug).meta.title
            except services.NotFound:       # removed from the catalog since it was assigned
                continue
            deadline = cohorts.aware(a.deadline)
            items.append({"slug": a.slug, "title": title, "deadline": deadline,
                          "status": status.get(a.slug, "untouched"),
                          "overdue": deadline is not None and deadline <= now and status.get(a.slug) != "solved"})
        rows.append({"cohort": c, "unlock": UNLOCK_TEXT.get(p.unlock, p.unlock),
                     "per_hour": p.submissions_per_hour, "items": items})
    teaching = cohorts.cohorts_of(s, user, Role.INSTRUCTOR.value) if not user.is_admin else []
    return templates().TemplateResponse(request, "cohort_home.html", {
        "rows": rows, "teaching": teaching, "mocks": cohort_interviews.student_views(s, user.id), "nav": "cohort"})
