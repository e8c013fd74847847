"""Feedback that teaches, in a real browser (Debian's chromium, Playwright, a real uvicorn): Run
examples with a wrong sampling-order shows the failing example's input, expected and got (with a
diff table of the differing elements), passes are folded under failures; Submit of the same
wrong variant shows a small counterexample. Screenshots go to artifacts/."""

from __future__ import annotations

from test_browser import ARTIFACTS, WRONG, browser, page, paste_into_editor, server, submit_and_wait  # noqa: F401

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def run_examples_and_wait(page) -> str:
    """Run the public examples; their verdict shows in the drawer's Examples tab (#examples)."""
    before = page.evaluate("[...document.querySelectorAll('.verdict')].map(v => v.id)")
    page.get_by_role("button", name="Run examples").click()
    handle = page.wait_for_function(
        """old => { const v = document.querySelector('#examples .verdict');
                    return v && !old.includes(v.id) && v.dataset.state === 'done' ? v.id : null; }""",
        arg=before, timeout=240_000)
    return page.locator(f"#{handle.json_value()}").get_attribute("data-status")


def test_examples_show_input_expected_and_got_and_submit_shows_a_counterexample(page):  # noqa: F811
    page.goto("/exercises/sampling-order")
    paste_into_editor(page, WRONG)
    assert run_examples_and_wait(page) == "wrong_answer"
    verdict = page.locator("#examples .verdict")
    failing = verdict.locator("table.cases tr.fail")
    assert failing.count() == 1 and "statement-example-temperature-last" in failing.inner_text()
    detail = verdict.locator("table.cases tr.fail + tr.detail-row [data-testid=case-detail]")
    assert "sampling_probs(" in detail.inner_text() and "order=" in detail.inner_text()   # the input, as called
    assert "0.880797" in detail.locator("[data-testid=expected]").inner_text()
    assert "[[1., 0., 0.]]" in detail.locator("[data-testid=got]").inner_text()
    assert "2 of 3 elements out of tolerance" in detail.locator("[data-testid=diff-summary]").inner_text()
    assert detail.locator("[data-testid=diff-table] tbody tr").count() == 2
    passes = verdict.locator("details[data-testid=passes]")
    assert not passes.evaluate("d => d.open") and "7 passed cases" in passes.locator("summary").inner_text()
    assert verdict.locator("[data-testid=counterexample]").count() == 0      # public examples: none searched
    verdict.screenshot(path=str(ARTIFACTS / "examples-input-expected-got.png"))

    assert submit_and_wait(page) == "wrong_answer"
    ce = page.locator("#verdict .verdict [data-testid=counterexample]")
    assert "A small input your code gets wrong" in ce.inner_text()
    assert "sampling_probs(" in ce.locator("[data-testid=case-detail]").inner_text()
    assert ce.locator("[data-testid=expected]").inner_text() != ce.locator("[data-testid=got]").inner_text()
    # failures come first: the first row of the verdict is a failing case
    assert "fail" in page.locator("#verdict .verdict table.cases tr").nth(1).get_attribute("class")
    ce.screenshot(path=str(ARTIFACTS / "submit-counterexample.png"))
    page.screenshot(path=str(ARTIFACTS / "submit-counterexample-page.png"), full_page=True)
