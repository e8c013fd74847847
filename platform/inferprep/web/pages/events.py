"""The live verdict: ``GET /submissions/{id}/events``, a server-sent event stream (sse-starlette).

The page's verdict element subscribes while its submission is queued or running (htmx's SSE
extension, ``templates/_verdict.html``). The stream sends, each time the submission changes:

- ``progress``: the verdict's body (state, queue position, elapsed time, the cases finished so
  far), swapped into the element; at most one per ``PROGRESS_GAP_S``;
- ``verdict``: once the grading has ended (done or cancelled), the whole element, which replaces
  the subscribing one and so closes the stream; the server ends it too.

It wakes on ``notify.SUBMISSION`` for that id (the worker's progress and finish, a cancel: in
process, or relayed from PostgreSQL's NOTIFY) and re-reads the row at least every
``notify.poll_seconds`` in case a notification was lost. The first event describes the state at
connection time, so a page that subscribes late (or reconnects) loses nothing.

Who may listen: the submission's owner, and in cohort mode an instructor of a cohort the owner is a
student of (the same rule as the instructor's submission page); anyone else gets 404 before the
stream starts. The request's database session is closed before streaming: an open stream holds
no connection, only an asyncio task. One user holds at most ``STREAMS_PER_USER`` streams at once
in one process (429 beyond): each stream re-reads and re-renders on every change, so without a
bound one account opening streams by the thousand on its own grading would multiply the server's
work (and the threads every page shares) by as many.

``job_stream`` is that loop for any job: a scratch run's stream (``GET /api/scratch/{id}/events``,
``web/api/scratch.py``) uses it with its own events.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from functools import partial

import anyio
from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from ... import db, notify, queue, services
from ...cohorts import TooManyRequests
from ...models import Submission
from ..deps import CurrentUser, RowId, SessionDep
from ..templating import templates
from .submissions import verdict_context

router = APIRouter(include_in_schema=False)

PING_S = 15
"""Seconds between comment lines that keep an idle stream open through proxies."""
RETRY_MS = 1000
"""How long a browser waits before reconnecting a dropped stream (the SSE ``retry`` field)."""
PROGRESS_GAP_S = 0.1
"""Progress events are at least this far apart (seconds): a grading of many quick cases costs a
stream at most ten renders a second. The verdict is never held back."""
GONE = ("gone",)
STREAMS_PER_USER = 8
"""Event streams one user may hold open at once in one process (a page holds one; a few tabs, a
few)."""


class StreamSlots:
    """Counts each user's open streams; ``take`` refuses one beyond ``per_user``."""

    def __init__(self, per_user: int = STREAMS_PER_USER):
        self.per_user = per_user
        self._open: Counter[int] = Counter()
        self._lock = threading.Lock()

    def take(self, user: int):
        """A slot of ``user``'s, as a function that gives it back (once, however often called).
        Raises ``TooManyRequests`` when the user already holds ``per_user``."""
        with self._lock:
            if self._open[user] >= self.per_user:
                raise TooManyRequests(f"you have {self.per_user} live verdicts open already: close a tab "
                                      f"or wait for a grading to finish", retry_after=5)
            self._open[user] += 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            with self._lock:
                if not given_back:
                    given_back = True
                    self._open[user] -= 1
                    if not self._open[user]:
                        del self._open[user]
        return give_back

    def open_streams(self, user: int) -> int:
        """How many streams ``user`` holds open now."""
        return self._open[user]


def owns(request: Request, s, user: int, sub_id: int) -> bool:
    """True for the owner, False for an instructor of the owner's cohort; ``NotFound`` otherwise."""
    try:
        services.get_submission(s, user, sub_id)
        return True
    except services.NotFound:
        if not request.app.state.cohort_mode:
            raise
    from ...cohorts import submission_for_teacher
    submission_for_teacher(s, request.state.user, sub_id)
    return False


def render_block(template: str, block: str, ctx: dict) -> str:
    """One ``{% block %}`` of a template, rendered alone with ``ctx``."""
    t = templates().env.get_template(template)
    return "".join(t.blocks[block](t.new_context(ctx)))


def snapshot_key(s, sub: Submission) -> tuple:
    """What the page shows changes exactly when this does (the elapsed counter runs on its own)."""
    return sub.state, len(json.loads(sub.cases_json or "[]")), services.queue_position(s, sub)


def next_event(request: Request, sub_id: int, owner: bool, seen: tuple | None,
               progress_ok: bool = True) -> tuple[tuple, ServerSentEvent | None]:
    """(the submission's key now, the event to send or None). None when nothing changed since
    ``seen``, and for a change while grading when ``progress_ok`` is false (the caller throttles
    progress; the key returned is then still ``seen``). A finished grading is never held back."""
    with db.session_scope(request.app.state.settings.db_url) as s:
        sub = s.get(Submission, sub_id, populate_existing=True)
        if sub is None:     # deleted meanwhile: end the stream with nothing to show
            return GONE, None
        key = snapshot_key(s, sub)
        unfinished = sub.state in queue.UNFINISHED
        if key == seen or (unfinished and not progress_ok):
            return seen, None
        ctx = dict(verdict_context(s, sub, owner=owner), request=request)
        if unfinished:
            return key, ServerSentEvent(render_block("_verdict.html", "body", ctx).strip(), event="progress",
                                        retry=RETRY_MS)
        return key, ServerSentEvent(templates().env.get_template("_verdict.html").render(ctx).strip(), event="verdict")


Read = Callable[[tuple | None, bool], tuple[tuple, ServerSentEvent | None]]
"""``read(seen, progress_ok)``: (the job's key now, the event to send or None), as ``next_event``."""


def job_stream(request: Request, user, job_id: int, read: Read, *, last: str) -> EventSourceResponse:
    """The event stream of job ``job_id`` for ``user``: calls ``read`` (in a worker thread) at the
    start, on every ``notify.SUBMISSION`` for the job and at least every ``stream_poll_s`` seconds,
    sends each event it returns (progress at most one per ``PROGRESS_GAP_S``), and ends after the
    event named ``last`` or when the job is gone. The caller checks who may listen and closes its
    session first. Takes one of the user's ``STREAMS_PER_USER`` slots (429 when none is left)."""
    hub: notify.Hub = request.app.state.hub
    poll_s = request.app.state.stream_poll_s
    give_back = request.app.state.stream_slots.take(user)

    async def events():
        try:
            with hub.watch(notify.SUBMISSION, job_id) as changed:   # before the first read: none missed
                seen, sent_at = None, -PROGRESS_GAP_S
                while True:
                    changed.clear()
                    since = time.monotonic() - sent_at
                    seen, event = await anyio.to_thread.run_sync(read, seen, since >= PROGRESS_GAP_S)
                    if seen == GONE:
                        return
                    if event is not None:
                        yield event
                        if event.event == last:
                            return
                        sent_at = time.monotonic()
                        wait_s = poll_s
                    else:    # nothing new, or progress held back until the gap has passed
                        wait_s = poll_s if since >= PROGRESS_GAP_S else PROGRESS_GAP_S - since
                    try:
                        await asyncio.wait_for(changed.wait(), wait_s)
                    except TimeoutError:
                        pass
        finally:
            give_back()

    stream = events()
    weakref.finalize(stream, give_back)   # the slot comes back when the stream is gone, started or not
    return EventSourceResponse(stream, ping=PING_S, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@router.get("/submissions/{sub_id}/events")
def submission_events(request: Request, sub_id: RowId, s: SessionDep, user: CurrentUser):
    owner = owns(request, s, user, sub_id)
    s.close()   # give the connection back now: the stream may stay open for minutes
    return job_stream(request, user, sub_id, partial(next_event, request, sub_id, owner), last="verdict")
