"""The grading queue: submission rows are the jobs.

Life of a job: ``enqueue`` (the row is committed as ``queued`` before anyone is told about it)
-> ``claim`` (one worker takes it with a lease: ``running``, ``attempt`` + 1) -> ``heartbeat``
(renews the lease while grading) -> ``finish`` (``done`` with the verdict). Every write after the
claim is conditional on ``worker`` and ``state``, so a worker whose lease was taken away cannot
overwrite the result of the worker that took over: each job is graded and recorded once.
``cancel`` ends a queued or running job as ``cancelled`` (its owner asked); the worker grading it
then loses every conditional write, and a job that had finished first keeps its verdict.

Every change is announced (``notify``): on PostgreSQL by ``pg_notify`` inside the transaction
that makes it (``JOBS`` on a new job, ``SUBMISSION`` on any change of a job, ``CANCEL``), so
workers and event streams in other processes wake at its commit; in one process the callers
publish the same on their ``notify.Hub``.

``requeue_expired`` returns jobs whose lease ran out (a worker died) to the queue, or ends them
as an internal error (retryable by the user) after ``max_attempts`` claims. ``fail_orphans``
ends every ``running`` job of a given set of workers (on start, the embedded worker's previous
life) the same way, so nothing is ever stuck "running".

Admission under limits (cohort mode: the queue limit, a student's hourly rate) is atomic: see
``enqueue`` and ``take_gate``. Re-queueing after a lease expires is the platform's own retry and
goes through no admission: it never counts against anyone's limits.

Claiming is a compare-and-set: pick the oldest queued id (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL so concurrent workers skip each other's picks), then ``UPDATE ... WHERE id = :id AND
state = 'queued'``; a lost race (rowcount 0) just tries the next one. SQLite serializes writers,
so the same statements are atomic there in a plain transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session, select

from .models import JobState, Submission, utcnow
from .notify import CANCEL, JOBS, SUBMISSION, pg_notify
from .verdict import ScratchResult, Status, Verdict

__all__ = ["enqueue", "take_gate", "claim", "heartbeat", "record_progress", "finish", "cancel", "requeue_expired",
           "fail_orphans", "internal_error_verdict", "UNFINISHED"]

UNFINISHED = (JobState.QUEUED.value, JobState.RUNNING.value)

GATE = "submissions"
AdmitFn = Callable[[Session, Submission], None]   # raises (e.g. cohorts.TooManyRequests) to refuse


def take_gate(s: Session, name: str = GATE) -> None:
    """Open a transaction that holds the submission gate until it commits or rolls back.

    The gate is one row (``SubmissionGate``) that every admission updates *as the first statement
    of its transaction*; the limits are then counted and the submission inserted in that same
    transaction, so admissions run one at a time and each one counts every earlier one:

    - PostgreSQL: the ``UPDATE`` takes the row's lock (as ``SELECT ... FOR UPDATE`` would); a
      concurrent admission blocks on it until this transaction ends. Under READ COMMITTED (the
      default) every later statement takes a fresh snapshot, so the counts see the rows the
      previous holder committed. (Under REPEATABLE READ the blocked ``UPDATE`` fails with a
      serialization error instead: refused loudly, never over-admitted.)
    - SQLite: a writing statement that opens a transaction takes the database's write lock at
      its start (as ``BEGIN IMMEDIATE`` does), waiting up to the busy timeout, and reads the
      newest state; no other connection can write until this one commits. Hence the caller must
      have no transaction open (``enqueue`` commits first): a transaction that had already read
      would hold an older snapshot.

    One global row, not one per user, because the queue limit is global; an admission holds it
    for a few small statements (milliseconds), far below the rate at which people submit. A
    database created without migration c002's row gets it here on first use."""
    from .cohort_models import SubmissionGate
    from .db import insert_or_ignore
    for _ in range(2):
        res = s.exec(update(SubmissionGate).where(SubmissionGate.name == name)
                     .values(taken=SubmissionGate.taken + 1))
        if res.rowcount == 1:
            return
        s.rollback()
        insert_or_ignore(s, SubmissionGate, name=name, taken=0)
        s.commit()
    raise RuntimeError(f"the submission gate row {name!r} cannot be created")


def enqueue(s: Session, sub: Submission, *, admit: AdmitFn | None = None) -> Submission:
    """Write ``sub`` as a queued job and commit; returns it with its id.

    ``admit(s, sub)``, when given, decides whether the job may enter (the limits): it runs under
    the gate (``take_gate``), in the transaction that then inserts ``sub``, and raises to refuse
    (nothing is written then). So N concurrent submissions with k free slots admit exactly k."""
    sub.state = JobState.QUEUED.value
    sub.worker, sub.lease_expires_at = None, None
    if admit is not None:
        s.commit()     # no transaction open: the gate's UPDATE must be the first statement
        take_gate(s)
        try:
            admit(s, sub)
        except Exception:
            # Release the gate. Commit, not roll back: the gate's counter is this transaction's only
            # write, and a rollback would expire every object of the session (the signed-in user
            # that the 429 page still shows).
            try:
                s.commit()
            except Exception:   # noqa: BLE001 - the transaction is broken anyway
                s.rollback()
            raise
    s.add(sub)
    s.flush()
    pg_notify(s, JOBS, sub.id)
    s.commit()
    s.refresh(sub)
    return sub


def claim(s: Session, worker: str, *, lease_s: float, devices: tuple[str, ...] = ("cpu",),
          now: datetime | None = None, salt: int | None = None) -> Submission | None:
    """Take the oldest queued job graded on one of ``devices``; None when there is none.

    ``salt`` (the worker draws one per grading) is stored with the claim, before any grading,
    so the grading can be replayed (``inferprep admin replay``)."""
    now = now or utcnow()
    for _ in range(8):  # a few lost races, then give up until the next poll
        q = (select(Submission.id).where(Submission.state == JobState.QUEUED.value,
                                         Submission.device.in_(devices))
             .order_by(Submission.id).limit(1))
        if s.get_bind().dialect.name == "postgresql":
            q = q.with_for_update(skip_locked=True)
        job_id = s.exec(q).first()
        if job_id is None:
            s.rollback()
            return None
        values = dict(state=JobState.RUNNING.value, worker=worker, attempt=Submission.attempt + 1,
                      lease_expires_at=now + timedelta(seconds=lease_s), started_at=now)
        if salt is not None:
            values["salt"] = salt
        res = s.exec(update(Submission)
                     .where(Submission.id == job_id, Submission.state == JobState.QUEUED.value)
                     .values(**values))
        if res.rowcount == 1:
            pg_notify(s, SUBMISSION, job_id)
        s.commit()
        if res.rowcount == 1:
            sub = s.get(Submission, job_id, populate_existing=True)
            return sub
    return None


def _owned(job_id: int, worker: str):
    return (Submission.id == job_id, Submission.worker == worker, Submission.state == JobState.RUNNING.value)


def heartbeat(s: Session, job_id: int, worker: str, *, lease_s: float) -> bool:
    """Renew the lease; False if the job is no longer this worker's (it must stop recording)."""
    res = s.exec(update(Submission).where(*_owned(job_id, worker))
                 .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s)))
    s.commit()
    return res.rowcount == 1


def record_progress(s: Session, job_id: int, worker: str, cases: list[dict]) -> bool:
    """Store the cases finished so far (the live view shows them); False if the job is no longer
    this worker's (its lease was taken over, or its owner cancelled it): stop grading it."""
    res = s.exec(update(Submission).where(*_owned(job_id, worker)).values(cases_json=json.dumps(cases)))
    if res.rowcount == 1:
        pg_notify(s, SUBMISSION, job_id)
    s.commit()
    return res.rowcount == 1


def _result_values(verdict: Verdict | ScratchResult) -> dict:
    if isinstance(verdict, ScratchResult):   # a scratch run: no score, no cases, never a pass
        return dict(state=JobState.DONE.value, status=verdict.status, score=None, passed=False,
                    verdict_json=verdict.model_dump_json(), cases_json=None, finished_at=utcnow(),
                    lease_expires_at=None)
    return dict(state=JobState.DONE.value, status=verdict.status.value, score=verdict.score,
                passed=verdict.ok, verdict_json=verdict.model_dump_json(),
                perf_ratio=verdict.perf.ratio if verdict.perf is not None and verdict.perf.rankable else None,
                cases_json=json.dumps([c.model_dump(mode="json") for c in verdict.cases]),
                finished_at=utcnow(), lease_expires_at=None)


def finish(s: Session, job_id: int, worker: str, verdict: Verdict | ScratchResult) -> bool:
    """Record the verdict (a scratch job's ``ScratchResult``); False (and nothing written) if the
    job is no longer this worker's."""
    res = s.exec(update(Submission).where(*_owned(job_id, worker)).values(**_result_values(verdict)))
    if res.rowcount == 1:
        pg_notify(s, SUBMISSION, job_id)
    s.commit()
    return res.rowcount == 1


def cancel(s: Session, job_id: int) -> bool:
    """End a queued or running job as ``cancelled`` (no verdict; it counts as no attempt) and
    commit. Returns False, writing nothing, when the job had already ended: a job that finished
    before the cancel keeps its verdict. The worker grading it learns of it from ``CANCEL`` (or,
    at the latest, from its next progress write failing) and kills the child."""
    res = s.exec(update(Submission).where(Submission.id == job_id, Submission.state.in_(UNFINISHED))
                 .values(state=JobState.CANCELLED.value, finished_at=utcnow(), lease_expires_at=None))
    if res.rowcount == 1:
        pg_notify(s, CANCEL, job_id)
        pg_notify(s, SUBMISSION, job_id)
    s.commit()
    return res.rowcount == 1


def internal_error_verdict(sub: Submission, message: str) -> Verdict:
    return Verdict(slug=sub.slug, public=sub.kind == "run", status=Status.INTERNAL_ERROR,
                   message=message, device=sub.device)


def _end_as_internal_error(s: Session, sub: Submission, message: str) -> None:
    s.exec(update(Submission).where(Submission.id == sub.id, Submission.state == JobState.RUNNING.value,
                                    Submission.worker == sub.worker)
           .values(**_result_values(internal_error_verdict(sub, message))))
    pg_notify(s, SUBMISSION, sub.id)


def requeue_expired(s: Session, *, max_attempts: int, now: datetime | None = None) -> tuple[int, int]:
    """Jobs whose lease ran out go back to the queue, or end as internal errors after
    ``max_attempts`` claims. Returns (requeued, failed)."""
    now = now or utcnow()
    expired = s.exec(select(Submission).where(Submission.state == JobState.RUNNING.value,
                                              Submission.lease_expires_at < now)).all()
    requeued = failed = 0
    for sub in expired:
        if sub.attempt < max_attempts:
            res = s.exec(update(Submission)
                         .where(Submission.id == sub.id, Submission.state == JobState.RUNNING.value,
                                Submission.worker == sub.worker)
                         .values(state=JobState.QUEUED.value, worker=None, lease_expires_at=None,
                                 cases_json=None))
            requeued += res.rowcount
            if res.rowcount:
                pg_notify(s, JOBS, sub.id)
                pg_notify(s, SUBMISSION, sub.id)
        else:
            _end_as_internal_error(s, sub, f"grading stopped {sub.attempt} times without a result "
                                           "(a worker crashed or was killed); retry")
            failed += 1
    s.commit()
    return requeued, failed


def fail_orphans(s: Session, worker_prefix: str, alive=lambda worker: False) -> int:
    """End as an internal error every running job of workers named ``worker_prefix*`` for which
    ``alive(worker)`` is false: on start, the embedded worker's previous process is gone and so is
    whatever it was grading. Jobs of live sibling processes (several uvicorn workers on one host)
    are left to their leases."""
    orphans = s.exec(select(Submission).where(Submission.state == JobState.RUNNING.value,
                                              Submission.worker.startswith(worker_prefix))).all()
    orphans = [sub for sub in orphans if not alive(sub.worker)]
    for sub in orphans:
        _end_as_internal_error(s, sub, "the grading worker stopped while grading this submission "
                                       "(the server was stopped or crashed); retry")
    s.commit()
    return len(orphans)
