"""CPU milliseconds per request of the pages a cohort's students open, in one process.

Builds the cohort-mode app (``create_app`` with ``cohort_mode``) over a fresh SQLite file, or
over PostgreSQL with ``--pg URL`` (a fresh database, dropped at the end), seeds an instructor, a
cohort with the exercise assigned and a signed-in student with two graded submissions, then
requests each page through Starlette's test client: ``--warmup`` requests, then ``--rounds``
rounds of ``--n`` requests. Prints, per page, the median over the rounds of the process's CPU
time (all threads: the client, the event loop, the handler's worker thread) divided by ``n``.
``/healthz`` is the floor (the client and the framework alone).

    .venv/bin/python bench/page_cpu.py                    # SQLite
    .venv/bin/python bench/page_cpu.py --pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres
    PYTHONPATH=/path/to/other/platform .venv/bin/python bench/page_cpu.py    # another checkout

With ``--json`` the figures go to stdout as JSON (for scripts that compare two checkouts).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET = "bench-" + "x" * 40
PASSWORD = "bench-password"


def fake_grade(exercise, code, *, device, public, progress, salt=None, cancel=None):
    from inferprep.verdict import CaseResult, Status, Verdict
    cases = [CaseResult(name=f"case-{i}", passed=True, status=Status.PASSED, seconds=0.01) for i in range(3)]
    for c in cases:
        progress(c)
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


def setup(db_url: str | None, data_dir: Path, slug: str):
    """(a test client signed in as the student, a graded submission's id)."""
    from fastapi.testclient import TestClient
    from inferprep import auth, cohorts, db
    from inferprep.settings import Settings
    from inferprep.web import create_app
    from inferprep.worker import Worker
    extra = {"database_url": db_url} if db_url else {}
    settings = Settings(data_dir=data_dir, cohort_mode=True, secret_key=SECRET, grading_threads=0,
                        allow_unsandboxed=True, **extra)
    app = create_app(settings, grade=fake_grade, devices=("cpu",))
    client = TestClient(app, follow_redirects=False)
    client.__enter__()
    with db.session_scope(settings.db_url) as s:
        t = auth.create_user(s, "instructor@bench.test", "Instructor", PASSWORD, is_instructor=True)
        c = cohorts.create_cohort(s, "Bench cohort", instructor_id=t.id)
        cohorts.set_policy(s, c.id, submissions_per_hour=0)
        cohorts.assign(s, c.id, slug)
        student = auth.sign_up(s, join_code=c.join_code, email="student@bench.test", name="Student",
                               password=PASSWORD)
        token = auth.create_session(s, student.id, secret=SECRET, hours=1)
    client.cookies.set("inferprep_session", token)
    client.headers["X-CSRF-Token"] = auth.csrf_token(SECRET, token)
    worker = Worker(settings.db_url, threads=1, grade=fake_grade)
    ids = []
    for kind in ("run", "submit"):
        r = client.post(f"/api/exercises/{slug}/submissions", json={"code": "pass\n", "kind": kind})
        assert r.status_code == 202, r.text
        ids.append(r.json()["id"])
        assert worker.run_once("bench:0")
    return client, ids[-1]


def measure(client, path: str, headers: dict, *, n: int, rounds: int, warmup: int) -> float:
    """Median over ``rounds`` of CPU ms per request of ``path``; every answer must be 200."""
    for _ in range(warmup):
        assert client.get(path, headers=headers).status_code == 200, path
    per = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(n):
            r = client.get(path, headers=headers)
            assert r.status_code == 200, (path, r.status_code)
        per.append(1000 * (time.process_time() - t0) / n)
    return statistics.median(per)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", metavar="URL", help="a PostgreSQL server's admin URL (a fresh database is made)")
    ap.add_argument("--slug", default="sampling-order")
    ap.add_argument("--n", type=int, default=40, help="requests per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from cohort_load import drop_database, make_database
    name = url = None
    if args.pg:
        name, url = make_database(args.pg)
    try:
        client, sub_id = setup(url, Path(tempfile.mkdtemp(prefix="page-cpu-")), args.slug)
        import inferprep
        hx = {"HX-Request": "true"}
        pages = [("/healthz", {}), ("/cohort", {}), ("/exercises", {}), (f"/exercises/{args.slug}", {}),
                 ("/progress", {}), (f"/submissions/{sub_id}/verdict", hx), (f"/api/exercises/{args.slug}", {})]
        out = {"code": str(Path(inferprep.__file__).parent), "database": "postgresql" if url else "sqlite",
               "load_average_1min": os.getloadavg()[0],
               "cpu_ms_per_request": {p: measure(client, p, h, n=args.n, rounds=args.rounds, warmup=args.warmup)
                                      for p, h in pages}}
        out["load_average_1min_end"] = os.getloadavg()[0]
        client.__exit__(None, None, None)
    finally:
        if name:
            from inferprep import db
            db.engine_for(url).dispose()
            drop_database(args.pg, name)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['code']} over {out['database']}; load average {out['load_average_1min']:.1f} -> "
              f"{out['load_average_1min_end']:.1f}")
        for p, ms in out["cpu_ms_per_request"].items():
            print(f"{p:40} {ms:7.1f} CPU ms per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
