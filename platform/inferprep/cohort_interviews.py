"""Mock interviews an instructor schedules for a cohort, and their pseudonymous leaderboards (issue 18).

A ``CohortInterview`` (``interview_models``) is a window ``[opens_at, closes_at)`` in which each
student of the cohort may take one timed mock interview of ``minutes`` minutes drawn from a scope
(a collection or a track). The draw is either the same for everyone (``draw="same"``: the
schedule's seed, the user's recent passes ignored, so every student gets the same exercises) or
per student (``draw="per_student"``: a seed derived from the schedule's seed and the user id, and
the user's passes of the last ``interview.REPEAT_DAYS`` days avoided as in a practice session).
A session started late still ends when the window closes: ``ends_at = min(start + minutes,
closes_at)`` (the start writes it right after ``interview.start_session`` fixed it).

Review: before ``closes_at`` a student sees that they finished, not their report; after it, their
report (and, through ``interview.lock_reason``, the editorials) only if ``review_after``.

Leaderboard: off by default; the instructor enables it per scheduled interview (``leaderboard``),
and each student opts in (a ``LeaderboardEntry`` with board ``"interview:<id>"`` and a generated
pseudonym such as "Blue Falcon 17", never their name or email). It lists only opted-in students
whose session is over, by score (descending), then time to finish (ascending).

Errors: ``services.NotFound`` for a scheduled interview the caller may not see (a cohort they do
not belong to answers as if it did not exist); ``services.BadRequest`` for a bad schedule or a
start outside the rules (before the window, after it, a second time).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from . import interview
from .cohorts import aware, role_in, students, teaching_cohort
from .interview_models import CohortInterview, DrawMode, InterviewSession, LeaderboardEntry, ScopeKind
from .models import Cohort, Membership, Role, User
from .services import BadRequest, NotFound, catalog_exercises

BOARD_PREFIX = "interview:"
COLORS = ("Amber", "Azure", "Blue", "Bronze", "Coral", "Crimson", "Cyan", "Golden", "Green", "Indigo",
          "Ivory", "Jade", "Lilac", "Maroon", "Olive", "Orange", "Pearl", "Plum", "Red", "Ruby", "Sage",
          "Silver", "Teal", "Violet")
ANIMALS = ("Badger", "Bison", "Condor", "Crane", "Falcon", "Fox", "Gecko", "Heron", "Ibex", "Jaguar",
           "Kestrel", "Lynx", "Marten", "Moose", "Otter", "Owl", "Panda", "Puffin", "Raven", "Seal",
           "Tapir", "Tiger", "Walrus", "Wolf")


# -- scheduling -----------------------------------------------------------------------------------
def candidates(scope_kind: str, scope: str) -> list:
    """The catalog's exercises in the scope (``catalog.Exercise``); ``BadRequest`` for an unknown scope."""
    known = {(k, v) for k, v, _ in interview.scopes()}
    if (scope_kind, scope) not in known:
        raise BadRequest(f"no scope {scope_kind} {scope!r}; one of: " + ", ".join(v for _, v in sorted(known)))
    if scope_kind == ScopeKind.COLLECTION.value:
        return [e for e in catalog_exercises() if scope in {c.value for c in e.meta.collections}]
    return [e for e in catalog_exercises() if e.meta.track.value == scope]


def scope_label(scope_kind: str, scope: str) -> str:
    return next((label for k, v, label in interview.scopes() if (k, v) == (scope_kind, scope)), scope)


def schedule(s: Session, cohort_id: int, *, title: str, scope_kind: str, scope: str, minutes: int,
             opens_at: datetime, closes_at: datetime, draw: str = DrawMode.SAME.value, review_after: bool = True,
             leaderboard: bool = False, seed: int | None = None, now: datetime | None = None) -> CohortInterview:
    """Schedule a mock interview for the cohort. ``opens_at``/``closes_at``: aware UTC (naive ones
    are read as UTC); the window must be at least ``minutes`` long and must not have closed
    already. ``minutes``: one of ``interview.LENGTHS``. ``seed``: the draw's seed (random 48 bits
    if None). ``BadRequest`` for a bad title, scope, length, window or draw mode, or a scope that
    has no exercise for that length."""
    now = now or interview.now()
    title = " ".join((title or "").split())
    if not 1 <= len(title) <= 200:
        raise BadRequest("a title has 1 to 200 characters")
    if minutes not in interview.LENGTHS:
        raise BadRequest(f"a mock interview lasts {', '.join(map(str, interview.LENGTHS))} minutes, not {minutes}")
    try:
        draw = DrawMode(draw).value
    except ValueError:
        raise BadRequest(f"draw is one of {', '.join(d.value for d in DrawMode)}") from None
    try:    # to UTC now: a time near year 1 or 9999 in another zone has no UTC datetime
        opens_at, closes_at = aware(opens_at).astimezone(timezone.utc), aware(closes_at).astimezone(timezone.utc)
    except OverflowError:
        raise BadRequest("the window's times must lie between the years 1 and 9999 in UTC") from None
    if closes_at - opens_at < timedelta(minutes=minutes):
        raise BadRequest(f"the window ({opens_at:%Y-%m-%d %H:%M} to {closes_at:%Y-%m-%d %H:%M} UTC) is shorter "
                         f"than the interview's {minutes} minutes")
    if closes_at <= now:
        raise BadRequest(f"the window closes at {closes_at:%Y-%m-%d %H:%M} UTC, which has passed")
    seed = secrets.randbits(48) if seed is None else seed
    try:
        interview.draw(candidates(scope_kind, scope), minutes, seed, set())
    except ValueError as e:
        raise BadRequest(f"{scope_label(scope_kind, scope)} cannot fill a {minutes}-minute interview: {e}") from None
    ci = CohortInterview(cohort_id=cohort_id, title=title, scope_kind=scope_kind, scope=scope, minutes=minutes,
                         opens_at=opens_at, closes_at=closes_at, draw=draw, seed=seed, review_after=review_after,
                         leaderboard=leaderboard)
    s.add(ci)
    s.commit()
    s.refresh(ci)
    return ci


def set_options(s: Session, ci: CohortInterview, *, review_after: bool | None = None,
                leaderboard: bool | None = None) -> CohortInterview:
    """The instructor's switches: students may review after the window; the leaderboard is on."""
    if review_after is not None:
        ci.review_after = review_after
    if leaderboard is not None:
        ci.leaderboard = leaderboard
    s.add(ci)
    s.commit()
    return ci


def for_cohort(s: Session, cohort_id: int) -> list[CohortInterview]:
    """The cohort's scheduled interviews, by opening time."""
    return list(s.exec(select(CohortInterview).where(CohortInterview.cohort_id == cohort_id)
                       .order_by(CohortInterview.opens_at, CohortInterview.id)).all())


def for_teacher(s: Session, user: User, ci_id: int) -> CohortInterview:
    """The scheduled interview if ``user`` teaches its cohort; ``NotFound`` otherwise."""
    ci = s.get(CohortInterview, ci_id)
    if ci is None:
        raise NotFound(f"no scheduled interview {ci_id}")
    teaching_cohort(s, user, ci.cohort_id)
    return ci


def for_student(s: Session, user_id: int, ci_id: int) -> CohortInterview:
    """The scheduled interview if ``user_id`` is a student of its cohort; ``NotFound`` otherwise."""
    ci = s.get(CohortInterview, ci_id)
    if ci is None or role_in(s, user_id, ci.cohort_id) != Role.STUDENT.value:
        raise NotFound(f"no scheduled interview {ci_id}")
    return ci


def for_member(s: Session, user: User, ci_id: int) -> CohortInterview:
    """The scheduled interview if ``user`` studies or teaches in its cohort (or is an admin)."""
    ci = s.get(CohortInterview, ci_id)
    if ci is None or not (user.is_admin or role_in(s, user.id, ci.cohort_id) is not None):
        raise NotFound(f"no scheduled interview {ci_id}")
    return ci


# -- taking one -----------------------------------------------------------------------------------
student_seed = interview.cohort_seed   # one derivation of a student's seed, in interview.py


def session_of(s: Session, user_id: int, ci_id: int) -> InterviewSession | None:
    return s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                 InterviewSession.cohort_interview_id == ci_id)).first()


def state(ci: CohortInterview, session: InterviewSession | None, now: datetime) -> str:
    """One of "upcoming", "open" (may start), "running" (started, time left), "done" (their session
    is over, the window still open), "closed" (the window closed)."""
    if now >= aware(ci.closes_at):
        return "closed"
    if session is not None:
        return "running" if interview.remaining_seconds(session, now) > 0 else "done"
    return "upcoming" if now < aware(ci.opens_at) else "open"


def start(s: Session, user_id: int, ci_id: int, now: datetime | None = None) -> InterviewSession:
    """Start the student's session of a scheduled interview. ``NotFound`` unless they are a student
    of its cohort; ``BadRequest`` before the window, after it, or when they already started it
    (or have another mock interview running: ``interview.start_session``)."""
    now = now or interview.now()
    ci = for_student(s, user_id, ci_id)
    if now < aware(ci.opens_at):
        raise BadRequest(f"{ci.title!r} opens at {aware(ci.opens_at):%Y-%m-%d %H:%M} UTC")
    if now >= aware(ci.closes_at):
        raise BadRequest(f"{ci.title!r} closed at {aware(ci.closes_at):%Y-%m-%d %H:%M} UTC")
    if session_of(s, user_id, ci.id) is not None:
        raise BadRequest(f"you already started {ci.title!r}: each student takes it once")
    # the schedule decides the seed (interview.cohort_seed), whether recent passes are avoided (a
    # per-student draw only) and the end (a late start ends when the window closes)
    return interview.start_session(s, user_id, scope_kind=ci.scope_kind, scope=ci.scope, minutes=ci.minutes,
                                   source="web", cohort_interview=ci, now=now)


def review_lock(s: Session, session: InterviewSession, now: datetime | None = None) -> str | None:
    """Why the student may not read the report of ``session`` yet (None: they may). A session of a
    scheduled interview opens its report after the window closes, and only if the instructor lets
    students review; any other session's report is its owner's to read."""
    if session.cohort_interview_id is None:
        return None
    ci = s.get(CohortInterview, session.cohort_interview_id)
    now = now or interview.now()
    if ci is None:
        return None
    if now < aware(ci.closes_at):
        return f"the report opens when the window closes ({aware(ci.closes_at):%Y-%m-%d %H:%M} UTC)"
    if not ci.review_after:
        return "your instructors keep the reports of this interview closed"
    return None


def student_report(s: Session, user_id: int, ci_id: int, now: datetime | None = None) -> interview.InterviewReport:
    """The student's report of a scheduled interview; ``NotFound`` if they did not take it,
    ``services.Locked`` while ``review_lock`` gives a reason."""
    from .services import Locked
    now = now or interview.now()
    for_student(s, user_id, ci_id)
    session = session_of(s, user_id, ci_id)
    if session is None:
        raise NotFound("you did not take this interview")
    reason = review_lock(s, session, now)
    if reason:
        raise Locked(reason)
    return interview.report(s, session, now)


@dataclass
class StudentView:
    """A scheduled interview as one student sees it: ``state`` as in ``state()``."""
    ci: CohortInterview
    cohort: Cohort
    state: str
    session: InterviewSession | None
    review: str | None          # why the report is closed (None: open); only after they took it
    opted_in: bool


def student_views(s: Session, user_id: int, now: datetime | None = None, *,
                  current_only: bool = False) -> list[StudentView]:
    """Every scheduled interview of the cohorts ``user_id`` studies in (``current_only``: those
    upcoming, open or running), by opening time."""
    now = now or interview.now()
    rows = s.exec(select(CohortInterview, Cohort).join(Cohort, Cohort.id == CohortInterview.cohort_id)
                  .join(Membership, Membership.cohort_id == CohortInterview.cohort_id)
                  .where(Membership.user_id == user_id, Membership.role == Role.STUDENT.value)
                  .order_by(CohortInterview.opens_at, CohortInterview.id)).all()
    boards = set(s.exec(select(LeaderboardEntry.board).where(LeaderboardEntry.user_id == user_id)).all())
    out = []
    for ci, cohort in rows:
        session = session_of(s, user_id, ci.id)
        st = state(ci, session, now)
        if current_only and st not in ("upcoming", "open", "running"):
            continue
        out.append(StudentView(ci, cohort, st, session, review_lock(s, session, now) if session else None,
                               board(ci) in boards))
    return out


# -- results --------------------------------------------------------------------------------------
@dataclass
class Result:
    """One student's result in one scheduled interview. ``status``: "not started", "running" or
    "finished"; ``score`` 0..100 (None before a start); ``seconds``: from the start to the end of
    the session (finishing, or the time running out), None while running; ``items``: (slug,
    passed) in the drawn order."""
    user_id: int
    status: str = "not started"
    score: float | None = None
    seconds: float | None = None
    items: list[tuple[str, bool]] = field(default_factory=list)


@dataclass
class Results:
    ci: CohortInterview
    rows: dict[int, Result]            # user id -> result, for every student of the cohort
    positions: int                     # the most exercises any student drew (the CSV's columns)


def results(s: Session, ci: CohortInterview, now: datetime | None = None) -> Results:
    """Every student's result in ``ci`` (a session still running is scored as it stands)."""
    now = now or interview.now()
    rows: dict[int, Result] = {}
    sessions = {x.user_id: x for x in s.exec(select(InterviewSession)
                                             .where(InterviewSession.cohort_interview_id == ci.id)).all()}
    for u in students(s, ci.cohort_id):
        session = sessions.get(u.id)
        r = rows[u.id] = Result(u.id)
        if session is None:
            continue
        over = session.finished_at is not None or interview.remaining_seconds(session, now) == 0
        rep = interview.report(s, session, now)
        r.status = "finished" if over else "running"
        r.score = rep.score
        r.seconds = (aware(rep.ended_at) - aware(rep.started_at)).total_seconds() if over else None
        r.items = [(it.slug, it.passed) for it in rep.items]
    positions = max((len(r.items) for r in rows.values()), default=0)
    return Results(ci, rows, positions)


def cohort_results(s: Session, cohort_id: int, now: datetime | None = None) -> list[Results]:
    now = now or interview.now()
    return [results(s, ci, now) for ci in for_cohort(s, cohort_id)]


def csv_columns(res: Results) -> list[str]:
    t = res.ci.title
    return [f"{t}: score", f"{t}: finished", *[f"{t}: exercise {k + 1}" for k in range(res.positions)]]


def csv_values(res: Results, user_id: int) -> list[str]:
    """The CSV cells of one student (``grades_export.export_csv`` adds them after the exercise columns):
    the score with 1 decimal (empty: not started), finished yes/no, then per drawn exercise
    "<slug> passed" or "<slug> failed"."""
    r = res.rows.get(user_id) or Result(user_id)
    items = [f"{slug} {'passed' if ok else 'failed'}" for slug, ok in r.items]
    return ["" if r.score is None else f"{r.score:.1f}", "yes" if r.status == "finished" else "no",
            *items, *[""] * (res.positions - len(items))]


# -- leaderboard ----------------------------------------------------------------------------------
def board(ci: CohortInterview) -> str:
    return f"{BOARD_PREFIX}{ci.id}"


def new_alias(taken: set[str], forbidden: tuple[str, ...] = ()) -> str:
    """A pseudonym "<Color> <Animal> <10..99>" not in ``taken`` and not equal (ignoring case) to
    any of ``forbidden`` (the user's name and email)."""
    bad = {f.casefold() for f in forbidden if f}
    for _ in range(1000):
        alias = f"{secrets.choice(COLORS)} {secrets.choice(ANIMALS)} {10 + secrets.randbelow(90)}"
        if alias not in taken and alias.casefold() not in bad:
            return alias
    raise RuntimeError("no free pseudonym after 1000 tries")


def opt_in(s: Session, user_id: int, ci_id: int) -> LeaderboardEntry:
    """Put the student on the interview's leaderboard under a new pseudonym (idempotent: a second
    call keeps the first pseudonym). ``NotFound`` unless a student of its cohort; ``BadRequest``
    while the instructor has the leaderboard off."""
    ci = for_student(s, user_id, ci_id)
    if not ci.leaderboard:
        raise BadRequest("this interview's leaderboard is off")
    key = board(ci)
    old = s.exec(select(LeaderboardEntry).where(LeaderboardEntry.user_id == user_id,
                                                LeaderboardEntry.board == key)).first()
    if old is not None:
        return old
    user = s.get(User, user_id)
    taken = set(s.exec(select(LeaderboardEntry.alias).where(LeaderboardEntry.board == key)).all())
    entry = LeaderboardEntry(user_id=user_id, board=key, alias=new_alias(taken, (user.name, user.email or "")))
    s.add(entry)
    try:
        s.commit()
    except IntegrityError:          # the same student opting in twice at once: keep the first
        s.rollback()
        return s.exec(select(LeaderboardEntry).where(LeaderboardEntry.user_id == user_id,
                                                     LeaderboardEntry.board == key)).one()
    s.refresh(entry)
    return entry


def opt_out(s: Session, user_id: int, ci_id: int) -> None:
    """Take the student off the leaderboard (their pseudonym is forgotten). ``NotFound`` as ``opt_in``."""
    ci = for_student(s, user_id, ci_id)
    entry = s.exec(select(LeaderboardEntry).where(LeaderboardEntry.user_id == user_id,
                                                  LeaderboardEntry.board == board(ci))).first()
    if entry is not None:
        s.delete(entry)
        s.commit()


def alias_of(s: Session, user_id: int, ci: CohortInterview) -> str | None:
    return s.exec(select(LeaderboardEntry.alias).where(LeaderboardEntry.user_id == user_id,
                                                       LeaderboardEntry.board == board(ci))).first()


@dataclass(frozen=True)
class Standing:
    rank: int
    alias: str
    score: float
    seconds: float
    mine: bool


def leaderboard(s: Session, ci: CohortInterview, viewer_id: int | None = None,
                now: datetime | None = None) -> list[Standing]:
    """The opted-in students whose session is over, by score (descending), then time to finish
    (ascending); equal score and time share a rank. Empty while the instructor has it off."""
    if not ci.leaderboard:
        return []
    now = now or interview.now()
    entries = {e.user_id: e.alias for e in s.exec(select(LeaderboardEntry)
                                                  .where(LeaderboardEntry.board == board(ci))).all()}
    if not entries:
        return []
    res = results(s, ci, now)
    done = [(r.score, r.seconds, entries[uid], uid) for uid, r in res.rows.items()
            if uid in entries and r.status == "finished"]
    done.sort(key=lambda x: (-x[0], x[1], x[2]))
    out, prev, rank = [], None, 0
    for i, (score, seconds, alias, uid) in enumerate(done):
        if (score, seconds) != prev:
            rank, prev = i + 1, (score, seconds)
        out.append(Standing(rank, alias, score, seconds, uid == viewer_id))
    return out
