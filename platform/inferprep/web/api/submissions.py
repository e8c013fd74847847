"""/api/submissions: create a submission (run or submit), read it and its verdict, retry, cancel."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ... import services
from ..deps import Admission, CurrentUser, ExerciseDep, RowId, SessionDep, SettingsDep, announce_cancel
from .schemas import SubmissionCreate, SubmissionPublic

router = APIRouter(tags=["submissions"])


def _wake(request: Request) -> None:
    if request.app.state.worker is not None:
        request.app.state.worker.wake()


TOO_MANY = {429: {"description": "cohort mode: the queue is full or your hourly limit is spent (Retry-After)"}}


@router.post("/exercises/{slug}/submissions", response_model=SubmissionPublic, status_code=202,
             responses={413: {"description": "code over the size cap"}, 422: {"description": "not UTF-8 or invalid"},
                        **TOO_MANY})
def create_submission(ex: ExerciseDep, body: SubmissionCreate, request: Request, s: SessionDep,
                      user: CurrentUser, settings: SettingsDep, admit: Admission) -> SubmissionPublic:
    """Queue your code for grading: ``run`` grades the public examples, ``submit`` the hidden cases.
    The answer comes at once (state ``queued``); poll ``GET /api/submissions/{id}`` for the verdict
    (state ``done``, or ``cancelled`` if you cancel it first)."""
    device = services.choose_device(ex, settings.device, request.app.state.devices)
    sub = services.create_submission(s, user, ex.slug, body.code, body.kind, device=device, source="api",
                                     max_bytes=settings.max_code_bytes, idempotency_key=body.idempotency_key,
                                     admit=admit)
    _wake(request)
    return SubmissionPublic.of(sub, position=services.queue_position(s, sub))


@router.get("/submissions", response_model=list[SubmissionPublic])
def list_submissions(s: SessionDep, user: CurrentUser, slug: str | None = None, limit: int = 100) -> list[SubmissionPublic]:
    """Your submissions, newest first (without their code)."""
    return [SubmissionPublic.of(x, with_code=False) for x in services.list_submissions(s, user, slug, min(limit, 500))]


@router.get("/submissions/{sub_id}", response_model=SubmissionPublic)
def read_submission(sub_id: RowId, s: SessionDep, user: CurrentUser) -> SubmissionPublic:
    """A submission, its code, and its verdict (or the cases finished so far)."""
    sub = services.get_submission(s, user, sub_id)
    return SubmissionPublic.of(sub, position=services.queue_position(s, sub))


@router.post("/submissions/{sub_id}/retry", response_model=SubmissionPublic, status_code=202, responses=TOO_MANY)
def retry_submission(sub_id: RowId, request: Request, s: SessionDep, user: CurrentUser,
                     settings: SettingsDep, admit: Admission) -> SubmissionPublic:
    """Grade again a submission that ended in an internal error (a new submission, same code;
    it counts against the same limits as a new submission)."""
    sub = services.retry_submission(s, user, sub_id, max_bytes=settings.max_code_bytes, admit=admit)
    _wake(request)
    return SubmissionPublic.of(sub, position=services.queue_position(s, sub))


@router.post("/submissions/{sub_id}/cancel", response_model=SubmissionPublic,
             responses={404: {"description": "no submission of yours with this id"}})
def cancel_submission(sub_id: RowId, request: Request, s: SessionDep, user: CurrentUser) -> SubmissionPublic:
    """Cancel your queued or running submission: it ends with state ``cancelled``, no verdict, and
    counts as no attempt (a running grading's process is killed). One that had already finished
    keeps its verdict: the answer shows the submission as it now is, so check ``state``."""
    sub, cancelled = services.cancel_submission(s, user, sub_id)
    if cancelled:
        announce_cancel(request, sub.id)
    return SubmissionPublic.of(sub, position=services.queue_position(s, sub))
