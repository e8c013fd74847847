"""Grading workers: threads that pull jobs from the database queue and grade them.

``serve`` runs an embedded ``Worker`` (a few threads in the web process); issue 5's
``inferprep worker`` runs the same class on other machines against a shared database. The grade
function is injectable (tests pass a fake one); by default it is ``runner.judge.grade``, which
is thread-safe and never raises for a submission's fault. Should it raise anyway (the platform
failed), the job ends as an internal error, which the user can retry.

Each grading gets a fresh salt (``secrets.randbits(63)``, the grading's secret from which the
grader derives its hidden data), stored on the submission row with the claim, before grading,
and passed to the grade function: ``inferprep admin replay`` re-runs the same hidden cases. A
grade function without a ``salt`` parameter (an old test fake) is called without one.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable

from . import catalog, queue
from .db import session_scope
from .models import Submission
from .verdict import CaseResult, Verdict

log = logging.getLogger("inferprep.worker")

GradeFn = Callable[..., Verdict]  # grade(exercise, code, *, device, public, progress, salt) -> Verdict


def default_grade(exercise: catalog.Exercise, code: str, *, device: str, public: bool,
                  progress: Callable[[CaseResult], None], salt: int | None = None) -> Verdict:
    from .runner import judge
    # counterexamples are shown at once today; a mock interview (issue 18) withholds them until it ends
    return judge.grade(exercise, code, device=device, public=public, progress=progress, salt=salt, counterexample=True)


def new_salt() -> int:
    """A grading's salt: 63 random bits (fits PostgreSQL's signed BIGINT)."""
    return secrets.randbits(63)


def takes_salt(fn: GradeFn) -> bool:
    """Whether ``fn`` accepts ``salt=`` (a parameter of that name, or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "salt" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


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
    """``threads`` grading threads over the queue at ``db_url``; ``wake()`` after an enqueue."""

    def __init__(self, db_url: str, *, threads: int = 2, name: str | None = None,
                 devices: tuple[str, ...] = ("cpu",), lease_s: float = 120.0, max_attempts: int = 2,
                 grade: GradeFn | None = None, poll_s: float = 2.0):
        self.db_url, self.threads, self.devices = db_url, threads, devices
        self.name = name or f"{embedded_prefix()}{os.getpid()}"
        self.lease_s, self.max_attempts, self.poll_s = lease_s, max_attempts, poll_s
        self.grade = grade or default_grade
        self._salted = takes_salt(self.grade)
        self._wake = threading.Condition()
        self._pending = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._inflight: dict[int, str] = {}   # job id -> worker id, for the heartbeat
        self._inflight_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        for i in range(self.threads):
            t = threading.Thread(target=self._loop, args=(f"{self.name}:{i}",), daemon=True,
                                 name=f"inferprep-grader-{i}")
            t.start()
            self._threads.append(t)
        hb = threading.Thread(target=self._heartbeat_loop, daemon=True, name="inferprep-heartbeat")
        hb.start()
        self._threads.append(hb)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.wake()
        for t in self._threads:
            t.join(timeout)

    def wake(self) -> None:
        with self._wake:
            self._pending += 1
            self._wake.notify_all()

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
        with self._inflight_lock:
            self._inflight[sub.id] = worker_id
        try:
            verdict = self._grade(sub, worker_id)
            with session_scope(self.db_url) as s:
                if not queue.finish(s, sub.id, worker_id, verdict):
                    log.warning("job %s: lease lost before finishing; result dropped", sub.id)
        finally:
            with self._inflight_lock:
                self._inflight.pop(sub.id, None)
        return True

    def _grade(self, sub: Submission, worker_id: str) -> Verdict:
        cases: list[dict] = []

        def progress(c: CaseResult) -> None:
            cases.append(c.model_dump(mode="json"))
            try:
                with session_scope(self.db_url) as s:
                    queue.record_progress(s, sub.id, worker_id, cases)
            except Exception:  # noqa: BLE001 - live progress is a nicety
                log.exception("job %s: could not record progress", sub.id)

        try:
            ex = catalog.get(sub.slug)
            salt = {"salt": sub.salt} if self._salted else {}
            return self.grade(ex, sub.code, device=sub.device, public=sub.kind == "run", progress=progress, **salt)
        except Exception as e:  # noqa: BLE001 - the platform failed, not the user
            log.exception("job %s: grading raised", sub.id)
            return queue.internal_error_verdict(sub, f"the grading worker failed: {type(e).__name__}: {e}; retry")

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(max(0.5, self.lease_s / 3)):
            with self._inflight_lock:
                jobs = dict(self._inflight)
            for job_id, worker_id in jobs.items():
                try:
                    with session_scope(self.db_url) as s:
                        queue.heartbeat(s, job_id, worker_id, lease_s=self.lease_s)
                except Exception:  # noqa: BLE001
                    log.exception("job %s: heartbeat failed", job_id)
