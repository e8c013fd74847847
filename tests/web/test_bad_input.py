"""The issue's bad inputs: size cap (413), not UTF-8 (422), two submits at once, a worker crash
mid-grade (internal error + retry, never stuck), the draft saved before every grade."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from webutil import wait_done
from fastapi.testclient import TestClient

from inferprep import db
from inferprep.models import LOCAL_USER_ID, Submission, utcnow
from inferprep.web import create_app
from inferprep.worker import embedded_prefix

HX = {"HX-Request": "true"}
BIG = "# " + "x" * (256 * 1024) + "\n"


def test_code_over_the_cap_is_413_with_a_message(client):
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": BIG, "kind": "submit"})
    assert r.status_code == 413 and "262144 bytes (256 KiB)" in r.json()["detail"]
    r = client.post("/exercises/sampling-order/submissions", data={"code": BIG, "kind": "submit"})
    assert r.status_code == 413 and "256 KiB" in r.text
    r = client.put("/api/exercises/sampling-order/draft", json={"code": BIG})
    assert r.status_code == 413
    huge = b"code=" + b"a" * (2 * 1024 * 1024)                       # refused before it is read
    r = client.post("/exercises/sampling-order/submissions", content=huge,
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    assert client.get("/api/submissions").json() == []


def test_code_that_is_not_utf8_is_422(client):
    r = client.post("/exercises/sampling-order/submissions", content=b"kind=submit&code=%FF%FEx",
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 422 and "not UTF-8" in r.text
    r = client.post("/exercises/sampling-order/submissions", files={"code": ("a.py", b"\xff\xfe = 1")},
                    data={"kind": "submit"})
    assert r.status_code == 422 and "not UTF-8" in r.text
    r = client.post("/api/exercises/sampling-order/submissions", content=b'{"code": "\xff", "kind": "run"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422
    r = client.post("/exercises/sampling-order/draft", content=b"code=%C3%28",
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 422
    assert client.get("/api/submissions").json() == []


def test_two_submits_at_once_are_both_recorded_and_graded(client):
    def post(i):
        return client.post("/exercises/sampling-order/submissions", data={"code": f"# PASS {i}\n", "kind": "submit"},
                           headers=HX)
    with ThreadPoolExecutor(2) as pool:
        rs = list(pool.map(post, range(2)))
    ids = [int(re.search(r'id="verdict-(\d+)"', r.text).group(1)) for r in rs]
    assert len(set(ids)) == 2
    for i in ids:
        assert wait_done(client, i)["passed"]


def test_a_judge_crash_ends_as_internal_error_with_retry(client, judge):
    r = client.post("/exercises/sampling-order/submissions", data={"code": "# BOOM\n", "kind": "submit"}, headers=HX)
    sub_id = int(re.search(r'id="verdict-(\d+)"', r.text).group(1))
    d = wait_done(client, sub_id)
    assert d["status"] == "internal_error" and "fork server died" in d["verdict"]["message"]
    frag = client.get(f"/submissions/{sub_id}/verdict").text
    assert "Retry" in frag and f'hx-post="/submissions/{sub_id}/retry"' in frag
    # nothing the user wrote is lost: the draft was saved before the grade
    assert client.get("/api/exercises/sampling-order").json()["code"] == "# BOOM\n"
    r = client.post(f"/submissions/{sub_id}/retry", headers=HX)
    new_id = int(re.search(r'id="verdict-(\d+)"', r.text).group(1))
    assert new_id != sub_id
    assert wait_done(client, new_id)["status"] == "internal_error"      # same code, same fake crash
    assert client.post(f"/api/submissions/{new_id}/retry").status_code == 202
    ok = client.post("/api/exercises/sampling-order/submissions", json={"code": "# PASS", "kind": "run"}).json()
    wait_done(client, ok["id"])
    assert client.post(f"/api/submissions/{ok['id']}/retry").status_code == 422   # only internal errors


def test_restart_ends_orphaned_running_jobs_as_retryable(settings, judge):
    db.prepare(settings.db_url)
    with db.session_scope(settings.db_url) as s:
        sub = Submission(user_id=LOCAL_USER_ID, slug="sampling-order", kind="submit", code="# PASS\n",
                         state="running", worker=f"{embedded_prefix()}99999:0", attempt=1,
                         lease_expires_at=utcnow() + timedelta(minutes=5))
        s.add(sub)
        s.commit()
        sid = sub.id
    with TestClient(create_app(settings, grade=judge, devices=("cpu",))) as c:
        d = c.get(f"/api/submissions/{sid}").json()
        assert d["state"] == "done" and d["status"] == "internal_error" and "retry" in d["verdict"]["message"]
        assert "Retry" in c.get(f"/submissions/{sid}").text
        new = c.post(f"/api/submissions/{sid}/retry").json()
        assert wait_done(c, new["id"])["passed"]


def test_the_draft_is_saved_before_every_grade_even_if_queued_forever(settings, judge):
    settings = settings.model_copy(update={"grading_threads": 0})      # no worker: the job stays queued
    with TestClient(create_app(settings, grade=judge, devices=("cpu",))) as c:
        r = c.post("/api/exercises/sampling-order/submissions", json={"code": "mine = 1\n", "kind": "submit"})
        assert r.status_code == 202 and r.json()["state"] == "queued" and r.json()["queue_position"] == 1
        assert c.get("/api/exercises/sampling-order").json()["code"] == "mine = 1\n"
        assert "Queued (position 1)" in c.get(f"/submissions/{r.json()['id']}/verdict").text


def test_cuda_only_exercise_on_a_cpu_server_is_refused(client, monkeypatch):
    from inferprep import services
    ex = services.get_exercise("sampling-order")
    monkeypatch.setattr(ex.meta, "devices", ["cuda"])
    monkeypatch.setattr(services, "get_exercise", lambda slug: ex)
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": "x", "kind": "run"})
    assert r.status_code == 422 and "graded on cuda" in r.json()["detail"]


def test_live_progress_while_running(client, judge):
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": "# WAIT PASS\n", "kind": "run"})
    sid = r.json()["id"]
    try:
        import time
        for _ in range(200):
            if client.get(f"/api/submissions/{sid}").json()["state"] == "running":
                break
            time.sleep(0.05)
        frag = client.get(f"/submissions/{sid}/verdict").text
        assert "Grading on cpu" in frag and f'sse-connect="/submissions/{sid}/events"' in frag   # pushed, not polled
        assert "hx-trigger" not in frag and 'class="elapsed"' in frag and 'data-testid="cancel"' in frag
    finally:
        judge.release.set()
    assert wait_done(client, sid)["passed"]
