"""Students in a cohort see what is assigned to them (issue 17): the "Assigned to me" filter on
/exercises with deadlines and the overdue state, the badge on an exercise's page, the cohort
page in deadline order; the instructor's matrix cells link to one student's submissions for one
exercise (404 to anyone but that cohort's instructors), assigning by title, and a rejudge whose
row follows the grading. SQLite and a fake judge: the pages are under test, not the judge."""

from __future__ import annotations

import inspect
import re
import time
from datetime import timedelta

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from inferprep import auth, catalog, cohorts, db
from inferprep.models import utcnow
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app
from inferprep.web.deps import get_session
from inferprep.web.forms import read_form
from test_cohort_authz import every_route

SECRET = "a" * 40
PASSWORD = "correct horse battery"
SOON, LATE, FREE = "sampling-order", "kv-capacity", "ridge-point"   # due soon, past due, unassigned


def fake_grade(exercise, code, *, device, public, progress, salt=None):
    ok = "PASS" in code
    time.sleep(0.2 if "SLOW" in code else 0.0)
    cases = [CaseResult(name="case", passed=ok, status=Status.PASSED if ok else Status.WRONG_ANSWER)]
    for c in cases:
        progress(c)
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


class Site:
    def __init__(self, tmp_path):
        self.settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=1,
                                 allow_unsandboxed=True)
        self.app = create_app(self.settings, grade=fake_grade, devices=("cpu",))
        self.client = TestClient(self.app, follow_redirects=False)
        self.client.__enter__()
        self.soon = (utcnow() + timedelta(days=3)).replace(second=0, microsecond=0)
        self.late = (utcnow() - timedelta(days=1)).replace(second=0, microsecond=0)
        with db.session_scope(self.settings.db_url) as s:
            self.tina = auth.create_user(s, "tina@x.org", "Tina", PASSWORD, is_instructor=True)
            self.olga = auth.create_user(s, "olga@x.org", "Olga", PASSWORD, is_instructor=True)
            self.cohort = cohorts.create_cohort(s, "Cohort A", instructor_id=self.tina.id)
            other = cohorts.create_cohort(s, "Cohort B", instructor_id=self.olga.id)
            self.alice = auth.sign_up(s, join_code=self.cohort.join_code, email="alice@x.org", name="Alice",
                                      password=PASSWORD)
            self.bob = auth.sign_up(s, join_code=other.join_code, email="bob@x.org", name="Bob", password=PASSWORD)
            cohorts.assign(s, self.cohort.id, SOON, self.soon)
            cohorts.assign(s, self.cohort.id, LATE, self.late)

    def as_(self, user) -> TestClient:
        c = TestClient(self.app, follow_redirects=False)
        with db.session_scope(self.settings.db_url) as s:
            token = auth.create_session(s, user.id, secret=SECRET, hours=1)
        c.cookies.set("inferprep_session", token)
        c.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, token)
        return c

    def submit(self, c: TestClient, slug: str, code: str) -> int:
        r = c.post(f"/api/exercises/{slug}/submissions", json={"code": code, "kind": "submit"})
        assert r.status_code == 202, r.text
        sub_id = r.json()["id"]
        for _ in range(200):
            if c.get(f"/api/submissions/{sub_id}").json()["state"] == "done":
                return sub_id
            time.sleep(0.05)
        raise AssertionError("not graded")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    s = Site(tmp_path_factory.mktemp("assign"))
    yield s
    s.client.__exit__(None, None, None)


def title(slug: str) -> str:
    return catalog.get(slug).meta.title


def badge(html: str) -> str | None:
    m = re.search(r'data-testid="assignment-badge"[^>]*>([^<]*)<', html)
    return m.group(1) if m else None


def rows(html: str) -> list[str]:
    """The exercise titles of the list's rows, in order."""
    return re.findall(r'<td><a href="/exercises/[^"]+">([^<]+)</a>', html)


def test_assigned_filter_keeps_the_assigned_exercises_soonest_deadline_first(site):
    alice = site.as_(site.alice)
    page = alice.get("/exercises").text
    assert 'name="assigned"' in page                            # the filter is offered
    assert len(rows(page)) == len(catalog.all_exercises())
    only = alice.get("/exercises?assigned=1").text
    assert rows(only) == [title(LATE), title(SOON)]            # past due first, then the next deadline
    assert f"Assigned · overdue since {site.late:%Y-%m-%d %H:%M} UTC" in only
    assert f"Assigned · due {site.soon:%Y-%m-%d %H:%M} UTC" in only
    assert re.search(r'name="assigned" value="1" checked', only)
    # a student of a cohort that assigns nothing: no filter, and the filtered list says why it is empty
    bob = site.as_(site.bob)
    assert 'name="assigned"' not in bob.get("/exercises").text
    assert "Nothing is assigned to you yet." in bob.get("/exercises?assigned=1").text


def test_exercise_page_badge_says_assigned_and_due(site):
    alice = site.as_(site.alice)
    assert badge(alice.get(f"/exercises/{SOON}").text) == f"Assigned · due {site.soon:%Y-%m-%d %H:%M} UTC"
    assert badge(alice.get(f"/exercises/{LATE}").text) == f"Assigned · overdue since {site.late:%Y-%m-%d %H:%M} UTC"
    assert badge(alice.get(f"/exercises/{FREE}").text) is None
    assert badge(site.as_(site.bob).get(f"/exercises/{SOON}").text) is None     # not his cohort's


def test_an_assignment_change_shows_at_once(site):
    alice, tina = site.as_(site.alice), site.as_(site.tina)
    r = tina.post(f"/teach/cohorts/{site.cohort.id}/assignments",
                  data={"exercise": FREE, "deadline": "2031-05-06T07:08"})
    assert r.status_code == 303
    assert badge(alice.get(f"/exercises/{FREE}").text) == "Assigned · due 2031-05-06 07:08 UTC"
    assert title(FREE) in rows(alice.get("/exercises?assigned=1").text)
    tina.post(f"/teach/cohorts/{site.cohort.id}/assignments", data={"exercise": FREE, "deadline": ""})
    assert badge(alice.get(f"/exercises/{FREE}").text) == "Assigned · no deadline"
    assert tina.post(f"/teach/cohorts/{site.cohort.id}/assignments/{FREE}/delete").status_code == 303
    assert badge(alice.get(f"/exercises/{FREE}").text) is None
    assert title(FREE) not in rows(alice.get("/exercises?assigned=1").text)


def test_cohort_page_lists_assignments_by_deadline_and_marks_overdue(site):
    page = site.as_(site.alice).get("/cohort").text
    assert page.index(title(LATE)) < page.index(title(SOON))
    row_late = re.search(rf"{re.escape(title(LATE))}.*?</tr>", page, re.S).group(0)
    row_soon = re.search(rf"{re.escape(title(SOON))}.*?</tr>", page, re.S).group(0)
    assert "overdue" in row_late and "overdue" not in row_soon


def test_assign_by_title_and_a_clear_error_for_an_unknown_one(site):
    tina = site.as_(site.tina)
    page = tina.get(f"/teach/cohorts/{site.cohort.id}").text
    assert f'<option value="{title(FREE)}">' in page and 'list="exercise-titles"' in page
    r = tina.post(f"/teach/cohorts/{site.cohort.id}/assignments", data={"exercise": f"  {title(FREE).upper()} "})
    assert r.status_code == 303
    with db.session_scope(site.settings.db_url) as s:
        assert FREE in [a.slug for a in cohorts.assignments(s, site.cohort.id)]
        cohorts.unassign(s, site.cohort.id, FREE)
    r = tina.post(f"/teach/cohorts/{site.cohort.id}/assignments", data={"exercise": title(FREE)[:-2] + "zz"})
    assert r.status_code == 422 and "did you mean" in r.text and title(FREE) in r.text
    assert tina.post(f"/teach/cohorts/{site.cohort.id}/assignments", data={"exercise": " "}).status_code == 422


def test_overdue_ends_with_a_pass(site):
    alice = site.as_(site.alice)
    site.submit(alice, LATE, "# late pass\nPASS\n")
    assert badge(alice.get(f"/exercises/{LATE}").text) == f"Assigned · due {site.late:%Y-%m-%d %H:%M} UTC"
    assert "overdue" not in re.search(rf"{re.escape(title(LATE))}.*?</tr>",
                                      alice.get("/cohort").text, re.S).group(0)


def test_matrix_cell_links_to_that_students_submissions_for_that_exercise(site):
    alice, tina = site.as_(site.alice), site.as_(site.tina)
    mine = site.submit(alice, SOON, "# soon, failing\n")
    other = site.submit(alice, LATE, "# late again\nPASS\n")
    link = f"/teach/cohorts/{site.cohort.id}/students/{site.alice.id}/exercises/{SOON}"
    assert f'href="{link}"' in tina.get(f"/teach/cohorts/{site.cohort.id}").text
    page = tina.get(link)
    assert page.status_code == 200
    assert f"/teach/submissions/{mine}" in page.text and f"/teach/submissions/{other}" not in page.text
    # anyone but this cohort's instructors: 404 (a student, the student herself, another cohort's instructor)
    for who in (site.alice, site.bob, site.olga):
        assert site.as_(who).get(link).status_code == 404
    # a user who is not a student of this cohort, an unknown exercise, a malformed slug
    assert tina.get(f"/teach/cohorts/{site.cohort.id}/students/{site.bob.id}/exercises/{SOON}").status_code == 404
    assert tina.get(link.replace(SOON, "no-such-exercise")).status_code == 404
    assert tina.get(link.replace(SOON, "..%2Fx")).status_code == 404


def test_rejudge_answers_the_row_which_follows_the_grading(site):
    alice, tina = site.as_(site.alice), site.as_(site.tina)
    sub = site.submit(alice, SOON, "# rejudge me\nSLOW PASS\n")
    page = tina.get(f"/teach/cohorts/{site.cohort.id}/students/{site.alice.id}/exercises/{SOON}").text
    assert f'hx-post="/teach/submissions/{sub}/rejudge"' in page
    r = tina.post(f"/teach/submissions/{sub}/rejudge", headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert r.text.lstrip().startswith(f'<tr id="sub-{sub}"')
    # queued (the fake grading takes 0.2 s): the row says so and asks for itself again a second later
    assert "Queued for rejudging" in r.text and 'hx-trigger="every 1s"' in r.text
    assert f'hx-get="/teach/submissions/{sub}/row?rejudge=queued"' in r.text
    for _ in range(200):
        row = tina.get(f"/teach/submissions/{sub}/row?rejudge=queued").text
        if "Rejudged." in row:
            break
        time.sleep(0.05)
    assert "Rejudged." in row and "hx-trigger" not in row and "Passed" in row
    # without htmx: the submission's page, saying what happened
    r = tina.post(f"/teach/submissions/{sub}/rejudge")
    assert r.status_code == 303 and r.headers["location"] in (f"/teach/submissions/{sub}?rejudge=queued",
                                                              f"/teach/submissions/{sub}?rejudge=busy")
    assert "Queued for rejudging" in tina.get(f"/teach/submissions/{sub}?rejudge=queued").text
    assert "already waiting or being graded" in tina.get(f"/teach/submissions/{sub}?rejudge=busy").text
    assert "Already waiting or being graded" in tina.get(f"/teach/submissions/{sub}/row?rejudge=busy").text
    assert site.as_(site.olga).get(f"/teach/submissions/{sub}/row").status_code == 404
    assert alice.get(f"/teach/submissions/{sub}/row").status_code == 404


def test_handlers_doing_database_work_do_not_run_on_the_event_loop(site):
    """An ``async def`` handler runs on the event loop: its database calls and password hashing
    stall every other request of the process (sign-in under load did). Handlers that take a
    session or a form are plain ``def`` (FastAPI runs them in its thread pool)."""
    def uses(route, dep) -> bool:
        return any(d.call is dep for d in route.dependant.dependencies)
    routes = [r for r in every_route(site.app) if isinstance(r.original_route, APIRoute)]
    assert any(r.path == "/login" for r in routes)
    blocking = [f"{sorted(r.methods)} {r.path}" for r in routes
                if inspect.iscoroutinefunction(r.endpoint) and (uses(r, get_session) or uses(r, read_form))]
    assert not blocking, f"async handlers with database or form work: {blocking}"
