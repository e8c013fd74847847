"""Cohort mode's error states in a real browser (Debian's chromium via Playwright), against uvicorn
in a thread with a fake judge: signed out in another tab (autosave and Submit say so, the code
stays in this browser and is saved after signing in again), the `after_deadline` editorial policy
in every message, the instructor's Unassign confirmation, and the instructor's matrix and header at
390x844. Screenshots go to artifacts/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

import browser_support as bs
from live_server import live_server
from browser_support import browser, errors  # noqa: F401 (fixtures)
import cohort_fakes
from inferprep import auth, cohorts, db, services
from inferprep.cohort_models import Assignment
from inferprep.models import utcnow
from inferprep.settings import Settings
from inferprep.web import create_app
from inferprep.web.cohort_mode import SESSION_COOKIE

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if bs.chromium_path() is None:
    pytest.skip(f"no chromium at {bs.CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SECRET = "c" * 40
SLUG = "sampling-order"
OTHER = "kv-capacity"
PASSWORD = "layout-password"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("cohort-layout"), cohort_mode=True, secret_key=SECRET,
                        grading_threads=1, allow_unsandboxed=True)
    app = create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))
    with live_server(app) as base:
        with db.session_scope(settings.db_url) as s:
            teacher = auth.create_user(s, "teacher@x.org", "Teacher", PASSWORD, is_instructor=True)
            student = auth.create_user(s, "student@x.org", "Student", PASSWORD)
            c = cohorts.create_cohort(s, "Layout cohort", instructor_id=teacher.id)
            cohorts.add_member(s, c.id, student.id, "student")
            deadline = (utcnow() + timedelta(days=3)).replace(second=0, microsecond=0)
            cohorts.assign(s, c.id, SLUG, deadline=deadline)
            cohorts.assign(s, c.id, OTHER)
            cohorts.set_policy(s, c.id, unlock="after_deadline")
            ids = {"teacher": teacher.id, "student": student.id, "cohort": c.id}
        yield {"base": base, "url": settings.db_url, "deadline": deadline, **ids}


def signed_in_page(browser, site, who: str, errors, viewport=bs.DESKTOP):
    with db.session_scope(site["url"]) as s:
        token = auth.create_session(s, site[who], secret=SECRET, hours=1)
    pg = bs.new_page(browser, site["base"], viewport, errors)
    pg.context.add_cookies([{"name": SESSION_COOKIE, "value": token, "url": site["base"]}])
    return pg


def draft_of(site, who: str) -> str | None:
    with db.session_scope(site["url"]) as s:
        d = services.get_draft(s, site[who], SLUG)
        return d.code if d is not None else None


def test_signed_out_in_another_tab(browser, site, errors):
    pg = signed_in_page(browser, site, "student", errors)
    pg.goto(f"/exercises/{SLUG}")
    pg.wait_for_function("window.inferprepEditor !== undefined")
    other = pg.context.new_page()                           # the other tab signs out
    other.goto("/cohort")
    other.get_by_role("button", name="Sign out").click()
    other.wait_for_url("**/login")
    before = draft_of(site, "student")

    code = "# typed after signing out elsewhere: passes\n"
    pg.evaluate("code => window.inferprepEditor.setValue(code)", code)
    pg.wait_for_function("document.getElementById('save-status').textContent.startsWith('Signed out')")
    assert pg.locator("#save-status").inner_text() == "Signed out: sign in again (your code is kept here)"
    kept = pg.evaluate("Object.keys(localStorage).filter(k => k.startsWith('inferprep:draft:'))"
                       ".map(k => JSON.parse(localStorage[k]).code)")
    assert kept == [code]
    assert draft_of(site, "student") == before              # nothing reached the server
    # Submit: a message in the verdict panel, never the sign-in page
    pg.get_by_role("button", name="Submit", exact=True).click()
    pg.wait_for_function("document.querySelector('#verdict [role=alert]') !== null")
    alert = pg.locator("#verdict [role=alert]")
    assert alert.inner_text().startswith("Signed out: sign in again")
    assert pg.locator("#verdict input, #verdict form").count() == 0
    assert pg.locator("#save-status").inner_text().startswith("Signed out")
    pg.screenshot(path=str(bs.ARTIFACTS / "cohort-signed-out.png"))

    # sign in again in the other tab; reloading this one brings the code back and saves it
    other.get_by_label("Email").fill("student@x.org")
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Sign in").click()
    other.wait_for_url(lambda u: "/login" not in u)
    pg.reload()
    pg.wait_for_function("window.inferprepEditor !== undefined")
    assert pg.evaluate("window.inferprepEditor.getValue()") == code
    pg.wait_for_function("document.getElementById('save-status').textContent.startsWith('Draft saved')")
    assert draft_of(site, "student") == code
    assert pg.evaluate("Object.keys(localStorage).filter(k => k.startsWith('inferprep:draft:')).length") == 0


def test_after_deadline_policy_in_every_message(browser, site, errors):
    pg = signed_in_page(browser, site, "student", errors)
    pg.goto(f"/exercises/{SLUG}")
    pg.wait_for_function("window.inferprepEditor !== undefined")
    pg.evaluate("window.inferprepEditor.setValue('# policy: passes\\n')")
    before = pg.evaluate("[...document.querySelectorAll('#verdict .verdict')].map(v => v.id)")
    pg.get_by_role("button", name="Submit", exact=True).click()
    pg.wait_for_function("""old => { const v = document.querySelector('#verdict .verdict');
                            return v && !old.includes(v.id) && v.dataset.state === 'done'; }""", arg=before)
    when = f"after the deadline ({site['deadline']:%Y-%m-%d %H:%M} UTC)"
    lock = pg.locator("#verdict [data-testid=editorial-lock]").inner_text()
    assert lock.startswith("Solved.") and when in lock and "unlocked" not in lock
    assert pg.locator('a[href$="/solution"]').count() == 0
    pg.reload()
    assert when in pg.locator("#pane-statement [data-testid=editorial-lock]").inner_text()
    assert when in pg.locator("#verdict [data-testid=editorial-lock]").inner_text()
    assert pg.locator('a[href$="/solution"]').count() == 0
    assert "unlocked" not in pg.locator("body").inner_text()
    pg.screenshot(path=str(bs.ARTIFACTS / "cohort-after-deadline.png"))


def test_unassign_asks_first(browser, site, errors):
    pg = signed_in_page(browser, site, "teacher", errors)
    pg.goto(f"/teach/cohorts/{site['cohort']}")
    title = services.get_exercise(OTHER).meta.title
    confirm = pg.get_by_role("button", name=f"Unassign {title}")
    assert not confirm.is_visible()
    pg.locator("details.confirm summary").nth(1).click()
    assert confirm.is_visible()
    with db.session_scope(site["url"]) as s:           # opening the question changes nothing
        assert s.exec(select(Assignment).where(Assignment.slug == OTHER)).first() is not None
    confirm.click()
    pg.wait_for_load_state()
    with db.session_scope(site["url"]) as s:
        assert s.exec(select(Assignment).where(Assignment.slug == OTHER)).first() is None
        assert s.exec(select(Assignment).where(Assignment.slug == SLUG)).first() is not None


def test_instructor_pages_at_phone_width(browser, site, errors):
    pg = signed_in_page(browser, site, "teacher", errors, viewport=bs.PHONE)
    for path in (f"/teach/cohorts/{site['cohort']}", "/exercises", "/teach"):
        pg.goto(path)
        pg.screenshot(path=str(bs.ARTIFACTS / f"cohort-phone390{path.replace('/', '_')}.png"), full_page=True)
        assert bs.page_width(pg) <= bs.PHONE["width"], f"{path} is {bs.page_width(pg)}px wide"
        assert pg.locator("header.top").bounding_box()["height"] < 60      # was 194 px of 844
    pg.get_by_role("button", name="Menu").click()
    assert pg.get_by_role("link", name="Teaching").is_visible()
    assert pg.get_by_role("button", name="Sign out").is_visible()
    pg.goto(f"/teach/cohorts/{site['cohort']}")
    wrap = pg.locator(".table-wrap").first                 # the matrix scrolls inside its own box
    assert wrap.bounding_box()["width"] <= bs.PHONE["width"]
