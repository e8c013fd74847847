"""Accounts under attack (issue 11): sign-in throttling per account and per client address (429
with Retry-After and a page that says when; the right password is refused during a lockout;
parallel guesses cannot outrun the count), sign-up that answers a known and an unknown email
alike, and a grade export that no spreadsheet reads as formulas whatever delimiter it guesses."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlmodel import select

from inferprep import auth, cohorts, db, grades_export
from inferprep.cohort_models import SignInThrottle
from inferprep.models import Membership, User, utcnow
from inferprep.settings import Settings
from inferprep.web import create_app

from limits_support import fire

SECRET = "a" * 40
PASSWORD = "the-right-password"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("accounts"), cohort_mode=True, secret_key=SECRET,
                        grading_threads=0)
    app = create_app(settings, devices=("cpu",))
    with TestClient(app):
        with db.session_scope(settings.db_url) as s:
            c = cohorts.create_cohort(s, "Accounts")
            other = cohorts.create_cohort(s, "Second cohort")
            for name in ("vic", "val", "ada"):
                auth.sign_up(s, join_code=c.join_code, email=f"{name}@x.org", name=name.title(), password=PASSWORD)
        yield app, settings.db_url, c, other


def _client(app, address: str = "10.0.0.1") -> TestClient:
    c = TestClient(app, follow_redirects=False, client=(address, 40000))
    c.get("/login")
    return c


def _login(c: TestClient, email: str, password: str):
    return c.post("/login", data={"email": email, "password": password, "next": "/",
                                  "csrf_token": c.cookies.get("inferprep_csrf")})


def _expire_windows(url: str) -> None:
    """Move every throttle window into the past (what waiting out the lockout does)."""
    with db.session_scope(url) as s:
        s.exec(update(SignInThrottle).values(window_start=utcnow() - timedelta(seconds=auth.THROTTLE_WINDOW_S + 1)))
        s.commit()


def test_sign_in_is_throttled_per_account_and_the_right_password_waits_too(site):
    app, url, _, _ = site
    c = _client(app, "10.0.0.1")
    for _ in range(auth.ACCOUNT_FAILURES):
        assert _login(c, "vic@x.org", "wrong-guess").status_code == 401
    r = _login(c, "vic@x.org", "wrong-guess")
    assert r.status_code == 429 and 800 < int(r.headers["retry-after"]) <= auth.THROTTLE_WINDOW_S + 1
    assert re.search(r"too many failed sign-ins for this account; try again in 15 minutes \(after \d\d:\d\d UTC\)",
                     r.text), r.text
    r = _login(_client(app, "10.0.0.2"), "VIC@x.org ", PASSWORD)      # the right password, another address
    assert r.status_code == 429 and "inferprep_session" not in r.cookies and r.headers["retry-after"]
    assert _login(c, "val@x.org", PASSWORD).status_code == 303          # other accounts are not locked
    _expire_windows(url)
    r = _login(c, "vic@x.org", PASSWORD)
    assert r.status_code == 303 and "inferprep_session" in r.cookies


def test_sign_in_is_throttled_per_client_address(site, monkeypatch):
    app, url, _, _ = site
    monkeypatch.setattr(auth, "ADDRESS_FAILURES", 3)
    c = _client(app, "10.0.0.3")
    for i in range(3):          # unknown emails, each its own account: only the address adds up
        assert _login(c, f"nobody{i}@x.org", "guess").status_code == 401
    r = _login(c, "ada@x.org", PASSWORD)
    assert r.status_code == 429 and "from your network address" in r.text and int(r.headers["retry-after"]) > 0
    assert _login(_client(app, "10.0.0.4"), "ada@x.org", PASSWORD).status_code == 303
    _expire_windows(url)


def test_successful_sign_ins_do_not_use_up_the_address(site, monkeypatch):
    app, url, _, _ = site
    monkeypatch.setattr(auth, "ADDRESS_FAILURES", 2)
    c = _client(app, "10.0.0.5")        # a classroom behind one address: correct passwords never add up
    for _ in range(4):
        assert _login(c, "val@x.org", PASSWORD).status_code == 303
    _expire_windows(url)


def test_parallel_wrong_passwords_cannot_outrun_the_count(site):
    _, url, _, _ = site

    def guess(i: int) -> str:
        with db.session_scope(url) as s:
            try:
                auth.authenticate(s, "ada@x.org", f"guess-{i}", address=f"10.1.0.{i}")
            except auth.SignInThrottled:
                return "throttled"
            except auth.AuthFailed:
                return "checked"
        return "signed in"
    out = fire(10, guess)
    assert out.count("checked") == auth.ACCOUNT_FAILURES and out.count("throttled") == 10 - auth.ACCOUNT_FAILURES, out
    _expire_windows(url)


def test_sign_up_answers_a_known_and_an_unknown_email_alike(site):
    app, url, cohort, other = site

    def sign_up(code: str, email: str, password: str):
        c = TestClient(app, follow_redirects=False)
        c.get("/signup")
        r = c.post("/signup", data={"csrf_token": c.cookies.get("inferprep_csrf"), "code": code, "email": email,
                                    "name": "Someone", "password": password})
        return r.status_code, r.headers.get("location"), sorted(r.cookies.keys()), r.text
    new = sign_up(cohort.join_code, "newcomer@x.org", "newcomer-password")
    known_wrong = sign_up(cohort.join_code, "vic@x.org", "someone-elses-pw")
    known_right = sign_up(other.join_code, "Vic@x.org", PASSWORD)
    assert new == known_wrong == known_right
    assert new[0] == 303 and new[1] == "/login?signed_up=1&next=/cohort" and new[2] == []
    with db.session_scope(url) as s:
        vics = s.exec(select(User).where(User.email == "vic@x.org")).all()
        assert len(vics) == 1 and auth.hasher().verify(PASSWORD, vics[0].password_hash)   # no duplicate, no takeover
        cohorts_of_vic = set(s.exec(select(Membership.cohort_id).where(Membership.user_id == vics[0].id)).all())
        assert cohorts_of_vic == {cohort.id, other.id}       # the right password joined the second cohort
        assert s.exec(select(User).where(User.email == "newcomer@x.org")).one().name == "Someone"
    c = _client(app, "10.0.0.6")
    assert _login(c, "newcomer@x.org", "newcomer-password").status_code == 303


def test_csv_export_is_formula_safe_under_every_delimiter(site):
    _, url, cohort, _ = site
    names = ["Zed;=2+3;", '=HYPERLINK("http://evil","x")', "a|@SUM(1)", "-1 minus", "comma, +1", 'q;"=1+1"',
             "Jean-Luc", "semi; colon"]
    with db.session_scope(url) as s:
        for i, name in enumerate(names):
            u = auth.create_user(s, f"csv{i}@x.org", name, PASSWORD)
            cohorts.add_member(s, cohort.id, u.id, "student")
        text = grades_export.export_csv(s, cohort)
    triggers = ("=", "+", "-", "@", "\t", "\r")
    for delim in (",", ";", "\t", "|"):
        fields = [f for row in csv.reader(io.StringIO(text), delimiter=delim) for f in row]
        fields += [f for line in text.splitlines() for f in line.split(delim)]
        bad = [f for f in fields if f.lstrip(' "').startswith(triggers)]
        assert not bad, (delim, bad)
    rows = {r[0]: r[1] for r in csv.reader(io.StringIO(text))}
    for i, name in enumerate(names):        # read with the right delimiter, each name is one cell, intact but for quotes
        cell = rows[f"csv{i}@x.org"]
        assert cell.replace("'", "") == name.replace("'", "")
        assert cell == name or cell.startswith("'")
    assert rows["csv6@x.org"] == "Jean-Luc"
