"""/api scratch runs: your snippet against your code, in the sandbox, never graded.

A scratch run is a queue job (the worker runs it with ``runner.scratch.run``) that no listing,
progress count or instructor's view shows; only its owner can read it. In cohort mode it counts
against the same limits as Run. Its result is pushed: ``GET /api/scratch/{id}/events`` is a
server-sent event stream (the Scratch panel listens to it; nothing polls).
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ... import db, queue, services
from ...models import Submission
from ...verdict import ScratchResult
from ..deps import Admission, CurrentUser, ExerciseDep, RowId, SessionDep, SettingsDep
from ..pages.events import GONE, RETRY_MS, job_stream
from .submissions import TOO_MANY, _wake

router = APIRouter(tags=["scratch"])


class ScratchCreate(BaseModel):
    code: str = Field(description="your solution (the editor's text); bound to the name `solution`")
    snippet: str = Field(description=f"Python lines that call `solution` and print (at most "
                                     f"{services.SNIPPET_MAX_BYTES // 1024} KiB)")


class ScratchPublic(BaseModel):
    id: int
    slug: str
    state: str = Field(description="queued | running | done")
    device: str
    queue_position: int
    created_at: datetime
    finished_at: datetime | None
    snippet: str
    result: ScratchResult | None = Field(description="once done: status (ok, runtime_error, time_limit, ...), "
                                                     "stdout, stderr, traceback, CPU seconds")

    @classmethod
    def of(cls, sub: Submission, *, position: int = 0) -> "ScratchPublic":
        return cls(id=sub.id, slug=sub.slug, state=sub.state, device=sub.device, queue_position=position,
                   created_at=sub.created_at, finished_at=sub.finished_at, snippet=sub.snippet or "",
                   result=services.scratch_result_of(sub))


@router.post("/exercises/{slug}/scratch", response_model=ScratchPublic, status_code=202,
             responses={413: {"description": "code or snippet over its size cap"},
                        422: {"description": "not UTF-8 or invalid"}, **TOO_MANY})
def create_scratch(ex: ExerciseDep, body: ScratchCreate, request: Request, s: SessionDep, user: CurrentUser,
                   settings: SettingsDep, admit: Admission) -> ScratchPublic:
    """Run ``snippet`` with ``code`` loaded as the module ``solution``, under the exercise's limits.
    Nothing is graded or recorded as a submission. The answer comes at once (state ``queued``);
    follow ``GET /api/scratch/{id}/events`` (or read ``GET /api/scratch/{id}``) for the output."""
    device = services.choose_device(ex, settings.device, request.app.state.devices)
    sub = services.create_scratch(s, user, ex.slug, body.code, body.snippet, device=device,
                                  max_bytes=settings.max_code_bytes, admit=admit)
    _wake(request)
    return ScratchPublic.of(sub, position=services.queue_position(s, sub))


@router.get("/scratch/{scratch_id}", response_model=ScratchPublic)
def read_scratch(scratch_id: RowId, s: SessionDep, user: CurrentUser) -> ScratchPublic:
    """One of your scratch runs and, once done, its output."""
    sub = services.get_scratch(s, user, scratch_id)
    return ScratchPublic.of(sub, position=services.queue_position(s, sub))


def next_scratch_event(request: Request, scratch_id: int, seen: tuple | None,
                       progress_ok: bool = True) -> tuple[tuple, ServerSentEvent | None]:
    """(the run's (state, queue position) now, the event to send or None when that is ``seen``):
    ``state`` while it waits or runs, ``done`` with its result once it has ended. A scratch run has
    no per-case progress, so ``progress_ok`` is not needed."""
    with db.session_scope(request.app.state.settings.db_url) as s:
        sub = s.get(Submission, scratch_id, populate_existing=True)
        if sub is None:
            return GONE, None
        position = services.queue_position(s, sub)
        key = (sub.state, position)
        if key == seen:
            return seen, None
        data = ScratchPublic.of(sub, position=position).model_dump_json()
        if sub.state in queue.UNFINISHED:
            return key, ServerSentEvent(data, event="state", retry=RETRY_MS)
        return key, ServerSentEvent(data, event="done")


@router.get("/scratch/{scratch_id}/events", response_class=EventSourceResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "server-sent events, each's data a ScratchPublic as JSON: `state` "
                                            "(queued with its position, or running) when it changes, then `done` "
                                            "(with its result), after which the stream ends"}})
def scratch_events(request: Request, scratch_id: RowId, s: SessionDep, user: CurrentUser):
    """Your scratch run's state as it changes, then its output, pushed (no polling). 404 for a job
    that is not your scratch run."""
    services.get_scratch(s, user, scratch_id)
    s.close()   # the stream holds no database connection while it waits
    return job_stream(request, user, scratch_id, partial(next_scratch_event, request, scratch_id), last="done")
