"""The queue: claim is exclusive, leases expire and re-queue, a stale worker cannot record, a
job that keeps killing its workers ends as an internal error; the worker with a fake judge."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from inferprep import db, queue
from inferprep.models import LOCAL_USER_ID, Submission, utcnow
from inferprep.verdict import Status, Verdict
from inferprep.worker import Worker


@pytest.fixture
def url(tmp_path) -> str:
    u = f"sqlite:///{tmp_path / 'q.db'}"
    db.prepare(u)
    return u


def add(url: str, n: int = 1, device: str = "cpu") -> list[int]:
    ids = []
    with db.session_scope(url) as s:
        for i in range(n):
            ids.append(queue.enqueue(s, Submission(user_id=LOCAL_USER_ID, slug="sampling-order", kind="run",
                                                   code=f"# {i}", device=device)).id)
    return ids


def passed(slug="sampling-order") -> Verdict:
    return Verdict(slug=slug, status=Status.PASSED, score=1.0, passed=1, total=1)


def test_claim_takes_oldest_once(url):
    a, b = add(url, 2)
    with db.session_scope(url) as s:
        j1 = queue.claim(s, "w1", lease_s=60)
        j2 = queue.claim(s, "w2", lease_s=60)
        assert (j1.id, j2.id) == (a, b) and j1.attempt == 1 and j1.state == "running"
        assert queue.claim(s, "w3", lease_s=60) is None


def test_concurrent_claims_never_share_a_job(url):
    ids = add(url, 20)
    got: list[int] = []
    lock = threading.Lock()

    def grab(name):
        while True:
            with db.session_scope(url) as s:
                j = queue.claim(s, name, lease_s=60)
            if j is None:
                return
            with lock:
                got.append(j.id)
    ts = [threading.Thread(target=grab, args=(f"w{i}",)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(got) == ids


def test_device_routing(url):
    (gpu_job,) = add(url, 1, device="cuda")
    with db.session_scope(url) as s:
        assert queue.claim(s, "cpu-worker", lease_s=60, devices=("cpu",)) is None
        assert queue.claim(s, "gpu-worker", lease_s=60, devices=("cpu", "cuda")).id == gpu_job


def test_expired_lease_requeues_then_fails_and_stale_worker_cannot_finish(url):
    (jid,) = add(url)
    with db.session_scope(url) as s:
        queue.claim(s, "dead", lease_s=0.01)
        assert queue.requeue_expired(s, max_attempts=2, now=utcnow() + timedelta(seconds=1)) == (1, 0)
        assert s.get(Submission, jid, populate_existing=True).state == "queued"
        j = queue.claim(s, "second", lease_s=0.01)
        assert j.attempt == 2
        assert not queue.finish(s, jid, "dead", passed())                   # not the owner any more
        assert not queue.heartbeat(s, jid, "dead", lease_s=60)
        assert queue.requeue_expired(s, max_attempts=2, now=utcnow() + timedelta(seconds=1)) == (0, 1)
        sub = s.get(Submission, jid, populate_existing=True)
        assert sub.state == "done" and sub.status == "internal_error" and "2 times" in sub.verdict_json
        assert not queue.finish(s, jid, "second", passed())                  # graded (ended) exactly once


def test_heartbeat_keeps_the_lease(url):
    (jid,) = add(url)
    with db.session_scope(url) as s:
        queue.claim(s, "w", lease_s=0.5)
        assert queue.heartbeat(s, jid, "w", lease_s=60)
        assert queue.requeue_expired(s, max_attempts=2, now=utcnow() + timedelta(seconds=5)) == (0, 0)
        assert queue.record_progress(s, jid, "w", [{"name": "a"}])
        assert queue.finish(s, jid, "w", passed())
        sub = s.get(Submission, jid, populate_existing=True)
        assert sub.passed and sub.status == "passed" and sub.finished_at is not None


def test_worker_grades_every_job_once(url):
    calls = []
    lock = threading.Lock()

    def grade(ex, code, *, device, public, progress):
        with lock:
            calls.append(code)
        time.sleep(0.01)
        return passed(ex.slug)
    ids = add(url, 12)
    w = Worker(url, threads=3, grade=grade, poll_s=0.1, name="t")
    w.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with db.session_scope(url) as s:
                done = [s.get(Submission, i, populate_existing=True).state == "done" for i in ids]
            if all(done):
                break
            time.sleep(0.05)
    finally:
        w.stop()
    assert sorted(calls) == sorted(f"# {i}" for i in range(12))


def test_worker_turns_a_raising_judge_into_internal_error(url):
    def grade(*a, **k):
        raise OSError("sandbox gone")
    (jid,) = add(url)
    w = Worker(url, threads=1, grade=grade, name="t")
    assert w.run_once("t:0")
    with db.session_scope(url) as s:
        sub = s.get(Submission, jid)
        assert sub.status == "internal_error" and "sandbox gone" in sub.verdict_json


def test_orphans_of_dead_embedded_workers_only(url):
    import os
    from inferprep.worker import embedded_prefix, embedded_worker_alive
    a, b = add(url, 2)
    with db.session_scope(url) as s:
        queue.claim(s, f"{embedded_prefix()}99999999:0", lease_s=60)       # no such process
        queue.claim(s, f"{embedded_prefix()}{os.getppid()}:0", lease_s=60)  # a live sibling
        assert queue.fail_orphans(s, embedded_prefix(), alive=embedded_worker_alive) == 1
        assert s.get(Submission, a, populate_existing=True).status == "internal_error"
        assert s.get(Submission, b, populate_existing=True).state == "running"
