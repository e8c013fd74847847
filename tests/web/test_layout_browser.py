"""The exercise page's layout and its error states in a real browser (Debian's chromium via
Playwright) at 1366x768 and 390x844, against uvicorn in a thread with a fake judge (the page is
under test, not the grader): two panes with a divider (mouse and keys, remembered), an editor
that fills its pane, the results drawer's tabs, the phone's Statement / Code / Result tabs, the
keyboard-shortcut list; a 331 KB paste, a non-UTF-8 file, Back after a search, and no sideways
scrolling at phone width. Screenshots go to artifacts/."""

from __future__ import annotations

import pytest

import browser_support as bs
from live_server import live_server
from browser_support import browser, errors  # noqa: F401 (fixtures)
import cohort_fakes
from inferprep.settings import Settings
from inferprep.web import create_app

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if bs.chromium_path() is None:
    pytest.skip(f"no chromium at {bs.CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SLUG = "sampling-order"
PAGE = f"/exercises/{SLUG}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("layout-browser"), grading_threads=1)
    with live_server(create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))) as base:
        yield base


def open_exercise(browser, site, errors, viewport=bs.DESKTOP):
    pg = bs.new_page(browser, site, viewport, errors)
    pg.goto(PAGE)
    pg.wait_for_function("window.inferprepEditor !== undefined")
    return pg


def set_code(pg, code: str) -> None:
    pg.evaluate("code => window.inferprepEditor.setValue(code)", code)


def grade_and_wait(pg, button: str, panel: str) -> None:
    """Click Run examples or Submit and wait for a finished verdict newer than any shown in ``panel``."""
    before = pg.evaluate(f"[...document.querySelectorAll('{panel} .verdict')].map(v => v.id)")
    pg.get_by_role("button", name=button, exact=True).click()
    pg.wait_for_function(f"""old => {{ const v = document.querySelector('{panel} .verdict');
                              return v && !old.includes(v.id) && v.dataset.state === 'done'; }}""", arg=before)


def selected_tab(pg, tablist: str) -> str:
    return pg.locator(f'{tablist} [role=tab][aria-selected=true]').inner_text()


def test_panes_divider_editor_drawer_and_shortcuts(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    # the page itself does not scroll; the statement scrolls inside its pane
    assert pg.evaluate("document.scrollingElement.scrollHeight <= window.innerHeight + 1")
    statement, editor = pg.locator("#pane-statement"), pg.locator("#pane-code")
    s_box, e_box = statement.bounding_box(), editor.bounding_box()
    assert s_box["x"] + s_box["width"] <= e_box["x"] and abs(s_box["y"] - e_box["y"]) < 2   # side by side
    pg.evaluate("document.getElementById('pane-statement').scrollTop = 400")
    assert pg.evaluate("document.getElementById('pane-statement').scrollTop") == 400
    assert pg.evaluate("window.scrollY") == 0 and editor.bounding_box()["y"] == e_box["y"]
    # the editor fills the space its pane leaves above the drawer
    host_h = pg.evaluate("document.getElementById('editor-host').clientHeight")
    cm_h = pg.evaluate("document.querySelector('.CodeMirror').offsetHeight")
    assert host_h > 250 and abs(cm_h - host_h) <= 2, (host_h, cm_h)

    # the divider: keys and a drag move it; the split is remembered
    divider = pg.get_by_role("separator")
    assert divider.get_attribute("aria-valuenow") == "50"
    divider.focus()
    for _ in range(3):
        pg.keyboard.press("ArrowRight")
    assert divider.get_attribute("aria-valuenow") == "56"
    assert statement.bounding_box()["width"] > s_box["width"] + 50
    d = divider.bounding_box()
    pg.mouse.move(d["x"] + d["width"] / 2, d["y"] + 100)
    pg.mouse.down()
    pg.mouse.move(bs.DESKTOP["width"] * 0.35, d["y"] + 120, steps=5)
    pg.mouse.up()
    after_drag = int(divider.get_attribute("aria-valuenow"))
    assert 30 <= after_drag <= 40
    host_h2 = pg.evaluate("document.getElementById('editor-host').clientHeight")
    assert abs(pg.evaluate("document.querySelector('.CodeMirror').offsetWidth")
               - pg.evaluate("document.getElementById('editor-host').clientWidth")) <= 2 and host_h2 > 250
    pg.reload()
    pg.wait_for_function("window.inferprepEditor !== undefined")
    assert pg.get_by_role("separator").get_attribute("aria-valuenow") == str(after_drag)

    # the drawer's tabs: Result first; arrows move between them and show one panel
    assert selected_tab(pg, ".drawer-tabs") == "Result"
    pg.get_by_role("tab", name="Result").focus()
    pg.keyboard.press("ArrowRight")
    assert selected_tab(pg, ".drawer-tabs") == "Examples"
    assert pg.locator("#panel-examples").is_visible() and not pg.locator("#panel-result").is_visible()
    pg.keyboard.press("End")
    assert selected_tab(pg, ".drawer-tabs") == "Scratch" and pg.locator("#panel-scratch").is_visible()
    pg.keyboard.press("Home")
    # Run examples lands in Examples, Submit in Result; each tab switches itself on
    set_code(pg, "# layout test: passes\n")
    grade_and_wait(pg, "Run examples", "#examples")
    assert selected_tab(pg, ".drawer-tabs") == "Examples"
    assert "public examples" in pg.locator("#examples .verdict h3").inner_text()
    assert pg.locator("#verdict .verdict").count() == 0
    grade_and_wait(pg, "Submit", "#verdict")
    assert selected_tab(pg, ".drawer-tabs") == "Result"
    assert "hidden cases" in pg.locator("#verdict .verdict h3").inner_text()
    assert pg.locator("#history tbody tr").count() == 2
    pg.screenshot(path=str(bs.ARTIFACTS / "layout-desktop.png"))

    # the keyboard shortcuts are listed: "?" outside the editor, and a button
    pg.locator("h1").click()
    pg.keyboard.press("?")
    dialog = pg.get_by_role("dialog", name="Keyboard shortcuts")
    assert dialog.is_visible() and "Submit" in dialog.inner_text() and "Ctrl" in dialog.inner_text()
    pg.keyboard.press("Escape")
    assert not dialog.is_visible()
    pg.locator(".CodeMirror").click()
    pg.keyboard.press("?")                         # typing in the editor is typing
    assert not dialog.is_visible() and "?" in pg.evaluate("window.inferprepEditor.getValue()")
    pg.get_by_role("button", name="Keyboard shortcuts (?)").click()
    assert dialog.is_visible()


def test_phone_tabs_statement_code_result(browser, site, errors):
    pg = open_exercise(browser, site, errors, viewport=bs.PHONE)
    tabs = pg.get_by_role("tablist", name="Exercise views")
    assert tabs.is_visible() and selected_tab(pg, ".phone-tabs") == "Code"
    assert pg.locator(".CodeMirror").is_visible() and not pg.locator("#pane-statement").is_visible()
    assert not pg.get_by_role("separator").is_visible()
    cm = pg.locator(".CodeMirror").bounding_box()
    assert cm["height"] > 400 and cm["width"] > 340      # the editor takes the screen
    pg.get_by_role("tab", name="Statement").click()
    assert pg.locator("#pane-statement").is_visible() and not pg.locator(".CodeMirror").is_visible()
    assert pg.locator("#pane-statement").get_attribute("role") == "tabpanel"
    pg.keyboard.press("ArrowRight")
    assert selected_tab(pg, ".phone-tabs") == "Code" and pg.locator(".CodeMirror").is_visible()
    assert bs.page_width(pg) <= bs.PHONE["width"]
    set_code(pg, "# phone: passes\n")
    grade_and_wait(pg, "Submit", "#verdict")
    assert selected_tab(pg, ".phone-tabs") == "Result"      # the verdict shows itself
    assert pg.locator("#verdict .verdict").is_visible() and not pg.locator(".CodeMirror").is_visible()
    pg.screenshot(path=str(bs.ARTIFACTS / "layout-phone-result.png"))
    assert bs.page_width(pg) <= bs.PHONE["width"]
    pg.get_by_role("tab", name="Code").click()
    assert pg.locator(".CodeMirror").is_visible()
    # the header is one compact row; its menu opens the navigation
    assert pg.locator("header.top").bounding_box()["height"] < 60
    assert not pg.get_by_role("link", name="Progress").is_visible()
    pg.get_by_role("button", name="Menu").click()
    assert pg.get_by_role("link", name="Progress").is_visible()


def test_a_331_kb_paste_is_refused_clearly(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    set_code(pg, "# before the paste: passes\n")
    grade_and_wait(pg, "Submit", "#verdict")
    assert "Passed" in pg.locator("#verdict [data-testid=outcome]").inner_text()
    grade_and_wait(pg, "Run examples", "#examples")
    huge = "# padding line for a large paste\n" * (331 * 1024 // 33)
    statuses: list[str] = []
    pg.expose_function("noteStatus", lambda t: statuses.append(t))
    pg.evaluate("""new MutationObserver(() => window.noteStatus(document.getElementById('save-status').textContent))
                   .observe(document.getElementById('save-status'), {childList: true, characterData: true, subtree: true})""")
    set_code(pg, huge)
    status = pg.locator("#save-status")
    pg.wait_for_function("document.getElementById('save-status').textContent.includes('too large')")
    assert "too large (limit 256 KiB; this is 331 KiB)" in status.inner_text() and "<" not in status.inner_text()
    # Submit and Run answer 413: their panels say so and the old "Passed" is gone
    pg.get_by_role("button", name="Submit", exact=True).click()
    pg.wait_for_function("document.querySelector('#verdict [role=alert]') !== null")
    verdict = pg.locator("#verdict").inner_text()
    assert "Not graded" in verdict and "limit" in verdict and "Passed" not in verdict and "<" not in verdict
    assert pg.locator("#verdict [role=alert]").get_attribute("data-status") == "413"
    pg.get_by_role("button", name="Run examples").click()
    pg.wait_for_function("document.querySelector('#examples [role=alert]') !== null")
    assert selected_tab(pg, ".drawer-tabs") == "Examples" and "Passed" not in pg.locator("#examples").inner_text()
    pg.wait_for_function("document.getElementById('save-status').textContent.includes('too large')")
    pg.screenshot(path=str(bs.ARTIFACTS / "layout-413.png"))
    assert not any("Saved with the submission" in s for s in statuses), statuses
    # the server still has the code from before the paste, and the paste is kept in this browser
    pg.reload()
    pg.wait_for_function("window.inferprepEditor !== undefined")
    pg.wait_for_function("document.getElementById('save-status').textContent.includes('too large')")
    assert pg.evaluate("window.inferprepEditor.getValue().length") == len(huge)
    set_code(pg, "# small again: passes\n")
    pg.wait_for_function("document.getElementById('save-status').textContent.startsWith('Draft saved')")
    grade_and_wait(pg, "Submit", "#verdict")
    assert status.inner_text() == "Saved with the submission"


NOT_UTF8 = b"def f():\n    return '\xff\xfe caf\xe9'\n"


def test_a_non_utf8_file_leaves_the_editor_unchanged(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    set_code(pg, "# mine\n")
    pg.evaluate("""bytes => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], 'latin1.py', {type: 'text/x-python'}));
        const target = document.querySelector('.CodeMirror-scroll');
        target.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true,
                                                     clientX: 700, clientY: 300}));
    }""", list(NOT_UTF8))
    pg.wait_for_function("document.getElementById('save-status').textContent.includes('not UTF-8')")
    assert "latin1.py is not UTF-8 text; the editor is unchanged" in pg.locator("#save-status").inner_text()
    assert pg.evaluate("window.inferprepEditor.getValue()") == "# mine\n"
    # the same through "Open a file…"; a UTF-8 file replaces the code as it is
    pg.locator("#code-file").set_input_files(files=[{"name": "upload.py", "mimeType": "text/x-python", "buffer": NOT_UTF8}])
    pg.wait_for_function("document.getElementById('save-status').textContent.includes('upload.py is not UTF-8')")
    assert pg.evaluate("window.inferprepEditor.getValue()") == "# mine\n"
    good = "# café: passes\n".encode()
    pg.locator("#code-file").set_input_files(files=[{"name": "good.py", "mimeType": "text/x-python", "buffer": good}])
    pg.wait_for_function("document.getElementById('save-status').textContent.startsWith('Draft saved')")
    assert pg.evaluate("window.inferprepEditor.getValue()") == good.decode()


def test_back_after_a_search_restores_the_filters(browser, site, errors):
    pg = bs.new_page(browser, site, bs.DESKTOP, errors)
    pg.goto("/exercises")
    search = pg.get_by_label("Search")
    search.fill("top")
    pg.wait_for_url("**/exercises?*q=top*")
    search.fill("min-p")
    pg.wait_for_url("**/exercises?*q=min-p*")
    pg.get_by_label("Track").select_option("decoding")
    pg.wait_for_url("**/exercises?*track=decoding*")
    pg.get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").click()
    pg.wait_for_url(f"**{PAGE}")
    track = pg.get_by_label("Track")
    for query, want in (("q=min-p&track=decoding", ("min-p", "decoding")),   # the page before
                        ("q=min-p&track=&", ("min-p", "")),                  # htmx's history entries
                        ("q=top&", ("top", ""))):
        pg.go_back(wait_until="commit")
        pg.wait_for_function("q => location.search.includes(q)", arg=query)
        pg.wait_for_function("() => document.querySelector('#results tbody tr') !== null")
        pg.wait_for_function("want => document.getElementById('q').value === want", arg=want[0])
        assert (search.input_value(), track.input_value()) == want
        assert pg.locator("#results").get_by_role("link", name="Temperature, top-k, top-p and min-p in a given order").is_visible()


def test_phone_width_pages_do_not_scroll_sideways(browser, site, errors):
    pg = open_exercise(browser, site, errors)
    set_code(pg, "# to unlock the editorial: passes\n")
    grade_and_wait(pg, "Submit", "#verdict")
    pg.close()
    pg = bs.new_page(browser, site, bs.PHONE, errors)
    for path in ("/", "/exercises", PAGE, f"{PAGE}/solution", "/progress"):
        pg.goto(path)
        width = bs.page_width(pg)
        pg.screenshot(path=str(bs.ARTIFACTS / f"phone390{path.replace('/', '_') or '_root'}.png"), full_page=True)
        assert width <= bs.PHONE["width"], f"{path} is {width}px wide on a {bs.PHONE['width']}px screen"
    assert pg.locator("header.top").bounding_box()["height"] < 60
