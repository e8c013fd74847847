"""What a new user hit on the exercise page, in a real browser (Debian's chromium via Playwright)
against uvicorn in a thread with a fake judge: the keyboard focus after Run and after Cancel, a
failing case's message readable at 390x844, and the editorial's one title. Screenshots go to
artifacts/."""

from __future__ import annotations

import pytest

import browser_support as bs
from live_server import live_server
from browser_support import browser, errors  # noqa: F401 (fixtures)
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if bs.chromium_path() is None:
    pytest.skip(f"no chromium at {bs.CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SLUG = "sampling-order"
MESSAGE = ("probs: row 0, token 4 must have probability exactly 0 (dropped by the knobs, or not the "
           "choice of a greedy row), got 0.0979; 1 such value(s)")


def fake_grade(exercise, code, *, device, public, progress, salt=None, cancel=None):
    """``HOLD`` grades until cancelled (a minute at most); ``FAIL`` fails a case with a long
    message, as sampling-order's grader words it; anything else passes."""
    if "HOLD" in code:
        cancel.wait(60)
        return Verdict.from_cases(exercise.slug, [], public=public, device=device)
    ok = "FAIL" not in code
    cases = [CaseResult(name="order-vllm-v1-six-tokens", passed=ok, message="" if ok else MESSAGE,
                        status=Status.PASSED if ok else Status.WRONG_ANSWER, seconds=0.006),
             CaseResult(name="first-case", passed=True, status=Status.PASSED, seconds=0.001)]
    for c in cases:
        progress(c)
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("ux-browser"), grading_threads=2)
    with live_server(create_app(settings, grade=fake_grade, devices=("cpu",))) as base:
        yield base


def open_exercise(browser, site, errors, viewport=bs.DESKTOP):
    pg = bs.new_page(browser, site, viewport, errors)
    pg.goto(f"/exercises/{SLUG}")
    pg.wait_for_function("window.inferprepEditor !== undefined")
    return pg


def verdict_ids(pg, panel: str) -> list[str]:
    return pg.evaluate(f"[...document.querySelectorAll('{panel} .verdict')].map(v => v.id)")


def wait_new(pg, panel: str, old: list[str], state: str = "done") -> None:
    pg.wait_for_function(f"""([old, state]) => {{ const v = document.querySelector('{panel} .verdict');
                              return v && !old.includes(v.id) && v.dataset.state === state; }}""", arg=[old, state])


def focused(pg) -> str:
    return pg.evaluate("(() => { const a = document.activeElement; return a.id || a.tagName + ':' + a.textContent.trim(); })()")


def test_keyboard_focus_after_run_and_cancel(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    # Run from the keyboard: the button is disabled while the request is out; the focus comes back
    pg.evaluate("window.inferprepEditor.setValue('# FAIL\\n')")
    old = verdict_ids(pg, "#examples")
    pg.locator("#run-btn").focus()
    pg.keyboard.press("Enter")
    wait_new(pg, "#examples", old)
    assert focused(pg) == "run-btn"

    # Cancel from the keyboard: the answer replaces the button; the focus goes to the verdict's heading
    pg.evaluate("window.inferprepEditor.setValue('# HOLD\\n')")
    old = verdict_ids(pg, "#verdict")
    pg.locator("#submit-btn").focus()
    pg.keyboard.press("Enter")
    wait_new(pg, "#verdict", old, "running")
    pg.get_by_role("button", name="Cancel").focus()
    pg.keyboard.press("Enter")
    pg.wait_for_function("() => document.querySelector('#verdict .verdict').dataset.state === 'cancelled'")
    pg.wait_for_function("() => document.activeElement.tagName === 'H3'")
    assert focused(pg).startswith("H3:Submission #")
    assert pg.locator("#verdict .verdict h3").evaluate("h => h === document.activeElement")
    assert "Cancelled" in pg.locator("#history").inner_text()       # a badge like the others, capitalised
    pg.screenshot(path=str(bs.ARTIFACTS / "ux-cancel-focus.png"))


def test_phone_failing_case_message_uses_the_width(browser, site, errors):
    pg = open_exercise(browser, site, errors, bs.PHONE)
    pg.evaluate("window.inferprepEditor.setValue('# FAIL\\n')")
    old = verdict_ids(pg, "#examples")
    pg.get_by_role("button", name="Run examples").click()
    wait_new(pg, "#examples", old)
    msg = pg.locator("#examples table.cases tr.fail pre.msg")
    assert msg.inner_text() == MESSAGE
    box = msg.bounding_box()
    assert box["width"] > 0.7 * bs.PHONE["width"], box        # four columns left it ~50 px, a word a line
    name = pg.locator("#examples table.cases tr.fail td").first.bounding_box()
    assert box["y"] >= name["y"] + name["height"] - 1           # under the case's name, not beside it
    assert bs.page_width(pg) == bs.PHONE["width"]
    pg.screenshot(path=str(bs.ARTIFACTS / "ux-phone-case-message.png"))


def test_editorial_has_one_title(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    pg.evaluate("window.inferprepEditor.setValue('# passes\\n')")
    old = verdict_ids(pg, "#verdict")
    pg.get_by_role("button", name="Submit", exact=True).click()
    wait_new(pg, "#verdict", old)
    pg.get_by_role("link", name="The editorial and the reference are unlocked.").click()
    pg.wait_for_url(f"**/exercises/{SLUG}/solution")
    assert pg.locator("h1").count() == 1
    assert pg.locator("h1").inner_text().startswith("Editorial")
