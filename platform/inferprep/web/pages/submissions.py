"""Submission pages: one submission with its code, the verdict fragment, retry and cancel (the live
stream of a grading in progress is ``events.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ... import services, unlock
from ...models import Submission
from ..deps import Admission, CurrentUser, RowId, SessionDep, SettingsDep, announce_cancel
from ..templating import templates

router = APIRouter(include_in_schema=False)


def verdict_parts(s, sub: Submission, *, owner: bool = True) -> dict:
    """What ``_verdict.html`` shows of one submission. ``owner`` False (an instructor watching a
    student's grading): no Cancel."""
    verdict = services.verdict_of(sub)
    editorial_lock = unlock.editorial_lock(s, sub.user_id, sub.slug) if sub.passed and sub.kind == "submit" \
        else None
    return {"sub": sub, "verdict": verdict, "cases": verdict.cases if verdict else services.live_cases(sub),
            "position": services.queue_position(s, sub), "elapsed": services.elapsed_seconds(sub), "owner": owner,
            "editorial_lock": editorial_lock}


def verdict_context(s, sub: Submission, *, owner: bool = True) -> dict:
    """``verdict_parts`` plus, for the owner, what a fragment updates out of band (the history, the
    title's badge)."""
    ctx = verdict_parts(s, sub, owner=owner)
    if owner:
        ctx.update(history=services.list_submissions(s, sub.user_id, sub.slug, limit=50, summary=True),
                   ex_status=services.status_map(s, sub.user_id).get(sub.slug, "untouched"))
    return ctx


@router.get("/submissions/{sub_id}")
def submission_page(request: Request, sub_id: RowId, s: SessionDep, user: CurrentUser):
    sub = services.get_submission(s, user, sub_id)
    ctx = verdict_context(s, sub)
    ctx.update(ex=services.get_exercise(sub.slug), nav="exercises")
    return templates().TemplateResponse(request, "submission.html", ctx)


@router.get("/submissions/{sub_id}/verdict")
def verdict_fragment(request: Request, sub_id: RowId, s: SessionDep, user: CurrentUser):
    """The verdict fragment as it is now (while grading, the page follows ``/events`` instead)."""
    sub = services.get_submission(s, user, sub_id)
    return templates().TemplateResponse(request, "_verdict.html", verdict_context(s, sub))


@router.post("/submissions/{sub_id}/retry")
def retry(request: Request, sub_id: RowId, s: SessionDep, user: CurrentUser, settings: SettingsDep, admit: Admission):
    sub = services.retry_submission(s, user, sub_id, max_bytes=settings.max_code_bytes, admit=admit)
    if request.app.state.worker is not None:
        request.app.state.worker.wake()
    if request.headers.get("hx-request") == "true":
        return templates().TemplateResponse(request, "_verdict.html", verdict_context(s, sub))
    return RedirectResponse(f"/submissions/{sub.id}", status_code=303)


@router.post("/submissions/{sub_id}/cancel")
def cancel(request: Request, sub_id: RowId, s: SessionDep, user: CurrentUser):
    """Cancel your queued or running grading; one that already finished keeps its verdict."""
    sub, cancelled = services.cancel_submission(s, user, sub_id)
    if cancelled:
        announce_cancel(request, sub.id)
    if request.headers.get("hx-request") == "true":
        return templates().TemplateResponse(request, "_verdict.html", verdict_context(s, sub))
    return RedirectResponse(f"/submissions/{sub.id}", status_code=303)
