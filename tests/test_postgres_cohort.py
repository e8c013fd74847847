"""Cohort mode over PostgreSQL: sign-up on a fresh database (the first account after the local
user), a submission graded by the embedded worker, the instructor's matrix, export and
rejudge, the rate limit. The full authorization matrix runs on SQLite (test_cohort_authz.py);
this checks the same service code on the hosting database."""

from __future__ import annotations

import re
import time

import pytest
from fastapi.testclient import TestClient

import cohort_fakes
from pg_support import pg_url  # noqa: F401 - the fixture
from inferprep import auth, cohorts, db
from inferprep.settings import Settings
from inferprep.web import create_app

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]
SECRET = "p" * 40
SLUG = "sampling-order"


def _signed_up(app, code: str, email: str, name: str) -> tuple[TestClient, str]:
    c = TestClient(app, follow_redirects=False)
    c.get("/signup")
    r = c.post("/signup", data={"csrf_token": c.cookies.get("inferprep_csrf"), "code": code, "email": email,
                                "name": name, "password": "a-long-password"})
    assert r.status_code == 303, r.text
    r = c.post("/login", data={"csrf_token": c.cookies.get("inferprep_csrf"), "email": email,
                               "password": "a-long-password", "next": "/cohort"})
    assert r.status_code == 303 and r.headers["location"] == "/cohort", r.text
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', c.get("/cohort").text).group(1)
    c.headers["X-CSRF-Token"] = csrf
    return c, csrf


def _done(c, sub_id):
    for _ in range(300):
        j = c.get(f"/api/submissions/{sub_id}").json()
        if j["state"] == "done":
            return j
        time.sleep(0.05)
    raise AssertionError("not graded")


def test_cohort_flow_on_postgres(pg_url, tmp_path):
    settings = Settings(database_url=pg_url, data_dir=tmp_path, cohort_mode=True, secret_key=SECRET,
                        grading_threads=2, allow_unsandboxed=True)
    app = create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))
    with TestClient(app):
        with db.session_scope(pg_url) as s:
            t = auth.create_user(s, "teach@x.org", "Teach", "a-long-password", is_instructor=True)
            co = cohorts.create_cohort(s, "PG cohort", instructor_id=t.id)
            cohorts.assign(s, co.id, SLUG)
            cohorts.set_policy(s, co.id, submissions_per_hour=3)
            tok = auth.create_session(s, t.id, secret=SECRET, hours=1)
        alice, _ = _signed_up(app, co.join_code, "alice@x.org", "Alice")
        bob, _ = _signed_up(app, co.join_code, "bob@x.org", "Bob")
        a1 = alice.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# a pass", "kind": "submit"}).json()
        b1 = bob.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# b FAIL", "kind": "submit"}).json()
        assert _done(alice, a1["id"])["passed"] and not _done(bob, b1["id"])["passed"]
        assert bob.get(f"/api/submissions/{a1['id']}").status_code == 404
        assert alice.get(f"/exercises/{SLUG}/solution").status_code == 200
        assert bob.get(f"/exercises/{SLUG}/solution").status_code == 403
        teacher = TestClient(app, follow_redirects=False)
        teacher.cookies.set("inferprep_session", tok)
        teacher.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, tok)
        page = teacher.get(f"/teach/cohorts/{co.id}").text
        assert "Alice" in page and "edge-case" in page and "50%" in page    # bob's failing case, 1 of 2 passed
        lines = teacher.get(f"/teach/cohorts/{co.id}/grades.csv").text.strip().splitlines()
        assert "alice@x.org,Alice,1.0000,1" in lines and "bob@x.org,Bob,0.5000,0" in lines, lines
        r = teacher.post(f"/api/teach/submissions/{b1['id']}/rejudge")
        assert r.status_code == 202 and r.json()["requeued"] is True
        _done(bob, b1["id"])
        for k in range(2):
            assert bob.post(f"/api/exercises/{SLUG}/submissions", json={"code": f"# b{k}", "kind": "run"}).status_code == 202
        r = bob.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# b3", "kind": "run"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0


def test_parallel_submissions_admit_exactly_the_free_slots_on_postgres(pg_url, tmp_path):
    """The hourly limit through the app and the queue limit through the service layer, under 12
    concurrent requests with 2 slots left (the gate row's lock; test_cohort_limits.py on SQLite)."""
    from limits_support import fire, queue_limit_race, world
    w = world({"database_url": pg_url, "data_dir": tmp_path}, ["pg-ann@x.org", "pg-bo@x.org"], per_hour=5)
    try:
        for k in range(3):
            r = w.as_("pg-ann@x.org").post(f"/api/exercises/{SLUG}/submissions", json={"code": f"# {k}", "kind": "run"})
            assert r.status_code == 202, r.text
        codes = fire(12, lambda i: w.as_("pg-ann@x.org").post(
            f"/api/exercises/{SLUG}/submissions", json={"code": f"# p{i}", "kind": "run"}).status_code)
        assert codes.count(202) == 2 and codes.count(429) == 10, codes
        with db.session_scope(pg_url) as s:
            cohorts.set_policy(s, w.cohort_id, submissions_per_hour=0)
        out = queue_limit_race(pg_url, list(w.ids.values()), slots=2, n=12)
        assert out.count("ok") == 2 and sum(isinstance(e, cohorts.TooManyRequests) for e in out) == 10, out
    finally:
        w.close()


def test_sign_in_throttle_counts_exactly_on_postgres(pg_url):
    """Parallel wrong passwords for one account from several web processes' worth of sessions:
    exactly ACCOUNT_FAILURES are checked, the rest refused (test_cohort_accounts.py on SQLite)."""
    from limits_support import fire
    with db.session_scope(pg_url) as s:
        auth.create_user(s, "pg-vic@x.org", "Vic", "the-right-password")

    def guess(i: int) -> str:
        with db.session_scope(pg_url) as s:
            try:
                auth.authenticate(s, "pg-vic@x.org", f"guess-{i}", address=f"10.2.0.{i}")
            except auth.SignInThrottled:
                return "throttled"
            except auth.AuthFailed:
                return "checked"
        return "signed in"
    out = fire(10, guess)
    assert out.count("checked") == auth.ACCOUNT_FAILURES and out.count("throttled") == 10 - auth.ACCOUNT_FAILURES, out
    with db.session_scope(pg_url) as s, pytest.raises(auth.SignInThrottled):
        auth.authenticate(s, "pg-vic@x.org", "the-right-password")
