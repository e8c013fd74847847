"""LISTEN/NOTIFY against a real PostgreSQL: a new job wakes a waiting worker, a finished job wakes
the web's event stream, and a cancel reaches the worker grading the job. Every waiter here polls
only every 600 s, so nothing but a notification can explain a reaction within the test.

The worker runs in this process but with its own ``notify.Hub`` (as ``inferprep worker`` on
another machine would): only PostgreSQL links it with the web app's hub.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from pg_support import pg_url  # noqa: F401 - the fixture
from inferprep import db, notify, queue
from inferprep.models import LOCAL_USER_ID, JobState, Submission
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app
from inferprep.worker import Worker

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

SLUG = "sampling-order"
NEVER_S = 600.0      # every safety poll in this module: far beyond any wait of a test


class Fake:
    """Passes after one case, unless the code says ``HOLD``: then it waits for the grading's cancel
    event (making no progress call, so no failed progress write can tell it either); ``GATE``
    waits for ``gate`` first."""

    def __init__(self):
        self.graded: list[str] = []
        self.started = threading.Event()
        self.saw_cancel = threading.Event()
        self.gate = threading.Event()

    def __call__(self, exercise, code, *, device, public, progress, salt=None, cancel=None):
        self.graded.append(code)
        self.started.set()
        if "GATE" in code:
            self.gate.wait(60)
        if "HOLD" in code:
            if cancel.wait(60):
                self.saw_cancel.set()
            return Verdict.from_cases(exercise.slug, [], public=public, device=device)
        case = CaseResult(name="only-case", passed=True, status=Status.PASSED)
        progress(case)
        return Verdict.from_cases(exercise.slug, [case], public=public, device=device, sandbox="fake")


def enqueue(url: str, code: str) -> int:
    """Queue a job the way another process would: nothing in this process is told."""
    with db.session_scope(url) as s:
        return queue.enqueue(s, Submission(user_id=LOCAL_USER_ID, slug=SLUG, kind="submit", code=code)).id


def state_of(url: str, sub_id: int) -> str:
    with db.session_scope(url) as s:
        return s.exec(select(Submission.state).where(Submission.id == sub_id)).one()


def wait_for(pred, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def idle(w: Worker) -> bool:
    """Every grading thread of ``w`` is blocked in its wait for a wake-up (or the safety poll)."""
    frames = sys._current_frames()
    for t in w._threads:
        if not t.name.startswith("inferprep-grader"):
            continue
        f, names = frames.get(t.ident), set()
        while f is not None:
            names.add(f.f_code.co_name)
            f = f.f_back
        if "_wait" not in names or "wait" not in names:
            return False
    return True


@pytest.fixture
def remote_worker(pg_url):  # noqa: F811
    """A worker with its own hub and PostgreSQL listener, as on another machine."""
    fake, hub = Fake(), notify.Hub()
    w = Worker(pg_url, threads=1, grade=fake, hub=hub, poll_s=NEVER_S, lease_s=NEVER_S, name="remote")
    listener = notify.PgListener(pg_url, hub, (notify.JOBS, notify.CANCEL)).start()
    assert listener.ready.wait(20), "the listener did not connect"
    w.start()
    assert wait_for(lambda: idle(w)), "the worker never went idle"
    yield w, fake
    listener.stop()
    w.stop()


def test_a_notification_wakes_a_waiting_worker(pg_url, remote_worker):  # noqa: F811
    w, fake = remote_worker
    assert idle(w) and not fake.graded
    sid = enqueue(pg_url, "# wake me\n")
    assert wait_for(lambda: state_of(pg_url, sid) == JobState.DONE.value), \
        "the job was not graded: the NOTIFY did not wake the worker (its poll is 600 s)"
    assert fake.graded == ["# wake me\n"]


def test_a_cancel_reaches_the_worker_grading_the_job(pg_url, remote_worker):  # noqa: F811
    w, fake = remote_worker
    sid = enqueue(pg_url, "# HOLD\n")
    assert fake.started.wait(30)
    with db.session_scope(pg_url) as s:            # the web, in another process, cancels it
        assert queue.cancel(s, sid)
    assert fake.saw_cancel.wait(20), "the worker did not hear the cancel (heartbeat every 200 s, no progress)"
    assert wait_for(lambda: not w._inflight)
    assert state_of(pg_url, sid) == JobState.CANCELLED.value     # its (refused) finish changed nothing


def test_a_finished_job_wakes_the_webs_event_stream(pg_url, remote_worker):  # noqa: F811
    _, fake = remote_worker
    settings = Settings(database_url=pg_url, grading_threads=0, device="cpu")
    app = create_app(settings, devices=("cpu",))
    app.state.stream_poll_s = NEVER_S
    with TestClient(app) as c:
        sid = c.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# GATE\n", "kind": "submit"}).json()["id"]
        events: list[str] = []

        def follow():
            with c.stream("GET", f"/submissions/{sid}/events") as r:
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        events.append(line[7:])

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        assert wait_for(lambda: events) and events[0] == "progress"    # subscribed while grading
        fake.gate.set()                                                 # now let it finish
        t.join(30)
        assert not t.is_alive(), f"the stream is still waiting after 30 s (its poll is 600 s): {events}"
        assert events[-1] == "verdict" and state_of(pg_url, sid) == JobState.DONE.value
