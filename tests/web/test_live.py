"""A verdict as soon as it exists: the per-submission event stream (``/submissions/N/events``) and
Cancel (page and API), with a grade function the test steps case by case."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app
from inferprep.worker import Worker
from webutil import wait_done

SLUG = "sampling-order"
HX = {"HX-Request": "true"}
CASES = 3


class SteppedJudge:
    """Finishes one case each time ``step`` is released; stops early (and says so in ``saw_cancel``)
    when the worker sets the grading's ``cancel`` event. ``PASS`` in the code passes every case."""

    def __init__(self):
        self.step = threading.Semaphore(0)
        self.started = threading.Event()
        self.saw_cancel = threading.Event()
        self.returned = threading.Event()

    def __call__(self, exercise, code, *, device, public, progress, salt=None, cancel=None):
        self.started.set()
        cases = []
        try:
            for i in range(CASES):
                while not self.step.acquire(timeout=0.02):
                    if cancel is not None and cancel.is_set():
                        self.saw_cancel.set()
                        return Verdict.from_cases(exercise.slug, cases, public=public, device=device)
                c = CaseResult(name=f"case-{i}", passed="PASS" in code,
                               status=Status.PASSED if "PASS" in code else Status.WRONG_ANSWER)
                cases.append(c)
                progress(c)
            return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")
        finally:
            self.returned.set()


@pytest.fixture
def stepped() -> SteppedJudge:
    return SteppedJudge()


@pytest.fixture
def live(tmp_path, stepped):
    settings = Settings(data_dir=tmp_path / "data", grading_threads=1, device="auto", lease_seconds=30)
    with TestClient(create_app(settings, grade=stepped, devices=("cpu",))) as c:
        try:
            yield c
        finally:
            stepped.step.release(CASES)     # no grading left waiting when the worker stops


@dataclass
class Event:
    event: str
    data: str


def read_events(response):
    """The server-sent events of a streaming response, as they arrive (comments skipped)."""
    name, data = "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield Event(name, "\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def submit(client, code: str, kind: str = "submit") -> int:
    r = client.post(f"/api/exercises/{SLUG}/submissions", json={"code": code, "kind": kind})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def wait_state(client, sub_id: int, state: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = client.get(f"/api/submissions/{sub_id}").json()
        if d["state"] == state:
            return d
        time.sleep(0.02)
    raise AssertionError(f"submission {sub_id} never {state}: {d}")


def test_the_stream_pushes_each_case_then_the_verdict_and_ends(live, stepped):
    sid = submit(live, "# PASS\n")
    shown, released = [], 0
    with live.stream("GET", f"/submissions/{sid}/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = read_events(r)
        for ev in events:
            if ev.event == "verdict":
                break
            assert ev.event == "progress" and "<div class=\"verdict\"" not in ev.data    # the body only
            m = re.search(r"Grading on cpu: (\d+) case", ev.data)
            if m:
                shown.append(int(m.group(1)))
                assert ev.data.count("<tr class=") == int(m.group(1))       # the cases finished so far
                assert 'class="elapsed"' in ev.data and 'data-testid="cancel"' in ev.data
                if int(m.group(1)) == released and released < CASES:
                    stepped.step.release()      # the next case finishes only after the page saw this one
                    released += 1
        else:
            pytest.fail("the stream ended without a verdict")
        assert list(events) == []               # the server ends the stream after the verdict
    assert shown == sorted(set(shown)) and {1, 2} <= set(shown)     # each step, in order (the last may
    assert ev.data.count("<tr class=") == CASES                        # come with the verdict itself)
    assert f'id="verdict-{sid}"' in ev.data and 'data-state="done"' in ev.data and "sse-connect" not in ev.data
    assert "Passed" in ev.data and 'id="history" hx-swap-oob="true"' in ev.data


def test_a_finished_submissions_stream_is_its_verdict_at_once(live, stepped):
    stepped.step.release(CASES)
    sid = submit(live, "# wrong\n")
    wait_done(live, sid)
    with live.stream("GET", f"/submissions/{sid}/events") as r:
        events = list(read_events(r))
    assert [e.event for e in events] == ["verdict"]
    assert 'data-state="done"' in events[0].data and "Wrong answer" in events[0].data


def test_no_stream_for_a_submission_that_is_not_yours(live):
    assert live.get("/submissions/999/events").status_code == 404
    assert live.get("/submissions/abc/events").status_code == 404


def test_the_page_subscribes_while_grading_and_never_polls(live, stepped):
    r = live.post(f"/exercises/{SLUG}/submissions", data={"code": "# PASS\n", "kind": "run"}, headers=HX)
    sid = int(re.search(r'id="verdict-(\d+)"', r.text).group(1))
    assert f'sse-connect="/submissions/{sid}/events"' in r.text and 'hx-ext="sse"' in r.text
    assert "hx-trigger" not in r.text and "hx-get" not in r.text
    page = live.get(f"/exercises/{SLUG}").text
    assert "htmx-ext-sse-2.2.4/dist/sse.min.js" in page and "live.js" in page
    assert live.get("/static/vendor/htmx-ext-sse-2.2.4/LICENSE").status_code == 200
    stepped.step.release(CASES)
    wait_done(live, sid)


def test_cancel_a_queued_job_counts_as_nothing(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", grading_threads=0, device="auto")
    with TestClient(create_app(settings, grade=SteppedJudge(), devices=("cpu",))) as c:
        sid = submit(c, "# PASS\n")
        r = c.post(f"/api/submissions/{sid}/cancel")
        assert r.status_code == 200
        d = r.json()
        assert d["state"] == "cancelled" and d["verdict"] is None and d["status"] is None and not d["passed"]
        assert c.get(f"/api/exercises/{SLUG}").json()["status"] == "untouched"    # no attempt
        assert c.post(f"/api/submissions/{sid}/cancel").json()["state"] == "cancelled"   # idempotent
        w = Worker(settings.db_url, threads=1, grade=SteppedJudge())
        assert w.run_once("test:0") is False        # a cancelled job is never graded
        page = c.get(f"/submissions/{sid}").text
        assert "This grading was cancelled" in page and "sse-connect" not in page


def test_cancel_a_running_grading_stops_it_and_keeps_it_cancelled(live, stepped):
    sid = submit(live, "# PASS\n")
    assert stepped.started.wait(30)
    stepped.step.release()                                          # one case done, then it waits
    wait_state(live, sid, "running")
    r = live.post(f"/submissions/{sid}/cancel", headers=HX)         # the page's Cancel button
    assert r.status_code == 200
    assert 'data-state="cancelled"' in r.text and "This grading was cancelled" in r.text
    assert "sse-connect" not in r.text                              # the new element stops listening
    assert stepped.saw_cancel.wait(10)       # the worker told the grading to stop: no third case
    worker = live.app.state.worker
    deadline = time.monotonic() + 10
    while worker._inflight and time.monotonic() < deadline:   # until its (refused) finish is done
        time.sleep(0.02)
    assert not worker._inflight
    d = live.get(f"/api/submissions/{sid}").json()
    assert d["state"] == "cancelled" and d["verdict"] is None and not d["passed"]
    assert live.get(f"/api/exercises/{SLUG}").json()["status"] == "untouched"
    with live.stream("GET", f"/submissions/{sid}/events") as s:     # a late listener hears the end
        assert [e.event for e in read_events(s)] == ["verdict"]


def test_a_cancel_after_the_verdict_keeps_the_verdict(live, stepped):
    stepped.step.release(CASES)
    sid = submit(live, "# PASS\n")
    wait_done(live, sid)
    d = live.post(f"/api/submissions/{sid}/cancel").json()
    assert d["state"] == "done" and d["passed"] and d["verdict"]["status"] == "passed"
    r = live.post(f"/submissions/{sid}/cancel", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/submissions/{sid}"
    assert live.get(f"/api/exercises/{SLUG}").json()["status"] == "solved"


def test_cancel_someone_elses_job_is_404(live):
    assert live.post("/api/submissions/4242/cancel").status_code == 404
    assert live.post("/submissions/4242/cancel").status_code == 404


def test_the_elapsed_time_comes_from_the_server(live, stepped):
    sid = submit(live, "# PASS\n")
    assert stepped.started.wait(30)
    time.sleep(0.3)
    frag = live.get(f"/submissions/{sid}/verdict").text
    elapsed = float(re.search(r'data-elapsed="([0-9.]+)"', frag).group(1))
    assert elapsed >= 0.3                    # seconds since started_at, counted on by live.js
    stepped.step.release(CASES)
    wait_done(live, sid)


def test_one_user_holds_a_bounded_number_of_streams(live, stepped):
    """Red team: every stream re-reads and re-renders on each change of its grading; one account
    could open them by the thousand on its own running grading. Beyond ``STREAMS_PER_USER`` at once
    the answer is 429; a closed stream gives its place back."""
    from contextlib import ExitStack

    from inferprep.web.pages.events import STREAMS_PER_USER

    sid = submit(live, "x = 1")
    assert stepped.started.wait(10)
    with ExitStack() as held:
        for _ in range(STREAMS_PER_USER):
            r = held.enter_context(live.stream("GET", f"/submissions/{sid}/events"))
            assert r.status_code == 200
            assert next(read_events(r)).event == "progress"
        over = live.get(f"/submissions/{sid}/events")
        assert over.status_code == 429 and "live verdicts open" in over.text
    with live.stream("GET", f"/submissions/{sid}/events") as r:    # the others closed: room again
        assert r.status_code == 200 and next(read_events(r)).event == "progress"
