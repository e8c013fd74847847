"""The grading queue: submission rows are the jobs.

Life of a job: ``enqueue`` (the row is committed as ``queued`` before anyone is told about it)
-> ``claim`` (one worker takes it with a lease: ``running``, ``attempt`` + 1) -> ``heartbeat``
(renews the lease while grading) -> ``finish`` (``done`` with the verdict). Every write after the
claim is conditional on ``worker`` and ``state``, so a worker whose lease was taken away cannot
overwrite the result of the worker that took over: each job is graded and recorded once.

``requeue_expired`` returns jobs whose lease ran out (a worker died) to the queue, or ends them
as an internal error (retryable by the user) after ``max_attempts`` claims. ``fail_orphans``
ends every ``running`` job of a given set of workers (on start, the embedded worker's previous
life) the same way, so nothing is ever stuck "running".

Claiming is a compare-and-set: pick the oldest queued id (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL so concurrent workers skip each other's picks), then ``UPDATE ... WHERE id = :id AND
state = 'queued'``; a lost race (rowcount 0) just tries the next one. SQLite serializes writers,
so the same statements are atomic there in a plain transaction.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session, select

from .models import JobState, Submission, utcnow
from .verdict import Status, Verdict

__all__ = ["enqueue", "claim", "heartbeat", "record_progress", "finish", "requeue_expired",
           "fail_orphans", "internal_error_verdict"]


def enqueue(s: Session, sub: Submission) -> Submission:
    """Write ``sub`` as a queued job and commit; returns it with its id."""
    sub.state = JobState.QUEUED.value
    sub.worker, sub.lease_expires_at = None, None
    s.add(sub)
    s.commit()
    s.refresh(sub)
    return sub


def claim(s: Session, worker: str, *, lease_s: float, devices: tuple[str, ...] = ("cpu",),
          now: datetime | None = None) -> Submission | None:
    """Take the oldest queued job graded on one of ``devices``; None when there is none."""
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
        res = s.exec(update(Submission)
                     .where(Submission.id == job_id, Submission.state == JobState.QUEUED.value)
                     .values(state=JobState.RUNNING.value, worker=worker, attempt=Submission.attempt + 1,
                             lease_expires_at=now + timedelta(seconds=lease_s), started_at=now))
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
    """Store the cases finished so far (the live view polls them)."""
    res = s.exec(update(Submission).where(*_owned(job_id, worker)).values(cases_json=json.dumps(cases)))
    s.commit()
    return res.rowcount == 1


def _result_values(verdict: Verdict) -> dict:
    return dict(state=JobState.DONE.value, status=verdict.status.value, score=verdict.score,
                passed=verdict.ok, verdict_json=verdict.model_dump_json(),
                cases_json=json.dumps([c.model_dump(mode="json") for c in verdict.cases]),
                finished_at=utcnow(), lease_expires_at=None)


def finish(s: Session, job_id: int, worker: str, verdict: Verdict) -> bool:
    """Record the verdict; False (and nothing written) if the job is no longer this worker's."""
    res = s.exec(update(Submission).where(*_owned(job_id, worker)).values(**_result_values(verdict)))
    s.commit()
    return res.rowcount == 1


def internal_error_verdict(sub: Submission, message: str) -> Verdict:
    return Verdict(slug=sub.slug, public=sub.kind == "run", status=Status.INTERNAL_ERROR,
                   message=message, device=sub.device)


def _end_as_internal_error(s: Session, sub: Submission, message: str) -> None:
    s.exec(update(Submission).where(Submission.id == sub.id, Submission.state == JobState.RUNNING.value,
                                    Submission.worker == sub.worker)
           .values(**_result_values(internal_error_verdict(sub, message))))


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
