"""Fake grade functions for the queue tests (importable by worker subprocesses through
``inferprep worker --grade-fn cohort_fakes:grade``): the queue is under test, not the judge.

The code of a fake submission says what to do: ``HANG`` blocks for a minute (the test kills the
worker), ``FAIL`` fails a case, anything else passes after ``SLEEP=<seconds>`` (default 0.05).
Every call appends ``start <marker>`` and ``end <marker>`` lines, with the pid, to the file named
by ``INFERPREP_FAKE_LOG``; ``<marker>`` is the code's first line.
"""

from __future__ import annotations

import os
import re
import time

from inferprep.verdict import CaseResult, Status, Verdict


def _log(event: str, code: str) -> None:
    path = os.environ.get("INFERPREP_FAKE_LOG")
    if path:
        with open(path, "a") as f:      # O_APPEND: whole lines from many processes
            f.write(f"{event} {code.splitlines()[0] if code else ''} {os.getpid()}\n")


def grade(exercise, code, *, device, public, progress, salt=None):
    _log("start", code)
    if "HANG" in code:
        time.sleep(60)
    m = re.search(r"SLEEP=([0-9.]+)", code)
    time.sleep(float(m.group(1)) if m else 0.05)
    ok = "FAIL" not in code
    cases = [CaseResult(name="first-case", passed=True, status=Status.PASSED, seconds=0.01),
             CaseResult(name="edge-case", passed=ok, status=Status.PASSED if ok else Status.WRONG_ANSWER,
                        message="" if ok else "row 0 differs", seconds=0.01)]
    for c in cases:
        progress(c)
    _log("end", code)
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


def graded(log_path) -> dict[str, int]:
    """marker -> number of finished gradings, from the log."""
    out: dict[str, int] = {}
    for line in open(log_path).read().splitlines():
        parts = line.split(" ")
        if parts[0] == "end":
            marker = " ".join(parts[1:-1])
            out[marker] = out.get(marker, 0) + 1
    return out
