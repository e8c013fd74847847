"""Scratch runs: a few lines of the user's own that call their solution and print, like
LeetCode's custom test case. Never graded: no grader, reference or hidden data takes part.

``run(exercise, code, snippet, device="cpu") -> ScratchResult``: the sandboxed child loads the
submission from its file exactly as for a grading (same sandbox, seccomp filter, audit hook, and
the exercise's time, memory and output limits), then executes the snippet there in fresh globals
holding only ``solution``, the submission's module. Like ``judge.grade`` it never raises for
anything the code does; a failure of the platform is an ``internal_error`` result, retried up to
``judge.PLATFORM_RETRIES`` times first.
"""

from __future__ import annotations

import logging
import time

from ..catalog import Exercise
from ..verdict import SCRATCH_OK, ScratchResult, Status
from . import sandbox
from .harness import SHOWN_NAME, SUBMISSION_FILE
from .judge import OUTPUT_LIMIT_BYTES, PLATFORM_RETRIES, load_submission
from .process import RunFailed, SubmissionProcess, SubmissionRaised, reported_cpu

log = logging.getLogger("inferprep.scratch")

def run(exercise: Exercise, code: str, snippet: str, *, device: str = "cpu", sandbox_mode: str | None = None,
        launcher=None) -> ScratchResult:
    """Run ``snippet`` against ``code`` (the submission) on ``device`` (cpu | cuda, already resolved:
    ``judge.resolve_device``). ``sandbox_mode`` and ``launcher`` as in ``judge.grade``.

    The result's ``status`` is ``ok`` when the snippet ran to its end; otherwise the submission was
    invalid, or the snippet or the submission's import raised, or a limit stopped the child
    (``cpu_s`` against ``time_limit_s``, in seconds)."""
    for attempt in range(PLATFORM_RETRIES + 1):
        result, failure = _run_once(exercise, code, snippet, device=device, sandbox_mode=sandbox_mode,
                                    launcher=launcher)
        if failure is None:
            break
        log.warning("scratch run of %s: the platform failed (%s); attempt %d of %d", exercise.slug, failure,
                    attempt + 1, PLATFORM_RETRIES + 1)
    return result


def _run_once(exercise: Exercise, code: str, snippet: str, *, device: str, sandbox_mode: str | None,
              launcher) -> tuple[ScratchResult, str | None]:
    """One attempt: (the result, why the platform failed it or None)."""
    t0 = time.perf_counter()
    limits = exercise.meta.limits
    base = dict(slug=exercise.slug, device=device, time_limit_s=limits.time_s)
    try:
        mode = sandbox.sandbox_mode(sandbox_mode)
    except (RuntimeError, ValueError) as e:
        return ScratchResult(status=Status.INTERNAL_ERROR.value, message=str(e), **base), None
    base["sandbox"] = sandbox.describe(mode)
    try:
        proc = SubmissionProcess(code, exercise.meta.entrypoints, time_s=limits.time_s,
                                 memory_mib=limits.memory_mib, device=device, mode=mode,
                                 output_bytes=OUTPUT_LIMIT_BYTES, launcher=launcher,
                                 forbidden=exercise.meta.forbidden, requires=exercise.meta.requires)
    except Exception as e:  # noqa: BLE001
        log.exception("cannot start the sandbox")
        msg = f"cannot start the sandbox: {e}"
        return ScratchResult(status=Status.INTERNAL_ERROR.value, message=msg, **base), msg
    base["sandbox"] += ", warm pool" if proc.child.extra.get("warm") else ", cold start"
    rename = _renamer(proc.child.extra.get("workdir"))
    cpu, tb = 0.0, ""
    try:
        status, message = load_submission(proc)
        if status is None:
            try:
                cpu = proc.run_scratch(snippet)
            except SubmissionRaised as e:
                status, message, tb, cpu = Status.RUNTIME_ERROR, str(e), e.traceback, reported_cpu(e.info)
            except RunFailed as e:
                status, message = e.status, str(e)
    finally:
        proc.close()
    if max(proc.stdout_bytes, proc.stderr_bytes) >= OUTPUT_LIMIT_BYTES:
        status = Status.OUTPUT_LIMIT
        message = f"your code wrote {OUTPUT_LIMIT_BYTES} bytes or more to stdout or stderr (the limit)"
    result = ScratchResult(status=status.value if status is not None else SCRATCH_OK, message=rename(message),
                           traceback=rename(tb), stdout=rename(proc.stdout), stderr=rename(proc.stderr),
                           cpu_s=round(max(cpu, proc.cpu_used), 4), seconds=round(time.perf_counter() - t0, 4),
                           **base)
    failure = proc.platform_failure if status == Status.INTERNAL_ERROR else None
    return result, failure


def _renamer(workdir: str | None):
    """A function that names the child's copy of the submission ``solution.py`` in a text (the child
    compiles it under that name already; this catches the path wherever else it shows, e.g. a
    printed ``__file__``)."""
    if not workdir:
        return lambda text: text
    path = f"{workdir.rstrip('/')}/{SUBMISSION_FILE}"
    return lambda text: text.replace(path, SHOWN_NAME)
