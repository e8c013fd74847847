import pytest

from runner_support import FIXTURE_CONTENT


@pytest.fixture
def fixture_content(monkeypatch):
    """Point the catalog at the small runner-fixture exercises (add-vectors, ring-sum)."""
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(FIXTURE_CONTENT))
    return FIXTURE_CONTENT
