"""The live verdict in a real browser (Debian's chromium via Playwright) against a real uvicorn: the
verdict arrives over the submission's event stream with no polling request, the stream closes
after it, a grading in progress shows a running elapsed-time counter and Cancel, and Cancel ends
it as "Cancelled". A fake judge grades (the page is under test, not the judge). Screenshots go
to artifacts/.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from live_server import live_server
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SLUG = "sampling-order"
NEW_DONE = """([old, state, panel]) => { const v = document.querySelector((panel || '#verdict') + ' .verdict');
                                  return v && !old.includes(v.id) && v.dataset.state === state; }"""


def fake_grade(exercise, code, *, device, public, progress, salt=None, cancel=None):
    """``HOLD`` grades until cancelled (a minute at most); anything else passes three quick cases."""
    if "HOLD" in code:
        cancel.wait(60)
        return Verdict.from_cases(exercise.slug, [], public=public, device=device)
    cases = []
    for i in range(3):
        time.sleep(0.1)
        cases.append(CaseResult(name=f"case-{i}", passed=True, status=Status.PASSED))
        progress(cases[-1])
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("live-browser"), grading_threads=2)
    with live_server(create_app(settings, grade=fake_grade, devices=("cpu",))) as base:
        yield base


def verdict_ids(pg) -> list[str]:
    return pg.evaluate("[...document.querySelectorAll('.verdict')].map(v => v.id)")


def test_verdict_pushed_without_polling_elapsed_counter_and_cancel(site):
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
                              args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--no-first-run"])
        pg = b.new_page(base_url=site, viewport={"width": 1366, "height": 900})
        pg.set_default_timeout(30_000)
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        requests: list[str] = []
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(f"/exercises/{SLUG}")
        pg.wait_for_function("window.inferprepEditor !== undefined")

        # Run examples (the drawer's Examples tab): the verdict arrives over the stream; nothing asks
        # for it again and again
        pg.evaluate("window.inferprepEditor.setValue('# quick\\n')")
        before = verdict_ids(pg)
        pg.get_by_role("button", name="Run examples").click()
        pg.wait_for_function(NEW_DONE, arg=[before, "done", "#examples"])
        assert pg.locator("#examples .verdict").get_attribute("data-status") == "passed"
        assert pg.locator("#examples .cases tbody tr").count() == 3
        pg.wait_for_timeout(1500)    # longer than the stream's retry (1 s): a stream left open would reconnect
        sid = pg.locator("#examples .verdict").get_attribute("id").removeprefix("verdict-")
        assert [u for u in requests if u.endswith(f"/submissions/{sid}/events")] == [f"{site}/submissions/{sid}/events"]
        assert not [u for u in requests if "/verdict" in u], "the page polled the verdict fragment"

        # Submit a grading that runs until cancelled: the counter runs, Cancel ends it
        pg.evaluate("window.inferprepEditor.setValue('# HOLD\\n')")
        before = verdict_ids(pg)
        pg.get_by_role("button", name="Submit", exact=True).click()
        pg.wait_for_function(NEW_DONE, arg=[before, "running"])
        counter = pg.locator("#verdict .elapsed")
        first = float(counter.inner_text().removesuffix(" s"))
        pg.wait_for_function("t => parseFloat(document.querySelector('#verdict .elapsed').textContent) > t + 0.3",
                             arg=first)
        cancel = pg.get_by_role("button", name="Cancel")
        assert cancel.is_visible()
        pg.screenshot(path=str(ARTIFACTS / "live-grading.png"))
        before = verdict_ids(pg)
        cancel.click()
        pg.wait_for_function("() => document.querySelector('#verdict .verdict').dataset.state === 'cancelled'")
        assert "This grading was cancelled" in pg.locator("#verdict .verdict").inner_text()
        assert "cancelled" in pg.locator("#history").inner_text().lower()
        pg.screenshot(path=str(ARTIFACTS / "live-cancelled.png"))
        assert not [u for u in requests if "/verdict" in u]
        b.close()
    assert not errors, errors
