"""A hostile student against the mock interview's web routes (issue 18, red team): the routes a
scheduled interview's report and score could leak through before its window closes or with review
off; ids too large for the database; another user's session; follow-ups before a pass, twice, and
in a session with a pass made before it. Each test is an attack; the assertions are what must hold."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from inferprep import auth, cohort_interviews, cohorts, db, followups, interview
from inferprep.models import JobState, Submission, SubmissionKind
from inferprep.settings import Settings
from inferprep.web import create_app

SECRET = "r" * 40
PASSWORD = "correct horse battery"
T0 = datetime(2031, 5, 6, 14, 0, tzinfo=timezone.utc)
HUGE = 10**30


class Site:
    """Cohort mode: instructor Tina (cohort A) with student Alice, instructor Olga (cohort B) with Dave."""

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

    def schedule(self, **kw):
        with db.session_scope(self.settings.db_url) as s:
            args = dict(title="Friday mock", scope_kind="collection", scope="Jane Street", minutes=30,
                        opens_at=T0, closes_at=T0 + timedelta(hours=2), review_after=True, now=self.now)
            args.update(kw)
            return cohort_interviews.schedule(s, self.cohort.id, **args)

    def close(self):
        interview.set_clock(None)
        self.client.__exit__(None, None, None)


@pytest.fixture
def site(tmp_path):
    s = Site(tmp_path)
    yield s
    s.close()


def take_and_pass(site, ci) -> tuple[int, str]:
    """Alice starts ``ci`` inside its window, passes its exercise and finishes early: (session id, slug)."""
    alice = site.as_(site.alice)
    site.now = T0 + timedelta(minutes=5)
    r = alice.post(f"/cohort/interviews/{ci.id}/start")
    assert r.status_code == 303, r.text
    sid = int(re.fullmatch(r"/interview/(\d+)", r.headers["location"]).group(1))
    with db.session_scope(site.settings.db_url) as s:
        (slug,) = [it.slug for it in interview.session_items(s, interview.get_session(s, site.alice.id, sid))]
        s.add(Submission(user_id=site.alice.id, slug=slug, kind=SubmissionKind.SUBMIT.value, code="# x\n",
                         state=JobState.DONE.value, passed=True, status="passed", score=1.0,
                         created_at=T0 + timedelta(minutes=12)))
        s.commit()
    site.now = T0 + timedelta(minutes=15)
    r = alice.post(f"/interview/{sid}/finish", data={"confirm": "yes"})
    assert r.status_code == 303
    return sid, slug


def test_a_scheduled_interviews_report_stays_closed_on_the_interview_routes_until_the_window_closes(site):
    ci = site.schedule()
    sid, slug = take_and_pass(site, ci)
    alice = site.as_(site.alice)
    # the window is still open: the report is closed on every route, and the score with it
    r = alice.get(f"/interview/{sid}/report")
    assert r.status_code == 403 and "report opens when the window closes" in r.text
    assert 'data-testid="interview-score"' not in r.text
    # the session's page and finishing again lead to the scheduled interview's page, not the report
    for r in (alice.get(f"/interview/{sid}"), alice.post(f"/interview/{sid}/finish", data={"confirm": "yes"})):
        assert r.status_code == 303 and r.headers["location"] == f"/cohort/interviews/{ci.id}"
    page = alice.get(f"/cohort/interviews/{ci.id}").text
    assert "report opens when the window closes" in page and 'data-testid="mock-score"' not in page
    # the history lists the session without its score (it would be the report's)
    with db.session_scope(site.settings.db_url) as s:
        score = interview.get_session(s, site.alice.id, sid).score
    assert score is not None and score > 0
    page = alice.get("/interview").text
    row = re.search(r'<table class="list small" id="interview-history">(.*?)</table>', page, re.S).group(1)
    assert "—" in row and f'{score:.0f}</td>' not in row and f"/interview/{sid}/report" not in row
    # the editorial stays closed too (passed inside the interview, window open)
    assert alice.get(f"/api/exercises/{slug}/solution").status_code == 403
    assert alice.get(f"/exercises/{slug}/solution").status_code == 403
    # after the window: open (review on)
    site.now = T0 + timedelta(hours=3)
    assert alice.get(f"/interview/{sid}/report").status_code == 200
    assert f"/interview/{sid}/report" in alice.get("/interview").text
    # the instructor closes review: closed again on the interview routes
    with db.session_scope(site.settings.db_url) as s:
        cohort_interviews.set_options(s, s.get(type(ci), ci.id), review_after=False)
    r = alice.get(f"/interview/{sid}/report")
    assert r.status_code == 403 and "keep the reports of this interview closed" in r.text


def test_session_and_interview_ids_too_large_for_the_database_answer_404(site):
    alice = site.as_(site.alice)
    tina = site.as_(site.tina)
    for path in (f"/interview/{HUGE}", f"/interview/{HUGE}/report", f"/cohort/interviews/{HUGE}",
                 f"/cohort/interviews/{HUGE}/leaderboard", f"/interview/-{HUGE}"):
        assert alice.get(path).status_code == 404, path
    for path in (f"/interview/{HUGE}/finish", f"/cohort/interviews/{HUGE}/start"):
        assert alice.post(path, data={"confirm": "yes"}).status_code == 404, path
    r = tina.post(f"/teach/cohorts/{site.cohort.id}/interviews/{HUGE}/options", data={"review_after": "on"})
    assert r.status_code == 404
    assert tina.post(f"/teach/cohorts/{HUGE}/interviews", data={"title": "x"}).status_code == 404


def test_another_students_session_and_another_cohorts_interview_answer_404(site):
    ci = site.schedule()
    sid, _ = take_and_pass(site, ci)
    dave, olga = site.as_(site.dave), site.as_(site.olga)
    for c in (dave, olga):
        for path in (f"/interview/{sid}", f"/interview/{sid}/report", f"/cohort/interviews/{ci.id}"):
            assert c.get(path).status_code == 404, path
        assert c.post(f"/interview/{sid}/finish", data={"confirm": "yes"}).status_code == 404
        assert c.post(f"/cohort/interviews/{ci.id}/start").status_code == 404
    # the instructor of cohort B cannot read cohort A's results or CSV
    assert olga.get(f"/teach/cohorts/{site.cohort.id}").status_code == 404
    assert olga.get(f"/teach/cohorts/{site.cohort.id}/grades.csv").status_code == 404


def test_the_schedule_form_refuses_bad_input_with_4xx(site):
    tina = site.as_(site.tina)
    base = {"title": "x", "scope": "collection:Jane Street", "minutes": "30",
            "opens_at": T0.strftime("%Y-%m-%dT%H:%M"), "closes_at": (T0 + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
            "draw": "same"}
    bad = [{"minutes": "x"}, {"minutes": "31"}, {"minutes": str(HUGE)}, {"scope": "nope"}, {"scope": "track:"},
           {"opens_at": "tomorrow"}, {"closes_at": ""}, {"draw": "mine"}, {"title": ""}, {"title": "t" * 300},
           {"opens_at": "9999-12-31T23:59", "closes_at": "9999-12-31T23:59+00:00"},
           {"opens_at": "0001-01-01T00:00+05:00"}, {"closes_at": "9999-12-31T23:59-05:00"},
           {"opens_at": "2031-05-06T14:00+99:00"}]
    for change in bad:
        r = tina.post(f"/teach/cohorts/{site.cohort.id}/interviews", data={**base, **change})
        assert 400 <= r.status_code < 500, (change, r.status_code, r.text[:300])


def test_a_title_made_to_be_a_formula_is_not_one_in_the_csv(site):
    site.schedule(title='=HYPERLINK("http://evil","x")')
    text = site.as_(site.tina).get(f"/teach/cohorts/{site.cohort.id}/grades.csv").text
    header = text.splitlines()[0]
    assert "=HYPERLINK" in header
    assert not any(cell.strip('"').startswith(("=", "+", "-", "@")) for cell in header.split(","))


# -- local mode: the fake judge of conftest.py grades "# PASS" as passing ----------------------------
from webutil import wait_done  # noqa: E402


def _followup_exercise():
    from inferprep import catalog
    return next(ex for ex in catalog.all_exercises()
                if not ex.unavailable and ex.meta.difficulty.value == "medium" and followups.load(ex.folder)
                and any(isinstance(q, followups.Ordering) for q in followups.load(ex.folder)))


def _seed_drawing(slug: str, track: str) -> int:
    return next(seed for seed in range(2000)
                if interview.draw(interview.candidates("track", track), 30, seed, set())[0][0] == slug)


def test_in_a_session_every_hint_route_charges_and_no_route_shows_an_answer_before_it_is_given(client, settings):
    clock_t = {"t": datetime.now(timezone.utc).replace(microsecond=0)}
    interview.set_clock(lambda: clock_t["t"])
    try:
        ex = _followup_exercise()
        qs = followups.load(ex.folder)
        # solved long before: the editorial is open now, and closes during the session
        sub = client.post(f"/api/exercises/{ex.slug}/submissions", json={"code": "# PASS\n", "kind": "submit"}).json()
        wait_done(client, sub["id"])
        assert client.get(f"/api/exercises/{ex.slug}/solution").status_code == 200
        with db.session_scope(settings.db_url) as s:   # 20 days ago: the draw may give it again
            row = s.get(Submission, sub["id"])
            row.created_at = clock_t["t"] - timedelta(days=20)
            s.add(row)
            s.commit()
        seed = _seed_drawing(ex.slug, ex.meta.track.value)
        r = client.post("/interview/start", data={"scope": f"track:{ex.meta.track.value}", "minutes": "30",
                                                  "seed": str(seed)}, follow_redirects=False)
        assert r.status_code == 303, r.text
        sid = int(r.headers["location"].rsplit("/", 1)[1])
        assert items_of(settings, sid) == [ex.slug]
        for path in (f"/api/exercises/{ex.slug}/solution", f"/exercises/{ex.slug}/solution"):
            assert client.get(path).status_code == 403, path
        # a pass made before the session does not open the follow-ups in it
        assert client.get(f"/api/exercises/{ex.slug}/followups").status_code == 403
        assert client.post(f"/api/exercises/{ex.slug}/followups/{qs[0].id}", json={"answer": 0}).status_code == 403
        assert 'data-testid="followup-explanation"' not in client.get(f"/exercises/{ex.slug}").text
        # hints: the page's route and the API's both count
        assert len(ex.meta.hints) >= 2
        client.post(f"/exercises/{ex.slug}/hints", follow_redirects=False)
        client.post(f"/api/exercises/{ex.slug}/hints")
        with db.session_scope(settings.db_url) as s:
            (item,) = interview.session_items(s, interview.get_session(s, 1, sid))
        assert item.hints_used == 2
        # pass in the session: the questions come, without answers, explanations or the right order
        sub = client.post(f"/api/exercises/{ex.slug}/submissions", json={"code": "# PASS\n", "kind": "submit"}).json()
        wait_done(client, sub["id"])
        data = client.get(f"/api/exercises/{ex.slug}/followups").json()
        assert data["context"] == f"interview:{sid}"
        for q, pub in zip(qs, data["questions"]):
            assert not pub["answered"] and pub["explanation"] is None and pub["right_answer"] is None
            if isinstance(q, followups.Ordering):
                assert pub["items"] != [q.items[i] for i in q.answer]
        html = client.get(f"/exercises/{ex.slug}/followups").text
        for q in qs:
            assert q.explanation[:40] not in html
            assert f'data-answer' not in html and f'"answer": {q.answer}' not in html
        # the first answer stands, via either route
        q = qs[0]
        first = client.post(f"/api/exercises/{ex.slug}/followups/{q.id}", json={"answer": _wrong(q)}).json()
        assert first["recorded"] and first["correct"] is None      # held back until the last answer
        again = client.post(f"/api/exercises/{ex.slug}/followups/{q.id}", json={"answer": _right(q, ex.slug)}).json()
        assert not again["recorded"] and again["correct"] is None
        for other in qs[1:]:                                       # the last answer reveals: the first stood
            client.post(f"/api/exercises/{ex.slug}/followups/{other.id}", json={"answer": _wrong(other)})
        shown = {p["id"]: p for p in client.get(f"/api/exercises/{ex.slug}/followups").json()["questions"]}
        assert shown[q.id]["correct"] is False and shown[q.id]["explanation"]
        # the report is the session's page until it ends; it opens after Finish
        assert client.get(f"/interview/{sid}/report", follow_redirects=False).status_code == 303
    finally:
        interview.set_clock(None)


def items_of(settings, sid: int) -> list[str]:
    with db.session_scope(settings.db_url) as s:
        return [i.slug for i in interview.session_items(s, interview.get_session(s, 1, sid))]


def _wrong(q):
    if isinstance(q, followups.SingleChoice):
        return (q.answer + 1) % len(q.choices)
    if isinstance(q, followups.MultipleChoice):
        return [i for i in range(len(q.choices)) if i not in q.answer] or [0, 1]
    if isinstance(q, followups.NumberAnswer):
        return q.answer * 3 + 1
    return list(range(len(q.items)))[::-1]


def _right(q, slug):
    if isinstance(q, followups.Ordering):
        shown = followups.display_order(1, slug, q)
        return [shown.index(i) for i in q.answer]
    return q.answer


def test_the_leaderboard_other_users_results_is_closed_during_a_session(site):
    ci = site.schedule(leaderboard=True)
    alice = site.as_(site.alice)
    board = f"/cohort/interviews/{ci.id}/leaderboard"
    assert alice.get(board).status_code == 200
    site.now = T0 + timedelta(minutes=5)
    assert alice.post(f"/cohort/interviews/{ci.id}/start").status_code == 303
    r = alice.get(board)
    assert r.status_code == 403 and "closed during your mock interview" in r.text
    site.now = T0 + timedelta(minutes=40)           # its time ran out
    assert alice.get(board).status_code == 200


def _give_up_drawing(site, user, slug: str, track: str, at: datetime) -> int:
    """``user`` starts a practice session whose (chosen) seed draws ``slug`` and finishes it at once."""
    with db.session_scope(site.settings.db_url) as s:
        seed = next(k for k in range(4000) if interview.draw(interview.candidates("track", track), 30, k,
                                                                 interview.recently_passed(s, user.id, at))[0][0] == slug)
        sess = interview.start_session(s, user.id, scope_kind="track", scope=track, minutes=30, seed=seed, now=at)
        interview.finish_session(s, user.id, sess.id, now=at + timedelta(minutes=1))
        return sess.id


def test_giving_up_a_practice_session_does_not_open_an_assigned_exercises_editorial_before_its_deadline(site):
    from inferprep import catalog
    ex = next(e for e in catalog.all_exercises() if not e.unavailable and e.meta.difficulty.value == "medium"
              and e.meta.track.value == "decoding")
    with db.session_scope(site.settings.db_url) as s:
        cohorts.assign(s, site.cohort.id, ex.slug, deadline=T0 + timedelta(days=7))
    alice = site.as_(site.alice)
    assert alice.get(f"/api/exercises/{ex.slug}/solution").status_code == 403
    _give_up_drawing(site, site.alice, ex.slug, "decoding", T0)
    site.now = T0 + timedelta(minutes=5)
    r = alice.get(f"/api/exercises/{ex.slug}/solution")
    assert r.status_code == 403 and "deadline" in r.text
    # an exercise nobody assigned opens after the session, as the issue says (passed or not)
    other = next(e for e in catalog.all_exercises() if not e.unavailable and e.meta.difficulty.value == "medium"
                 and e.meta.track.value == "decoding" and e.slug != ex.slug)
    _give_up_drawing(site, site.alice, other.slug, "decoding", T0 + timedelta(minutes=10))
    site.now = T0 + timedelta(minutes=15)
    assert alice.get(f"/api/exercises/{other.slug}/solution").status_code == 200


def test_with_review_off_a_scheduled_interviews_editorials_stay_closed_unless_passed_outside_it(site):
    ci = site.schedule(review_after=False)
    sid, slug = take_and_pass(site, ci)            # passed inside the interview
    alice = site.as_(site.alice)
    site.now = T0 + timedelta(hours=3)              # the window has closed
    r = alice.get(f"/api/exercises/{slug}/solution")
    assert r.status_code == 403 and "closed" in r.text
    # a practice session that draws it and is given up does not open it either
    from inferprep import catalog
    _give_up_drawing(site, site.alice, slug, catalog.get(slug).meta.track.value, site.now + timedelta(days=20))
    site.now += timedelta(days=20, minutes=5)
    assert alice.get(f"/api/exercises/{slug}/solution").status_code == 403
    # a pass of its own, outside the interview, opens it
    with db.session_scope(site.settings.db_url) as s:
        s.add(Submission(user_id=site.alice.id, slug=slug, kind=SubmissionKind.SUBMIT.value, code="# x\n",
                         state=JobState.DONE.value, passed=True, status="passed", score=1.0, created_at=site.now))
        s.commit()
    site.now += timedelta(minutes=1)
    assert alice.get(f"/api/exercises/{slug}/solution").status_code == 200
