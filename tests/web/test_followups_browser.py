"""Follow-up questions in a real browser (Debian's chromium, Playwright, a real uvicorn in a thread,
a fake judge): after a pass the Result drawer shows the panel; an order question is answered with
the up/down buttons (no drag), a choice question by its radio button, each answer by htmx, with the
verdict, the explanation and the sources; without JavaScript the typed order and a plain form work."""

from __future__ import annotations

import pytest

from browser_support import DESKTOP, browser, errors, new_page  # noqa: F401
from inferprep import catalog, followups
from inferprep.models import LOCAL_USER_ID
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app
from live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
SLUG = "scheduler-loop"


def fake_grade(exercise, code, *, device, public, progress, salt=None):
    ok = "PASS" in code
    c = CaseResult(name="only-case", passed=ok, status=Status.PASSED if ok else Status.WRONG_ANSWER)
    progress(c)
    return Verdict.from_cases(exercise.slug, [c], public=public, device=device, sandbox="fake")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("fu-browser"), grading_threads=1),
                     grade=fake_grade, devices=("cpu",))
    with live_server(app) as url:
        yield url


def solve(pg) -> None:
    """A passing submission through the API (the fake judge passes "PASS"), waited for."""
    r = pg.request.post(f"/api/exercises/{SLUG}/submissions", data={"code": "# PASS\n", "kind": "submit"})
    assert r.status == 202
    for _ in range(400):
        d = pg.request.get(f"/api/submissions/{r.json()['id']}").json()
        if d["state"] == "done":
            assert d["passed"]
            return
        pg.wait_for_timeout(50)
    raise AssertionError("the submission was not graded")


def test_answer_follow_ups_with_buttons(browser, base, errors):  # noqa: F811
    pg = new_page(browser, base, DESKTOP, errors)
    pg.goto(f"/exercises/{SLUG}")
    assert pg.locator("[data-testid=followups]").count() == 0
    solve(pg)
    pg.goto(f"/exercises/{SLUG}")
    panel = pg.locator("#followups [data-testid=followups]")
    assert "first answer to each question counts" in panel.inner_text()
    q = next(q for q in followups.load(catalog.get(SLUG).folder) if q.id == "step-order")
    item = pg.locator("#fu-step-order")
    assert item.locator("[data-fu-move]").count() == 2 * len(q.items)     # the script added the buttons
    target = [q.items[i] for i in q.answer]
    for pos, text in enumerate(target):                                   # move each into place with "up"
        while True:
            shown = [li.split("\n")[0] for li in item.locator("ol[data-fu-order] > li").all_inner_texts()]
            at = next(i for i, t in enumerate(shown) if text in t)
            if at == pos:
                break
            item.get_by_role("button", name=f"Move up: {item.locator('ol[data-fu-order] > li').nth(at).get_attribute('data-label')} {text}").click()
    shown_order = followups.display_order(LOCAL_USER_ID, SLUG, q)
    want = ",".join(str(shown_order.index(i) + 1) for i in q.answer)
    assert item.locator("[data-fu-order-field]").input_value() == want
    item.get_by_role("button", name="Submit answer").click()
    verdict = pg.locator("#fu-step-order [data-testid=followup-verdict]")
    verdict.wait_for()
    assert "Right" in verdict.inner_text()
    assert pg.locator("#fu-step-order [data-testid=followup-sources] a").count() >= 1
    # a wrong choice: the verdict names the right answer, the explanation shows
    single = pg.locator("#fu-pool-runs-dry")
    single.get_by_label("Fails the request that asked for the block with an out-of-memory error").check()
    single.get_by_role("button", name="Submit answer").click()
    pg.locator("#fu-pool-runs-dry [data-testid=followup-verdict]").wait_for()
    text = pg.locator("#fu-pool-runs-dry").inner_text()
    assert "Wrong" in text and "the answer: Preempts the most recently admitted" in text and "recompute" in text
    pg.screenshot(path=str(__import__("browser_support").ARTIFACTS / "followups.png"), full_page=True)
    # after a reload the answers stay, and there is no form to answer again
    pg.reload()
    assert pg.locator("#fu-pool-runs-dry form").count() == 0 and "Wrong" in pg.locator("#fu-pool-runs-dry").inner_text()


def test_without_javascript_plain_forms_and_the_typed_order_work(browser, base, errors):  # noqa: F811
    pg = new_page(browser, base, DESKTOP, errors, java_script_enabled=False)
    solve(pg)      # (local mode has one user: the other test may have passed already)
    pg.goto(f"/exercises/{SLUG}/followups")
    qs = {q.id: q for q in followups.load(catalog.get(SLUG).folder)}
    box = pg.locator("#fu-fewer-preemptions")
    for i in qs["fewer-preemptions"].answer:
        box.get_by_label(qs["fewer-preemptions"].choices[i]).check()
    box.get_by_role("button", name="Submit answer").click()
    pg.wait_for_url(f"**/exercises/{SLUG}/followups*")
    assert "Right" in pg.locator("#fu-fewer-preemptions [data-testid=followup-verdict]").inner_text()
    order = pg.locator("#fu-step-order")
    if order.locator("[data-testid=followup-verdict]").count() == 0:     # not answered in the other test
        assert order.locator("[data-fu-move]").count() == 0             # no buttons without JavaScript
        q = qs["step-order"]
        shown = followups.display_order(LOCAL_USER_ID, SLUG, q)
        order.locator("[data-fu-order-field]").fill(",".join(str(shown.index(i) + 1) for i in q.answer))
        order.get_by_role("button", name="Submit answer").click()
        pg.wait_for_url(f"**/exercises/{SLUG}/followups*")
    assert "Right" in pg.locator("#fu-step-order [data-testid=followup-verdict]").inner_text()
