"""Scratch runs through the web: the JSON API queues a job of kind ``scratch`` that the worker runs
(a fake scratch runner here; the browser test runs the real one) and that is no submission: not in
history, progress, stats, the matrix or the CSV, unlocks nothing, and only its owner reads it. In
cohort mode it needs the CSRF token with a session and counts against the hourly limit like Run."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient

from inferprep import auth, cohorts, db, services
from inferprep.settings import Settings
from inferprep.verdict import ScratchResult
from inferprep.web import create_app

from test_live import read_events
from webutil import wait_done

SLUG = "sampling-order"
PASSWORD = "correct horse battery"
SECRET = "k" * 40


class FakeScratch:
    """The scratch runner: echoes the snippet; ``BOOM`` in it makes the runner itself raise,
    ``HOLD`` makes it wait until ``release`` is set."""

    def __init__(self):
        self.calls: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, exercise, code, snippet, *, device):
        with self.lock:
            self.calls.append((exercise.slug, code, snippet))
        self.started.set()
        if "BOOM" in snippet:
            raise RuntimeError("the fork server died")
        if "HOLD" in snippet:
            self.release.wait(30)
        return ScratchResult(slug=exercise.slug, status="ok", stdout=f"ran: {snippet.strip()}\n", cpu_s=0.01,
                             time_limit_s=2.0, device=device, sandbox="fake")


def wait_scratch(c: TestClient, scratch_id: int) -> dict:
    return wait_done(c, scratch_id, api="/api/scratch")


@pytest.fixture
def scratch_fn() -> FakeScratch:
    return FakeScratch()


@pytest.fixture
def local(settings, judge, scratch_fn):
    with TestClient(create_app(settings, grade=judge, scratch=scratch_fn, devices=("cpu",))) as c:
        yield c


def test_a_scratch_run_returns_its_output_and_is_no_submission(local, judge, scratch_fn):
    r = local.post(f"/api/exercises/{SLUG}/scratch", json={"code": "PASS\n", "snippet": "print(solution)\n"})
    assert r.status_code == 202, r.text
    assert r.json()["state"] in ("queued", "running", "done") and r.json()["snippet"] == "print(solution)\n"
    d = wait_scratch(local, r.json()["id"])
    assert d["result"]["status"] == "ok" and d["result"]["stdout"] == "ran: print(solution)\n"
    assert scratch_fn.calls == [(SLUG, "PASS\n", "print(solution)\n")]
    assert judge.calls == []                                      # nothing graded
    # in no listing, count or unlock
    assert local.get("/api/submissions").json() == []
    assert local.get(f"/api/submissions/{d['id']}").status_code == 404
    assert local.get(f"/submissions/{d['id']}").status_code == 404
    assert local.get(f"/api/exercises/{SLUG}").json()["status"] == "untouched"
    prog = local.get("/api/progress").json()
    assert prog["exercises"][SLUG] == "untouched" and prog["timeline"] == []
    assert local.get(f"/api/exercises/{SLUG}/solution").status_code == 403
    page = local.get(f"/exercises/{SLUG}").text
    assert f"#{d['id']}" not in page and 'id="scratch"' in page and "scratch.js" in page
    # a grading after it is submission #2 in the history; the scratch job is not listed
    sub = local.post(f"/api/exercises/{SLUG}/submissions", json={"code": "x\n", "kind": "run"}).json()
    assert [s["id"] for s in local.get("/api/submissions").json()] == [sub["id"]]
    # the scratch endpoint reads no submission either
    assert local.get(f"/api/scratch/{sub['id']}").status_code == 404


def test_the_result_is_pushed_over_the_runs_event_stream(local, scratch_fn):
    sid = local.post(f"/api/exercises/{SLUG}/scratch", json={"code": "x\n", "snippet": "HOLD\n"}).json()["id"]
    assert scratch_fn.started.wait(30)
    with local.stream("GET", f"/api/scratch/{sid}/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = read_events(r)
        first = next(events)
        assert first.event == "state" and json.loads(first.data)["state"] == "running"
        assert json.loads(first.data)["result"] is None
        scratch_fn.release.set()
        last = next(events)
        assert list(events) == []                   # the server ends the stream after the result
    assert last.event == "done"
    d = json.loads(last.data)
    assert d["id"] == sid and d["state"] == "done" and d["result"]["stdout"] == "ran: HOLD\n"
    # a finished run's stream is its result at once
    with local.stream("GET", f"/api/scratch/{sid}/events") as r:
        assert [(e.event, json.loads(e.data)["result"]["status"]) for e in read_events(r)] == [("done", "ok")]


def test_no_scratch_stream_for_a_job_that_is_not_a_scratch_run(local):
    sub = local.post(f"/api/exercises/{SLUG}/submissions", json={"code": "x\n", "kind": "run"}).json()
    for sid in (sub["id"], 99999, "abc"):
        r = local.get(f"/api/scratch/{sid}/events")
        assert r.status_code == 404 and "text/event-stream" not in r.headers["content-type"], sid
    wait_done(local, sub["id"])


def test_bad_scratch_input_gets_a_clear_error(local, settings, scratch_fn):
    url = f"/api/exercises/{SLUG}/scratch"
    r = local.post(url, json={"code": "x", "snippet": "#" * (services.SNIPPET_MAX_BYTES + 1)})
    assert r.status_code == 413 and r.json()["detail"].startswith("the snippet is 65537 bytes; the limit is 65536")
    r = local.post(url, json={"code": "#" * (settings.max_code_bytes + 1), "snippet": "print(1)"})
    assert r.status_code == 413 and r.json()["detail"].startswith("the code is")
    r = local.post(url, json={"code": "x", "snippet": "print(1)\x00"})
    assert r.status_code == 422 and r.json()["detail"] == "the snippet contains a NUL character"
    r = local.post(url, content=b'{"code": "x", "snippet": "\xff"}', headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "not UTF-8" in r.json()["detail"]
    assert local.post(url, json={"code": "x"}).status_code == 422
    assert local.post("/api/exercises/no-such-thing/scratch", json={"code": "x", "snippet": "y"}).status_code == 404
    assert local.get("/api/scratch/99999").status_code == 404
    assert local.get("/api/scratch/abc").status_code == 404
    assert scratch_fn.calls == []


def test_a_failing_runner_is_an_internal_error(local):
    r = local.post(f"/api/exercises/{SLUG}/scratch", json={"code": "x\n", "snippet": "BOOM\n"})
    d = wait_scratch(local, r.json()["id"])
    assert d["result"]["status"] == "internal_error" and "the fork server died" in d["result"]["message"]


# -- cohort mode ------------------------------------------------------------------------------------
class Cohort:
    def __init__(self, tmp_path, judge, scratch_fn, per_hour: int = 0):
        self.settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=1,
                                 allow_unsandboxed=True, lease_seconds=10)
        self.app = create_app(self.settings, grade=judge, scratch=scratch_fn, devices=("cpu",))
        self.client = TestClient(self.app, follow_redirects=False).__enter__()
        with db.session_scope(self.settings.db_url) as s:
            self.ids = {"tina": auth.create_user(s, "tina@x.org", "Tina", PASSWORD, is_instructor=True).id}
            self.cohort = cohorts.create_cohort(s, "C", instructor_id=self.ids["tina"])
            cohorts.assign(s, self.cohort.id, SLUG)
            cohorts.set_policy(s, self.cohort.id, submissions_per_hour=per_hour)
            for name in ("alice", "bob"):
                self.ids[name] = auth.sign_up(s, join_code=self.cohort.join_code, email=f"{name}@x.org",
                                              name=name, password=PASSWORD).id

    def as_(self, name: str, csrf: bool = True) -> TestClient:
        c = TestClient(self.app, follow_redirects=False)
        with db.session_scope(self.settings.db_url) as s:
            token = auth.create_session(s, self.ids[name], secret=SECRET, hours=1)
        c.cookies.set("inferprep_session", token)
        if csrf:
            c.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, token)
        return c

    def close(self):
        self.client.__exit__(None, None, None)


@pytest.fixture
def cohort(tmp_path, judge, scratch_fn):
    w = Cohort(tmp_path, judge, scratch_fn)
    yield w
    w.close()


def test_in_a_cohort_only_the_owner_reads_a_scratch_run(cohort):
    alice = cohort.as_("alice")
    r = alice.post(f"/api/exercises/{SLUG}/scratch", json={"code": "PASS\n", "snippet": "print('alice-only')\n"})
    assert r.status_code == 202, r.text
    sid = r.json()["id"]
    assert wait_scratch(alice, sid)["result"]["stdout"] == "ran: print('alice-only')\n"
    bob, tina = cohort.as_("bob"), cohort.as_("tina")
    assert bob.get(f"/api/scratch/{sid}").status_code == 404
    assert bob.get(f"/api/scratch/{sid}/events").status_code == 404
    assert TestClient(cohort.app).get(f"/api/scratch/{sid}/events").status_code == 401
    with alice.stream("GET", f"/api/scratch/{sid}/events") as r:
        assert [e.event for e in read_events(r)] == ["done"]
    for path in (f"/api/scratch/{sid}", f"/api/scratch/{sid}/events", f"/teach/submissions/{sid}", f"/api/teach/submissions/{sid}"):
        assert tina.get(path).status_code == 404, path
    assert tina.post(f"/api/teach/submissions/{sid}/rejudge").status_code == 404
    # not in the instructor's matrix, CSV or student page
    with db.session_scope(cohort.settings.db_url) as s:
        m = cohorts.matrix(s, cohort.cohort)
        assert m.cells == {} and m.stats[0].attempted == 0
    csv = tina.get(f"/teach/cohorts/{cohort.cohort.id}/grades.csv").text
    assert csv.splitlines()[1].startswith("alice@x.org,alice,,0")
    page = tina.get(f"/teach/cohorts/{cohort.cohort.id}/students/{cohort.ids['alice']}").text
    assert "alice-only" not in page and f"/teach/submissions/{sid}" not in page


def test_in_a_cohort_a_scratch_run_needs_the_csrf_token(cohort, scratch_fn):
    body = {"code": "x\n", "snippet": "print(1)\n"}
    r = cohort.as_("alice", csrf=False).post(f"/api/exercises/{SLUG}/scratch", json=body)
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    assert TestClient(cohort.app).post(f"/api/exercises/{SLUG}/scratch", json=body).status_code == 401
    assert cohort.as_("alice").post(f"/api/exercises/{SLUG}/scratch", json=body).status_code == 202


def test_in_a_cohort_scratch_runs_count_against_the_hourly_limit_like_run(tmp_path, judge, scratch_fn):
    w = Cohort(tmp_path, judge, scratch_fn, per_hour=2)
    try:
        alice = w.as_("alice")
        assert alice.post(f"/api/exercises/{SLUG}/submissions", json={"code": "x\n", "kind": "run"}).status_code == 202
        first = alice.post(f"/api/exercises/{SLUG}/scratch", json={"code": "x\n", "snippet": "1"})
        assert first.status_code == 202
        r = alice.post(f"/api/exercises/{SLUG}/scratch", json={"code": "x\n", "snippet": "2"})
        assert r.status_code == 429 and "2 gradings an hour" in r.json()["detail"] and r.headers["Retry-After"]
        wait_scratch(alice, first.json()["id"])
        assert [c[2] for c in scratch_fn.calls] == ["1"]      # the refused one was never queued
    finally:
        w.close()


def test_a_scratch_job_whose_worker_died_reads_as_an_internal_error(tmp_path):
    from inferprep import queue
    settings = Settings(data_dir=tmp_path, grading_threads=0)
    with TestClient(create_app(settings, devices=("cpu",))) as c:
        sid = c.post(f"/api/exercises/{SLUG}/scratch", json={"code": "x\n", "snippet": "print(1)\n"}).json()["id"]
        with db.session_scope(settings.db_url) as s:
            assert queue.claim(s, "gone:1", lease_s=30).id == sid
            assert queue.fail_orphans(s, "gone:") == 1            # as on start after a crash
        d = c.get(f"/api/scratch/{sid}").json()
        assert d["state"] == "done" and d["result"]["status"] == "internal_error"
        assert "the grading worker stopped" in d["result"]["message"]
        assert c.get("/api/submissions").json() == []
