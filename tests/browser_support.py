"""What the fast browser tests share: Debian's chromium through Playwright (the app is served by
``live_server.live_server``, in a thread, with a fake judge: no test waits on a real grading)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str | None:
    return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


@contextmanager
def chromium(playwright_sync) -> Iterator[object]:
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def new_page(browser, base: str, viewport: dict, errors: list[str], **context_args):
    """A page in a fresh context; uncaught JavaScript errors are appended to ``errors``."""
    ctx = browser.new_context(viewport=viewport, base_url=base, **context_args)
    pg = ctx.new_page()
    pg.set_default_timeout(20_000)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    return pg


def page_width(pg) -> int:
    """The page's scroll width in CSS pixels (more than the viewport: it scrolls sideways)."""
    return pg.evaluate("document.scrollingElement.scrollWidth")


# -- fixtures a test module takes by importing them: ``from browser_support import browser, errors``
@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api
    with chromium(sync_api) as b:
        yield b


@pytest.fixture
def errors():
    """Uncaught JavaScript errors of the test's pages (``new_page`` appends them); none allowed."""
    found: list[str] = []
    yield found
    assert not found, f"JavaScript errors on the page: {found}"
