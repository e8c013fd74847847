"""STAND-IN for int-core's interview module (issue 18): just enough of the shared contract's names
and signatures for the web pages to be developed and tested against. The lead drops this file when
merging int-core's real one; nothing outside this file relies on its internals.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from pydantic import BaseModel
from sqlmodel import select

from . import catalog, followups, services
from .interview_models import InterviewItem, InterviewSession, ScopeKind
from .models import GRADED, JobState, Submission, SubmissionKind
from .verdict import CORE, Verdict

LENGTHS = (30, 45, 60, 90)
HINT_PENALTY = 0.10
REPEAT_DAYS = 14

RULE_TEXT = {
    30: "One medium exercise of any kind.",
    45: "One implement exercise (easy or medium) and one calculate exercise.",
    60: "One implement exercise (medium or hard) and one calculate exercise.",
    90: "Two implement exercises (one of them hard) and one calculate exercise.",
}
SCORE_RULE = ("Each exercise earns its points if its core cases pass (80%, plus 20% times the share of its "
              "follow-ups answered right), less 10% of its points per hint; the score is the earned points "
              "over all points, in percent.")

_clock: Callable[[], datetime] | None = None


def now() -> datetime:
    return _clock() if _clock is not None else datetime.now(timezone.utc)


def set_clock(fn: Callable[[], datetime] | None) -> None:
    global _clock
    _clock = fn


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def scopes() -> list[tuple[str, str, str]]:
    return ([(ScopeKind.COLLECTION.value, c.value, c.value) for c in catalog.Collection]
            + [(ScopeKind.TRACK.value, t.value, t.title) for t in catalog.Track])


def _scope_label(kind: str, scope: str) -> str:
    return next((label for k, v, label in scopes() if k == kind and v == scope), scope)


def _candidates(kind: str, scope: str) -> list[catalog.Exercise]:
    exs = services.catalog_exercises()
    if kind == ScopeKind.COLLECTION.value:
        return [e for e in exs if scope in [c.value for c in e.meta.collections]]
    return [e for e in exs if e.meta.track.value == scope]


_SLOTS = {30: [("implement", None, ("medium",))], 45: [("implement", ("implement",), ("easy", "medium")),
                                                       ("calculate", ("calculate",), None)],
          60: [("implement", ("implement",), ("medium", "hard")), ("calculate", ("calculate",), None)],
          90: [("implement", ("implement",), ("hard",)), ("implement", ("implement",), None),
               ("calculate", ("calculate",), None)]}


def draw(candidates, minutes: int, seed: int, recently_passed: set[str]) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pool = sorted((e for e in candidates if not e.unavailable), key=lambda e: e.slug)
    out: list[tuple[str, str]] = []
    taken: set[str] = set()
    for role, kinds, diffs in _SLOTS[minutes]:
        fits = [e for e in pool if e.slug not in taken and (kinds is None or e.meta.kind.value in kinds)
                and (diffs is None or e.meta.difficulty.value in diffs)]
        if not fits:
            fits = [e for e in pool if e.slug not in taken]
        if not fits:
            raise ValueError(f"no exercise fits a {minutes}-minute interview")
        fresh = [e for e in fits if e.slug not in recently_passed] or fits
        pick = rng.choice(fresh)
        taken.add(pick.slug)
        out.append((pick.slug, role if kinds else
                    ("calculate" if pick.meta.kind.value == "calculate" else "implement")))
    return out


def start_session(s, user_id, *, scope_kind: str, scope: str, minutes: int, seed: int | None = None,
                  source: str = "web", cohort_interview=None, avoid_recent: bool = True,
                  now: datetime | None = None) -> InterviewSession:
    t = now or globals()["now"]()
    if minutes not in LENGTHS:
        raise services.BadRequest(f"a mock interview lasts {', '.join(map(str, LENGTHS))} minutes, not {minutes}")
    if (scope_kind, scope) not in {(k, v) for k, v, _ in scopes()}:
        raise services.BadRequest(f"no scope {scope_kind} {scope!r}")
    if active_session(s, user_id, t) is not None:
        raise services.BadRequest("you already have a mock interview under way: finish it first")
    seed = random.randrange(2**31) if seed is None else seed
    try:
        picks = draw(_candidates(scope_kind, scope), minutes, seed, set())
    except ValueError as e:
        raise services.BadRequest(str(e)) from None
    sess = InterviewSession(user_id=user_id, scope_kind=scope_kind, scope=scope, minutes=minutes, seed=seed,
                            started_at=t, ends_at=t + timedelta(minutes=minutes), source=source)
    s.add(sess)
    s.flush()
    for i, (slug, role) in enumerate(picks):
        services.ensure_exercise_row(s, services.get_exercise(slug))
        s.add(InterviewItem(session_id=sess.id, position=i, slug=slug, role=role))
    s.commit()
    s.refresh(sess)
    return sess


def remaining_seconds(session, now=None) -> int:
    if session.finished_at is not None:
        return 0
    t = now or globals()["now"]()
    return max(0, int((_aware(session.ends_at) - t).total_seconds() + 0.999))


def active_session(s, user_id, now=None):
    t = now or globals()["now"]()
    for sess in s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                      InterviewSession.finished_at == None)):  # noqa: E711
        if _aware(sess.ends_at) <= t:
            _freeze(s, sess, _aware(sess.ends_at), "time", t)
        else:
            return sess
    return None


def get_session(s, user_id, session_id) -> InterviewSession:
    sess = s.get(InterviewSession, session_id)
    if sess is None or sess.user_id != user_id:
        raise services.NotFound(f"no mock interview {session_id}")
    return sess


def session_items(s, session) -> list[InterviewItem]:
    return list(s.exec(select(InterviewItem).where(InterviewItem.session_id == session.id)
                       .order_by(InterviewItem.position)))


def item_in_active_session(s, user_id, slug, now=None):
    sess = active_session(s, user_id, now)
    if sess is None:
        return None
    item = next((i for i in session_items(s, sess) if i.slug == slug), None)
    return (sess, item) if item is not None else None


def use_hint(s, user_id, ex, now=None) -> int:
    hit = item_in_active_session(s, user_id, ex.slug, now)
    before = services.hints_shown(s, user_id, ex.slug)
    shown = services.reveal_hint(s, user_id, ex)
    if hit is not None and shown > before:
        hit[1].hints_used += 1
        s.add(hit[1])
        s.commit()
    return shown


class ItemReport(BaseModel):
    position: int
    slug: str
    title: str
    role: str
    points: float
    passed: bool
    minutes_to_first_pass: float | None
    attempts: int
    submits: int
    hints_used: int
    failing_categories: list[str]
    followups: list[followups.FollowupResult]
    earned: float


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


def _build(s, sess, end: datetime, finished_by: str) -> InterviewReport:
    start = _aware(sess.started_at)
    items = []
    for it in session_items(s, sess):
        ex = services.get_exercise(it.slug)
        subs = [x for x in s.exec(select(Submission).where(
            Submission.user_id == sess.user_id, Submission.slug == it.slug, GRADED,
            Submission.state == JobState.DONE.value).order_by(Submission.id))
            if start <= _aware(x.created_at) < end]
        passes = [x for x in subs if x.kind == SubmissionKind.SUBMIT.value and x.passed]
        first = (_aware(passes[0].created_at) - start).total_seconds() / 60 if passes else None
        failing: list[str] = []
        if subs and subs[-1].verdict_json:
            v = Verdict.model_validate_json(subs[-1].verdict_json)
            failing = sorted({c.name for c in v.cases if c.group == CORE and not c.passed})
        fu = followups.results(s, sess.user_id, it.slug, ex.folder, followups.interview_context(sess.id))
        f = sum(r.correct for r in fu) / len(fu) if fu else 1.0
        earned = it.points * max(0.0, 1 - HINT_PENALTY * it.hints_used) * ((0.8 + 0.2 * f) if passes else 0)
        items.append(ItemReport(position=it.position, slug=it.slug, title=ex.meta.title, role=it.role,
                                points=it.points, passed=bool(passes), minutes_to_first_pass=first,
                                attempts=len(subs), submits=sum(x.kind == SubmissionKind.SUBMIT.value for x in subs),
                                hints_used=it.hints_used, failing_categories=failing, followups=fu,
                                earned=earned))
    total = sum(i.points for i in items)
    score = 100 * sum(i.earned for i in items) / total if total else 0.0
    return InterviewReport(session_id=sess.id, scope_label=_scope_label(sess.scope_kind, sess.scope),
                           minutes=sess.minutes, started_at=start, ended_at=end, items=items, score=score,
                           rule=SCORE_RULE, finished_by=finished_by)


def _freeze(s, sess, end: datetime, finished_by: str, t: datetime) -> InterviewReport:
    rep = _build(s, sess, end, finished_by)
    sess.finished_at, sess.score, sess.report_json = end, rep.score, rep.model_dump_json()
    s.add(sess)
    s.commit()
    return rep


def finish_session(s, user_id, session_id, now=None) -> InterviewReport:
    t = now or globals()["now"]()
    sess = get_session(s, user_id, session_id)
    if sess.finished_at is not None:
        return report(s, sess, t)
    end = min(t, _aware(sess.ends_at))
    return _freeze(s, sess, end, "user" if t < _aware(sess.ends_at) else "time", t)


def report(s, session, now=None) -> InterviewReport:
    if session.report_json:
        return InterviewReport.model_validate_json(session.report_json)
    t = now or globals()["now"]()
    return _build(s, session, min(t, _aware(session.ends_at)), "time")


def history(s, user_id) -> list[InterviewSession]:
    return list(s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                      InterviewSession.finished_at != None)  # noqa: E711
                       .order_by(InterviewSession.started_at.desc(), InterviewSession.id.desc())))


def lock_reason(s, user_id, slug, now=None) -> str | None:
    sess = active_session(s, user_id, now)
    if sess is not None:
        return "a mock interview is under way: editorials, references and other users' results stay closed until it ends"
    return None

