"""Cancel reaches the sandboxed child: a submission asleep inside a call (it uses no CPU, so only
the wall-clock backstop would end it) is killed when the grading's cancel event is set, the
grading stops at that case, and the verdict says it was cancelled, not that a limit was hit."""

from __future__ import annotations

import threading

import pytest

from runner_support import sandbox_modes
from inferprep import catalog
from inferprep.runner import forkserver, judge, sandbox
from inferprep.runner.process import drain_cleanups

# The first call answers; the second sleeps "forever" (the fixture's wall backstop is 12 s).
SLEEPS_ON_THE_SECOND_CALL = """\
import time
calls = 0


def add(x, y):
    global calls
    calls += 1
    if calls > 1:
        time.sleep(10_000)
    return x + y
"""


@pytest.mark.parametrize("path", ["warm", "cold"])
def test_cancel_kills_a_sleeping_child_and_stops_the_grading(fixture_content, path):
    ex = catalog.get("add-vectors")
    cancel = threading.Event()
    timers: list[threading.Timer] = []

    def progress(case):
        if not timers:      # after the first case: cancel while the second call sleeps
            timers.append(threading.Timer(0.3, cancel.set))
            timers[0].start()

    launcher = forkserver.launch if path == "warm" else sandbox.launch
    try:
        v = judge.grade(ex, SLEEPS_ON_THE_SECOND_CALL, sandbox_mode=sandbox_modes()[0], launcher=launcher,
                        progress=progress, cancel=cancel)
    finally:
        for t in timers:
            t.cancel()
        drain_cleanups()
    assert [c.name for c in v.cases] == ["random-1", "random-7"]     # the third case never started
    assert v.cases[0].passed and "the grading was cancelled" in v.cases[1].message
    assert "the grading was cancelled" in v.message and "wall-clock" not in v.message
    assert v.platform_retries == 0                                   # a cancel is never retried


def test_a_cancel_between_cases_starts_no_further_case(fixture_content):
    ex = catalog.get("add-vectors")
    cancel = threading.Event()
    v = judge.grade(ex, "def add(x, y):\n    return x + y\n", sandbox_mode=sandbox_modes()[0],
                    progress=lambda case: cancel.set(), cancel=cancel)
    drain_cleanups()
    assert [c.name for c in v.cases] == ["random-1"] and "the grading was cancelled" in v.message
