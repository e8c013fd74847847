"""A whole 30-minute mock interview in a real browser (Debian's chromium via Playwright) against a
real uvicorn with its embedded grading worker (real gradings), without waiting 30 minutes: the
server's interview clock (``interview.set_clock``) is held, then moved; the page's clock is
Playwright's (``page.clock``), moved with it.

Draw (the start form, a seed that draws sampling-order where the draw allows), a Run and a Submit
of the drawn exercise, a reload mid-session (the countdown and the state stay), a follow-up answered
when the follow-ups panel is there, a restart of the server on the same database file mid-session
(the session and its countdown intact), then the time runs out: the page's countdown loads the
report by itself, and the history lists the session. Screenshots go to artifacts/.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from browser_support import ARTIFACTS, CHROMIUM_ARGS, DESKTOP, chromium_path
from live_server import live_server
from inferprep import catalog, interview, services
from inferprep.settings import Settings
from inferprep.web import create_app

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if chromium_path() is None:
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]
GRADE_TIMEOUT_MS = 240_000
SCOPE = ("track", "decoding")
WANTED = "sampling-order"      # quick to grade, and it ships follow-up questions
DONE = """([panel, old]) => { const v = document.querySelector(panel + ' .verdict');
                              return v && !old.includes(v.id) && v.dataset.state === 'done'; }"""


class HeldClock:
    """The server's interview clock: held at a time until moved."""

    def __init__(self):
        self.t = datetime.now(timezone.utc).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.t


def seed_for(slug: str) -> int:
    """A seed whose 30-minute draw from SCOPE is ``slug``."""
    cands = [e for e in services.catalog_exercises() if e.meta.track.value == SCOPE[1]]
    for seed in range(500):
        if interview.draw(cands, 30, seed, set())[0][0] == slug:
            return seed
    raise AssertionError(f"no seed below 500 draws {slug} for 30 minutes of {SCOPE}")


def seconds(text: str) -> int:
    """"m:ss" or "h:mm:ss" -> seconds."""
    return sum(int(v) * 60 ** i for i, v in enumerate(reversed(text.strip().split(":"))))


def countdown_seconds(pg) -> int:
    """What the page's countdown shows now (it ticks on the page's clock)."""
    return seconds(pg.locator("#interview-banner .countdown-left").inner_text())


def served_seconds(response) -> int:
    """What the server rendered in the countdown (on its held clock: exact)."""
    m = re.search(r'class="countdown-left">([^<]+)<', response.text())
    assert m, "no countdown in the page the server sent"
    return seconds(m.group(1))


def verdict_ids(pg, panel: str) -> list[str]:
    return pg.evaluate("p => [...document.querySelectorAll(p + ' .verdict')].map(v => v.id)", panel)


def grade(pg, button: str, panel: str) -> str:
    """Click ``button`` and wait for the new verdict in ``panel``; returns its data-status."""
    before = verdict_ids(pg, panel)
    pg.get_by_role("button", name=button, exact=True).click()
    pg.wait_for_function(DONE, arg=[panel, before], timeout=GRADE_TIMEOUT_MS)
    return pg.locator(f"{panel} .verdict").get_attribute("data-status")


def answer_first_followup(pg) -> bool:
    """Answer the first follow-up question of the panel (any answer counts: the report shows it
    answered); False when the passed verdict offers no follow-ups (no panel on this build, or an
    exercise without them). The panel loads after the verdict (the followups helper's hx-get)."""
    panel = pg.locator('[data-testid="followups"]')
    if panel.count() == 0 and pg.locator('#verdict [data-testid="followups-link"]').count() == 0:
        return False
    panel.locator('[data-testid="followup"]').first.wait_for()
    q = panel.locator('[data-testid="followup"]').first
    form = q.locator("form")
    if form.locator('input[type="radio"]').count():
        form.locator('input[type="radio"]').first.check()
    elif form.locator('input[type="checkbox"]').count():
        form.locator('input[type="checkbox"]').first.check()
    elif form.locator('input[name="answer"]:not([data-fu-order-field])').count():
        form.locator('input[name="answer"]').fill("1")
    form.get_by_role("button", name="Submit answer").click()
    q_id = q.get_attribute("data-question")
    # within a mock interview the verdict waits until every question is answered: "Recorded"
    pg.locator(f'#fu-{q_id} [data-testid="followup-recorded"]').wait_for()
    assert pg.locator(f'#fu-{q_id} [data-testid="followup-explanation"]').count() == 0
    return True


def test_a_whole_30_minute_mock_interview_in_the_browser(tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    clock = HeldClock()
    interview.set_clock(clock)
    settings = Settings(data_dir=tmp_path / "data", grading_threads=1)
    server = live_server(create_app(settings))
    base = server.__enter__()
    try:
        with playwright_sync.sync_playwright() as p:
            b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            ctx = b.new_context(viewport=DESKTOP)
            ctx.clock.install(time=clock.t)     # the page's clock runs, and the test may move it
            pg = ctx.new_page()
            pg.set_default_timeout(30_000)
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))

            # the dashboard leads to the start form; the rules are stated up front
            pg.goto(base + "/")
            pg.get_by_role("link", name="Start a mock interview").click()
            assert "costs 10% of that exercise's points" in pg.get_by_test_id("hint-cost").inner_text()
            pg.select_option("#iv-scope", f"{SCOPE[0]}:{SCOPE[1]}")
            pg.locator('input[name="minutes"][value="30"]').check()
            pg.locator("summary", has_text="Replay a draw").click()
            pg.fill("#iv-seed", str(seed_for(WANTED)))
            with pg.expect_navigation(url=re.compile(r"/interview/\d+$")) as nav:
                pg.get_by_role("button", name="Start the mock interview").click()
            assert served_seconds(nav.value) == 30 * 60
            sid = int(pg.url.rsplit("/", 1)[1])
            slug = pg.locator("#interview-items tbody tr").first.get_attribute("data-slug")
            ex = catalog.get(slug)
            before = countdown_seconds(pg)
            pg.clock.run_for("00:05")                       # the page ticks on its own clock
            after = countdown_seconds(pg)
            assert before - after >= 5 and after > 0
            # ten minutes pass (reading the statement), on the server and in the page. (The attempts
            # below are stamped by the real clock, a little after the start: inside the session's window.)
            clock.t += timedelta(minutes=10)
            pg.clock.fast_forward("10:00")

            # the drawn exercise: the hint states its cost; the editorial is closed; a Run, a Submit
            pg.get_by_role("link", name=ex.meta.title).click()
            pg.wait_for_function("window.inferprepEditor !== undefined")
            assert "costs 10% of this exercise's points" in pg.get_by_test_id("interview-hint").inner_text()
            assert pg.get_by_test_id("interview-lock").is_visible()
            pg.evaluate("code => window.inferprepEditor.setValue(code)", ex.stub)
            assert grade(pg, "Run examples", "#examples") != "passed"      # the stub does not pass
            pg.evaluate("code => window.inferprepEditor.setValue(code)", ex.reference_path.read_text(encoding="utf-8"))
            assert grade(pg, "Submit", "#verdict") == "passed"
            # every exercise the draw can give here ships follow-ups (sampling-order does): answer one
            assert answer_first_followup(pg), f"no follow-ups panel on /exercises/{slug} after a pass"
            pg.screenshot(path=str(ARTIFACTS / "interview-exercise.png"))

            # a reload mid-session: the countdown (the server's ends_at) and the state stay
            ends_at = pg.locator("#interview-banner").get_attribute("data-ends-at")
            pg.goto(f"{base}/interview/{sid}")
            assert served_seconds(pg.reload()) == 20 * 60     # the server's clock is held
            assert pg.locator("#interview-banner").get_attribute("data-ends-at") == ends_at
            row = pg.locator(f'#interview-items tr[data-slug="{slug}"]')
            assert "passed" in row.inner_text()

            # a restart of the server on the same database file, mid-session
            pg.goto("about:blank")
            server.__exit__(None, None, None)
            server = live_server(create_app(settings))
            base = server.__enter__()
            clock.t += timedelta(minutes=10)                # ten more minutes pass
            pg.clock.fast_forward("10:00")
            assert served_seconds(pg.goto(f"{base}/interview/{sid}")) == 10 * 60
            assert pg.locator("#interview-banner").get_attribute("data-ends-at") == ends_at
            assert "passed" in pg.locator(f'#interview-items tr[data-slug="{slug}"]').inner_text()
            pg.screenshot(path=str(ARTIFACTS / "interview-session.png"))

            # the time runs out on the server and in the page: the page loads the report itself
            clock.t += timedelta(minutes=10, seconds=1)
            pg.clock.fast_forward("10:01")
            pg.wait_for_url(f"{base}/interview/{sid}/report")
            assert pg.locator("#interview-banner").count() == 0
            report = pg.locator("main").inner_text()
            assert "the time ran out" in report
            item = pg.locator(f'.report-item[data-slug="{slug}"]')
            assert "passed" in item.inner_text() and "2 (1 submitted)" in item.inner_text()
            assert pg.locator(f'.report-item[data-slug="{slug}"] .followup-results .badge').first.inner_text() in (
                "right", "wrong")
            score = pg.get_by_test_id("interview-score").inner_text()
            pg.screenshot(path=str(ARTIFACTS / "interview-report.png"), full_page=True)

            # the history lists it, with its score
            pg.get_by_role("link", name="Your mock interviews").click()
            hist = pg.locator("#interview-history").inner_text()
            assert f"report #{sid}" in hist and score in hist
            b.close()
        assert not errors, errors
    finally:
        server.__exit__(None, None, None)
        interview.set_clock(None)
