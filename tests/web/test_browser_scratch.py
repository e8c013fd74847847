"""The Scratch panel in a real browser against a real uvicorn with the real sandboxed runner: type a
snippet that calls the editor's code as `solution`, run it, see its output; a snippet that raises
shows a traceback naming scratch.py and solution.py; the result is pushed over the run's event
stream (no polling request); the snippet survives a reload; nothing appears in the history.
Screenshot: artifacts/scratch-run.png."""

from __future__ import annotations

import re

import pytest

from test_browser import ARTIFACTS, CORRECT, GRADE_TIMEOUT_MS, browser, page, paste_into_editor, server  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

SNIPPET = ("import torch\n"
           "p = solution.sampling_probs(torch.tensor([[3.0, 2.0, 1.0]]), temperature=0.5, top_k=0, top_p=0.8)\n"
           "print('probs', p.tolist())\n")
RAISES = "print('before')\nsolution.sampling_probs(None, 1.0, 0, 1.0)\n"


def type_snippet(page, text: str) -> None:
    page.get_by_role("tab", name="Scratch").click()            # the drawer's Scratch tab
    page.get_by_label("Python that calls your code").fill(text)


def run_scratch(page) -> str:
    page.get_by_role("button", name="Run scratch").click()     # the click clears data-status at once
    page.wait_for_function("document.getElementById('scratch').dataset.status", timeout=GRADE_TIMEOUT_MS)
    return page.locator("#scratch").get_attribute("data-status")


def test_a_scratch_run_in_the_browser(page, server):  # noqa: F811
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto("/exercises/sampling-order")
    paste_into_editor(page, CORRECT)
    type_snippet(page, SNIPPET)
    assert run_scratch(page) == "ok", page.locator("#scratch").inner_text()
    assert page.get_by_test_id("scratch-output").inner_text().strip() == "probs [[1.0, 0.0, 0.0]]"
    assert "not graded" in page.locator("#scratch-status").inner_text()
    page.locator("#scratch").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "scratch-run.png"))

    type_snippet(page, RAISES)
    assert run_scratch(page) == "runtime_error"
    assert page.get_by_test_id("scratch-output").inner_text().strip() == "before"
    trace = page.locator("#scratch-error").inner_text()
    assert 'File "scratch.py", line 2' in trace and 'File "solution.py"' in trace and "/tmp" not in trace

    # each run: one POST, then one event stream that ends with the result; nothing polls
    page.wait_for_timeout(1500)     # longer than the stream's retry (1 s): a stream left open would reconnect
    scratch = [re.sub(r"^https?://[^/]+", "", u) for u in requests if "/api/scratch/" in u]
    assert len(scratch) == 2 and all(re.fullmatch(r"/api/scratch/\d+/events", u) for u in scratch), scratch
    assert len(set(scratch)) == 2                                 # one stream per run, never reopened

    page.reload()                                           # the snippet is kept per exercise
    page.get_by_role("tab", name="Scratch").click()
    assert page.get_by_label("Python that calls your code").input_value() == RAISES
    assert "No submissions yet" in page.locator("#history").inner_text()   # scratch runs are not submissions
