"""The pages of scheduled mock interviews (issue 18) in cohort mode: the instructor's schedule form,
options and matrix column, the CSV; the student's dashboard entry, Start, the review rule and the
leaderboard with its opt-in; and who gets 404. SQLite, no grading worker (graded submissions are
written as the worker leaves them), and the interview clock injected (``interview.set_clock``)."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from inferprep import auth, cohort_interviews, cohorts, db, interview
from inferprep.models import JobState, Submission, SubmissionKind
from inferprep.settings import Settings
from inferprep.web import create_app

SECRET = "i" * 40
PASSWORD = "correct horse battery"
T0 = datetime(2031, 5, 6, 14, 0, tzinfo=timezone.utc)


class Site:
    def __init__(self, tmp_path):
        self.settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=0)
        self.app = create_app(self.settings, devices=("cpu",))
        self.client = TestClient(self.app, follow_redirects=False)
        self.client.__enter__()
        self.now = T0 - timedelta(days=1)
        interview.set_clock(lambda: self.now)
        with db.session_scope(self.settings.db_url) as s:
            self.tina = auth.create_user(s, "tina@x.org", "Tina", PASSWORD, is_instructor=True)
            self.olga = auth.create_user(s, "olga@x.org", "Olga", PASSWORD, is_instructor=True)
            self.cohort = cohorts.create_cohort(s, "Cohort A", instructor_id=self.tina.id)
            other = cohorts.create_cohort(s, "Cohort B", instructor_id=self.olga.id)
            self.alice = auth.sign_up(s, join_code=self.cohort.join_code, email="alice@x.org", name="Alice Liddell",
                                      password=PASSWORD)
            self.dave = auth.sign_up(s, join_code=other.join_code, email="dave@x.org", name="Dave", password=PASSWORD)

    def as_(self, user) -> TestClient:
        c = TestClient(self.app, follow_redirects=False)
        with db.session_scope(self.settings.db_url) as s:
            token = auth.create_session(s, user.id, secret=SECRET, hours=24 * 365 * 10)
        c.cookies.set("inferprep_session", token)
        c.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, token)
        return c

    def close(self):
        interview.set_clock(None)
        self.client.__exit__(None, None, None)


@pytest.fixture
def site(tmp_path):
    s = Site(tmp_path)
    yield s
    s.close()


FORM = {"title": "Friday mock", "scope": "collection:Jane Street", "minutes": "30",
        "opens_at": T0.strftime("%Y-%m-%dT%H:%M"), "closes_at": (T0 + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
        "draw": "same", "review_after": "on"}


def test_schedule_take_review_and_leaderboard(site):
    tina, olga, alice, dave = (site.as_(u) for u in (site.tina, site.olga, site.alice, site.dave))
    cid = site.cohort.id
    matrix = tina.get(f"/teach/cohorts/{cid}").text
    assert 'action="/teach/cohorts/%d/interviews"' % cid in matrix and "Jane Street" in matrix

    # scheduling: only the cohort's instructors; a bad window is refused with the reason
    short = {**FORM, "closes_at": (T0 + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M")}
    r = tina.post(f"/teach/cohorts/{cid}/interviews", data=short)
    assert r.status_code == 422 and "shorter than the interview" in r.text
    for c in (olga, alice):
        assert c.post(f"/teach/cohorts/{cid}/interviews", data=FORM).status_code == 404
    r = tina.post(f"/teach/cohorts/{cid}/interviews", data=FORM)
    assert r.status_code == 303 and r.headers["location"] == f"/teach/cohorts/{cid}#interviews"
    with db.session_scope(site.settings.db_url) as s:
        (ci,) = cohort_interviews.for_cohort(s, cid)
    assert (ci.minutes, ci.review_after, ci.leaderboard) == (30, True, False)

    # the student sees it before the window, with no Start yet; another cohort's student sees nothing
    page = alice.get("/").text
    assert f'data-testid="scheduled-interview-{ci.id}"' in page and "not open yet" in page
    assert f"/cohort/interviews/{ci.id}/start" not in page
    assert "Friday mock" not in dave.get("/").text
    for c in (dave, tina, olga):
        assert c.get(f"/cohort/interviews/{ci.id}").status_code == 404
        assert c.post(f"/cohort/interviews/{ci.id}/start").status_code == 404
    assert alice.post(f"/cohort/interviews/{ci.id}/start").status_code == 422        # not open yet

    # inside the window: Start leads to the session's page; once only
    site.now = T0 + timedelta(minutes=5)
    page = alice.get("/").text
    assert f'action="/cohort/interviews/{ci.id}/start"' in page
    r = alice.post(f"/cohort/interviews/{ci.id}/start")
    assert r.status_code == 303
    session_id = int(re.fullmatch(r"/interview/(\d+)", r.headers["location"]).group(1))
    r = alice.post(f"/cohort/interviews/{ci.id}/start")
    assert r.status_code == 422 and "already started" in r.text
    with db.session_scope(site.settings.db_url) as s:
        session = interview.get_session(s, site.alice.id, session_id)
        (slug,) = [it.slug for it in interview.session_items(s, session)]
        s.add(Submission(user_id=site.alice.id, slug=slug, kind=SubmissionKind.SUBMIT.value, code="# x\n",
                         state=JobState.DONE.value, passed=True, status="passed", score=1.0,
                         created_at=T0 + timedelta(minutes=12)))
        s.commit()
        interview.finish_session(s, site.alice.id, session_id, now=T0 + timedelta(minutes=15))
    assert "In progress" not in alice.get("/").text

    # the instructor's matrix and CSV
    page = tina.get(f"/teach/cohorts/{cid}").text
    cell = re.search(rf'data-testid="mock-cell-{ci.id}-{site.alice.id}">(.*?)</td>', page, re.S).group(1)
    assert "finished" in cell and f"{slug} ✓" in cell
    rows = list(csv.reader(io.StringIO(tina.get(f"/teach/cohorts/{cid}/grades.csv").text)))
    assert rows[0][-3:] == ["Friday mock: score", "Friday mock: finished", "Friday mock: exercise 1"]
    score = rows[1][-3]
    assert rows[1][0] == "alice@x.org" and rows[1][-2:] == ["yes", f"{slug} passed"] and float(score) > 0
    assert olga.get(f"/teach/cohorts/{cid}/grades.csv").status_code == 404

    # review: the report waits for the window to close, then opens unless the instructor closes it
    page = alice.get(f"/cohort/interviews/{ci.id}").text
    assert "report opens when the window closes" in page and 'data-testid="mock-score"' not in page
    site.now = T0 + timedelta(hours=3)
    page = alice.get(f"/cohort/interviews/{ci.id}").text
    assert f"Score <strong>{score}</strong>" in page
    options = f"/teach/cohorts/{cid}/interviews/{ci.id}/options"
    assert tina.post(options, data={"review_after": "off"}).status_code == 303
    assert "keep the reports of this interview closed" in alice.get(f"/cohort/interviews/{ci.id}").text
    r = olga.post(f"/teach/cohorts/{cid}/interviews/{ci.id}/options", data={"leaderboard": "on"})
    assert r.status_code == 404

    # the leaderboard: off by default; on, a student opts in under a pseudonym
    board = f"/cohort/interviews/{ci.id}/leaderboard"
    assert 'data-testid="board-off"' in alice.get(board).text
    assert alice.post(board, data={"opt": "in"}).status_code == 422
    r = tina.post(f"/teach/cohorts/{cid}/interviews/{ci.id}/options", data={"leaderboard": "on", "review_after": "on"})
    assert r.status_code == 303
    page = alice.get(board).text
    assert "Join under a pseudonym" in page and "Nobody on it yet" in page
    assert alice.post(board, data={"opt": "in"}).status_code == 303
    page = alice.get(board).text
    alias = re.search(r'data-testid="my-alias">You appear as <strong>([^<]+)</strong>', page).group(1)
    table = re.search(r'data-testid="leaderboard">(.*?)</table>', page, re.S).group(1)
    assert f"{alias} (you)" in table and score in table
    teacher_view = tina.get(board).text
    assert alias in teacher_view and "Alice" not in teacher_view and "alice@x.org" not in teacher_view
    for c in (dave, olga):
        assert c.get(board).status_code == 404
        assert c.post(board, data={"opt": "in"}).status_code == 404
    assert alice.post(board, data={"opt": "maybe"}).status_code == 422
    assert alice.post(board, data={"opt": "out"}).status_code == 303
    assert alias not in alice.get(board).text
