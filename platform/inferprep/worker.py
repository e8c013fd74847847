"""Grading workers: threads that pull jobs from the database queue and grade them.

``serve`` runs an embedded ``Worker`` (a few threads in the web process); issue 5's
``inferprep worker`` runs the same class on other machines against a shared database. The grade
function is injectable (tests pass a fake one); by default it is ``runner.judge.grade``, which
is thread-safe and never raises for a submission's fault. Should it raise anyway (the platform
failed), the job ends as an internal error, which the user can retry.

A job of kind ``scratch`` runs the user's snippet instead (``runner.scratch.run``, injectable
too) and is recorded as a ``ScratchResult``.

Each grading gets a fresh salt (``secrets.randbits(63)``, the grading's secret from which the
grader derives its hidden data), stored on the submission row with the claim, before grading,
and passed to the grade function: ``inferprep admin replay`` re-runs the same hidden cases. A
grade function without a ``salt`` parameter (an old test fake) is called without one.

Wake-ups (``notify``): the worker sleeps until its hub announces a job (``JOBS``: in-process from
the web's enqueue, or relayed from PostgreSQL's NOTIFY by a ``notify.PgListener``), with a slow
safety poll (``poll_s``) for a lost notification and for expired leases. Each grading gets a
``cancel`` event, set when its owner cancels the job (``CANCEL``), when a progress write finds
the job no longer this worker's, or when a heartbeat does; the judge then kills the child and
stops at once (a grade function without a ``cancel`` parameter runs to its end, and its result
is dropped like any result of a job that is no longer this worker's). Every change of a job is
published on the hub (``SUBMISSION``), which wakes the event streams of the same process.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable

from sqlmodel import select

from . import catalog, notify, queue
from .db import session_scope
from .models import JobState, Submission, SubmissionKind
from .verdict import CaseResult, ScratchResult, Status, Verdict

log = logging.getLogger("inferprep.worker")

GradeFn = Callable[..., Verdict]  # grade(exercise, code, *, device, public, progress, salt, cancel) -> Verdict
ScratchFn = Callable[..., ScratchResult]  # scratch(exercise, code, snippet, *, device) -> ScratchResult


def default_grade(exercise: catalog.Exercise, code: str, *, device: str, public: bool,
                  progress: Callable[[CaseResult], None], salt: int | None = None,
                  cancel: threading.Event | None = None, counterexample: bool = True) -> Verdict:
    from .runner import judge
    return judge.grade(exercise, code, device=device, public=public, progress=progress, salt=salt, cancel=cancel,
                       counterexample=counterexample)


def default_scratch(exercise: catalog.Exercise, code: str, snippet: str, *, device: str) -> ScratchResult:
    from .runner import scratch
    return scratch.run(exercise, code, snippet, device=device)


def new_salt() -> int:
    """A grading's salt: 63 random bits (fits PostgreSQL's signed BIGINT)."""
    return secrets.randbits(63)


def takes(fn: GradeFn, name: str, *, via_kwargs: bool = True) -> bool:
    """Whether ``fn`` accepts the keyword ``name``: a parameter of that name, or (``via_kwargs``)
    ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or (via_kwargs and p.kind is inspect.Parameter.VAR_KEYWORD) for p in params)


def takes_salt(fn: GradeFn) -> bool:
    """Whether ``fn`` accepts ``salt=`` (a parameter of that name, or ``**kwargs``)."""
    return takes(fn, "salt")


def embedded_prefix() -> str:
    return f"{socket.gethostname()}:embedded:"


def embedded_worker_alive(worker: str) -> bool:
    """Whether the process behind an embedded worker name (``host:embedded:PID:thread``) on this
    host still runs (another uvicorn process of the same server). Our own pid counts as dead:
    a fresh start has no jobs in flight yet."""
    try:
        pid = int(worker.removeprefix(embedded_prefix()).split(":")[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Worker:
    """``threads`` grading threads over the queue at ``db_url``; ``wake()`` after an enqueue.

    ``hub`` carries the wake-ups (a private one if None); ``poll_s`` is the safety poll, in
    seconds, of a thread that found the queue empty."""

    def __init__(self, db_url: str, *, threads: int = 2, name: str | None = None,
                 devices: tuple[str, ...] = ("cpu",), lease_s: float = 120.0, max_attempts: int = 2,
                 grade: GradeFn | None = None, scratch: ScratchFn | None = None,
                 poll_s: float = notify.SAFETY_POLL_S, hub: notify.Hub | None = None):
        self.db_url, self.threads, self.devices = db_url, threads, devices
        self.name = name or f"{embedded_prefix()}{os.getpid()}"
        self.lease_s, self.max_attempts, self.poll_s = lease_s, max_attempts, poll_s
        self.grade = grade or default_grade
        self.scratch = scratch or default_scratch
        self._salted = takes_salt(self.grade)
        # only a parameter named ``cancel`` counts: a wrapper's **kwargs may well forward to a
        # grade function that has none (a test's fake)
        self._cancellable = takes(self.grade, "cancel", via_kwargs=False)
        # likewise ``counterexample`` (False for a submission made within a mock interview)
        self._withholds = takes(self.grade, "counterexample", via_kwargs=False)
        self.hub = hub or notify.Hub()
        self._wake = threading.Condition()
        self._pending = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._inflight: dict[int, tuple[str, threading.Event]] = {}   # job id -> (worker id, cancel)
        self._inflight_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.hub.on(notify.JOBS, self._on_job)
        self.hub.on(notify.CANCEL, self._on_cancel)
        for i in range(self.threads):
            t = threading.Thread(target=self._loop, args=(f"{self.name}:{i}",), daemon=True,
                                 name=f"inferprep-grader-{i}")
            t.start()
            self._threads.append(t)
        hb = threading.Thread(target=self._heartbeat_loop, daemon=True, name="inferprep-heartbeat")
        hb.start()
        self._threads.append(hb)

    def stop(self, timeout: float = 5.0) -> None:
        self.hub.off(notify.JOBS, self._on_job)
        self.hub.off(notify.CANCEL, self._on_cancel)
        self._stop.set()
        self.wake()
        for t in self._threads:
            t.join(timeout)

    def wake(self) -> None:
        with self._wake:
            self._pending += 1
            self._wake.notify_all()

    def _on_job(self, _key: str | None) -> None:
        self.wake()

    def cancel(self, job_id: int) -> bool:
        """Stop grading ``job_id`` if this worker grades it (the judge kills the child); True if it did."""
        with self._inflight_lock:
            entry = self._inflight.get(job_id)
        if entry is not None:
            entry[1].set()
        return entry is not None

    def _on_cancel(self, key: str | None) -> None:
        if key is not None:
            if key.isdigit():
                self.cancel(int(key))
            return
        # a reconnected listener: any of ours may have been cancelled meanwhile
        with self._inflight_lock:
            ids = list(self._inflight)
        if ids:
            with session_scope(self.db_url) as s:
                gone = s.exec(select(Submission.id).where(Submission.id.in_(ids),
                                                          Submission.state == JobState.CANCELLED.value)).all()
            for job_id in gone:
                self.cancel(job_id)

    # -- the loop --------------------------------------------------------------------------------
    def _wait(self) -> None:
        with self._wake:
            if self._pending == 0 and not self._stop.is_set():
                self._wake.wait(self.poll_s)
            self._pending = max(0, self._pending - 1)

    def _loop(self, worker_id: str) -> None:
        while not self._stop.is_set():
            try:
                did = self.run_once(worker_id)
            except Exception:  # noqa: BLE001 - the database hiccupped; keep serving
                log.exception("worker %s: queue error", worker_id)
                did = False
            if not did:
                self._wait()

    def run_once(self, worker_id: str) -> bool:
        """Claim and grade one job; False when the queue was empty."""
        with session_scope(self.db_url) as s:
            queue.requeue_expired(s, max_attempts=self.max_attempts)
            sub = queue.claim(s, worker_id, lease_s=self.lease_s, devices=self.devices, salt=new_salt())
        if sub is None:
            return False
        self.hub.publish(notify.SUBMISSION, sub.id)
        cancel = threading.Event()
        with self._inflight_lock:
            self._inflight[sub.id] = (worker_id, cancel)
        try:
            verdict = self._scratch(sub) if sub.kind == SubmissionKind.SCRATCH.value else self._grade(sub, worker_id, cancel)
            with session_scope(self.db_url) as s:
                if not queue.finish(s, sub.id, worker_id, verdict):
                    log.info("job %s: cancelled or its lease lost before finishing; result dropped", sub.id)
            self.hub.publish(notify.SUBMISSION, sub.id)
        finally:
            with self._inflight_lock:
                self._inflight.pop(sub.id, None)
        return True

    def _grade(self, sub: Submission, worker_id: str, cancel: threading.Event) -> Verdict:
        cases: list[dict] = []

        def progress(c: CaseResult) -> None:
            cases.append(c.model_dump(mode="json"))
            try:
                with session_scope(self.db_url) as s:
                    if not queue.record_progress(s, sub.id, worker_id, cases):
                        cancel.set()    # cancelled, or the lease went to another worker: stop
                self.hub.publish(notify.SUBMISSION, sub.id)
            except Exception:  # noqa: BLE001 - live progress is a nicety
                log.exception("job %s: could not record progress", sub.id)

        try:
            ex = catalog.get(sub.slug)
            extra = {"salt": sub.salt} if self._salted else {}
            if self._cancellable:
                extra["cancel"] = cancel
            if self._withholds:
                extra["counterexample"] = not self._in_interview(sub)
            return self.grade(ex, sub.code, device=sub.device, public=sub.kind == "run", progress=progress, **extra)
        except Exception as e:  # noqa: BLE001 - the platform failed, not the user
            log.exception("job %s: grading raised", sub.id)
            return queue.internal_error_verdict(sub, f"the grading worker failed: {type(e).__name__}: {e}; retry")

    def _in_interview(self, sub: Submission) -> bool:
        """Whether ``sub`` was made within a mock interview of its owner that drew its exercise
        (issue 18: the counterexample is withheld there)."""
        from . import interview
        with session_scope(self.db_url) as s:
            return interview.made_in_session(s, sub.user_id, sub.slug, sub.created_at)

    def _scratch(self, sub: Submission) -> ScratchResult:
        try:
            return self.scratch(catalog.get(sub.slug), sub.code, sub.snippet or "", device=sub.device)
        except Exception as e:  # noqa: BLE001 - the platform failed, not the user
            log.exception("job %s: scratch run raised", sub.id)
            return ScratchResult(slug=sub.slug, status=Status.INTERNAL_ERROR.value, device=sub.device,
                                 message=f"the grading worker failed: {type(e).__name__}: {e}; run it again")

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(max(0.5, self.lease_s / 3)):
            with self._inflight_lock:
                jobs = dict(self._inflight)
            for job_id, (worker_id, cancel) in jobs.items():
                try:
                    with session_scope(self.db_url) as s:
                        if not queue.heartbeat(s, job_id, worker_id, lease_s=self.lease_s):
                            cancel.set()    # no longer ours (cancelled, or the lease expired)
                except Exception:  # noqa: BLE001
                    log.exception("job %s: heartbeat failed", job_id)
