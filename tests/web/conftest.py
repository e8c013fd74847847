"""Web fixtures: an app over a temp SQLite database, with a fake grade function (real gradings
are slow on a loaded machine; the browser test does the two real ones)."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app


class FakeJudge:
    """grade(): the code decides. ``PASS`` passes, ``BOOM`` makes the judge itself raise (a
    platform failure), ``WAIT`` blocks until ``release`` is set, anything else fails one case."""

    def __init__(self):
        self.calls: list[tuple[str, bool]] = []
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, exercise, code, *, device, public, progress, salt=None):
        with self.lock:
            self.calls.append((exercise.slug, public))
        if "BOOM" in code:
            raise RuntimeError("the fork server died")
        if "WAIT" in code:
            self.release.wait(30)
        ok = "PASS" in code
        cases = [CaseResult(name="first-case", passed=True, status=Status.PASSED, seconds=0.01),
                 CaseResult(name="tie-case", passed=ok, status=Status.PASSED if ok else Status.WRONG_ANSWER,
                            message="" if ok else "row 0: expected a tie group to be kept whole", seconds=0.02)]
        for c in cases:
            progress(c)
        return Verdict.from_cases(exercise.slug, cases, public=public, device=device, stdout="hello from stdout\n",
                                  sandbox="fake")


@pytest.fixture
def judge() -> FakeJudge:
    return FakeJudge()


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", grading_threads=2, device="auto", lease_seconds=30)


@pytest.fixture
def client(settings, judge):
    app = create_app(settings, grade=judge, devices=("cpu",))
    with TestClient(app) as c:
        yield c
