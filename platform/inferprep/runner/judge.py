"""Grade one submission of one exercise: the entry point the CLI, the web worker and tests use.

``grade(exercise, code, device="cpu", public=False) -> Verdict`` never raises for anything the
submission does; a failure of the platform itself (a broken grader, a sandbox that cannot start)
becomes ``Status.INTERNAL_ERROR``.
"""

from __future__ import annotations

import logging
import platform as _platform
import secrets
import threading
import time
import traceback
from typing import Callable

import numpy as np
import torch

from .. import __version__
from ..catalog import Exercise
from ..grading import CaseSelection, Grading, StopGrading, load_module
from ..grading import counterexample as ce_search
from ..verdict import INPUT_CHECKS, CaseResult, Counterexample, Status, Verdict
from . import sandbox
from .process import RunFailed, SubmissionProcess, load_submission
from .recording import WireRecorder

log = logging.getLogger("inferprep.judge")

OUTPUT_LIMIT_BYTES = 8 << 20


class DeviceUnavailable(RuntimeError):
    pass


def resolve_device(device: str, exercise: Exercise | None = None) -> str:
    """``cpu``, ``cuda`` or ``auto`` -> ``cpu`` | ``cuda``. Raises ``DeviceUnavailable`` or ValueError."""
    if device not in ("cpu", "cuda", "auto"):
        raise ValueError(f"device must be cpu, cuda or auto, not {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailable("CUDA was asked for but no CUDA device is available here (try --device cpu)")
    if exercise is not None and device not in exercise.meta.devices:
        raise DeviceUnavailable(f"{exercise.slug} is graded on {', '.join(exercise.meta.devices)} only")
    return device


def versions() -> dict[str, str]:
    return {"inferprep": __version__, "python": _platform.python_version(), "torch": torch.__version__,
            "numpy": np.__version__}


PLATFORM_RETRIES = 2
"""How many times a grading the platform failed (the sandbox could not start the child, the warm
pool's server died) is run again by itself, with the same salt, before the verdict is an internal
error. These retries are the platform's: they count against no limit of the student's."""


def grade(exercise: Exercise, code: str, *, device: str = "cpu", public: bool = False,
          sandbox_mode: str | None = None, progress: Callable[[CaseResult], None] | None = None,
          launcher=None, fail_fast: bool | str = False, salt: int | None = None,
          recorder: WireRecorder | None = None, cancel: threading.Event | None = None,
          counterexample: bool = True, perf: bool | None = None, perf_clock: Callable[[str], float] | None = None,
          perf_rule=None, cases: CaseSelection | None = None) -> Verdict:
    """Grade ``code`` against the exercise's hidden cases (or its public examples).

    ``fail_fast`` stops at the first failing case (the verdict then lists the cases run so far);
    ``progress`` is called with each case's result as it finishes; ``launcher`` replaces the
    default warm-pool launcher (``sandbox.launch`` is the cold path); ``salt`` is the grading's
    secret (``Grading.salt``, drawn fresh when None): the same code, salt and catalog replay the
    same hidden cases. Callers that keep a record (the web worker) store it server-side; it is
    never part of the verdict the student sees. ``recorder`` records what the grader sends to the
    child (``check-exercise``: a grader's cases must not depend on the submission's text).
    ``cancel``, once set (its owner cancelled the job), stops the grading: the child is killed
    within ``process.CANCEL_CHECK_S`` if a call is running, and no further case starts; the
    verdict then covers the cases finished so far, and the caller discards it.

    When a core hidden case fails and the grader defines ``counterexample(g, trial)``, a small fresh
    input the submission gets wrong is searched for after the hidden cases (``grading.counterexample``)
    and attached as ``verdict.counterexample``; ``counterexample=False`` withholds its content (a
    mock interview: the verdict then says only that one was found; grading again with the same salt
    and ``counterexample=True`` shows it).

    ``perf``: run the performance stage (``runner.perf``) after the core passed, for an exercise
    with ``perf = true``; None (the default) runs it on CUDA only (on CPU it costs seconds and its
    figures are noisy). ``perf_clock`` and ``perf_rule`` replace the stage's clock and stopping rule
    (tests). Its result is ``verdict.perf``; it never changes the verdict's status.

    ``cases`` (mutation testing): run only the hidden cases it names, and record what each case
    called (``grading.CaseSelection``).

    A run the platform failed is retried up to ``PLATFORM_RETRIES`` times with the same salt;
    ``progress`` then hears only of cases beyond those it has already been told of (the returned
    verdict is the whole truth)."""
    if exercise.unavailable:
        return Verdict(status=Status.INTERNAL_ERROR, slug=exercise.slug, public=public, device=device,
                       versions=versions(), message=f"{exercise.slug} cannot be graded on this install: "
                       f"{exercise.unavailable}")
    if "triton" in exercise.meta.requires:
        from .triton_source import check as check_triton_source
        refused = check_triton_source(code)
        if refused is not None:   # read here, in the parent: nothing the submission runs can change it
            return Verdict(status=Status.INVALID_SUBMISSION, slug=exercise.slug, public=public, device=device,
                           versions=versions(), message=refused)
    if salt is None:
        salt = secrets.randbits(63)
    shown = seen = 0  # cases told to ``progress`` so far; cases finished in this attempt

    def relay(case: CaseResult) -> None:
        nonlocal shown, seen
        seen += 1
        if progress is not None and seen > shown:
            shown += 1
            progress(case)
        if cancel is not None and cancel.is_set():
            raise StopGrading(case.name)   # a BaseException: no grader can swallow it

    wanted = (device == "cuda") if perf is None else perf
    perf_follows = bool(wanted and exercise.meta.perf and not public and not fail_fast)
    for attempt in range(PLATFORM_RETRIES + 1):
        seen = 0
        if recorder is not None:
            recorder.reset()  # a retried attempt records afresh
        verdict, failure = _grade_once(exercise, code, device=device, public=public, sandbox_mode=sandbox_mode,
                                       progress=relay, launcher=launcher, fail_fast=fail_fast, salt=salt,
                                       recorder=recorder, cancel=cancel,
                                       show_counterexample=counterexample, close_now=perf_follows,
                                       selection=cases)
        if failure is None or (cancel is not None and cancel.is_set()):
            break
        log.warning("grading %s: the platform failed (%s); attempt %d of %d", exercise.slug, failure,
                    attempt + 1, PLATFORM_RETRIES + 1)
    verdict.platform_retries = attempt
    if (perf_follows and verdict.status == Status.PASSED
            and not (cancel is not None and cancel.is_set())):
        from . import perf as perf_stage
        verdict.perf = perf_stage.run_stage(exercise, code, device=device, salt=salt, sandbox_mode=sandbox_mode,
                                            launcher=launcher, clock=perf_clock,
                                            rule=perf_rule or perf_stage.DEFAULT_RULE, cancel=cancel)
    return verdict


def _grade_once(exercise: Exercise, code: str, *, device: str, public: bool, sandbox_mode: str | None,
                progress, launcher, fail_fast: bool | str, salt: int,
                recorder: WireRecorder | None, cancel: threading.Event | None = None,
                show_counterexample: bool = True, close_now: bool = False,
                selection: CaseSelection | None = None) -> tuple[Verdict, str | None]:
    """One attempt: (the verdict, why the platform failed it or None). ``close_now``: every process
    of the child is gone when this returns (the perf stage follows)."""
    t0 = time.perf_counter()
    # One intra-op thread in the grading process: gradings run concurrently (web worker, tests),
    # and under load torch's default pool stalls float64 work in hosted simulators for 100-300 ms.
    torch.set_num_threads(1)
    meta = exercise.meta
    base = dict(slug=exercise.slug, public=public, device=device, versions=versions())
    try:
        mode = sandbox.sandbox_mode(sandbox_mode)
    except (RuntimeError, ValueError) as e:
        return Verdict(status=Status.INTERNAL_ERROR, message=str(e), **base), None
    base["sandbox"] = sandbox.describe(mode)
    grader_path = exercise.examples_path if public else exercise.grader_path
    try:
        grader = load_module(grader_path, f"_inferprep_grader_{exercise.module}{'_public' if public else ''}")
        if not callable(getattr(grader, "grade", None)):
            raise AttributeError(f"{grader_path.name} defines no grade(g)")
    except Exception as e:  # noqa: BLE001
        log.exception("cannot load grader %s", grader_path)
        return Verdict(status=Status.INTERNAL_ERROR, message=f"cannot load the grader: {type(e).__name__}: {e}", **base), None

    try:
        proc = SubmissionProcess(code, meta.entrypoints, time_s=meta.limits.time_s,
                                 memory_mib=meta.limits.memory_mib, device=device, mode=mode,
                                 output_bytes=OUTPUT_LIMIT_BYTES, launcher=launcher, recorder=recorder,
                                 forbidden=meta.forbidden, cancel=cancel, requires=meta.requires)
    except Exception as e:  # noqa: BLE001
        log.exception("cannot start the sandbox")
        msg = f"cannot start the sandbox: {e}"
        return Verdict(status=Status.INTERNAL_ERROR, message=msg, **base), msg

    base["sandbox"] += ", warm pool" if proc.child.extra.get("warm") else ", cold start"
    cases: list[CaseResult] = []
    found: Counterexample | None = None
    output_before_search: int | None = None
    try:
        run_status, message = load_submission(proc)
        if run_status is None:
            scopes = proc.hello.get("scopes") or []
            if scopes:
                base["sandbox"] += f" (per submission: {', '.join(scopes)})"
            if proc.gpu_cap is not None:
                from .cuda import describe_cap
                base["sandbox"] += f"; {describe_cap(proc.gpu_cap)}"
            g = Grading(proc, device=device, public=public, reference_path=exercise.reference_path,
                        progress=progress, fail_fast=fail_fast, salt=salt, selection=selection)
            try:
                grader.grade(g)
            except StopGrading:
                pass
            except RunFailed as e:  # a call outside any case
                run_status, message = e.status, str(e)
            except Exception as e:  # noqa: BLE001
                log.error("grader %s failed outside a case:\n%s", exercise.slug, traceback.format_exc())
                run_status, message = Status.INTERNAL_ERROR, f"the grader failed (not your fault): {type(e).__name__}: {e}"
            cases = g.results
            if cancel is not None and cancel.is_set() and run_status is None and proc.dead is None:
                message = f"the grading was cancelled after {len(cases)} case(s)"
            if g.internal:
                log.error("grader %s failed in a case:\n%s", exercise.slug, g.internal)
            if proc.dead is not None and run_status is None and (g.died_in != INPUT_CHECKS or proc.platform_failure):
                # a death inside an input-check case shows on that case and decides nothing
                run_status, message = proc.dead.status, str(proc.dead)
            search = getattr(grader, "counterexample", None)
            cancelled = cancel is not None and cancel.is_set()
            if (callable(search) and not public and not fail_fast and not cancelled and proc.dead is None and run_status is None
                    and any(c.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR) for c in cases if c.group != INPUT_CHECKS)):
                output_before_search = max(_size(proc.child.stdout_path), _size(proc.child.stderr_path))
                found = ce_search.search(g, search)  # after the verdict is decided: it changes nothing
                if found is not None and not show_counterexample:
                    found = Counterexample(withheld=True, attempts=found.attempts, seconds=found.seconds)
    finally:
        proc.close(wait=close_now)
    stdout, stderr = proc.stdout, proc.stderr
    written = max(proc.stdout_bytes, proc.stderr_bytes) if output_before_search is None else output_before_search
    if written >= OUTPUT_LIMIT_BYTES:
        run_status = Status.OUTPUT_LIMIT
        message = f"the submission wrote {OUTPUT_LIMIT_BYTES} bytes or more to stdout or stderr (the limit)"
    verdict = Verdict.from_cases(cases=cases, run_status=run_status, message=message, stdout=stdout,
                                 stderr=stderr, seconds=round(time.perf_counter() - t0, 4), counterexample=found,
                                 **base)
    failure = proc.platform_failure if verdict.status == Status.INTERNAL_ERROR else None
    return verdict, failure


def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
