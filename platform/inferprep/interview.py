"""STAND-IN for int-core's interview.py (issue 18): the contract's names with a minimal body, so
int-cohort can develop and test against them. The lead drops this commit when merging the real one."""

from __future__ import annotations


import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from pydantic import BaseModel
from sqlmodel import Session, select

from . import catalog
from .interview_models import CohortInterview, InterviewItem, InterviewSession
from .models import GRADED, JobState, Submission, SubmissionKind
from .services import BadRequest, NotFound, catalog_exercises, ensure_exercise_row

LENGTHS = (30, 45, 60, 90)
HINT_PENALTY = 0.10
REPEAT_DAYS = 14
RULE_TEXT = {30: "one medium exercise", 45: "one implement (easy or medium) and one calculate",
             60: "one implement (medium or hard) and one calculate",
             90: "two implement (one hard) and one calculate"}
SCORE_RULE = "stand-in score rule"
_clock: Callable[[], datetime] | None = None


def now() -> datetime:
    return _clock() if _clock else datetime.now(timezone.utc)


def set_clock(fn: Callable[[], datetime] | None) -> None:
    global _clock
    _clock = fn


def _aware(t):
    return t if t is None or t.tzinfo else t.replace(tzinfo=timezone.utc)


def scopes() -> list[tuple[str, str, str]]:
    return [("collection", c.value, c.value) for c in catalog.Collection] + \
           [("track", t.value, t.title) for t in catalog.Track]


def _candidates(scope_kind: str, scope: str) -> list[catalog.Exercise]:
    if scope_kind == "collection":
        return [e for e in catalog_exercises() if scope in [c.value for c in e.meta.collections]]
    if scope_kind == "track":
        return [e for e in catalog_exercises() if e.meta.track.value == scope]
    raise BadRequest(f"unknown scope kind {scope_kind!r}")


def draw(candidates, minutes, seed, recently_passed) -> list[tuple[str, str]]:
    slots = {30: ["implement"], 45: ["implement", "calculate"], 60: ["implement", "calculate"],
             90: ["implement", "implement", "calculate"]}.get(minutes)
    if slots is None:
        raise ValueError(f"no length {minutes}")
    rng = random.Random(seed)
    pool = sorted(e.slug for e in candidates if not e.unavailable)
    fresh = [p for p in pool if p not in recently_passed]
    out = []
    for role in slots:
        left = [p for p in (fresh or pool) if p not in [o for o, _ in out]]
        if not left:
            raise ValueError(f"nothing to draw in this scope for {minutes} minutes")
        out.append((rng.choice(left), role))
    return out


def start_session(s: Session, user_id: int, *, scope_kind: str, scope: str, minutes: int, seed: int | None = None,
                  source: str = "web", cohort_interview: CohortInterview | None = None,
                  avoid_recent: bool = True, now: datetime | None = None) -> InterviewSession:
    t = now or globals()["now"]()
    if minutes not in LENGTHS:
        raise BadRequest(f"length is one of {LENGTHS}")
    if active_session(s, user_id, t) is not None:
        raise BadRequest("you already have an active mock interview")
    seed = random.getrandbits(48) if seed is None else seed
    recent: set[str] = set()
    if avoid_recent:
        recent = set(s.exec(select(Submission.slug).where(Submission.user_id == user_id, Submission.passed,
                                                          Submission.created_at >= t - timedelta(days=REPEAT_DAYS))).all())
    try:
        picked = draw(_candidates(scope_kind, scope), minutes, seed, recent)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    sess = InterviewSession(user_id=user_id, cohort_interview_id=cohort_interview.id if cohort_interview else None,
                            scope_kind=scope_kind, scope=scope, minutes=minutes, seed=seed, started_at=t,
                            ends_at=t + timedelta(minutes=minutes), source=source)
    s.add(sess)
    s.commit()
    s.refresh(sess)
    for i, (slug, role) in enumerate(picked):
        ensure_exercise_row(s, catalog.get(slug))
        s.add(InterviewItem(session_id=sess.id, position=i, slug=slug, role=role))
    s.commit()
    return sess


def _end(session, t):
    end = _aware(session.ends_at)
    return min(end, _aware(session.finished_at)) if session.finished_at else end


def active_session(s, user_id, now=None):
    t = now or globals()["now"]()
    for sess in s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                      InterviewSession.finished_at.is_(None))).all():
        if _aware(sess.ends_at) > t:
            return sess
        finish_session(s, user_id, sess.id, t)
    return None


def get_session(s, user_id, session_id):
    sess = s.get(InterviewSession, session_id)
    if sess is None or sess.user_id != user_id:
        raise NotFound(f"no interview {session_id}")
    return sess


def session_items(s, session):
    return list(s.exec(select(InterviewItem).where(InterviewItem.session_id == session.id)
                       .order_by(InterviewItem.position)).all())


def remaining_seconds(session, now=None) -> int:
    t = now or globals()["now"]()
    return max(0, int((_end(session, t) - t).total_seconds())) if not session.finished_at else 0


class ItemReport(BaseModel):
    position: int
    slug: str
    title: str
    role: str
    points: float
    passed: bool
    minutes_to_first_pass: float | None = None
    attempts: int = 0
    submits: int = 0
    hints_used: int = 0
    failing_categories: list[str] = []
    followups: list = []
    earned: float = 0.0


class InterviewReport(BaseModel):
    session_id: int
    scope_label: str
    minutes: int
    started_at: datetime
    ended_at: datetime
    items: list[ItemReport]
    score: float
    rule: str
    finished_by: str


def report(s, session, now=None) -> InterviewReport:
    if session.report_json:
        return InterviewReport.model_validate_json(session.report_json)
    t = now or globals()["now"]()
    start, end = _aware(session.started_at), min(_end(session, t), t)
    items = []
    for it in session_items(s, session):
        subs = s.exec(select(Submission).where(Submission.user_id == session.user_id, Submission.slug == it.slug,
                                               GRADED, Submission.state == JobState.DONE.value)
                      .order_by(Submission.created_at)).all()
        subs = [x for x in subs if start <= _aware(x.created_at) < end]
        passes = [x for x in subs if x.passed and x.kind == SubmissionKind.SUBMIT.value]
        passed = bool(passes)
        items.append(ItemReport(position=it.position, slug=it.slug, title=catalog.get(it.slug).meta.title,
                                role=it.role, points=it.points, passed=passed, attempts=len(subs),
                                minutes_to_first_pass=((_aware(passes[0].created_at) - start).total_seconds() / 60
                                                       if passes else None),
                                submits=sum(x.kind == SubmissionKind.SUBMIT.value for x in subs),
                                hints_used=it.hints_used, earned=it.points if passed else 0.0))
    total = sum(i.points for i in items) or 1.0
    return InterviewReport(session_id=session.id, scope_label=session.scope, minutes=session.minutes,
                           started_at=start, ended_at=end, items=items,
                           score=100 * sum(i.earned for i in items) / total, rule=SCORE_RULE,
                           finished_by="time" if end >= _aware(session.ends_at) else "user")


def finish_session(s, user_id, session_id, now=None) -> InterviewReport:
    t = now or globals()["now"]()
    sess = get_session(s, user_id, session_id)
    if sess.finished_at is None:
        sess.finished_at = min(t, _aware(sess.ends_at))
        rep = report(s, sess, t)
        sess.score = rep.score
        sess.report_json = rep.model_dump_json()
        s.add(sess)
        s.commit()
    return report(s, sess, t)


def history(s, user_id):
    return list(s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                      InterviewSession.finished_at.is_not(None))
                       .order_by(InterviewSession.started_at.desc())).all())


def lock_reason(s, user_id, slug, now=None):
    return None


def item_in_active_session(s, user_id, slug, now=None):
    return None


def use_hint(s, user_id, ex, now=None) -> int:
    raise NotImplementedError


