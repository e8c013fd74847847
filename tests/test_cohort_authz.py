"""Cohort mode's authorization suite: a matrix over every route of the app for five callers
(anonymous, the student who owns the data, another student, an instructor of this cohort, an
instructor of another cohort), signed in by cookie and by API token, plus the leaks the matrix cannot see: another student's code,
reference or grader text before the policy allows, path traversal, stored XSS, CSRF.

SQLite here (fast); ``INFERPREP_TEST_PG_URL``-style PostgreSQL runs are in test_postgres_*.
"""

from __future__ import annotations

import re
import time

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Route

from datetime import timedelta

from inferprep import auth, catalog, cohort_interviews, cohorts, db, grades_export, interview
from inferprep.models import utcnow
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, ScratchResult, Status, Verdict
from inferprep.web import create_app

SLUG = "sampling-order"
PERF_SLUG = "rope"   # the performance leaderboard exists only for an exercise with a perf stage
PASSWORD = "correct horse battery"
SECRET = "s" * 40
CODE_MARK = "ALICE_PRIVATE_CODE_7d1f"
SNIPPET_MARK = "ALICE_PRIVATE_SNIPPET_3e9a"
XSS_NAME = '<script>alert("xss-name")</script>'
XSS_CODE = '</textarea></pre><script>alert("xss-code")</script>'
XSS_OUT = '<img src=x onerror=alert("xss-out")>'
ROLES = ("anon", "alice", "bob", "tina", "olga")


def fake_grade(exercise, code, *, device, public, progress, salt=None):
    ok = "PASS" in code
    cases = [CaseResult(name="first-case", passed=True, status=Status.PASSED),
             CaseResult(name="tie-case", passed=ok, status=Status.PASSED if ok else Status.WRONG_ANSWER,
                        message="" if ok else "row 0 differs")]
    for c in cases:
        progress(c)
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, stdout=XSS_OUT, sandbox="fake")


def fake_scratch(exercise, code, snippet, *, device):
    return ScratchResult(slug=exercise.slug, status="ok", stdout=XSS_OUT, device=device)


class World:
    """The app, five callers, and the ids the routes are filled with."""

    def __init__(self, tmp_path):
        self.settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=1,
                                 allow_unsandboxed=True, lease_seconds=10)
        self.app = create_app(self.settings, grade=fake_grade, scratch=fake_scratch, devices=("cpu",))
        self.client = TestClient(self.app, follow_redirects=False)
        self.client.__enter__()
        url = self.settings.db_url
        with db.session_scope(url) as s:
            self.users = {
                "tina": auth.create_user(s, "tina@x.org", "Tina", PASSWORD, is_instructor=True),
                "olga": auth.create_user(s, "olga@x.org", "Olga", PASSWORD, is_instructor=True)}
            self.cohort = cohorts.create_cohort(s, "Cohort A", instructor_id=self.users["tina"].id)
            self.other = cohorts.create_cohort(s, "Cohort B", instructor_id=self.users["olga"].id)
            self.users["alice"] = auth.sign_up(s, join_code=self.cohort.join_code, email="alice@x.org",
                                               name=XSS_NAME, password=PASSWORD)
            self.users["bob"] = auth.sign_up(s, join_code=self.cohort.join_code, email="bob@x.org",
                                             name="Bob", password=PASSWORD)
            cohorts.assign(s, self.cohort.id, SLUG)
            # a scheduled mock interview that opens tomorrow: Start answers "not open yet" (422) to
            # its students, so the matrix starts no session (one would close alice's reference)
            opens = utcnow() + timedelta(days=1)
            self.ci_id = cohort_interviews.schedule(s, self.cohort.id, title="Mock", scope_kind="collection",
                                                   scope="Jane Street", minutes=30, opens_at=opens,
                                                   closes_at=opens + timedelta(hours=1), leaderboard=True).id
            tok, self.alice_token = auth.create_api_token(s, self.users["alice"].id, "laptop", secret=SECRET)
            self.alice_token_id = tok.id
            self.spare_token_ids: set[int] = set()
        alice = self.as_("alice")
        r = alice.post(f"/api/exercises/{SLUG}/submissions",
                       json={"code": f"# {CODE_MARK}\n{XSS_CODE}\nPASS\n", "kind": "submit"})
        assert r.status_code == 202, r.text
        self.sub_id = r.json()["id"]
        self.wait(alice, self.sub_id)
        r = alice.post(f"/api/exercises/{SLUG}/scratch",
                       json={"code": f"# {CODE_MARK}\nPASS\n", "snippet": f"# {SNIPPET_MARK}\nprint(1)\n"})
        assert r.status_code == 202, r.text
        self.scratch_id = r.json()["id"]
        with db.session_scope(url) as s:   # a finished mock interview of alice's (one under way would close her editorials)
            sess = interview.start_session(s, self.users["alice"].id, scope_kind="track", scope="decoding", minutes=30)
            interview.finish_session(s, self.users["alice"].id, sess.id)
            self.interview_id = sess.id

    def wait(self, c, sub_id):
        for _ in range(200):
            if c.get(f"/api/submissions/{sub_id}").json()["state"] == "done":
                return
            time.sleep(0.05)
        raise AssertionError("not graded")

    def as_(self, role: str, via: str = "cookie") -> TestClient:
        """A fresh client for ``role`` with its own session (made directly, without argon2), or
        with an API token (``via="bearer"``)."""
        c = TestClient(self.app, follow_redirects=False)
        if role != "anon":
            with db.session_scope(self.settings.db_url) as s:
                if via == "bearer":
                    _, token = auth.create_api_token(s, self.users[role].id, "matrix", secret=SECRET)
                    c.headers["Authorization"] = f"Bearer {token}"
                    return c
                token = auth.create_session(s, self.users[role].id, secret=SECRET, hours=1)
            c.cookies.set("inferprep_session", token)
            c.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, token)
        return c

    def close(self):
        self.client.__exit__(None, None, None)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("cohort"))
    yield w
    w.close()


# Who may use each route: "all" (anyone, signed in or not), "signed" (any signed-in user, on
# their own data), "owner" (alice only: her submission, her solved exercise), "teachers" (any
# instructor account), "teacher" (tina, who teaches alice's cohort), "owner-or-teacher" (both:
# the live event stream of alice's grading).
ACCESS = {
    ("GET", "/"): "signed", ("GET", "/exercises"): "signed", ("GET", "/exercises/{slug}"): "signed",
    ("POST", "/exercises/{slug}/draft"): "signed", ("POST", "/exercises/{slug}/submissions"): "signed",
    ("POST", "/exercises/{slug}/hints"): "signed", ("GET", "/exercises/{slug}/solution"): "owner",
    ("GET", "/progress"): "signed",
    ("GET", "/exercises/{slug}/leaderboard"): "signed", ("POST", "/exercises/{slug}/leaderboard"): "signed",
    ("GET", "/submissions/{sub_id}"): "owner", ("GET", "/submissions/{sub_id}/verdict"): "owner",
    ("POST", "/submissions/{sub_id}/retry"): "owner", ("POST", "/submissions/{sub_id}/cancel"): "owner",
    ("GET", "/submissions/{sub_id}/events"): "owner-or-teacher", ("POST", "/api/submissions/{sub_id}/cancel"): "owner",
    ("GET", "/api/exercises"): "signed", ("GET", "/api/exercises/{slug}"): "signed",
    ("PUT", "/api/exercises/{slug}/draft"): "signed", ("POST", "/api/exercises/{slug}/hints"): "signed",
    ("GET", "/api/exercises/{slug}/solution"): "owner",
    ("GET", "/exercises/{slug}/followups"): "owner", ("POST", "/exercises/{slug}/followups/{question_id}"): "owner",
    ("GET", "/api/exercises/{slug}/followups"): "owner", ("POST", "/api/exercises/{slug}/followups/{question_id}"): "owner",
    ("POST", "/api/exercises/{slug}/submissions"): "signed", ("GET", "/api/submissions"): "signed",
    ("GET", "/api/submissions/{sub_id}"): "owner", ("POST", "/api/submissions/{sub_id}/retry"): "owner",
    ("GET", "/api/progress"): "signed",
    ("POST", "/api/exercises/{slug}/scratch"): "signed", ("GET", "/api/scratch/{scratch_id}"): "owner",
    ("GET", "/api/scratch/{scratch_id}/events"): "owner",
    ("GET", "/healthz"): "all", ("GET", "/openapi.json"): "all", ("GET", "/docs"): "all",
    ("GET", "/docs/oauth2-redirect"): "all", ("GET", "/redoc"): "all",
    ("GET", "/login"): "all", ("GET", "/signup"): "all", ("POST", "/login"): "public-form",
    ("POST", "/signup"): "public-form",
    ("POST", "/logout"): "signed", ("GET", "/account"): "signed", ("POST", "/account/password"): "signed",
    ("POST", "/account/tokens"): "signed", ("POST", "/account/tokens/{token_id}/delete"): "signed",
    ("GET", "/api/me"): "signed", ("GET", "/cohort"): "signed",
    ("GET", "/teach"): "teachers", ("POST", "/teach/cohorts"): "teachers",
    ("GET", "/teach/cohorts/{cohort_id}"): "teacher", ("POST", "/teach/cohorts/{cohort_id}/policy"): "teacher",
    ("POST", "/teach/cohorts/{cohort_id}/assignments"): "teacher",
    ("POST", "/teach/cohorts/{cohort_id}/assignments/{slug}/delete"): "teacher",
    ("GET", "/teach/cohorts/{cohort_id}/grades.csv"): "teacher",
    ("GET", "/teach/cohorts/{cohort_id}/students/{user_id}"): "teacher",
    ("GET", "/teach/cohorts/{cohort_id}/students/{user_id}/exercises/{slug}"): "teacher",
    ("GET", "/teach/submissions/{sub_id}"): "teacher", ("POST", "/teach/submissions/{sub_id}/rejudge"): "teacher",
    ("GET", "/teach/submissions/{sub_id}/row"): "teacher",
    ("GET", "/api/teach/submissions/{sub_id}"): "teacher", ("GET", "/api/teach/cohorts/{cohort_id}/grades"): "teacher",
    ("POST", "/api/teach/submissions/{sub_id}/rejudge"): "teacher",
    ("GET", "/interview"): "signed", ("POST", "/interview/start"): "signed",
    ("GET", "/interview/{session_id}"): "owner", ("POST", "/interview/{session_id}/finish"): "owner",
    ("GET", "/interview/{session_id}/report"): "owner",
    ("POST", "/teach/cohorts/{cohort_id}/interviews"): "teacher",
    ("POST", "/teach/cohorts/{cohort_id}/interviews/{ci_id}/options"): "teacher",
    ("GET", "/cohort/interviews/{ci_id}"): "students", ("POST", "/cohort/interviews/{ci_id}/start"): "students",
    ("GET", "/cohort/interviews/{ci_id}/leaderboard"): "members",
    ("POST", "/cohort/interviews/{ci_id}/leaderboard"): "students",
}
ALLOWED = {"all": set(ROLES), "signed": {"alice", "bob", "tina", "olga"}, "owner": {"alice"},
           "teachers": {"tina", "olga"}, "teacher": {"tina"}, "owner-or-teacher": {"alice", "tina"},
           "students": {"alice", "bob"}, "members": {"alice", "bob", "tina"}}
BODIES = {  # valid bodies, so an allowed call really succeeds
    "/exercises/{slug}/leaderboard": {"data": {"kind": "cpu", "on": "1"}},   # 400 (no ranked run), past authz
    "/exercises/{slug}/draft": {"data": {"code": "# draft\n"}},
    "/exercises/{slug}/submissions": {"data": {"code": "# run\n", "kind": "run"}},
    "/api/exercises/{slug}/draft": {"json": {"code": "# draft\n"}},
    "/api/exercises/{slug}/submissions": {"json": {"code": "# run\n", "kind": "run"}},
    "/api/exercises/{slug}/scratch": {"json": {"code": "# run\n", "snippet": "print(1)\n"}},
    "/account/password": {"data": {"old": PASSWORD, "new": PASSWORD, "repeat": PASSWORD}},
    "/account/tokens": {"data": {"name": "t"}},
    "/teach/cohorts": {"data": {"name": "Made in the matrix"}},
    "/teach/cohorts/{cohort_id}/policy": {"data": {"unlock": "on_pass", "submissions_per_hour": "1000"}},
    "/teach/cohorts/{cohort_id}/assignments": {"data": {"exercise": SLUG}},
    # no scope: a 422 past the authorization (a session under way would close alice's editorials)
    "/interview/start": {"data": {"minutes": "30"}},
    "/interview/{session_id}/finish": {"data": {"confirm": "yes"}},
    "/teach/cohorts/{cohort_id}/interviews": {"data": {
        "title": "Matrix mock", "scope": "collection:Jane Street", "minutes": "30", "draw": "same",
        "opens_at": "2099-01-01T10:00", "closes_at": "2099-01-01T12:00"}},
    "/teach/cohorts/{cohort_id}/interviews/{ci_id}/options": {"data": {"leaderboard": "on", "review_after": "on"}},
    "/cohort/interviews/{ci_id}/leaderboard": {"data": {"opt": "in"}},
    "/exercises/{slug}/followups/{question_id}": {"data": {"answer": "1"}},
    "/api/exercises/{slug}/followups/{question_id}": {"json": {"answer": 1}},
}


def every_route(app) -> list:
    """Every route of the app with its full path: FastAPI 0.165 keeps an included router as one
    entry of ``app.routes`` (``iter_route_contexts`` walks into them); older versions flatten."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:
        return [r for r in app.routes if isinstance(r, (APIRoute, Route))]
    return [r for r in iter_route_contexts(app.routes) if isinstance(r.original_route, (APIRoute, Route))]


def app_routes(app) -> list[tuple[str, str]]:
    return [(m, r.path) for r in every_route(app) for m in sorted(r.methods - {"HEAD"})]


def fill(world: World, path: str) -> str:
    token_id = 0
    if "{token_id}" in path:   # a spare token of alice's (her main one must survive the matrix)
        with db.session_scope(world.settings.db_url) as s:
            token_id = auth.create_api_token(s, world.users["alice"].id, "spare", secret=SECRET)[0].id
        world.spare_token_ids.add(token_id)
    slug = PERF_SLUG if path.endswith("/leaderboard") and path.startswith("/exercises/") else SLUG
    return path.format(slug=slug, sub_id=world.sub_id, scratch_id=world.scratch_id, cohort_id=world.cohort.id,
                       ci_id=world.ci_id, user_id=world.users["alice"].id, token_id=token_id,
                       session_id=world.interview_id, question_id="vllm-order")


def denied(r) -> bool:
    if r.status_code in (401, 403, 404):
        return True
    # signed out: to the sign-in page with the way back (sign-out's own answer is a plain /login)
    return r.status_code in (302, 303, 307) and r.headers["location"].startswith("/login?next=")


def test_every_route_is_in_the_matrix(world):
    missing = [k for k in app_routes(world.app) if k not in ACCESS]
    assert not missing, f"routes without an authorization rule in ACCESS: {missing}"


@pytest.mark.parametrize("via", ["cookie", "bearer"])
@pytest.mark.parametrize("role", ROLES)
def test_authorization_matrix(world, role, via):
    # alice's own run (before this one in some workers' order) may have deleted spares of hers
    with db.session_scope(world.settings.db_url) as s:
        before = {t.id for t in auth.list_api_tokens(s, world.users["alice"].id)}
    spares_before = set(world.spare_token_ids)
    problems = []
    for method, path in app_routes(world.app):
        rule = ACCESS[(method, path)]
        if rule == "public-form":
            continue       # sign-in and sign-up forms: tested below
        # the deletion of alice's token comes last for her, so her token still works elsewhere
        c = world.as_(role, via)
        r = c.request(method, fill(world, path), **BODIES.get(path, {}))
        want = role in ALLOWED[rule]
        if want and (denied(r) or r.status_code >= 500):
            problems.append(f"{role} refused {method} {path}: {r.status_code}")
        if not want and not denied(r):
            problems.append(f"{role} allowed {method} {path}: {r.status_code}")
    assert not problems, "\n".join(problems)
    # another caller "deleting" alice's token id deletes nothing of hers
    with db.session_scope(world.settings.db_url) as s:
        left = {t.id for t in auth.list_api_tokens(s, world.users["alice"].id)}
    tried = world.spare_token_ids - spares_before      # the spares this run tried to delete
    assert tried, "the matrix has no token deletion route to try"
    assert world.alice_token_id in left and (role == "alice" or (before | tried) <= left)


def test_nobody_but_the_owner_and_her_instructor_reads_her_code(world):
    gets = [(m, p) for m, p in app_routes(world.app) if m == "GET"]
    for role in ROLES:
        c = world.as_(role)
        for _, path in gets:
            r = c.get(fill(world, path))
            if role == "alice":
                continue
            assert SNIPPET_MARK not in r.text, f"{role} read alice's scratch snippet at {path}"
            if role == "tina" and path.startswith(("/teach", "/api/teach")):
                continue
            assert CODE_MARK not in r.text, f"{role} read alice's code at {path}"
    tina = world.as_("tina")
    assert CODE_MARK in tina.get(f"/teach/submissions/{world.sub_id}").text
    assert CODE_MARK in tina.get(f"/api/teach/submissions/{world.sub_id}").json()["code"]


def _secret_lines():
    ex = catalog.get(SLUG)
    ref = [ln.strip() for ln in ex.reference_path.read_text().splitlines() if len(ln.strip()) > 30]
    grader_path = ex.reference_path.parent.parent / "graders" / ex.reference_path.name
    grader = [ln.strip() for ln in grader_path.read_text().splitlines() if len(ln.strip()) > 30]
    return ref[:5], grader[:8]


def test_no_route_serves_grader_text_and_reference_only_when_unlocked(world):
    ref_lines, grader_lines = _secret_lines()
    assert ref_lines and grader_lines
    probe = [fill(world, p) for m, p in app_routes(world.app) if m == "GET"] + [
        "/static/../graders/sampling_order.py", "/static/%2e%2e/graders/sampling_order.py",
        "/static/..%2fgraders%2fsampling_order.py", "/exercises/..%2Fgraders", "/api/exercises/..%2F..%2Fgraders",
        "/exercises/%2e%2e", "/api/exercises/sampling-order%2F..%2F..%2Freference"]
    for role in ROLES:
        c = world.as_(role)
        for path in probe:
            r = c.get(path)
            for line in grader_lines:
                assert line not in r.text, f"{role} got grader text at {path}"
            if not (role == "alice" and path.endswith("/solution")):
                for line in ref_lines:
                    assert line not in r.text, f"{role} got reference text at {path}"
    alice = world.as_("alice")
    assert any(line in alice.get(f"/exercises/{SLUG}/solution").text for line in ref_lines)
    # the cohort's policy closes them: nothing for alice either, on any route
    with db.session_scope(world.settings.db_url) as s:
        cohorts.set_policy(s, world.cohort.id, unlock="never")
    try:
        assert alice.get(f"/exercises/{SLUG}/solution").status_code == 403
        assert alice.get(f"/api/exercises/{SLUG}/solution").status_code == 403
        for path in probe:
            assert not any(line in alice.get(path).text for line in ref_lines), path
    finally:
        with db.session_scope(world.settings.db_url) as s:
            cohorts.set_policy(s, world.cohort.id, unlock="on_pass")


def test_bad_ids_and_slugs_are_refused(world):
    c = world.as_("tina")
    for path in ["/teach/cohorts/abc", "/teach/cohorts/1%20or%201=1", "/api/teach/submissions/-1",
                 "/teach/cohorts/99999", "/teach/submissions/99999",
                 f"/teach/cohorts/{world.cohort.id}/students/{world.users['olga'].id}"]:
        assert c.get(path).status_code in (404, 422), path
    a = world.as_("alice")
    for slug in ["..", "..%2F..%2Fetc", "Sampling-Order", "a" * 300, "sampling_order"]:
        assert a.get(f"/api/exercises/{slug}").status_code in (404, 422), slug
    r = c.post(f"/teach/cohorts/{world.cohort.id}/assignments/..%2F..%2Fx/delete")
    assert r.status_code in (404, 422)


def test_stored_xss_stays_inert(world):
    with db.session_scope(world.settings.db_url) as s:   # the matrix above unassigned it (Unassign's route)
        cohorts.assign(s, world.cohort.id, SLUG)
    pages = [("alice", f"/submissions/{world.sub_id}"), ("alice", f"/exercises/{SLUG}"), ("alice", "/progress"),
             ("alice", "/account"), ("alice", "/"), ("tina", f"/teach/cohorts/{world.cohort.id}"),
             ("tina", f"/teach/submissions/{world.sub_id}"),
             ("tina", f"/teach/cohorts/{world.cohort.id}/students/{world.users['alice'].id}")]
    for role, path in pages:
        r = world.as_(role).get(path)
        assert r.status_code == 200, (role, path)
        for payload in (XSS_NAME, XSS_CODE, XSS_OUT, "<script>alert("):
            assert payload not in r.text, f"raw {payload!r} in {path}"
    assert "&lt;script&gt;alert(" in world.as_("tina").get(f"/teach/cohorts/{world.cohort.id}").text
    assert "&lt;img src=x onerror" in world.as_("alice").get(f"/submissions/{world.sub_id}").text


def test_csrf(world):
    with db.session_scope(world.settings.db_url) as s:
        token = auth.create_session(s, world.users["alice"].id, secret=SECRET, hours=1)
        other = auth.create_session(s, world.users["alice"].id, secret=SECRET, hours=1)
    c = TestClient(world.app, follow_redirects=False)
    c.cookies.set("inferprep_session", token)
    url = f"/exercises/{SLUG}/draft"
    assert c.post(url, data={"code": "x"}).status_code == 403
    assert c.post(url, data={"code": "x", "csrf_token": "nope"}).status_code == 403
    assert c.post(url, data={"code": "x", "csrf_token": auth.csrf_token(SECRET, other)}).status_code == 403
    assert c.put(f"/api/exercises/{SLUG}/draft", json={"code": "x"}).status_code == 403
    assert c.post(url, data={"code": "x", "csrf_token": auth.csrf_token(SECRET, token)}).status_code == 303
    assert c.put(f"/api/exercises/{SLUG}/draft", json={"code": "y"},
                 headers={"X-CSRF-Token": auth.csrf_token(SECRET, token)}).status_code == 204
    # the page carries the token for cohort.js
    assert auth.csrf_token(SECRET, token) in c.get(f"/exercises/{SLUG}").text
    # an API token carries no ambient credential: no CSRF token needed
    bearer = TestClient(world.app)
    assert bearer.put(f"/api/exercises/{SLUG}/draft", json={"code": "z"},
                      headers={"Authorization": f"Bearer {world.alice_token}"}).status_code == 204
    # sign-in needs the double-submit token of its form
    anon = TestClient(world.app, follow_redirects=False)
    r = anon.post("/login", data={"email": "alice@x.org", "password": PASSWORD})
    assert r.status_code == 403 and "inferprep_session" not in r.cookies
    anon.get("/login")
    pre = anon.cookies.get("inferprep_csrf")
    r = anon.post("/login", data={"email": "alice@x.org", "password": PASSWORD, "csrf_token": pre, "next": "//evil.org"})
    assert r.status_code == 303 and r.headers["location"] == "/"       # never off-site


def test_sign_up_sign_in_password_change_sign_out(world):
    c = TestClient(world.app, follow_redirects=False)
    c.get("/signup")
    pre = c.cookies.get("inferprep_csrf")
    form = {"csrf_token": pre, "code": "wrong", "email": "dan@x.org", "name": "Dan", "password": "longenough"}
    assert c.post("/signup", data=form).status_code == 422
    assert c.post("/signup", data={**form, "code": world.cohort.join_code, "password": "short"}).status_code == 422
    r = c.post("/signup", data={**form, "code": world.cohort.join_code})
    assert r.status_code == 303 and r.headers["location"] == "/login?signed_up=1&next=/cohort"
    assert "inferprep_session" not in r.cookies             # signed in only by signing in
    assert "Sign-up received" in c.get(r.headers["location"]).text
    r = c.post("/login", data={"email": "dan@x.org", "password": "longenough", "next": "/cohort",
                               "csrf_token": pre})
    assert r.status_code == 303 and r.headers["location"] == "/cohort"
    me = c.get("/api/me").json()
    assert me["email"] == "dan@x.org" and "password_hash" not in me
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', c.get("/cohort").text).group(1)
    # a second session, then a password change ends it
    c2 = TestClient(world.app, follow_redirects=False)
    c2.get("/login")
    r = c2.post("/login", data={"email": "DAN@x.org ", "password": "longenough",
                                "csrf_token": c2.cookies.get("inferprep_csrf")})
    assert r.status_code == 303 and c2.get("/api/me").status_code == 200
    r = c.post("/account/password", data={"old": "wrong-old-pw", "new": "newpassword", "repeat": "newpassword",
                                          "csrf_token": csrf})
    assert r.status_code == 401
    r = c.post("/account/password", data={"old": "longenough", "new": "newpassword", "repeat": "newpassword",
                                          "csrf_token": csrf})
    assert r.status_code == 200
    assert c2.get("/api/me").status_code == 401 and c.get("/api/me").status_code == 200
    assert c.post("/logout", data={"csrf_token": csrf}).status_code == 303
    assert c.get("/api/me").status_code == 401
    assert c.get("/exercises").headers["location"].startswith("/login?next=")


def test_unknown_emails_cost_a_password_verification_too(world, monkeypatch):
    calls = []
    real = auth.hasher().verify

    def counting(password, hash_):
        calls.append(hash_)
        return real(password, hash_)
    monkeypatch.setattr(auth.hasher(), "verify", counting)
    with db.session_scope(world.settings.db_url) as s:
        for email in ("nobody@x.org", "not-an-email"):
            with pytest.raises(auth.AuthFailed):
                auth.authenticate(s, email, "whatever-password")
        t0 = time.perf_counter()
        with pytest.raises(auth.AuthFailed):
            auth.authenticate(s, "nobody@x.org", "whatever-password")
        unknown = time.perf_counter() - t0
        t0 = time.perf_counter()
        with pytest.raises(auth.AuthFailed):
            auth.authenticate(s, "alice@x.org", "whatever-password")
        known = time.perf_counter() - t0
    assert len(calls) == 3 and all(h.startswith("$argon2id$") for h in calls)
    assert unknown > 0.3 * known      # the same argon2 work (loose: a shared, loaded machine)


def test_expired_sessions_and_unknown_tokens_sign_nobody_in(world):
    with db.session_scope(world.settings.db_url) as s:
        token = auth.create_session(s, world.users["bob"].id, secret=SECRET, hours=-1)
    c = TestClient(world.app, follow_redirects=False)
    c.cookies.set("inferprep_session", token)
    assert c.get("/api/me").status_code == 401
    for header in ("Bearer ipt_forged", "Bearer ", "Basic Ym9iOmJvYg==", f"Bearer {world.alice_token}x"):
        assert TestClient(world.app).get("/api/me", headers={"Authorization": header}).status_code == 401


def test_rate_limit_and_full_queue_answer_429_with_retry_after(world):
    with db.session_scope(world.settings.db_url) as s:
        cohorts.set_policy(s, world.cohort.id, submissions_per_hour=2)
        bob = auth.create_user(s, "bob2@x.org", "Bob Two", PASSWORD)
        cohorts.add_member(s, world.cohort.id, bob.id, "student")
    world.users["bob2"] = bob
    try:
        c = world.as_("bob2")
        url = f"/api/exercises/{SLUG}/submissions"
        assert c.post(url, json={"code": "# 1", "kind": "run"}).status_code == 202
        assert c.post(url, json={"code": "# 2", "kind": "run"}).status_code == 202
        r = c.post(url, json={"code": "# 3", "kind": "run"})
        assert r.status_code == 429 and 3500 <= int(r.headers["retry-after"]) <= 3601, r.headers
        assert "2 gradings an hour" in r.json()["detail"]
        r = c.post(f"/exercises/{SLUG}/submissions", data={"code": "# 4", "kind": "run"})
        assert r.status_code == 429 and r.headers["retry-after"]
        with db.session_scope(world.settings.db_url) as s:
            with pytest.raises(cohorts.TooManyRequests) as e:
                cohorts.check_capacity(s, world.users["alice"].id, queue_limit=0)
            assert e.value.retry_after > 0 and "queue is full" in str(e.value)
    finally:
        with db.session_scope(world.settings.db_url) as s:
            cohorts.set_policy(s, world.cohort.id, submissions_per_hour=1000)


def test_signed_out_htmx_requests_get_401_not_the_sign_in_page(world):
    anon = world.as_("anon")
    r = anon.post(f"/exercises/{SLUG}/submissions", data={"code": "# x\n", "kind": "run"},
                  headers={"HX-Request": "true"}, follow_redirects=False)
    assert r.status_code == 401 and r.text == "signed out: sign in again"
    r = anon.post(f"/exercises/{SLUG}/draft", data={"code": "# x\n"}, headers={"Accept": "application/json"},
                  follow_redirects=False)
    assert r.status_code == 401 and "sign in" in r.json()["detail"]
    r = anon.get(f"/exercises/{SLUG}", follow_redirects=False)            # a page still redirects
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")


def test_after_deadline_policy(world):
    from datetime import timedelta
    from inferprep.models import utcnow
    alice = world.as_("alice")
    with db.session_scope(world.settings.db_url) as s:
        cohorts.set_policy(s, world.cohort.id, unlock="after_deadline")
        cohorts.assign(s, world.cohort.id, SLUG, utcnow() + timedelta(days=1))
    try:
        r = alice.get(f"/exercises/{SLUG}/solution")
        assert r.status_code == 403 and "deadline" in r.text
        page = alice.get(f"/exercises/{SLUG}")
        assert page.status_code == 200                                   # the page still works
        # and says what the policy says: no link that answers 403
        assert "open after the deadline (" in page.text and f'href="/exercises/{SLUG}/solution"' not in page.text
        with db.session_scope(world.settings.db_url) as s:
            cohorts.assign(s, world.cohort.id, SLUG, utcnow() - timedelta(minutes=1))
        assert alice.get(f"/exercises/{SLUG}/solution").status_code == 200
        assert f'href="/exercises/{SLUG}/solution"' in alice.get(f"/exercises/{SLUG}").text
    finally:
        with db.session_scope(world.settings.db_url) as s:
            cohorts.set_policy(s, world.cohort.id, unlock="on_pass")
            cohorts.assign(s, world.cohort.id, SLUG, None)


def test_instructor_matrix_and_export(world):
    tina = world.as_("tina")
    page = tina.get(f"/teach/cohorts/{world.cohort.id}").text
    assert world.cohort.join_code in page and "Bob" in page and "st-solved" in page and "% </td>" not in page
    csv_text = tina.get(f"/teach/cohorts/{world.cohort.id}/grades.csv").text
    lines = csv_text.strip().splitlines()
    # then each scheduled mock interview's score and finished (nobody took one: no exercise columns)
    assert lines[0].startswith(f"email,name,{SLUG},solved,Mock: score,Mock: finished"), lines[0]
    assert any(ln.startswith("alice@x.org,") and ",1.0000,1,,no" in ln for ln in lines), lines
    rows = tina.get(f"/api/teach/cohorts/{world.cohort.id}/grades").json()
    assert {r["email"] for r in rows} >= {"alice@x.org", "bob@x.org"}
    # an assigned exercise nobody attempted has no pass rate (a dash), not "0%"
    with db.session_scope(world.settings.db_url) as s:
        cohorts.assign(s, world.cohort.id, "ridge-point", None)
    try:
        page = tina.get(f"/teach/cohorts/{world.cohort.id}").text
        title = catalog.get("ridge-point").meta.title
        row = re.search(r"<tr><td>" + re.escape(title) + r"</td><td>0</td><td>0</td><td>(.*?)</td>", page)
        assert row and "no attempts yet" in row.group(1) and "%" not in row.group(1), row
    finally:
        with db.session_scope(world.settings.db_url) as s:
            cohorts.unassign(s, world.cohort.id, "ridge-point")


def test_csv_export_neutralises_formulas(world, tmp_path):
    with db.session_scope(world.settings.db_url) as s:
        u = auth.create_user(s, "eve@x.org", '=HYPERLINK("http://evil","x")', PASSWORD)
        cohorts.add_member(s, world.cohort.id, u.id, "student")
        text = grades_export.export_csv(s, world.cohort)
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text


def test_cohort_mode_refuses_unsandboxed_grading(tmp_path, monkeypatch):
    from inferprep.runner import sandbox
    from inferprep.web.cohort_mode import UnsandboxedRefused
    monkeypatch.setattr(sandbox, "sandbox_mode", lambda requested=None: "none")
    base = dict(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET)
    with pytest.raises(UnsandboxedRefused, match="bubblewrap"):
        create_app(Settings(**base, grading_threads=1), grade=fake_grade, devices=("cpu",))
    create_app(Settings(**base, grading_threads=1, allow_unsandboxed=True), grade=fake_grade, devices=("cpu",))
    create_app(Settings(**base, grading_threads=0), grade=fake_grade, devices=("cpu",))  # workers elsewhere


def test_placeholder_secret_is_refused_outside_development():
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match="INFERPREP_SECRET_KEY"):
        Settings(cohort_mode=True, environment="production")
    with pytest.raises(ValidationError, match="INFERPREP_SECRET_KEY"):
        Settings(cohort_mode=True, environment="production", secret_key="short")
    Settings(cohort_mode=True, environment="production", secret_key=SECRET)
    Settings(cohort_mode=False, environment="production")    # local mode has no secrets to keep
    with pytest.warns(UserWarning, match="development"):
        Settings(cohort_mode=True)


def test_worker_devices_setting_lets_a_cpu_web_host_queue_gpu_jobs(tmp_path):
    base = dict(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=0)
    assert create_app(Settings(**base, worker_devices="cuda,cpu"), devices=("cpu",)).state.devices == ("cuda", "cpu")
    assert create_app(Settings(**base), devices=("cpu",)).state.devices == ("cpu",)


def test_an_id_past_64_bits_is_bad_input_on_every_route(world):
    """Every route with an id in its path refuses one the database's integers cannot hold with a
    4xx, for a signed-in user and an instructor alike (it used to reach the driver: a 500)."""
    import re as _re
    huge = str(2**64)
    problems = []
    for role in ("alice", "tina"):
        c = world.as_(role)
        for method, path in app_routes(world.app):
            if not _re.search(r"\{\w+_id\}", path) or ACCESS[(method, path)] == "public-form":
                continue
            url = _re.sub(r"\{\w+_id\}", huge, path).format(slug=SLUG)
            r = c.request(method, url, **BODIES.get(path, {}))
            if not 400 <= r.status_code < 500:
                problems.append(f"{role} {method} {path}: {r.status_code}")
    assert not problems, "\n".join(problems)
