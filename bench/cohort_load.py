"""A cohort's load on a real deployment shape: uvicorn on loopback in cohort mode over
PostgreSQL, two ``inferprep worker`` processes, N simulated students who sign in, browse and
submit within a ramp (default 200 students, 2 submissions each, over 60 s). After each
submission a student follows its event stream (``/submissions/N/events``) to the verdict, as the
exercise page does; the time to the stream's first event counts as a page request.

Prints p50 and p99 page latency (sign-in and submit separately) in all and per route,
submissions graded per minute, the largest queue wait, and the count check: every submission
graded exactly once (each fake grading logs its submission's marker; the check wants each
marker once, every row ``done`` on its first attempt).

``--profile DIR`` samples the web processes with py-spy (``pip install py-spy``) for the whole
run and prints the CPU milliseconds per request of each route: the samples whose stack holds
that route's handler, over the requests the students made to it; samples outside any handler
(sign-in's dependency, the session lookup, middleware, the server) are listed apart.

The judge is replaced by a fake grading that sleeps ``--grade-seconds`` (the queue and the web
are under test; ``bench/runner.py`` measures the judge). ``--real-judge`` grades the exercise's
stub with the real sandboxed judge instead (slow on a small machine).

    .venv/bin/python bench/cohort_load.py                      # 200 students, ~2 minutes here
    .venv/bin/python bench/cohort_load.py --students 50 --per-student 1 --ramp 20

Needs a PostgreSQL server (``--pg``, default postgres@127.0.0.1:5432, trust auth); it creates a
fresh database and drops it at the end (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECRET = "bench-" + "x" * 40
PASSWORD = "bench-password"


# -- the fake judge (imported by the worker processes as cohort_load:fake_grade) ----------------
def fake_grade(exercise, code, *, device, public, progress, salt=None):
    from inferprep.verdict import CaseResult, Status, Verdict
    marker = code.splitlines()[0]
    time.sleep(float(os.environ.get("BENCH_GRADE_SECONDS", "0.3")))
    cases = [CaseResult(name="case-1", passed=True, status=Status.PASSED, seconds=0.01)]
    for c in cases:
        progress(c)
    with open(os.environ["BENCH_GRADE_LOG"], "a") as f:       # O_APPEND: one line per grading
        f.write(marker + "\n")
    return Verdict.from_cases(exercise.slug, cases, public=public, device=device, sandbox="fake")


# -- set-up ---------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_database(admin_url: str) -> tuple[str, str]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    name = f"inferprep_bench_{uuid.uuid4().hex[:8]}"
    eng = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    return name, make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    from sqlalchemy import create_engine, text
    eng = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    eng.dispose()


def seed(url: str, n: int, slug: str) -> None:
    """An instructor, a cohort with ``slug`` assigned, and ``n`` students (one shared hash: the
    bench measures signing in, not seeding)."""
    from inferprep import auth, cohorts, db
    from inferprep.models import Membership, User
    db.prepare(url)
    with db.session_scope(url) as s:
        t = auth.create_user(s, "instructor@bench.test", "Instructor", PASSWORD, is_instructor=True)
        c = cohorts.create_cohort(s, "Bench cohort", instructor_id=t.id)
        cohorts.set_policy(s, c.id, submissions_per_hour=0)
        cohorts.assign(s, c.id, slug)
        h = auth.hash_password(PASSWORD)
        users = [User(email=f"student{i}@bench.test", name=f"Student {i}", password_hash=h) for i in range(n)]
        s.add_all(users)
        s.commit()
        s.add_all([Membership(user_id=u.id, cohort_id=c.id, role="student") for u in users])
        s.commit()


def start_processes(url: str, port: int, args, log_dir: Path) -> list[subprocess.Popen]:
    env = {**os.environ, "INFERPREP_DATABASE_URL": url, "INFERPREP_COHORT_MODE": "1",
           "INFERPREP_SECRET_KEY": SECRET, "INFERPREP_GRADING_THREADS": "0", "INFERPREP_QUEUE_LIMIT": "100000",
           "INFERPREP_LEASE_SECONDS": "60", "BENCH_GRADE_SECONDS": str(args.grade_seconds),
           "BENCH_GRADE_LOG": str(log_dir / "gradings.log"),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory",
                               "inferprep.web.app:create_from_env", "--host", "127.0.0.1",
                               "--port", str(port), "--workers", str(args.web_workers), "--log-level", "info",
                               "--no-access-log", "--timeout-worker-healthcheck", "30",    # as docs/hosting.md
                               "--timeout-keep-alive", "65"],
                              env=env, cwd=ROOT, stderr=open(log_dir / "web.err", "w"))]
    for i in range(args.workers):
        cmd = [sys.executable, "-c", "from inferprep.cli import main; main()", "worker", "--device", "cpu",
               "--concurrency", str(args.concurrency), "--name", f"bench-w{i}", "--poll", "0.5"]
        cmd += ["--allow-unsandboxed"] if args.real_judge and args.allow_unsandboxed else []
        cmd += [] if args.real_judge else ["--grade-fn", "cohort_load:fake_grade"]
        procs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=open(log_dir / f"worker{i}.err", "w")))
    return procs


# -- the students ---------------------------------------------------------------------------------
# route -> the handler function whose py-spy samples are that route's CPU
ROUTES = {"GET /login": "login_page", "POST /login (sign-in)": "login", "GET /cohort": "cohort_page",
          "GET /exercises": "exercise_list", "GET /exercises/{slug}": "exercise_page",
          "POST /api/exercises/{slug}/submissions": "create_submission",
          "GET /submissions/{id}/events (first event)": "next_event", "GET /progress": "progress_page"}
EVENTS = "GET /submissions/{id}/events (first event)"
NOT_PAGES = ("POST /login (sign-in)", "POST /api/exercises/{slug}/submissions")


class Stats:
    def __init__(self):
        self.routes: dict[str, list[float]] = {r: [] for r in ROUTES}
        self.errors: list[str] = []
        self.too_many = 0
        self.sub_ids: list[int] = []

    @property
    def pages(self) -> list[float]:
        """Every page request's latency (s): all routes but sign-in and submit."""
        return [x for r, xs in self.routes.items() if r not in NOT_PAGES for x in xs]


async def timed(stats: Stats, route: str, coro):
    t0 = time.perf_counter()
    try:
        r = await coro
    except Exception as e:
        raise RuntimeError(f"{route} after {time.perf_counter() - t0:.1f} s: {type(e).__name__}: {e}") from e
    stats.routes[route].append(time.perf_counter() - t0)
    return r


async def student(i: int, base: str, slug: str, code: str, args, stats: Stats) -> None:
    import httpx
    await asyncio.sleep(random.uniform(0, args.ramp))
    async with httpx.AsyncClient(base_url=base, timeout=args.timeout, follow_redirects=False) as c:
        try:
            r = await timed(stats, "GET /login", c.get("/login"))
            r = await timed(stats, "POST /login (sign-in)", c.post("/login", data={
                "email": f"student{i}@bench.test", "password": PASSWORD, "next": "/cohort",
                "csrf_token": c.cookies.get("inferprep_csrf", "")}))
            if r.status_code != 303:
                stats.errors.append(f"student {i}: sign-in {r.status_code}")
                return
            for route, path in (("GET /cohort", "/cohort"), ("GET /exercises", "/exercises"),
                                ("GET /exercises/{slug}", f"/exercises/{slug}")):
                r = await timed(stats, route, c.get(path))
                if r.status_code != 200:
                    stats.errors.append(f"student {i}: {path} {r.status_code}")
            csrf = re.search(r'name="csrf-token" content="([^"]+)"', r.text).group(1)
            for k in range(args.per_student):
                body = {"code": f"# bench {i}-{k} {uuid.uuid4().hex[:6]}\n{code}", "kind": "submit",
                        "idempotency_key": uuid.uuid4().hex}
                while True:
                    r = await timed(stats, "POST /api/exercises/{slug}/submissions", c.post(f"/api/exercises/{slug}/submissions", json=body,
                                                         headers={"X-CSRF-Token": csrf}))
                    if r.status_code != 429:
                        break
                    stats.too_many += 1
                    await asyncio.sleep(float(r.headers.get("retry-after", "5")))
                if r.status_code != 202:
                    stats.errors.append(f"student {i}: submit {r.status_code} {r.text[:200]}")
                    continue
                sub_id = r.json()["id"]
                stats.sub_ids.append(sub_id)
                await follow(stats, c, sub_id)      # as the page does: its event stream, no polling
                await timed(stats, "GET /progress", c.get("/progress"))
        except Exception as e:  # noqa: BLE001 - a bench reports, it does not stop
            stats.errors.append(f"student {i}: {type(e).__name__}: {e}")


async def follow(stats: Stats, c, sub_id: int) -> None:
    """Listen to the submission's event stream until its verdict; the time to the first event
    (headers, access check, one read and render) is recorded as a page request."""
    t0 = time.perf_counter()
    first = True
    async with c.stream("GET", f"/submissions/{sub_id}/events", headers={"Accept": "text/event-stream"}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"events of {sub_id}: {r.status_code}")
        async for line in r.aiter_lines():
            if first and line.startswith("event:"):
                stats.routes[EVENTS].append(time.perf_counter() - t0)
                first = False
            if line.strip() == "event: verdict":
                return
    raise RuntimeError(f"events of {sub_id}: the stream ended without a verdict")


# -- the profile ----------------------------------------------------------------------------------
PROFILE_RATE = 200      # py-spy samples per second of each busy thread
# innermost frames that wait rather than compute (--nonblocking sampling reports some as busy)
IDLE_LEAVES = (".select", ".wait", "._recv", "._poll", ".poll", ".accept")


def start_profiler(pid: int, out: Path) -> subprocess.Popen:
    """py-spy sampling ``pid`` and its children (uvicorn's worker processes) into ``out`` (raw stacks)."""
    exe = Path(sys.executable).with_name("py-spy")
    if not exe.exists():
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    return subprocess.Popen([str(exe), "record", "--pid", str(pid), "--subprocesses", "--nonblocking",
                             "--rate", str(PROFILE_RATE), "--format", "raw", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=open(out.with_suffix(".err"), "w"))


def cpu_by_route(raw: Path) -> dict[str, float]:
    """CPU seconds per route (keys of ``ROUTES``) and per part outside any handler, from py-spy's
    raw stacks (each sample is 1 / PROFILE_RATE s of one busy thread)."""
    handlers = {fn: route for route, fn in ROUTES.items()}
    out: dict[str, float] = {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")
        if len(frames) < 2 or frames[-1].split(" (")[0].endswith(IDLE_LEAVES):
            continue                # no Python frame (a native thread), or a wait py-spy took for work
        names = [(f.split(" (")[0], f) for f in frames]
        label = next((handlers[name] for name, f in names if name in handlers and "web/" in f), None)
        if label is None:
            fns = {name for name, _ in names}
            label = ("outside handlers: signed_in (session lookup)" if "signed_in" in fns else
                     "outside handlers: database session" if "get_session" in fns else
                     "outside handlers: uvicorn, h11" if any("uvicorn/" in f or "h11/" in f for f in frames) else
                     "outside handlers: starlette, fastapi" if any("starlette/" in f or "fastapi/" in f
                                                                   for f in frames) else
                     "outside handlers: other")
        out[label] = out.get(label, 0.0) + int(n) / PROFILE_RATE
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def check(url: str, log_path: Path, sub_ids: list[int]) -> dict:
    from sqlmodel import select
    from inferprep import db
    from inferprep.models import Submission
    with db.session_scope(url) as s:
        subs = s.exec(select(Submission)).all()
    graded = log_path.read_text().splitlines() if log_path.exists() else []
    counts: dict[str, int] = {}
    for m in graded:
        counts[m] = counts.get(m, 0) + 1
    markers = [x.code.splitlines()[0] for x in subs]
    waits = [(x.started_at - x.created_at).total_seconds() for x in subs if x.started_at]
    done = [x for x in subs if x.state == "done"]
    first = min(x.created_at for x in subs)
    last = max(x.finished_at for x in done) if done else first
    return {"submissions": len(subs), "client_saw": len(sub_ids), "done": len(done),
            "graded_once": sum(1 for m in markers if counts.get(m) == 1),
            "graded_twice_or_more": sum(1 for m in markers if counts.get(m, 0) > 1),
            "never_graded": sum(1 for m in markers if m not in counts),
            "first_attempt": sum(1 for x in subs if x.attempt == 1),
            "max_queue_wait_s": max(waits) if waits else 0.0,
            "graded_per_minute": 60 * len(done) / max(1e-9, (last - first).total_seconds())}


async def run_students(base: str, slug: str, code: str, args) -> Stats:
    stats = Stats()
    await asyncio.gather(*[student(i, base, slug, code, args, stats) for i in range(args.students)])
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--per-student", type=int, default=2, help="submissions per student")
    ap.add_argument("--ramp", type=float, default=60.0, help="students arrive over this many seconds")
    ap.add_argument("--workers", type=int, default=2, help="grading worker processes")
    ap.add_argument("--concurrency", type=int, default=2, help="gradings at once per worker")
    ap.add_argument("--web-workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--grade-seconds", type=float, default=0.3, help="the fake grading's duration")
    ap.add_argument("--slug", default="sampling-order")
    ap.add_argument("--real-judge", action="store_true", help="grade the stub with the real judge")
    ap.add_argument("--allow-unsandboxed", action="store_true")
    ap.add_argument("--pg", default=os.environ.get("INFERPREP_TEST_PG_URL",
                                                   "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    ap.add_argument("--timeout", type=float, default=300.0, help="a request's client-side timeout, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the database")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", type=Path, metavar="DIR",
                    help="sample the web processes with py-spy and print CPU ms per request by route")
    args = ap.parse_args()

    from inferprep import catalog
    code = catalog.get(args.slug).stub if args.real_judge else "pass"
    name, url = make_database(args.pg)
    log_dir = Path(tempfile.mkdtemp(prefix="cohort-load-"))
    procs: list[subprocess.Popen] = []
    try:
        t0 = time.perf_counter()
        seed(url, args.students, args.slug)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        procs = start_processes(url, port, args, log_dir)
        import httpx
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        profiler = None
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            profiler = start_profiler(procs[0].pid, args.profile / "web.txt")
        print(f"seeded {args.students} students and started in {time.perf_counter() - t0:.1f} s; "
              f"{args.students} students x {args.per_student} submissions over {args.ramp:g} s ...", file=sys.stderr)
        cpu_web0, cpu_workers0 = cpu_seconds(procs[0].pid), sum(cpu_seconds(p.pid) for p in procs[1:])
        cpu_client0 = time.process_time()
        t1 = time.perf_counter()
        stats = asyncio.run(run_students(base, args.slug, code, args))
        wall = time.perf_counter() - t1
        cpu_web = cpu_seconds(procs[0].pid) - cpu_web0        # during the students' run only
        cpu_workers = sum(cpu_seconds(p.pid) for p in procs[1:]) - cpu_workers0
        cpu_client = time.process_time() - cpu_client0
        restarts = sum(1 for line in open(log_dir / "web.err") if "died" in line)
        load = os.getloadavg()[0]
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(120)
        time.sleep(1.0)
        res = check(url, log_dir / "gradings.log", stats.sub_ids)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        if not args.keep:
            from inferprep import db
            db.engine_for(url).dispose()
            drop_database(args.pg, name)
    out = {"students": args.students, "per_student": args.per_student, "ramp_s": args.ramp,
           "workers": args.workers, "concurrency": args.concurrency, "web_workers": args.web_workers,
           "grade_s": "real judge" if args.real_judge else args.grade_seconds, "wall_s": wall,
           "page_requests": len(stats.pages), "page_p50_ms": 1000 * pct(stats.pages, 50),
           "page_p99_ms": 1000 * pct(stats.pages, 99),
           "signin_p50_ms": 1000 * pct(stats.routes["POST /login (sign-in)"], 50),
           "signin_p99_ms": 1000 * pct(stats.routes["POST /login (sign-in)"], 99),
           "submit_p50_ms": 1000 * pct(stats.routes["POST /api/exercises/{slug}/submissions"], 50),
           "submit_p99_ms": 1000 * pct(stats.routes["POST /api/exercises/{slug}/submissions"], 99),
           "answered_429": stats.too_many,
           "errors": len(stats.errors), **res, "cpus": os.cpu_count(), "load_average_1min": load,
           "cpu_s_web": cpu_web, "cpu_s_workers": cpu_workers, "cpu_s_bench_client": cpu_client,
           "web_workers_restarted": restarts}
    # every submission row the server wrote ended graded, each by exactly one grading (a client
    # timeout can hide a submission's id from the client; the row still counts here)
    exactly_once = (res["submissions"] == res["done"] == res["graded_once"]
                    and not res["graded_twice_or_more"] and not res["never_graded"])
    out["exactly_once"] = exactly_once
    cpu = cpu_by_route(args.profile / "web.txt") if args.profile else {}
    out["routes"] = {r: {"requests": len(xs), "p50_ms": 1000 * pct(xs, 50), "p99_ms": 1000 * pct(xs, 99),
                         **({"cpu_ms_per_request": 1000 * cpu.get(r, 0.0) / len(xs)} if cpu and xs else {})}
                     for r, xs in stats.routes.items()}
    out["cpu_s_outside_handlers"] = {k: v for k, v in cpu.items() if k not in ROUTES}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"pages: {out['page_requests']} requests, p50 {out['page_p50_ms']:.0f} ms, p99 {out['page_p99_ms']:.0f} ms")
        print(f"sign-in (argon2): p50 {out['signin_p50_ms']:.0f} ms, p99 {out['signin_p99_ms']:.0f} ms; "
              f"submit: p50 {out['submit_p50_ms']:.0f} ms, p99 {out['submit_p99_ms']:.0f} ms; 429s: {stats.too_many}")
        print(f"graded: {res['done']} of {res['submissions']} at {res['graded_per_minute']:.0f}/min; "
              f"largest queue wait {res['max_queue_wait_s']:.1f} s; wall {wall:.0f} s")
        print(f"exactly once: {'yes' if exactly_once else 'NO'} ({res['graded_once']} of {res['submissions']} "
              f"graded once, {res['graded_twice_or_more']} more than once, {res['never_graded']} never; "
              f"{res['first_attempt']} on the first attempt); client errors: {len(stats.errors)}, "
              f"submissions whose answer the client saw: {res['client_saw']}")
        print(f"CPU: web {cpu_web:.1f} s ({1000 * cpu_web / max(1, sum(map(len, stats.routes.values()))):.1f} ms "
              f"per request), grading workers {cpu_workers:.1f} s, this client {cpu_client:.1f} s; "
              f"load average at the end {load:.1f} on {os.cpu_count()} CPUs; web workers killed and "
              f"restarted by uvicorn's health check: {restarts}")
        print(f"{'route':42} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8}" + (f" {'CPU ms/req':>10}" if cpu else ""))
        for r, f in out["routes"].items():
            print(f"{r:42} {f['requests']:8d} {f['p50_ms']:8.0f} {f['p99_ms']:8.0f}"
                  + (f" {f.get('cpu_ms_per_request', float('nan')):10.1f}" if cpu else ""))
        for k, v in sorted(out["cpu_s_outside_handlers"].items(), key=lambda kv: -kv[1]):
            print(f"{k:60} {1000 * v / max(1, out['page_requests']):6.1f} CPU ms per page request")
    for e in stats.errors[:10]:
        print("error:", e, file=sys.stderr)
    return 0 if exactly_once and not stats.errors else 1


if __name__ == "__main__":
    sys.exit(main())
