"""Cohorts: membership and roles, the instructor's policy, backpressure, the instructor's views.

Roles: a *student* sees only their own drafts, submissions and progress (the service layer
scopes every call by user id); an *instructor* of a cohort sees everything of its students; an
*admin* (``User.is_admin``) is an instructor of every cohort. A cohort that a user may not see
answers ``NotFound`` rather than 403, so ids do not reveal what exists.

The policy (``CohortPolicy``, ``Assignment``): which exercises are assigned and their deadlines,
when the editorial and reference unlock (``Unlock``), and how many submissions a student may
make per hour. ``release_check`` (in ``release_policy``, below this module and ``services``) is
called by ``unlock.unlocked_texts``; with no cohort membership (local mode) it never locks anything.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, update
from sqlmodel import Session, select

from .cohort_models import Assignment, CohortPolicy, Unlock
from .models import GRADED, Cohort, JobState, Membership, Role, Submission, SubmissionKind, User, utcnow
from .notify import JOBS, SUBMISSION, pg_notify
from .release_policy import aware, release_check  # noqa: F401 - release_check: also cohorts' name
from .services import BadRequest, NotFound, ServiceError, get_exercise

RATE_WINDOW_S = 3600


class TooManyRequests(ServiceError):
    """429: the queue is full or the student's rate limit is spent; ``retry_after`` in seconds."""
    http_status = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


def valid_slug(slug: str) -> str:
    """``slug`` if it can name an exercise folder; ``NotFound`` otherwise (no path traversal, and
    no over-long name reaching the file system: the exercise table keeps 100 characters)."""
    from .catalog import SLUG_RE
    if not isinstance(slug, str) or len(slug) > 100 or not SLUG_RE.match(slug):
        raise NotFound(f"no exercise {slug[:100]!r}")
    return slug


# -- cohorts and roles ----------------------------------------------------------------------------
def new_join_code() -> str:
    return secrets.token_urlsafe(9)


def create_cohort(s: Session, name: str, *, instructor_id: int | None = None) -> Cohort:
    name = (name or "").strip()
    if not 1 <= len(name) <= 200:
        raise BadRequest("a cohort name has 1 to 200 characters")
    cohort = Cohort(name=name, join_code=new_join_code())
    s.add(cohort)
    s.commit()
    s.refresh(cohort)
    s.add(CohortPolicy(cohort_id=cohort.id))
    if instructor_id is not None:
        s.add(Membership(user_id=instructor_id, cohort_id=cohort.id, role=Role.INSTRUCTOR.value))
    s.commit()
    return cohort


def add_member(s: Session, cohort_id: int, user_id: int, role: str) -> Membership:
    if role not in (Role.STUDENT.value, Role.INSTRUCTOR.value):
        raise BadRequest("role is student or instructor")
    m = s.exec(select(Membership).where(Membership.user_id == user_id, Membership.cohort_id == cohort_id)).first()
    m = m or Membership(user_id=user_id, cohort_id=cohort_id)
    m.role = role
    s.add(m)
    s.commit()
    return m


def role_in(s: Session, user_id: int, cohort_id: int) -> str | None:
    return s.exec(select(Membership.role).where(Membership.user_id == user_id,
                                                Membership.cohort_id == cohort_id)).first()


def cohorts_of(s: Session, user: User, role: str | None = None) -> list[Cohort]:
    if user.is_admin and role != Role.STUDENT.value:
        return list(s.exec(select(Cohort).order_by(Cohort.id)).all())
    q = select(Cohort).join(Membership, Membership.cohort_id == Cohort.id).where(Membership.user_id == user.id)
    if role:
        q = q.where(Membership.role == role)
    return list(s.exec(q.order_by(Cohort.id)).all())


def teaching_cohort(s: Session, user: User, cohort_id: int) -> Cohort:
    """The cohort if ``user`` teaches it (or is an admin); ``NotFound`` otherwise."""
    cohort = s.get(Cohort, cohort_id)
    if cohort is None or not (user.is_admin or role_in(s, user.id, cohort_id) == Role.INSTRUCTOR.value):
        raise NotFound(f"no cohort {cohort_id}")
    return cohort


def students(s: Session, cohort_id: int) -> list[User]:
    return list(s.exec(select(User).join(Membership, Membership.user_id == User.id)
                       .where(Membership.cohort_id == cohort_id, Membership.role == Role.STUDENT.value)
                       .order_by(User.name, User.id)).all())


def student_of(s: Session, cohort_id: int, user_id: int) -> User:
    if role_in(s, user_id, cohort_id) != Role.STUDENT.value:
        raise NotFound(f"no student {user_id} in this cohort")
    return s.get(User, user_id)


def submission_for_teacher(s: Session, teacher: User, sub_id: int) -> Submission:
    """Any submission of a student of a cohort ``teacher`` teaches; ``NotFound`` otherwise."""
    sub = s.get(Submission, sub_id, populate_existing=True)
    if sub is None or sub.kind == SubmissionKind.SCRATCH.value:   # a scratch run is its owner's alone
        raise NotFound(f"no submission {sub_id}")
    if teacher.is_admin:
        return sub
    taught = select(Membership.cohort_id).where(Membership.user_id == teacher.id,
                                                Membership.role == Role.INSTRUCTOR.value)
    hit = s.exec(select(Membership.id).where(Membership.user_id == sub.user_id,
                                             Membership.role == Role.STUDENT.value,
                                             Membership.cohort_id.in_(taught))).first()
    if hit is None:
        raise NotFound(f"no submission {sub_id}")
    return sub


# -- policy ---------------------------------------------------------------------------------------
def policy(s: Session, cohort_id: int) -> CohortPolicy:
    return s.get(CohortPolicy, cohort_id) or CohortPolicy(cohort_id=cohort_id)


def set_policy(s: Session, cohort_id: int, *, unlock: str | None = None,
               submissions_per_hour: int | None = None) -> CohortPolicy:
    p = policy(s, cohort_id)
    if unlock is not None:
        try:
            p.unlock = Unlock(unlock).value
        except ValueError:
            raise BadRequest(f"unlock is one of {', '.join(u.value for u in Unlock)}") from None
    if submissions_per_hour is not None:
        if not 0 <= submissions_per_hour <= 10_000:
            raise BadRequest("submissions per hour is 0 (no limit) to 10000")
        p.submissions_per_hour = submissions_per_hour
    s.add(p)
    s.commit()
    return p


def assign(s: Session, cohort_id: int, slug: str, deadline: datetime | None = None) -> Assignment:
    from .services import ensure_exercise_row
    ex = get_exercise(valid_slug(slug))
    ensure_exercise_row(s, ex)
    a = s.exec(select(Assignment).where(Assignment.cohort_id == cohort_id, Assignment.slug == ex.slug)).first()
    a = a or Assignment(cohort_id=cohort_id, slug=ex.slug)
    a.deadline = aware(deadline)
    s.add(a)
    s.commit()
    return a


def unassign(s: Session, cohort_id: int, slug: str) -> None:
    a = s.exec(select(Assignment).where(Assignment.cohort_id == cohort_id, Assignment.slug == slug)).first()
    if a is not None:
        s.delete(a)
        s.commit()


def assignments(s: Session, cohort_id: int) -> list[Assignment]:
    return list(s.exec(select(Assignment).where(Assignment.cohort_id == cohort_id)
                       .order_by(Assignment.deadline.is_(None), Assignment.deadline, Assignment.slug)).all())


def exercise_by_name(name: str) -> str:
    """The slug of the exercise ``name`` names: its slug, or its title (any case, spaces trimmed),
    as the instructor's assign box accepts either. ``BadRequest`` naming the closest titles otherwise."""
    import difflib
    from .services import catalog_exercises
    text = " ".join((name or "").split())
    if not text:
        raise BadRequest("name the exercise to assign (its title or slug)")
    exercises = catalog_exercises()
    for ex in exercises:
        if text == ex.slug or text.casefold() == ex.meta.title.casefold():
            return ex.slug
    titles = [ex.meta.title for ex in exercises]
    close = difflib.get_close_matches(text, titles, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; pick one from the list"
    raise BadRequest(f"no exercise is titled {text[:200]!r}{hint}")


@dataclass(frozen=True)
class Assigned:
    """An exercise assigned to a student: the earliest deadline (UTC; None: none) among the
    cohorts they study in that assign it, and whether that deadline had passed when read."""
    slug: str
    deadline: datetime | None
    past_due: bool

    def overdue(self, status: str) -> bool:
        """Past the deadline and not solved (``status`` as in ``services.status_map``)."""
        return self.past_due and status != "solved"


def assigned_to(s: Session, user_id: int, now: datetime | None = None) -> dict[str, Assigned]:
    """slug -> ``Assigned`` for every exercise assigned to a cohort ``user_id`` is a student of."""
    now = now or utcnow()
    rows = s.exec(select(Assignment.slug, Assignment.deadline)
                  .join(Membership, Membership.cohort_id == Assignment.cohort_id)
                  .where(Membership.user_id == user_id, Membership.role == Role.STUDENT.value)).all()
    out: dict[str, Assigned] = {}
    for slug, deadline in rows:
        deadline = aware(deadline)
        old = out.get(slug)
        if old is None or (deadline is not None and (old.deadline is None or deadline < old.deadline)):
            out[slug] = Assigned(slug, deadline, deadline is not None and deadline <= now)
    return out


# -- backpressure ---------------------------------------------------------------------------------
def admit(s: Session, sub: Submission, *, queue_limit: int) -> None:
    """The admission check of cohort mode (``queue.enqueue``'s ``admit``): the queue limit and the
    student's hourly rate, for new submissions and retries alike. ``enqueue`` runs it under the
    submission gate, in the transaction that inserts ``sub``, which makes it atomic."""
    check_capacity(s, sub.user_id, queue_limit=queue_limit)


def check_capacity(s: Session, user_id: int, *, queue_limit: int, now: datetime | None = None) -> None:
    """Raise ``TooManyRequests`` if the queue is full or the user's hourly limit is spent. Every
    submission row counts (new ones, retries the user asked for, scratch runs as Run does); a check outside the gate
    (``queue.take_gate``) is only advisory: use ``admit`` through ``enqueue``."""
    now = now or utcnow()
    queued = s.exec(select(func.count()).where(Submission.state == JobState.QUEUED.value)).one()
    if queued >= queue_limit:
        raise TooManyRequests(f"the grading queue is full ({queued} waiting); try again shortly", 30)
    limits = s.exec(select(CohortPolicy.submissions_per_hour)
                    .join(Membership, Membership.cohort_id == CohortPolicy.cohort_id)
                    .where(Membership.user_id == user_id, Membership.role == Role.STUDENT.value)).all()
    limits = [n for n in limits if n > 0]
    if not limits:
        return
    limit = min(limits)
    since = now - timedelta(seconds=RATE_WINDOW_S)
    recent = s.exec(select(Submission.created_at).where(Submission.user_id == user_id,
                                                        Submission.created_at > since)
                    .order_by(Submission.created_at.desc()).limit(limit)).all()
    if len(recent) >= limit:
        oldest = aware(recent[-1])
        wait = (oldest + timedelta(seconds=RATE_WINDOW_S) - now).total_seconds()
        seconds = int(wait) + 1
        raise TooManyRequests(f"your cohort allows {limit} gradings an hour; the next one in "
                              f"{human_wait(seconds)} (at {now + timedelta(seconds=seconds):%H:%M} UTC)",
                              seconds)


def human_wait(seconds: int) -> str:
    """A wait as people say it: "45 s", "3 min", "58 min", "1 h 5 min" (minutes rounded up)."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = -(-seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h" + (f" {minutes % 60} min" if minutes % 60 else "")


# -- rejudge --------------------------------------------------------------------------------------
def rejudge(s: Session, sub_id: int) -> bool:
    """Queue a finished submission again (after a grader fix). A submission already queued or
    being graded is left alone, so two rejudge requests grade it once. Returns True if queued."""
    res = s.exec(update(Submission).where(Submission.id == sub_id, Submission.state == JobState.DONE.value, GRADED)
                 .values(state=JobState.QUEUED.value, worker=None, lease_expires_at=None, attempt=0,
                         status=None, score=None, passed=False, cases_json=None, verdict_json=None,
                         started_at=None, finished_at=None))
    if res.rowcount == 1:
        pg_notify(s, JOBS, sub_id)
        pg_notify(s, SUBMISSION, sub_id)
    s.commit()
    return res.rowcount == 1


# -- the instructor's views -----------------------------------------------------------------------
@dataclass
class Cell:
    status: str = "untouched"          # solved | attempted | untouched
    attempts: int = 0
    best: float | None = None
    last: datetime | None = None
    late: bool = False                 # solved only after the deadline


@dataclass
class ExerciseStats:
    slug: str
    attempted: int = 0
    solved: int = 0
    failing_cases: list[tuple[str, int]] = field(default_factory=list)

    def pass_rate(self) -> float | None:
        """Solved / attempted; None when nobody attempted (there is no rate to show)."""
        return self.solved / self.attempted if self.attempted else None


@dataclass
class Matrix:
    cohort: Cohort
    slugs: list[str]
    deadlines: dict[str, datetime | None]
    students: list[User]
    cells: dict[tuple[int, str], Cell]
    stats: list[ExerciseStats]


def matrix(s: Session, cohort: Cohort) -> Matrix:
    """Students x assigned exercises: status, attempts, best hidden score (before the deadline),
    last activity; per exercise the pass rate and the hidden cases failed most often."""
    assigned = assignments(s, cohort.id)
    slugs = [a.slug for a in assigned]
    deadlines = {a.slug: aware(a.deadline) for a in assigned}
    studs = students(s, cohort.id)
    cells: dict[tuple[int, str], Cell] = defaultdict(Cell)
    fails: dict[str, Counter] = defaultdict(Counter)
    ids = [u.id for u in studs]
    if ids and slugs:
        subs = s.exec(select(Submission.user_id, Submission.slug, Submission.kind, Submission.state,
                             Submission.passed, Submission.score, Submission.created_at, Submission.cases_json)
                      .where(Submission.user_id.in_(ids), Submission.slug.in_(slugs), GRADED)).all()
        for uid, slug, kind, state, passed, score, created, cases_json in subs:
            if state == JobState.CANCELLED.value:
                continue   # no verdict: not an attempt
            c = cells[(uid, slug)]
            created = aware(created)
            c.last = max(c.last, created) if c.last else created
            c.attempts += 1
            if c.status == "untouched":
                c.status = "attempted"
            if kind != SubmissionKind.SUBMIT.value or state != JobState.DONE.value:
                continue
            in_time = deadlines[slug] is None or created <= deadlines[slug]
            if passed:
                if in_time:
                    c.status, c.late = "solved", False
                elif c.status != "solved":
                    c.status, c.late = "solved", True
            if score is not None and in_time:
                c.best = max(c.best or 0.0, score)
            for case in json.loads(cases_json or "[]"):
                if not case.get("passed"):
                    fails[slug][str(case.get("name", "?"))] += 1
    stats = []
    for slug in slugs:
        row = [cells[(u.id, slug)] for u in studs if (u.id, slug) in cells]
        stats.append(ExerciseStats(slug, attempted=len(row), solved=sum(c.status == "solved" for c in row),
                                   failing_cases=fails[slug].most_common(3)))
    return Matrix(cohort, slugs, deadlines, studs, dict(cells), stats)


# A spreadsheet runs a cell as a formula when it starts with one of these (OWASP: CSV injection).
# Opened with another delimiter than ours (Excel in a locale that uses ";", a tab or "|"), a
# cell splits wherever that delimiter occurs, and our quotes no longer enclose the pieces (they
# do not start them), so a trigger after any delimiter starts a cell too; spaces or quotes
# before the trigger do not help (spreadsheets trim or drop them).
_TRIGGER = re.compile(r'(^|[,;\t|\r\n])([ "]*)(?=[=+\-@\t\r])')
_NEEDS_QUOTES = re.compile(r'[,;\t|\r\n"]')


def csv_cell(value) -> str:
    """One CSV field that no spreadsheet reads as a formula, whatever delimiter it guesses (, ;
    tab |). A value with a trigger (= + - @ tab CR) at its start or after a delimiter gets a
    ``'`` before the value and before each such trigger (spreadsheets show ``'=...`` as text,
    the first piece and every piece split off alike) and is quoted. Other values are quoted when
    they hold a delimiter, a quote or a line break; quotes are doubled (RFC 4180)."""
    text = "" if value is None else str(value)
    if _TRIGGER.search(text):
        text = _TRIGGER.sub(lambda m: m.group(1) + m.group(2) + "'", text)
        text = text if text.startswith("'") else "'" + text
    elif not _NEEDS_QUOTES.search(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def csv_row(values) -> str:
    return ",".join(csv_cell(v) for v in values) + "\r\n"
