import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CONTENT = ROOT / "tests" / "fixtures" / "content"


@pytest.fixture
def fixture_content(monkeypatch):
    """Point the catalog at the small runner-fixture exercises (add-vectors, ring-sum)."""
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(FIXTURE_CONTENT))
    return FIXTURE_CONTENT


def sandbox_modes():
    from inferprep.runner.sandbox import bwrap_works
    modes = ["none"]
    if bwrap_works() or os.environ.get("INFERPREP_REQUIRE_BWRAP"):
        modes.insert(0, "bwrap")
    return modes
