"""The limits of cohort mode hold under concurrency and for retries (issue 11): N requests at
once with k free slots admit exactly k (the hourly rate through the app's routes, the queue
limit through the service layer with a session per thread); a retry the student asks for counts
like a new submission; the platform's own re-queueing after a lease expires counts for nothing.
SQLite file database here; the same checks on PostgreSQL are in test_postgres_cohort.py."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from functools import partial

import pytest
from sqlmodel import select

from inferprep import cohorts, db, queue, services
from inferprep.models import Submission, utcnow

from limits_support import SLUG, fire, queue_limit_race, world


def _rows(url: str, user_id: int) -> int:
    with db.session_scope(url) as s:
        return len(s.exec(select(Submission.id).where(Submission.user_id == user_id)).all())


def _done(c, sub_id: int) -> dict:
    for _ in range(400):
        j = c.get(f"/api/submissions/{sub_id}").json()
        if j["state"] == "done":
            return j
        time.sleep(0.025)
    raise AssertionError(f"submission {sub_id} not graded")


def test_parallel_submissions_admit_exactly_the_free_slots(tmp_path):
    w = world({"data_dir": tmp_path}, ["ann@x.org"], per_hour=5)
    try:
        ann = w.as_("ann@x.org")
        for k in range(3):
            assert ann.post(f"/api/exercises/{SLUG}/submissions", json={"code": f"# {k}", "kind": "run"}).status_code == 202

        def submit(i: int) -> int:     # half through the API, half through the page's form
            c = w.as_("ann@x.org")
            if i % 2:
                return c.post(f"/api/exercises/{SLUG}/submissions", json={"code": f"# p{i}", "kind": "run"}).status_code
            return c.post(f"/exercises/{SLUG}/submissions", data={"code": f"# p{i}", "kind": "run"}).status_code
        codes = fire(12, submit)
        assert sum(c in (202, 303) for c in codes) == 2 and codes.count(429) == 10, codes
        assert _rows(w.settings.db_url, w.ids["ann@x.org"]) == 5
    finally:
        w.close()


def test_parallel_submissions_respect_the_queue_limit(tmp_path):
    students = [f"q{i}@x.org" for i in range(3)]
    w = world({"data_dir": tmp_path}, students, per_hour=0)       # no hourly limit: the queue decides
    try:
        out = queue_limit_race(w.settings.db_url, list(w.ids.values()), slots=2, n=12)
        assert out.count("ok") == 2, out
        refused = [e for e in out if isinstance(e, cohorts.TooManyRequests)]
        assert len(refused) == 10 and all("queue is full" in str(e) for e in refused), out
    finally:
        w.close()


def test_retries_count_against_the_hourly_and_queue_limits(tmp_path):
    w = world({"data_dir": tmp_path}, ["rex@x.org"], per_hour=3, grading_threads=1)
    try:
        rex = w.as_("rex@x.org")
        first = rex.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# BOOM", "kind": "run"}).json()
        assert _done(rex, first["id"])["status"] == "internal_error"
        codes = []
        for k in range(8):       # the red team's 8 retries of one internal error, API and page alike
            url = f"/api/submissions/{first['id']}/retry" if k % 2 else f"/submissions/{first['id']}/retry"
            codes.append(rex.post(url).status_code)
        assert codes[:2] in ([303, 202], [202, 303]) and codes[2:] == [429] * 6, codes
        r = rex.post(f"/api/submissions/{first['id']}/retry")
        assert r.status_code == 429 and "3 gradings an hour" in r.json()["detail"]
        assert re.search(r"the next one in (5\d min|1 h|1 h 1 min) \(at \d\d:\d\d UTC\)", r.json()["detail"])
        assert 3000 < int(r.headers["retry-after"]) <= 3601
        assert _rows(w.settings.db_url, w.ids["rex@x.org"]) == 3          # 1 + 2 retries, not 9
        with db.session_scope(w.settings.db_url) as s:       # a full queue refuses a retry too
            cohorts.set_policy(s, w.cohort_id, submissions_per_hour=0)
            with pytest.raises(cohorts.TooManyRequests, match="queue is full"):
                services.retry_submission(s, w.ids["rex@x.org"], first["id"], max_bytes=65536,
                                          admit=partial(cohorts.admit, queue_limit=0))
    finally:
        w.close()


def test_the_platforms_own_requeues_count_for_nothing(tmp_path):
    w = world({"data_dir": tmp_path}, ["pat@x.org"], per_hour=2)
    try:
        pat = w.as_("pat@x.org")
        url = f"/api/exercises/{SLUG}/submissions"
        sid = pat.post(url, json={"code": "# 1", "kind": "run"}).json()["id"]
        with db.session_scope(w.settings.db_url) as s:       # a worker dies twice mid-grade
            for _ in range(2):
                assert queue.claim(s, "doomed", lease_s=0.01).id == sid
                assert queue.requeue_expired(s, max_attempts=5, now=utcnow() + timedelta(seconds=1)) == (1, 0)
        assert pat.post(url, json={"code": "# 2", "kind": "run"}).status_code == 202
        assert pat.post(url, json={"code": "# 3", "kind": "run"}).status_code == 429
    finally:
        w.close()


def test_waits_read_as_people_say_them():
    from inferprep.cohorts import ExerciseStats, human_wait
    assert [human_wait(s) for s in (1, 59, 60, 61, 3491, 3600, 3601, 3900)] == [
        "1 s", "59 s", "1 min", "2 min", "59 min", "1 h", "1 h 1 min", "1 h 5 min"]
    assert ExerciseStats("x").pass_rate() is None                   # nobody attempted: no rate
    assert ExerciseStats("x", attempted=4, solved=1).pass_rate() == 0.25
