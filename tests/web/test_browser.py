"""A real browser (Debian's chromium, driven by Playwright) against a real uvicorn.

Open the list, open sampling-order, paste the correct solution into the CodeMirror editor the
way a user would (clipboard + Ctrl+V), Submit, see the pass, reload, see the progress; then a
wrong solution shows its failing case. Also a phone-width layout and basic accessibility checks
(labels, focus, contrast). Screenshots go to artifacts/ (gitignored). Set
INFERPREP_UPDATE_SCREENSHOT=1 to refresh docs/screenshot-exercise-pass.png.

Grading is slow on a loaded machine (a hidden run of sampling-order takes 5-30 s), so the
waits are generous and only two real gradings happen.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from inferprep.wrong_variants import source_of

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
GRADE_TIMEOUT_MS = 240_000

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

CORRECT = (ROOT / "reference" / "sampling_order.py").read_text(encoding="utf-8")
WRONG = source_of("sampling_order", "ignores_order")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    data = tmp_path_factory.mktemp("browser-data")
    env = dict(os.environ, INFERPREP_DATA_DIR=str(data), INFERPREP_GRADING_THREADS="2")
    env.pop("INFERPREP_DATABASE_URL", None)
    log = open(data / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-c", "from inferprep.cli import app; app()", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--data-dir", str(data)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if urllib.request.urlopen(base + "/healthz", timeout=2).read() == b"ok":
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the server did not start:\n" + (data / "server.log").read_text(errors="replace")[-3000:])
        time.sleep(0.3)
    yield base
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
                              args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1366, "height": 900}, base_url=server)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def paste_into_editor(page, code: str) -> None:
    """Select everything in the editor and paste ``code`` from the clipboard, as a person would."""
    page.wait_for_function("window.inferprepEditor !== undefined")
    page.evaluate("text => navigator.clipboard.writeText(text)", code)
    page.locator(".CodeMirror").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Control+V")
    got = page.evaluate("window.inferprepEditor.getValue()")
    if got.strip() != code.strip():   # a clipboard denied by the platform: type it in as input events
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(code)
        got = page.evaluate("window.inferprepEditor.getValue()")
    assert got.strip() == code.strip()


def submit_and_wait(page, keys: str | None = None, panel: str = "#verdict") -> str:
    """Click Submit (or press ``keys`` in the editor) and wait for the new submission's verdict
    in ``panel`` (#verdict: Result; #examples: Examples); the page may show an older one."""
    before = page.evaluate("[...document.querySelectorAll('.verdict')].map(v => v.id)")
    if keys:
        page.locator(".CodeMirror").click()
        page.keyboard.press(keys)
    else:
        page.get_by_role("button", name="Submit", exact=True).click()
    handle = page.wait_for_function(
        """([old, panel]) => { const v = document.querySelector(panel + ' .verdict');
                    return v && !old.includes(v.id) && v.dataset.state === 'done' ? v.id : null; }""",
        arg=[before, panel], timeout=GRADE_TIMEOUT_MS)
    return page.locator(f"#{handle.json_value()}").get_attribute("data-status")


def test_solve_sampling_order_in_the_browser(page, server):
    page.goto("/exercises")
    assert page.get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").is_visible()
    total = page.locator("#results tbody tr").count()
    page.get_by_label("Search").fill("min-p")                        # the list filters as you type (htmx)
    page.wait_for_function(f"document.querySelectorAll('#results tbody tr').length < {total}")
    page.get_by_label("Track").select_option("decoding")
    page.wait_for_url("**/exercises?*track=decoding*")
    page.get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").click()
    page.wait_for_url("**/exercises/sampling-order")
    page.wait_for_function("document.querySelector('.katex') !== null")   # math rendered by KaTeX
    paste_into_editor(page, CORRECT)
    status = submit_and_wait(page)
    page.screenshot(path=str(ARTIFACTS / "exercise-pass.png"))
    assert status == "passed", page.locator(".verdict").first.inner_text()
    assert "Passed" in page.locator("[data-testid=outcome]").inner_text()
    assert page.locator("table.cases tr.ok").count() > 5 and page.locator("table.cases tr.fail").count() == 0
    assert "solved" in page.locator("h1 .badge").inner_text()          # the title's badge updates live
    if os.environ.get("INFERPREP_UPDATE_SCREENSHOT"):
        page.evaluate("document.getElementById('pane-statement').scrollTo(0, 0); window.inferprepEditor.scrollTo(0, 0)")
        page.screenshot(path=str(ROOT / "docs" / "screenshot-exercise-pass.png"))

    page.reload()
    assert "solved" in page.locator("h1 .badge").inner_text()
    assert page.evaluate("window.inferprepEditor.getValue()").strip() == CORRECT.strip()   # the draft survived
    assert page.get_by_role("link", name="Read the editorial and the reference solution").is_visible()
    page.get_by_role("link", name="Read the editorial and the reference solution").click()
    assert page.get_by_role("heading", name="Reference solution").is_visible()
    page.goto("/progress")
    assert "1 of" in page.locator(".lead").inner_text()
    page.goto("/")
    assert page.locator(".lead strong").inner_text() == "1"
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)


def test_a_wrong_solution_shows_its_failing_case(page, server):
    page.goto("/exercises/sampling-order")
    paste_into_editor(page, WRONG)
    page.wait_for_function("document.getElementById('save-status').textContent.startsWith('Draft saved')")
    page.reload()                                                      # the autosaved draft comes back
    page.wait_for_function("window.inferprepEditor !== undefined")
    assert page.evaluate("window.inferprepEditor.getValue()").strip() == WRONG.strip()
    status = submit_and_wait(page)
    page.screenshot(path=str(ARTIFACTS / "exercise-wrong.png"), full_page=True)
    assert status == "wrong_answer", page.locator(".verdict").first.inner_text()
    failing = page.locator("table.cases tr.fail")
    assert failing.count() >= 1
    assert "order" in failing.first.inner_text().lower() or failing.first.locator("pre.msg").inner_text()
    # Ctrl+Enter in the editor runs the public examples; their result shows in the Examples tab
    submit_and_wait(page, keys="Control+Enter", panel="#examples")
    assert "public examples" in page.locator("#examples .verdict h3").inner_text()
    assert page.get_by_role("tab", name="Examples").get_attribute("aria-selected") == "true"


def test_phone_width_layout(browser, server):
    ctx = browser.new_context(viewport={"width": 375, "height": 812}, base_url=server, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    try:
        for path in ("/", "/exercises", "/exercises/sampling-order", "/progress"):
            pg.goto(path)
            overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{path} scrolls sideways by {overflow}px at phone width"
            pg.screenshot(path=str(ARTIFACTS / f"phone{path.replace('/', '_') or '_root'}.png"), full_page=True)
        pg.goto("/exercises/sampling-order")
        box = pg.locator(".CodeMirror").bounding_box()
        assert box and box["width"] <= 375 and box["width"] > 300    # the editor takes the width, below the statement
    finally:
        ctx.close()


A11Y_JS = r"""
() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push('html has no lang');
  const name = el => (el.getAttribute('aria-label') || (el.labels && [...el.labels].map(l => l.textContent).join(' '))
                      || (el.getAttribute('aria-labelledby') && document.getElementById(el.getAttribute('aria-labelledby'))?.textContent)
                      || (el.tagName === 'BUTTON' ? el.textContent : '') || el.getAttribute('title') || '').trim();
  for (const el of document.querySelectorAll('input, select, textarea, button')) {
    if (el.type === 'hidden' || el.closest('[aria-hidden=true]')) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    if (el.offsetParent === null && style.position !== 'fixed' && el.tagName !== 'TEXTAREA') continue;
    if (!name(el)) problems.push('no accessible name: ' + el.outerHTML.slice(0, 120));
  }
  for (const el of document.querySelectorAll('svg[role=img]'))
    if (!el.getAttribute('aria-label')) problems.push('chart without a text alternative');
  for (const a of document.querySelectorAll('a')) if (!a.textContent.trim() && !a.getAttribute('aria-label')) problems.push('empty link');
  // contrast (WCAG AA 4.5:1) of the text in every visible element that has its own text
  const rgb = s => s.match(/[\d.]+/g).map(Number);
  const lum = ([r, g, b]) => { const f = c => (c /= 255) <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
                               return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                         if (c.length < 4 || c[3] > 0.5) return c.slice(0, 3); } return [255, 255, 255]; };
  let checked = 0;
  for (const el of document.querySelectorAll('body *')) {
    if (!el.offsetParent || el.closest('svg, .CodeMirror, .katex, pre.highlight')) continue;
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const st = getComputedStyle(el);
    const fg = rgb(st.color), bg = bgOf(el);
    const [l1, l2] = [lum(fg.slice(0, 3)), lum(bg)].sort((a, b) => b - a);
    const ratio = (l1 + 0.05) / (l2 + 0.05);
    checked++;
    if (ratio < 4.5) problems.push(`contrast ${ratio.toFixed(2)} < 4.5: <${el.tagName.toLowerCase()} class="${el.className}"> ${el.textContent.trim().slice(0, 40)}`);
  }
  return {problems, checked};
}
"""


def test_basic_accessibility(page, server):
    for path in ("/", "/exercises", "/exercises/sampling-order", "/progress"):
        page.goto(path)
        res = page.evaluate(A11Y_JS)
        assert res["checked"] > 10
        assert res["problems"] == [], f"{path}: {res['problems'][:10]}"
    # focus: Tab from the top reaches the skip link first, and it shows a focus ring
    page.goto("/exercises/sampling-order")
    page.keyboard.press("Tab")
    focused = page.evaluate("[document.activeElement.className, getComputedStyle(document.activeElement).outlineStyle,"
                            " document.activeElement.getBoundingClientRect().left]")
    assert focused[0] == "skip" and focused[1] != "none" and focused[2] >= 0
    page.keyboard.press("Tab")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    # the editor is reachable and named, and Escape leaves it for the buttons
    page.locator(".CodeMirror").click()
    assert "Code editor" in page.evaluate("document.activeElement.getAttribute('aria-label')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "run-btn"
