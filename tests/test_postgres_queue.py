"""The grading queue against a real PostgreSQL: migrations, exactly-once grading with several
worker processes (``FOR UPDATE SKIP LOCKED``), a worker killed with SIGKILL mid-grade, a server
restarted with queued jobs, idempotency keys, a double rejudge, CUDA jobs only to CUDA workers.

Each test module run gets a fresh database on the server at 127.0.0.1:5432 (trust auth; CI's
``.ci/run`` starts one), dropped afterwards. ``INFERPREP_TEST_PG_URL`` names another server. The
fake grade function (``tests/cohort_fakes.py``) stands in for the judge: the queue is under test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlmodel import select

import cohort_fakes
from pg_support import pg_url  # noqa: F401 - the fixture
from inferprep import cohorts, db, queue
from inferprep.models import JobState, Submission
from inferprep.worker import Worker

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SLUG = "sampling-order"
@pytest.fixture
def fake_log(tmp_path, monkeypatch):
    path = tmp_path / "gradings.log"
    path.touch()
    monkeypatch.setenv("INFERPREP_FAKE_LOG", str(path))
    return path


def _enqueue(url: str, codes: list[str], device: str = "cpu") -> list[int]:
    with db.session_scope(url) as s:
        return [queue.enqueue(s, Submission(user_id=1, slug=SLUG, kind="submit", code=c, device=device)).id
                for c in codes]


def _wait_done(url: str, ids: list[int], timeout: float = 60.0) -> list[Submission]:
    end = time.monotonic() + timeout
    while True:
        with db.session_scope(url) as s:
            subs = s.exec(select(Submission).where(Submission.id.in_(ids)).order_by(Submission.id)).all()
        if all(x.state == JobState.DONE.value for x in subs):
            return list(subs)
        if time.monotonic() > end:
            states = {x.id: (x.state, x.worker) for x in subs if x.state != JobState.DONE.value}
            pytest.fail(f"not graded after {timeout} s: {states}")
        time.sleep(0.2)


def _spawn_worker(url: str, name: str, *, concurrency: int = 2, lease: float = 30.0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "INFERPREP_DATABASE_URL": url}
    return subprocess.Popen([sys.executable, "-m", "inferprep.cli", "worker", "--device", "cpu",
                             "--concurrency", str(concurrency), "--lease-seconds", str(lease), "--name", name,
                             "--poll", "0.2", "--grade-fn", "cohort_fakes:grade"],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=open(Path(os.environ["INFERPREP_FAKE_LOG"]).with_name(f"{name}.err"), "w"))


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_migrations_match_the_models_and_go_down_and_up(pg_url):
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel
    from inferprep import cohort_models, models  # noqa: F401
    with db.engine_for(pg_url).connect() as c:
        assert compare_metadata(MigrationContext.configure(c), SQLModel.metadata) == []
    cfg = db.alembic_config(pg_url)
    command.downgrade(cfg, "0001")
    command.upgrade(cfg, "head")
    db.upgrade(pg_url)   # idempotent


def test_three_worker_processes_grade_every_submission_exactly_once(pg_url, fake_log):
    markers = [f"# job {uuid.uuid4().hex[:8]} SLEEP=0.05" for _ in range(60)]
    ids = _enqueue(pg_url, markers)
    procs = [_spawn_worker(pg_url, f"w{i}", concurrency=2) for i in range(3)]
    try:
        subs = _wait_done(pg_url, ids, timeout=120)
    finally:
        for p in procs:
            _stop(p)
    counts = cohort_fakes.graded(fake_log)
    assert all(counts.get(m) == 1 for m in markers), {m: counts.get(m) for m in markers if counts.get(m) != 1}
    assert all(x.passed and x.attempt == 1 and x.status == "passed" for x in subs)
    workers = {x.worker.split(":")[0] for x in subs}
    assert len(workers) >= 2, f"one worker took every job: {workers}"   # they really shared the queue


def test_a_worker_killed_mid_grade_is_regraded_once_by_another_after_the_lease(pg_url, fake_log):
    marker = f"# hang {uuid.uuid4().hex[:8]} HANG"
    [sub_id] = _enqueue(pg_url, [marker])
    victim = _spawn_worker(pg_url, "victim", concurrency=1, lease=2.0)
    try:
        end = time.monotonic() + 60
        while f"start {marker}" not in fake_log.read_text():
            assert time.monotonic() < end, "the victim never claimed the job"
            assert victim.poll() is None, fake_log.with_name("victim.err").read_text()[-2000:]
            time.sleep(0.1)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
    finally:
        if victim.poll() is None:
            victim.kill()
    with db.session_scope(pg_url) as s:
        sub = s.get(Submission, sub_id)
        assert sub.state == JobState.RUNNING.value and sub.worker.startswith("victim")
    calls = []

    def rescue_grade(exercise, code, **kw):
        calls.append(code)
        return cohort_fakes.grade(exercise, code.replace("HANG", "hang-no-more"), **kw)

    rescuer = Worker(pg_url, threads=2, name="rescuer", lease_s=2.0, max_attempts=2, grade=rescue_grade, poll_s=0.2)
    rescuer.start()
    try:
        [sub] = _wait_done(pg_url, [sub_id], timeout=30)
        time.sleep(1.0)   # a second grading, were there one, would have started by now
    finally:
        rescuer.stop()
    assert len(calls) == 1
    assert sub.status == "passed" and sub.attempt == 2 and sub.worker.startswith("rescuer")


def test_restarting_the_server_with_queued_jobs_loses_none(pg_url, tmp_path):
    from fastapi.testclient import TestClient
    from inferprep.settings import Settings
    from inferprep.web import create_app
    judge_calls = []

    def grade(exercise, code, **kw):
        judge_calls.append(code)
        return cohort_fakes.grade(exercise, code, **kw)

    settings = Settings(database_url=pg_url, data_dir=tmp_path, grading_threads=0)
    with TestClient(create_app(settings, grade=grade, devices=("cpu",))) as c:   # no worker: jobs wait
        ids = [c.post(f"/api/exercises/{SLUG}/submissions", json={"code": f"# restart {i}", "kind": "run"}).json()["id"]
               for i in range(5)]
        assert all(c.get(f"/api/submissions/{i}").json()["state"] == "queued" for i in ids)
        assert [c.get(f"/api/submissions/{i}").json()["queue_position"] for i in ids] == \
            sorted(c.get(f"/api/submissions/{i}").json()["queue_position"] for i in ids)
    settings = Settings(database_url=pg_url, data_dir=tmp_path, grading_threads=2)
    with TestClient(create_app(settings, grade=grade, devices=("cpu",))):
        subs = _wait_done(pg_url, ids)
    assert all(x.status == "passed" for x in subs)
    assert sorted(judge_calls) == sorted(f"# restart {i}" for i in range(5))


def test_the_same_idempotency_key_twice_makes_one_submission(pg_url, tmp_path):
    from fastapi.testclient import TestClient
    from inferprep.settings import Settings
    from inferprep.web import create_app
    settings = Settings(database_url=pg_url, data_dir=tmp_path, grading_threads=0)
    with TestClient(create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))) as c:
        key = uuid.uuid4().hex
        body = {"code": "# idem", "kind": "submit", "idempotency_key": key}
        first = c.post(f"/api/exercises/{SLUG}/submissions", json=body)
        second = c.post(f"/api/exercises/{SLUG}/submissions", json=body)
        assert first.status_code == second.status_code == 202
        assert first.json()["id"] == second.json()["id"]
        # a double click: the same key from two threads at once
        key2 = uuid.uuid4().hex
        answers = []

        def post():
            answers.append(c.post(f"/api/exercises/{SLUG}/submissions",
                                  json={**body, "idempotency_key": key2}))
        ts = [threading.Thread(target=post) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(answers) == 4 and {a.status_code for a in answers} == {202}, [a.text for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1
    with db.session_scope(pg_url) as s:
        assert len(s.exec(select(Submission).where(Submission.idempotency_key.in_([key, key2]))).all()) == 2


def test_a_double_rejudge_grades_once(pg_url, fake_log):
    marker = f"# rejudge {uuid.uuid4().hex[:8]}"
    [sub_id] = _enqueue(pg_url, [marker])
    w = Worker(pg_url, threads=1, name="rj", lease_s=5, grade=cohort_fakes.grade, poll_s=0.1)
    w.start()
    try:
        _wait_done(pg_url, [sub_id])
        w.stop()
        with db.session_scope(pg_url) as s:
            assert cohorts.rejudge(s, sub_id) is True
        with db.session_scope(pg_url) as s:
            assert cohorts.rejudge(s, sub_id) is False      # already waiting: left alone
        w = Worker(pg_url, threads=2, name="rj2", lease_s=5, grade=cohort_fakes.grade, poll_s=0.1)
        w.start()
        [sub] = _wait_done(pg_url, [sub_id])
        time.sleep(0.5)
    finally:
        w.stop()
    assert cohort_fakes.graded(fake_log)[marker] == 2      # the first grading and one rejudge
    assert sub.attempt == 1 and sub.status == "passed"


def test_cuda_jobs_go_only_to_cuda_workers(pg_url):
    [gpu_job] = _enqueue(pg_url, ["# needs a GPU"], device="cuda")
    [cpu_job] = _enqueue(pg_url, ["# any CPU"], device="cpu")
    with db.session_scope(pg_url) as s:
        got = []
        while (sub := queue.claim(s, "cpu-only", lease_s=30, devices=("cpu",))) is not None:
            got.append(sub.id)
        assert cpu_job in got and gpu_job not in got
        assert s.get(Submission, gpu_job, populate_existing=True).state == JobState.QUEUED.value
        sub = queue.claim(s, "gpu", lease_s=30, devices=("cuda",))
        assert sub is not None and sub.id == gpu_job and sub.device == "cuda"


def test_concurrent_claims_never_hand_one_job_to_two_workers(pg_url):
    ids = set(_enqueue(pg_url, [f"# claim {i}" for i in range(40)]))
    claimed: list[int] = []
    lock = threading.Lock()

    def claimer(n: int):
        with db.session_scope(pg_url) as s:
            while (sub := queue.claim(s, f"c{n}", lease_s=30)) is not None:
                with lock:
                    claimed.append(sub.id)
    ts = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    mine = [i for i in claimed if i in ids]
    assert sorted(mine) == sorted(ids) and len(mine) == len(set(mine))
