"""Helpers of the limit tests on SQLite (test_cohort_limits.py) and PostgreSQL
(test_postgres_cohort.py): a cohort-mode app without grading workers (jobs stay queued, so the
queue limit is easy to reach), students with API tokens, and N requests fired at once."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from fastapi.testclient import TestClient

from inferprep import auth, cohorts, db
from inferprep.settings import Settings
from inferprep.verdict import CaseResult, Status, Verdict
from inferprep.web import create_app

SECRET = "l" * 40
SLUG = "sampling-order"
PASSWORD = "a-long-password"


def grade(exercise, code, *, device, public, progress, salt=None):
    """A fake judge: ``BOOM`` fails the platform (an internal error, retryable), else a pass."""
    if "BOOM" in code:
        raise RuntimeError("the fork server died")
    case = CaseResult(name="only-case", passed=True, status=Status.PASSED)
    progress(case)
    return Verdict.from_cases(exercise.slug, [case], public=public, device=device, sandbox="fake")


@dataclass
class World:
    settings: Settings
    app: object
    client: TestClient
    cohort_id: int
    tokens: dict[str, str] = field(default_factory=dict)     # email -> API token
    ids: dict[str, int] = field(default_factory=dict)        # email -> user id

    def as_(self, email: str) -> TestClient:
        """A client of its own (requests from several threads run concurrently) with a bearer token."""
        c = TestClient(self.app, follow_redirects=False)
        c.headers["Authorization"] = f"Bearer {self.tokens[email]}"
        return c

    def close(self) -> None:
        self.client.__exit__(None, None, None)


def world(settings_kw: dict, students: list[str], *, per_hour: int, grading_threads: int = 0) -> World:
    settings = Settings(cohort_mode=True, secret_key=SECRET, grading_threads=grading_threads,
                        allow_unsandboxed=True, lease_seconds=10, **settings_kw)
    app = create_app(settings, grade=grade, devices=("cpu",))
    client = TestClient(app, follow_redirects=False)
    client.__enter__()
    with db.session_scope(settings.db_url) as s:
        c = cohorts.create_cohort(s, "Limits")
        cohorts.set_policy(s, c.id, submissions_per_hour=per_hour)
        w = World(settings, app, client, c.id)
        for email in students:
            u = auth.create_user(s, email, email.split("@")[0], PASSWORD)
            cohorts.add_member(s, c.id, u.id, "student")
            _, w.tokens[email] = auth.create_api_token(s, u.id, "t", secret=SECRET)
            w.ids[email] = u.id
    return w


def fire(n: int, call) -> list:
    """Run ``call(i)`` for i < n in n threads released at once; their results in order."""
    barrier = threading.Barrier(n)
    out: list = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = call(i)
        except Exception as e:  # noqa: BLE001 - the caller asserts on it
            out[i] = e
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def queue_limit_race(url: str, user_ids: list[int], *, slots: int = 2, n: int = 12) -> list:
    """``n`` concurrent submissions through the service layer, each with a session of its own,
    with ``slots`` places left in the queue: returns their outcomes ("ok" or the exception)."""
    from functools import partial

    from sqlalchemy import func
    from sqlmodel import select

    from inferprep import services
    from inferprep.models import Submission
    with db.session_scope(url) as s:
        queued = s.exec(select(func.count()).where(Submission.state == "queued")).one()
    admit = partial(cohorts.admit, queue_limit=queued + slots)

    def call(i: int) -> str:
        with db.session_scope(url) as s:
            services.create_submission(s, user_ids[i % len(user_ids)], SLUG, f"# race {i}", "run", device="cpu",
                                       max_bytes=65536, admit=admit)
        return "ok"
    return fire(n, call)
