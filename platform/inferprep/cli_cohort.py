"""The hosting commands: ``inferprep admin``, ``inferprep cohort``, ``inferprep worker`` and
``inferprep submit`` (registered into ``cli.app``).

``admin`` and ``cohort`` work on the database directly (run them where ``INFERPREP_DATABASE_URL``
reaches it); ``submit`` talks to a server over HTTP with an API token; ``worker`` grades jobs
from the shared database on this machine.
"""

from __future__ import annotations

import getpass
import importlib
import json
import logging
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Optional

import typer

from .cli_common import console, die, err

admin_app = typer.Typer(no_args_is_help=True, help="Accounts with more rights (instructors and admins); replaying a grading.")
cohort_app = typer.Typer(no_args_is_help=True, help="Cohorts: create, invite, assign, set policy, export grades.")

DB_OPT = typer.Option(None, "--database-url", help="SQLAlchemy URL [env INFERPREP_DATABASE_URL]")


def _url(database_url: Optional[str]) -> str:
    from .settings import Settings
    return Settings(**({"database_url": database_url} if database_url else {})).db_url


def _session(database_url: Optional[str]):
    from . import db
    url = _url(database_url)
    db.upgrade(url)
    return db.session_scope(url)


def _password(password: Optional[str]) -> str:
    if password:
        return password
    if os.environ.get("INFERPREP_PASSWORD"):
        return os.environ["INFERPREP_PASSWORD"]
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        die("the passwords differ")
    return first


# -- admin ----------------------------------------------------------------------------------------
def _create_account(email: str, name: str, password: Optional[str], database_url: Optional[str], *,
                    admin: bool) -> None:
    from . import auth
    from .services import ServiceError
    with _session(database_url) as s:
        try:
            u = auth.create_user(s, email, name or email.split("@")[0], _password(password),
                                 is_instructor=True, is_admin=admin)
        except ServiceError as e:
            die(str(e))
        console.print(f"{'admin' if admin else 'instructor'} #{u.id} {u.email} created; sign in at /login",
                      highlight=False)


@admin_app.command("create-instructor")
def create_instructor(email: str, name: str = typer.Option("", help="display name (default: the email's user part)"),
                      password: Optional[str] = typer.Option(None, help="default: asked, or env INFERPREP_PASSWORD"),
                      database_url: Optional[str] = DB_OPT) -> None:
    """Create an instructor account (instructors create cohorts and see their students' work)."""
    _create_account(email, name, password, database_url, admin=False)


@admin_app.command("create-admin")
def create_admin(email: str, name: str = typer.Option(""), password: Optional[str] = typer.Option(None),
                 database_url: Optional[str] = DB_OPT) -> None:
    """Create an admin account (an instructor of every cohort)."""
    _create_account(email, name, password, database_url, admin=True)


def _case_key(verdict) -> list[tuple[str, bool, str]]:
    return [(c.name, c.passed, c.status.value) for c in verdict.cases]


@admin_app.command("replay")
def replay(submission_id: int,
           as_json: bool = typer.Option(False, "--json", help="print the replayed verdict as JSON"),
           sandbox: Optional[str] = typer.Option(None, help="auto, bwrap or none (default: auto)"),
           database_url: Optional[str] = DB_OPT,
           grade_fn: Optional[str] = typer.Option(None, hidden=True, help="module:function replacing the judge (tests)")) -> None:
    """Grade a stored submission again with its recorded salt and print the verdict (nothing stored).

    The salt is the grading's secret, from which the grader draws its hidden data, so the replay
    runs the same hidden cases (with today's graders and catalog). Exit 0 when the cases and
    their results match the recorded verdict (or nothing was recorded yet), 1 when they differ."""
    from . import catalog
    from .cli_common import print_verdict
    from .models import Submission
    from .verdict import Verdict
    with _session(database_url) as s:
        sub = s.get(Submission, submission_id)
    if sub is None or sub.kind == "scratch":   # a scratch run is not a grading: nothing to replay
        die(f"no submission {submission_id}")
    if sub.salt is None:
        die(f"submission {submission_id} has no recorded salt: it was graded before salts were recorded "
            "(migration c002) or has not been claimed by a worker yet; nothing to replay")
    try:
        ex = catalog.get(sub.slug)
    except catalog.CatalogError as e:
        die(str(e))
    if grade_fn:
        mod, _, fn = grade_fn.partition(":")
        grade = getattr(importlib.import_module(mod), fn)
        extra = {}
    else:
        from .runner import judge
        try:
            judge.resolve_device(sub.device, ex)
        except (judge.DeviceUnavailable, ValueError) as e:
            die(f"submission {submission_id} was graded on {sub.device}: {e}")
        grade, extra = judge.grade, {"sandbox_mode": sandbox}
    public = sub.kind == "run"
    err.print(f"replaying submission #{sub.id} ({sub.slug}, {'public examples' if public else 'hidden cases'}, "
              f"{sub.device}) with its recorded salt", highlight=False)
    v = grade(ex, sub.code, device=sub.device, public=public, progress=lambda c: None, salt=sub.salt, **extra)
    if as_json:
        print(v.model_dump_json(indent=2))
    else:
        print_verdict(v)
    if not sub.verdict_json:
        err.print("nothing recorded to compare with (the grading has not finished)")
        raise typer.Exit(0)
    recorded = Verdict.model_validate_json(sub.verdict_json)
    if _case_key(recorded) == _case_key(v):
        err.print(f"the same {len(v.cases)} cases and results as the recorded verdict ({recorded.status.value})",
                  highlight=False)
        raise typer.Exit(0)
    err.print(f"[yellow]differs from the recorded verdict[/] (recorded {recorded.status.value}, "
              f"{recorded.passed}/{recorded.total}; replayed {v.status.value}, {v.passed}/{v.total}): "
              "a grader or catalog change since, or a grader that draws on more than the salt", highlight=False)
    raise typer.Exit(1)


# -- cohort ---------------------------------------------------------------------------------------
def _cohort(s, ref: str):
    from sqlmodel import select
    from .models import Cohort
    c = s.get(Cohort, int(ref)) if ref.isdigit() else s.exec(select(Cohort).where(Cohort.name == ref)).first()
    if c is None:
        die(f"no cohort {ref!r}; `inferprep cohort list` shows them")
    return c


def _user(s, email: str):
    from sqlmodel import select
    from .models import User
    u = s.exec(select(User).where(User.email == email.strip().lower())).first()
    if u is None:
        die(f"no account for {email}")
    return u


@cohort_app.command("create")
def cohort_create(name: str, instructor: Optional[str] = typer.Option(None, help="email of an instructor to add"),
                  database_url: Optional[str] = DB_OPT) -> None:
    """Create a cohort; prints its id and join code."""
    from . import cohorts
    with _session(database_url) as s:
        teacher = _user(s, instructor) if instructor else None
        c = cohorts.create_cohort(s, name, instructor_id=teacher.id if teacher else None)
        console.print(f"cohort #{c.id} {c.name!r}: join code {c.join_code}", highlight=False)


@cohort_app.command("list")
def cohort_list(database_url: Optional[str] = DB_OPT) -> None:
    """Every cohort with its join code and number of students."""
    from sqlmodel import select
    from . import cohorts
    from .models import Cohort
    with _session(database_url) as s:
        for c in s.exec(select(Cohort).order_by(Cohort.id)).all():
            console.print(f"#{c.id}  {c.name}  code {c.join_code}  {len(cohorts.students(s, c.id))} students",
                          highlight=False)


@cohort_app.command("invite")
def cohort_invite(cohort: str, emails: list[str] = typer.Argument(None, help="existing accounts to add"),
                  role: str = typer.Option("student", help="student or instructor"),
                  server: str = typer.Option("http://127.0.0.1:8000", help="the URL students open"),
                  database_url: Optional[str] = DB_OPT) -> None:
    """Print the cohort's sign-up link; add existing accounts (by email) with ROLE."""
    from . import cohorts
    from .services import ServiceError
    with _session(database_url) as s:
        c = _cohort(s, cohort)
        for email in emails or []:
            try:
                cohorts.add_member(s, c.id, _user(s, email).id, role)
            except ServiceError as e:
                die(str(e))
            console.print(f"added {email} as {role}", highlight=False)
        console.print(f"sign-up link: {server.rstrip('/')}/signup?code={c.join_code}", highlight=False)


@cohort_app.command("assign")
def cohort_assign(cohort: str, slug: str,
                  deadline: Optional[str] = typer.Option(None, help="UTC, e.g. 2026-12-01T18:00"),
                  database_url: Optional[str] = DB_OPT) -> None:
    """Assign an exercise to the cohort (again to change the deadline)."""
    from datetime import datetime, timezone
    from . import cohorts
    from .services import ServiceError
    when = None
    if deadline:
        try:
            when = datetime.fromisoformat(deadline)
        except ValueError:
            die(f"deadline {deadline!r} is not like 2026-12-01T18:00")
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    with _session(database_url) as s:
        try:
            cohorts.assign(s, _cohort(s, cohort).id, slug, when)
        except ServiceError as e:
            die(str(e))
    console.print(f"assigned {slug}" + (f" (due {when:%Y-%m-%d %H:%M} UTC)" if when else ""), highlight=False)


@cohort_app.command("policy")
def cohort_policy(cohort: str, unlock: Optional[str] = typer.Option(None, help="on_pass, after_deadline or never"),
                  per_hour: Optional[int] = typer.Option(None, help="gradings per student per hour (0: no limit)"),
                  database_url: Optional[str] = DB_OPT) -> None:
    """Show or set when editorials unlock and the per-student rate limit."""
    from . import cohorts
    from .services import ServiceError
    with _session(database_url) as s:
        c = _cohort(s, cohort)
        try:
            p = cohorts.set_policy(s, c.id, unlock=unlock, submissions_per_hour=per_hour)
        except ServiceError as e:
            die(str(e))
        console.print(f"{c.name}: unlock {p.unlock}, {p.submissions_per_hour or 'unlimited'} gradings/hour",
                      highlight=False)


@cohort_app.command("export")
def cohort_export(cohort: str, out: Optional[Path] = typer.Option(None, "--out", "-o", help="default: stdout"),
                  database_url: Optional[str] = DB_OPT) -> None:
    """Export the cohort's grades as CSV (best hidden-case score per assigned exercise)."""
    from . import grades_export
    with _session(database_url) as s:
        text = grades_export.export_csv(s, _cohort(s, cohort))
    if out:
        out.write_text(text, encoding="utf-8")
        err.print(f"wrote {out}")
    else:
        print(text, end="")


# -- worker ---------------------------------------------------------------------------------------
def worker(device: str = typer.Option("cpu", help="cpu, cuda, or both as cuda,cpu: the jobs this worker takes"),
           concurrency: int = typer.Option(2, min=1, max=64, help="gradings at once"),
           database_url: Optional[str] = DB_OPT,
           lease_seconds: Optional[float] = typer.Option(None, help="lease of a claimed job [env INFERPREP_LEASE_SECONDS]"),
           name: Optional[str] = typer.Option(None, help="worker name in the database (default host:pid)"),
           allow_unsandboxed: bool = typer.Option(False, "--allow-unsandboxed",
                                                  help="grade without bubblewrap (trusted code only)"),
           poll: Optional[float] = typer.Option(None, help="seconds between polls of an empty queue; default 30 on "
                                                "PostgreSQL (LISTEN/NOTIFY wakes the worker at once; this "
                                                "only bounds a lost notification), 2 on SQLite"),
           grade_fn: Optional[str] = typer.Option(None, hidden=True, help="module:function replacing the judge (tests)")) -> None:
    """Grade queued submissions from the shared database until stopped (SIGTERM or Ctrl+C).

    Run any number of these on any machines that reach the database; a job needing CUDA goes only
    to a worker started with --device cuda. A worker killed mid-grade loses nothing: its lease
    expires and another worker grades the job again. On PostgreSQL the worker LISTENs: a new job
    wakes it at once, and a Cancel kills the grading's process."""
    from .settings import Settings
    from .web.cohort_mode import UnsandboxedRefused, refuse_unsandboxed
    from . import notify
    from .worker import Worker
    devices = tuple(d.strip() for d in device.split(",") if d.strip())
    if not devices or any(d not in ("cpu", "cuda") for d in devices):
        die("--device is cpu, cuda or cuda,cpu")
    overrides = {k: v for k, v in dict(database_url=database_url, lease_seconds=lease_seconds,
                                       allow_unsandboxed=allow_unsandboxed or None).items() if v is not None}
    settings = Settings(**overrides)
    if "cuda" in devices and grade_fn is None:
        import torch
        if not torch.cuda.is_available():
            die("--device cuda but torch sees no CUDA device on this machine")
    grade = None
    if grade_fn:
        mod, _, fn = grade_fn.partition(":")
        grade = getattr(importlib.import_module(mod), fn)
    else:
        try:
            mode = refuse_unsandboxed(settings)
        except UnsandboxedRefused as e:
            die(str(e))
        if mode != "bwrap":
            err.print("[yellow]warning: grading without bubblewrap isolation (--allow-unsandboxed)[/]")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    hub = notify.Hub()
    w = Worker(settings.db_url, threads=concurrency, devices=devices, lease_s=settings.lease_seconds,
               max_attempts=settings.max_attempts, grade=grade, hub=hub,
               poll_s=poll if poll is not None else notify.poll_seconds(settings.db_url, same_process=False),
               name=name or f"{socket.gethostname()}:worker:{os.getpid()}")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    w.start()
    listener = notify.listen(settings.db_url, hub, (notify.JOBS, notify.CANCEL))
    err.print(f"worker {w.name}: {concurrency} x {'/'.join(devices)}, lease {settings.lease_seconds:g} s, "
              f"database {settings.db_url.split('@')[-1]}", highlight=False)
    while not stop.wait(1.0):
        pass
    err.print("stopping: gradings in flight finish or their leases expire and another worker takes them")
    if listener is not None:
        listener.stop()
    w.stop(timeout=30)


# -- submit ---------------------------------------------------------------------------------------
def _http(method: str, url: str, token: str, body: dict | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json",
        **({"Content-Type": "application/json"} if data else {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}"), dict(r.headers)
    except urllib.error.HTTPError as e:
        try:
            payload = json.loads(e.read() or b"{}")
        except ValueError:
            payload = {}
        return e.code, payload, dict(e.headers)
    except urllib.error.URLError as e:
        die(f"cannot reach {url}: {e.reason}")


def submit(slug: str, file: Path,
           server: str = typer.Option(..., envvar="INFERPREP_SERVER", help="the cohort's server, e.g. https://prep.example.org"),
           token: str = typer.Option(..., envvar="INFERPREP_TOKEN", help="an API token from the server's Account page"),
           public: bool = typer.Option(False, "--public", help="grade the public examples only"),
           wait: bool = typer.Option(True, help="wait for the verdict"),
           timeout: float = typer.Option(600.0, help="seconds to wait for the verdict"),
           as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON")) -> None:
    """Grade FILE on the cohort's server, recorded there as your submission. Exit 0 only on a pass."""
    from .cli_common import print_verdict, read_submission_file
    from .verdict import Verdict
    code = read_submission_file(file)
    base = server.rstrip("/")
    body = {"code": code, "kind": "run" if public else "submit", "idempotency_key": uuid.uuid4().hex}
    deadline = time.monotonic() + timeout
    while True:
        status, payload, headers = _http("POST", f"{base}/api/exercises/{slug}/submissions", token, body)
        if status != 429:
            break
        wait_s = float(headers.get("Retry-After") or headers.get("retry-after") or 10)
        if not wait or time.monotonic() + wait_s > deadline:
            die(f"{payload.get('detail', 'too many requests')} (retry after {wait_s:.0f} s)", 3)
        err.print(f"{payload.get('detail', 'busy')}; retrying in {wait_s:.0f} s", highlight=False)
        time.sleep(wait_s)     # the same idempotency key: a retry never makes a second submission
    if status != 202:
        die(f"the server answered {status}: {payload.get('detail', payload)}")
    sub_id = payload["id"]
    err.print(f"submission #{sub_id} queued (position {payload.get('queue_position', '?')}): {base}/submissions/{sub_id}",
              highlight=False)
    if not wait:
        raise typer.Exit(0)
    while payload.get("state") in ("queued", "running"):
        if time.monotonic() > deadline:
            die(f"no verdict after {timeout:g} s; it is still {payload.get('state')} on the server", 4)
        time.sleep(1.0)
        status, payload, _ = _http("GET", f"{base}/api/submissions/{sub_id}", token)
        if status != 200:
            die(f"the server answered {status}: {payload.get('detail', payload)}")
    if payload.get("verdict") is None:   # cancelled (in the browser, or by another client)
        die(f"submission #{sub_id} ended without a verdict: {payload.get('state')}", 4)
    v = Verdict.model_validate(payload["verdict"])
    if as_json:
        print(v.model_dump_json(indent=2))
    else:
        print_verdict(v)
    raise typer.Exit(0 if v.ok else 1)


def register(app: typer.Typer) -> None:
    app.add_typer(admin_app, name="admin")
    app.add_typer(cohort_app, name="cohort")
    app.command("worker")(worker)
    app.command("submit")(submit)
