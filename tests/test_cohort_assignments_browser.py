"""Assignments in a real browser (Debian's chromium via Playwright, a real uvicorn, a fake judge):
a student ticks "Assigned to me" on /exercises (htmx swaps the list) and sees the badges, then
the badge on the exercise's page; the instructor follows a matrix cell to the student's
submissions for that exercise and rejudges one: the row says it is queued, then shows the new
verdict (htmx, with the CSRF header that static/cohort.js adds). Screenshots in artifacts/."""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest

import cohort_fakes
from live_server import live_server
from inferprep import auth, catalog, cohorts, db
from inferprep.models import utcnow
from inferprep.settings import Settings
from inferprep.web import create_app

CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SECRET = "c" * 40
SOON, LATE = "sampling-order", "kv-capacity"
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("assign-browser"), cohort_mode=True, secret_key=SECRET,
                        grading_threads=1, allow_unsandboxed=True)
    with live_server(create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))) as base:
        with db.session_scope(settings.db_url) as s:      # after the start: it migrates the database
            tina = auth.create_user(s, "tina@x.org", "Tina", "tina-password", is_instructor=True)
            c = cohorts.create_cohort(s, "Browser cohort", instructor_id=tina.id)
            ada = auth.sign_up(s, join_code=c.join_code, email="ada@x.org", name="Ada", password="ada-password")
            cohorts.assign(s, c.id, SOON, utcnow() + timedelta(days=2))
            cohorts.assign(s, c.id, LATE, utcnow() - timedelta(days=1))
            tokens = {who.name: auth.create_session(s, who.id, secret=SECRET, hours=1) for who in (tina, ada)}
        yield base, c.id, ada.id, tokens


def signed_in(browser, base: str, token: str, width: int = 1366, height: int = 768):
    ctx = browser.new_context(base_url=base, viewport={"width": width, "height": height})
    ctx.add_cookies([{"name": "inferprep_session", "value": token, "url": base}])
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    return pg


def test_student_filters_assigned_and_sees_badges_instructor_rejudges_a_row(site):
    base, cohort_id, ada_id, tokens = site
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
                              args=ARGS)
        pg = signed_in(b, base, tokens["Ada"], 390, 844)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto("/exercises")
        pg.wait_for_function("window.htmx !== undefined")
        total = pg.locator("#results tbody tr").count()
        pg.get_by_label("Assigned to me").check()
        pg.wait_for_function("document.querySelectorAll('#results tbody tr').length === 2")
        assert "assigned=1" in pg.url                              # the filter is in the address (Back, links)
        badges = pg.get_by_test_id("assignment-badge").all_inner_texts()
        assert badges[0].startswith("Assigned · overdue since") and badges[1].startswith("Assigned · due ")
        assert total > 2
        pg.screenshot(path=str(ARTIFACTS / "cohort-assigned-filter-390.png"), full_page=True)
        pg.get_by_role("link", name=catalog.get(SOON).meta.title).click()
        pg.wait_for_url(f"**/exercises/{SOON}")
        header_badge = pg.locator("h1").get_by_test_id("assignment-badge")
        assert header_badge.is_visible() and header_badge.inner_text().startswith("Assigned · due ")
        pg.screenshot(path=str(ARTIFACTS / "cohort-assigned-badge-390.png"))
        sub = cohort_fakes_submission(pg)

        t = signed_in(b, base, tokens["Tina"])
        t.on("pageerror", lambda e: errors.append(str(e)))
        t.goto(f"/teach/cohorts/{cohort_id}")
        t.locator(f'a[href="/teach/cohorts/{cohort_id}/students/{ada_id}/exercises/{SOON}"]').click()
        t.wait_for_url(f"**/students/{ada_id}/exercises/{SOON}")
        row = t.locator(f"#sub-{sub}")
        row.get_by_role("button", name="Rejudge").click()
        t.wait_for_function(f"document.querySelector('#sub-{sub}').textContent.includes('Rejudged.')")
        assert "Passed" in t.locator(f"#sub-{sub}").inner_text()
        t.screenshot(path=str(ARTIFACTS / "cohort-rejudged-row.png"))
        b.close()
    assert not errors, errors


def cohort_fakes_submission(pg) -> int:
    """Submit from the exercise page (the fake judge passes it); the new submission's id."""
    r = pg.request.post(f"/api/exercises/{SOON}/submissions",
                        data={"code": "# browser pass SLEEP=0.3\n", "kind": "submit"},
                        headers={"X-CSRF-Token": pg.locator('meta[name="csrf-token"]').get_attribute("content")})
    assert r.status == 202, r.text()
    sub = r.json()["id"]
    for _ in range(200):
        if pg.request.get(f"/api/submissions/{sub}").json()["state"] == "done":
            return sub
        time.sleep(0.05)
    raise AssertionError("not graded")
