"""Cohort mode in a real browser (Debian's chromium via Playwright) against a real uvicorn: sign
up with the join code through the form and sign in, autosave a draft and submit from the editor (both carry
the CSRF token that static/cohort.js adds), see the verdict, see the 429 message when the
hourly limit is spent, sign out. A fake judge grades (the browser flow is under test)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import browser_support as bs
import cohort_fakes
from live_server import live_server
from sqlmodel import select

from inferprep import cohorts, db, services
from inferprep.models import User
from inferprep.settings import Settings
from inferprep.web import create_app

CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SECRET = "b" * 40
SLUG = "sampling-order"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("cohort-browser"), cohort_mode=True, secret_key=SECRET,
                        grading_threads=2, allow_unsandboxed=True)
    app = create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))
    with live_server(app) as base:
        with db.session_scope(settings.db_url) as s:
            c = cohorts.create_cohort(s, "Browser cohort")
            cohorts.assign(s, c.id, SLUG)
            cohorts.set_policy(s, c.id, submissions_per_hour=2)
        yield base, c.join_code, settings.db_url


def test_sign_up_autosave_submit_429_sign_out(site):
    base, code, url = site
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
                              args=["--headless", "--no-sandbox", "--disable-gpu"])
        pg = b.new_page(base_url=base)
        pg.set_default_timeout(60_000)
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(f"/signup?code={code}")
        pg.get_by_label("Display name").fill("Browser Student")
        pg.get_by_label("Email").fill("browser@x.org")
        pg.get_by_label("Password (at least 8 characters)").fill("browser-password")
        pg.get_by_role("button", name="Create account").click()
        pg.wait_for_url(lambda u: "/login?signed_up=1" in u)    # the same answer for a known email: sign in
        assert "Sign-up received" in pg.locator("[role=status]").inner_text()
        pg.get_by_label("Email").fill("browser@x.org")
        pg.get_by_label("Password").fill("browser-password")
        pg.get_by_role("button", name="Sign in").click()
        pg.wait_for_url("**/cohort")
        assert pg.get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").is_visible()
        pg.get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").click()
        pg.wait_for_function("window.inferprepEditor !== undefined")
        pg.evaluate("window.inferprepEditor.setValue('# from the browser\\n')")
        pg.wait_for_function("document.getElementById('save-status').textContent.startsWith('Draft saved')")
        with db.session_scope(url) as s:
            user = s.exec(select(User).where(User.email == "browser@x.org")).one()
            assert services.get_draft(s, user.id, SLUG).code == "# from the browser\n"
        for _ in range(2):
            before = pg.evaluate("[...document.querySelectorAll('.verdict')].map(v => v.id)")
            pg.get_by_role("button", name="Submit", exact=True).click()
            pg.wait_for_function("""old => { const v = document.querySelector('#verdict .verdict');
                                    return v && !old.includes(v.id) && v.dataset.state === 'done'; }""", arg=before)
        assert pg.locator("#verdict .verdict").get_attribute("data-status") == "passed"
        pg.get_by_role("button", name="Submit", exact=True).click()          # the third within the hour
        pg.wait_for_function("document.querySelector('#verdict [role=alert]') !== null")
        alert = pg.locator("#verdict [role=alert]").inner_text()   # the server's words: minutes and the UTC time
        assert alert.startswith("Not graded: your cohort allows 2 gradings an hour; the next one in") and " UTC)" in alert
        pg.get_by_role("button", name="Sign out").click()
        pg.wait_for_url("**/login")
        pg.goto("/exercises")
        assert "/login?next=" in pg.url
        b.close()
    assert not errors, errors

