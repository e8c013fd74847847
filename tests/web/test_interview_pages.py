"""The mock interview's pages (issue 18) through TestClient, with the fake judge of conftest.py and
the interview clock (``interview.set_clock``) held still, then moved past the end: the start page
states the rules up front, a session's page, the countdown on every other page, a hint's cost, the
closed editorial, Finish with its confirmation, the report, the history; bad input; and in cohort
mode another user's session answers 404 and a form without the CSRF token is refused.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html import unescape

import pytest
from fastapi.testclient import TestClient

from webutil import wait_done
from inferprep import auth, catalog, cohorts, db, interview
from inferprep.interview_models import InterviewSession
from inferprep.models import LOCAL_USER_ID
from inferprep.settings import Settings
from inferprep.web import create_app
from inferprep.web.pages.interview import clock_text, parse_start, sparkline

SCOPE = "track:decoding"


class Clock:
    """The interview clock, held at ``t`` until moved (``advance``)."""

    def __init__(self):
        self.t = datetime.now(timezone.utc).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.t

    def advance(self, **delta) -> None:
        self.t += timedelta(**delta)


@pytest.fixture
def clock():
    c = Clock()
    interview.set_clock(c)
    yield c
    interview.set_clock(None)


def text(html: str) -> str:
    """The page's visible text, roughly: tags dropped, entities decoded, blanks collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def start(client, minutes: int = 30, seed: int = 7, scope: str = SCOPE) -> int:
    r = client.post("/interview/start", data={"scope": scope, "minutes": str(minutes), "seed": str(seed)},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    m = re.fullmatch(r"/interview/(\d+)", r.headers["location"])
    assert m, r.headers["location"]
    return int(m.group(1))


def items_of(settings, session_id: int) -> list[str]:
    with db.session_scope(settings.db_url) as s:
        return [i.slug for i in interview.session_items(s, s.get(InterviewSession, session_id))]


def banner_of(html: str) -> dict | None:
    m = re.search(r'<div class="interview-banner"[^>]*data-ends-at="([^"]+)" data-now="([^"]+)"\s+'
                  r'data-report-url="([^"]+)".*?class="countdown-left">([^<]+)<', html, re.S)
    return None if m is None else {"ends_at": m.group(1), "now": m.group(2), "report": m.group(3), "left": m.group(4)}


def test_start_page_states_the_rules_the_hint_cost_and_the_score_rule_up_front(client, clock):
    html = client.get("/interview").text
    page = text(html)
    for minutes in interview.LENGTHS:
        assert f'value="{minutes}"' in html
        assert text(interview.RULE_TEXT[minutes]) in page, minutes
    pct = round(100 * interview.HINT_PENALTY)
    assert pct == 10
    assert f"each hint you reveal costs {pct}% of that exercise's points" in page
    assert text(interview.SCORE_RULE) in page
    # the scopes in the contract's order: the collections, then the tracks
    options = re.findall(r'<option value="([^"]+)">', html)
    assert options == [f"{k}:{v}" for k, v, _ in interview.scopes()]
    kinds = [o.split(":")[0] for o in options]
    assert kinds == sorted(kinds, key=lambda k: k != "collection") and "collection" in kinds and "track" in kinds
    assert "None yet." in page     # no history
    assert "Mock interview" in client.get("/").text and 'href="/interview"' in client.get("/").text


def test_a_session_from_start_to_report(client, clock, settings):
    sid = start(client)
    slugs = items_of(settings, sid)
    assert slugs, "the draw gave no exercise"
    slug = slugs[0]
    ex = catalog.get(slug)

    # the session's page: its exercises with links, the countdown, Finish
    r = client.get(f"/interview/{sid}")
    assert r.status_code == 200
    for sl in slugs:
        assert f'href="/exercises/{sl}"' in r.text
    assert re.search(rf'<tr data-slug="{slug}">.*?not yet', r.text, re.S)
    b = banner_of(r.text)
    with db.session_scope(settings.db_url) as s:
        sess = s.get(InterviewSession, sid)
        ends_at = sess.ends_at if sess.ends_at.tzinfo else sess.ends_at.replace(tzinfo=timezone.utc)
    assert b == {"ends_at": ends_at.isoformat(), "now": clock.t.isoformat(), "report": f"/interview/{sid}/report",
                 "left": "30:00"}
    assert 'action="/interview/%d/finish"' % sid in r.text

    # the countdown on every other page, on the server's clock
    clock.advance(minutes=4, seconds=5)
    for path in ("/", "/exercises", f"/exercises/{slug}", "/progress", "/interview"):
        b = banner_of(client.get(path).text)
        assert b is not None, f"no countdown on {path}"
        assert b["left"] == "25:55" and b["ends_at"] == ends_at.isoformat(), path
    # an error page too: it extends the same base template
    assert banner_of(client.get("/exercises/no-such-exercise").text) is not None

    # during the session: the hint states its cost and counts on the item; the editorial is closed
    page = client.get(f"/exercises/{slug}").text
    assert "costs 10% of this exercise's points" in text(page)
    assert 'data-testid="interview-lock"' in page
    r = client.post(f"/exercises/{slug}/hints", follow_redirects=False)
    assert r.status_code == 303
    with db.session_scope(settings.db_url) as s:
        item = next(i for i in interview.session_items(s, s.get(InterviewSession, sid)) if i.slug == slug)
        assert item.hints_used == 1
    r = client.post(f"/api/exercises/{slug}/hints")     # the API's hints count too
    assert r.status_code == 200 and len(r.json()) == min(2, len(ex.meta.hints))
    with db.session_scope(settings.db_url) as s:
        item = next(i for i in interview.session_items(s, s.get(InterviewSession, sid)) if i.slug == slug)
        assert item.hints_used == min(2, len(ex.meta.hints))
    r = client.get(f"/exercises/{slug}/solution")
    assert r.status_code == 403
    with db.session_scope(settings.db_url) as s:
        reason = interview.lock_reason(s, LOCAL_USER_ID, slug)
    assert reason and text(reason) in text(r.text)
    # other users' results: no pass rate on the list during a session
    assert "pass rate" not in text(client.get("/exercises").text).lower()

    # a Run and a passing Submit count as the session's attempts
    for kind, code in (("run", "# first try\n"), ("submit", "# PASS\n")):
        sub = client.post(f"/api/exercises/{slug}/submissions", json={"code": code, "kind": kind}).json()
        wait_done(client, sub["id"])
    r = client.get(f"/interview/{sid}")
    row = re.search(rf'<tr data-slug="{slug}">(.*?)</tr>', r.text, re.S).group(1)
    hints = min(2, len(ex.meta.hints))
    assert "passed" in row and re.findall(r'<td class="num">(\d+)</td>', row)[-2:] == ["2", str(hints)]   # attempts, hints

    # the report waits for the end
    r = client.get(f"/interview/{sid}/report", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/interview/{sid}"

    # Finish asks first (no JavaScript needed), then ends the session
    r = client.post(f"/interview/{sid}/finish", data={"step": "ask"}, follow_redirects=False)
    assert r.status_code == 200 and "Yes, finish now" in r.text and 'name="confirm" value="yes"' in r.text
    assert banner_of(client.get("/").text) is not None, "asking to confirm must not finish the session"
    clock.advance(minutes=1)
    r = client.post(f"/interview/{sid}/finish", data={"confirm": "yes"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/interview/{sid}/report"

    r = client.get(f"/interview/{sid}/report")
    assert r.status_code == 200
    with db.session_scope(settings.db_url) as s:
        rep = interview.report(s, s.get(InterviewSession, sid))
    assert rep.finished_by == "user"
    it = next(i for i in rep.items if i.slug == slug)
    assert it.passed and it.attempts == 2 and it.hints_used == hints
    page = text(r.text)
    assert f"score {rep.score:.0f} of 100" in page and "you finished it" in page
    assert text(rep.rule) in page
    section = text(re.search(rf'data-slug="{slug}">(.*?)</section>', r.text, re.S).group(1))
    assert "passed" in section and "2 (1 submitted)" in section and f"{hints} (−{10 * hints}% of its points)" in section
    assert f"{it.minutes_to_first_pass:.1f}" in section
    assert it.earned < it.points     # the hint cost something
    assert f'href="/exercises/{slug}/solution"' in r.text or "Editorial:" in section
    # after the end: no countdown anywhere, the session's page is its report, the history lists it
    for path in ("/", "/exercises", f"/exercises/{slug}"):
        assert banner_of(client.get(path).text) is None, path
    r = client.get(f"/interview/{sid}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/interview/{sid}/report"
    hist = client.get("/interview").text
    row = re.search(r'<table class="list small" id="interview-history">.*?</table>', hist, re.S).group(0)
    assert f'href="/interview/{sid}/report"' in row and f"{rep.score:.0f}" in text(row)
    # finishing again changes nothing
    r = client.post(f"/interview/{sid}/finish", data={"confirm": "yes"}, follow_redirects=False)
    assert r.status_code == 303
    with db.session_scope(settings.db_url) as s:
        assert interview.report(s, s.get(InterviewSession, sid)).score == rep.score


def test_time_running_out_ends_the_session_with_its_report(client, clock, settings):
    sid = start(client, minutes=30, seed=11)
    clock.advance(minutes=29, seconds=59)
    assert banner_of(client.get("/").text)["left"] == "0:01"
    clock.advance(seconds=1)
    assert banner_of(client.get("/").text) is None
    r = client.get(f"/interview/{sid}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/interview/{sid}/report"
    r = client.get(f"/interview/{sid}/report")
    assert r.status_code == 200 and "the time ran out" in text(r.text)
    assert f'href="/interview/{sid}/report"' in client.get("/interview").text
    # a second session, scored over time on the history's sparkline
    sid2 = start(client, minutes=30, seed=12)
    client.post(f"/interview/{sid2}/finish", data={"confirm": "yes"})
    hist = client.get("/interview").text
    assert hist.count('<circle class="dot-solved"') == 2
    assert 'aria-label="Scores over time, oldest first: 0, 0"' in hist


def test_bad_start_input_is_refused_with_a_reason(client, clock):
    cases = [({"scope": "track:nowhere", "minutes": "30"}, "choose a scope"),
             ({"scope": SCOPE, "minutes": "40"}, "choose a length of 30, 45, 60, 90 minutes"),
             ({"scope": SCOPE, "minutes": "thirty"}, "choose a length"),
             ({"scope": SCOPE, "minutes": "30", "seed": "abc"}, "the seed is a whole number"),
             ({"scope": SCOPE, "minutes": "30", "seed": "-1"}, "the seed is between 0 and 2^63 - 1"),
             ({"minutes": "30"}, "choose a scope")]
    for data, message in cases:
        r = client.post("/interview/start", data=data, follow_redirects=False)
        assert r.status_code == 422 and message in text(r.text), (data, r.status_code)
    start(client)
    r = client.post("/interview/start", data={"scope": SCOPE, "minutes": "30"}, follow_redirects=False)
    assert r.status_code == 422
    for path in ("/interview/999", "/interview/999/report", "/interview/abc"):
        assert client.get(path).status_code == 404, path
    assert client.post("/interview/999/finish", data={"confirm": "yes"}).status_code == 404


def test_parse_start_clock_text_and_sparkline():
    assert parse_start({"scope": "collection:Jane Street", "minutes": "90", "seed": " 42 "}) == (
        "collection", "Jane Street", 90, 42)
    assert parse_start({"scope": "track:serving", "minutes": "45"}) == ("track", "serving", 45, None)
    assert [clock_text(s) for s in (0, 5, 65, 1800, 3599, 3600, 5400, -3)] == [
        "0:00", "0:05", "1:05", "30:00", "59:59", "1:00:00", "1:30:00", "0:00"]
    sessions = [InterviewSession(id=i, user_id=1, scope_kind="track", scope="serving", minutes=30, seed=0,
                                 ends_at=datetime(2025, 1, 1, tzinfo=timezone.utc), score=sc)
                for i, sc in ((3, 100.0), (2, 50.0), (1, 0.0))]   # newest first, as interview.history gives them
    pts = sparkline(sessions, width=300, height=60)
    assert [(x, y, s.id) for x, y, s in pts] == [(4.0, 56.0, 1), (150.0, 30.0, 2), (296.0, 4.0, 3)]
    assert [(x, y) for x, y, _ in sparkline(sessions[:1])] == [(150.0, 4.0)]


# -- cohort mode: authorization and CSRF ------------------------------------------------------------
SECRET = "k" * 40


def signed_in(app, settings, user_id: int) -> tuple[TestClient, str]:
    c = TestClient(app, follow_redirects=False)
    with db.session_scope(settings.db_url) as s:
        token = auth.create_session(s, user_id, secret=SECRET, hours=1)
    c.cookies.set("inferprep_session", token)
    return c, auth.csrf_token(SECRET, token)


def test_cohort_mode_another_users_session_is_404_and_forms_need_the_csrf_token(tmp_path, judge, clock):
    settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=1,
                        allow_unsandboxed=True, lease_seconds=10)
    app = create_app(settings, grade=judge, devices=("cpu",))
    with TestClient(app):
        with db.session_scope(settings.db_url) as s:
            tina = auth.create_user(s, "tina@x.org", "Tina", "correct horse battery", is_instructor=True)
            cohort = cohorts.create_cohort(s, "A", instructor_id=tina.id)
            alice = auth.sign_up(s, join_code=cohort.join_code, email="alice@x.org", name="Alice",
                                 password="correct horse battery").id
            bob = auth.sign_up(s, join_code=cohort.join_code, email="bob@x.org", name="Bob",
                               password="correct horse battery").id
        a, a_csrf = signed_in(app, settings, alice)
        b, b_csrf = signed_in(app, settings, bob)
        # the start form carries the token (no JavaScript needed); without it the POST is refused
        page = a.get("/interview").text
        assert f'name="csrf_token" value="{a_csrf}"' in page
        r = a.post("/interview/start", data={"scope": SCOPE, "minutes": "30"})
        assert r.status_code == 403 and "CSRF" in r.text
        r = a.post("/interview/start", data={"scope": SCOPE, "minutes": "30", "csrf_token": a_csrf})
        assert r.status_code == 303
        sid = int(r.headers["location"].rsplit("/", 1)[1])
        # her countdown shows on her pages, not on bob's
        assert banner_of(a.get("/exercises").text) is not None
        assert banner_of(b.get("/exercises").text) is None
        assert f'name="csrf_token" value="{a_csrf}"' in a.get(f"/interview/{sid}").text
        # bob cannot see, finish or read the report of alice's session
        assert b.get(f"/interview/{sid}").status_code == 404
        assert b.get(f"/interview/{sid}/report").status_code == 404
        assert b.post(f"/interview/{sid}/finish", data={"confirm": "yes", "csrf_token": b_csrf}).status_code == 404
        assert a.get(f"/interview/{sid}").status_code == 200, "bob's attempt must not have finished it"
        # signed out: to the sign-in page
        anon = TestClient(app, follow_redirects=False)
        r = anon.get(f"/interview/{sid}")
        assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
        # alice finishes with the token
        r = a.post(f"/interview/{sid}/finish", data={"confirm": "yes", "csrf_token": a_csrf})
        assert r.status_code == 303 and r.headers["location"] == f"/interview/{sid}/report"
        assert b.get(f"/interview/{sid}/report").status_code == 404
        assert a.get(f"/interview/{sid}/report").status_code == 200
