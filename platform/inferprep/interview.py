"""Mock interviews (issue 18): a timed session of exercises drawn by a rule, and its report.

A session draws its exercises from a scope (a collection such as "Jane Street", or a track) by
the rule of its length (``RULE_TEXT``), with a recorded seed: the same seed and the same history
give the same draw (``draw`` is pure; ``replay`` draws a session's exercises again). Its end
(``ends_at``) is fixed at the start, so a reload or a server restart loses nothing; a session
whose time ran out is ended lazily, on the next read of it (``active_session``, ``get_session``,
``report``). While a session is active the editorials, the references and other users' results
are closed (``lock_reason``); at its end the editorials of its exercises open, passed or not
(``opened_by_interview``), except those of a cohort interview that has not closed yet or whose
instructor allows no review.

Attempts are not copied into the session: they are the user's graded submissions (run and
submit, not cancelled, finished) of an item's exercise made between ``started_at`` and the end
of the session. An exercise counts as passed when a submit attempt passed, i.e. its ``core``
hidden cases passed (``verdict``'s model: failed input checks do not fail an exercise). The
report is computed from those rows and frozen into ``report_json`` and ``score`` at the end.

Every function takes its time from ``now`` (aware UTC), which tests swap with ``set_clock``.
Errors: ``services.BadRequest`` (an unknown scope or length, a second active session),
``services.NotFound`` (another user's session, or none of that id).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import update
from sqlmodel import Session, select

from . import catalog, services
from . import followups as _followups
from .followups import FollowupResult
from .catalog import Difficulty, Kind
from .interview_models import CohortInterview, DrawMode, InterviewItem, InterviewSession, ScopeKind
from .models import JobState, Submission, SubmissionKind, utcnow
from .cohort_models import SubmissionGate
from .db import insert_or_ignore
from .queue import take_gate
from .verdict import CORE, Verdict

LENGTHS = (30, 45, 60, 90)
"""The lengths of a mock interview, minutes."""
HINT_PENALTY = 0.10
"""The fraction of an exercise's points each hint used in a session costs."""
REPEAT_DAYS = 14
START_GATE = "interview-start"
"""The ``queue.take_gate`` row that serializes the starts of mock interviews (one active session per user)."""
"""An exercise the user passed within this many days is drawn only when no other fits its slot."""
PASS_BASE = 0.8
"""The fraction of an exercise's points a pass earns before its follow-ups (the rest: follow-ups)."""
POINTS = {Difficulty.EASY: 1.0, Difficulty.MEDIUM: 2.0, Difficulty.HARD: 3.0}
"""An exercise's points in a session, by difficulty."""

# -- the clock ------------------------------------------------------------------------------------
_clock: Callable[[], datetime] | None = None


def now() -> datetime:
    """The current time (aware UTC) that every function of this module defaults to."""
    t = _clock() if _clock is not None else utcnow()
    return _aware(t)


def set_clock(fn: Callable[[], datetime] | None) -> None:
    """Replace the clock (a test advances a fake one instead of waiting); None restores the real one."""
    global _clock
    _clock = fn


def _aware(t: datetime | None) -> datetime | None:
    """``t`` as aware UTC (SQLite gives back naive UTC times); None stays None."""
    if t is None:
        return None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _at(t: datetime | None) -> datetime:
    return _aware(t) if t is not None else now()


# -- the rule -------------------------------------------------------------------------------------
ROLE_OF_KIND = {Kind.IMPLEMENT: "implement", Kind.DEBUG: "implement",
                Kind.CALCULATE: "calculate", Kind.SIMULATE: "calculate", Kind.ANALYZE: "calculate"}
"""The role an exercise of each kind plays in a session (the 30-minute slot takes any kind)."""
WIDER_KINDS = {"implement": (Kind.DEBUG,), "calculate": (Kind.SIMULATE, Kind.ANALYZE)}
"""The kinds a slot also takes when no exercise of its own kind fits (the first widening)."""
_ALL_DIFFICULTIES = tuple(Difficulty)


@dataclass(frozen=True)
class Slot:
    """One exercise of the rule: ``role`` None takes any kind (its role follows the exercise's kind)."""
    role: str | None
    kinds: tuple[Kind, ...]
    difficulties: tuple[Difficulty, ...]


SLOTS: dict[int, tuple[Slot, ...]] = {
    30: (Slot(None, tuple(Kind), (Difficulty.MEDIUM,)),),
    45: (Slot("implement", (Kind.IMPLEMENT,), (Difficulty.EASY, Difficulty.MEDIUM)),
         Slot("calculate", (Kind.CALCULATE,), _ALL_DIFFICULTIES)),
    60: (Slot("implement", (Kind.IMPLEMENT,), (Difficulty.MEDIUM, Difficulty.HARD)),
         Slot("calculate", (Kind.CALCULATE,), _ALL_DIFFICULTIES)),
    90: (Slot("implement", (Kind.IMPLEMENT,), (Difficulty.HARD,)),
         Slot("implement", (Kind.IMPLEMENT,), _ALL_DIFFICULTIES),
         Slot("calculate", (Kind.CALCULATE,), _ALL_DIFFICULTIES)),
}

RULE_TEXT: dict[int, str] = {
    30: "One medium exercise of any kind.",
    45: "One implement exercise (easy or medium) and one calculate exercise.",
    60: "One implement exercise (medium or hard) and one calculate exercise.",
    90: "Two implement exercises (one of them hard) and one calculate exercise.",
}
DRAW_NOTE = (f"An exercise you passed in the last {REPEAT_DAYS} days is drawn only when no other fits. "
             "When the scope has no exercise for a slot, an implement slot also takes debug exercises, a "
             "calculate slot simulate and analyze ones, and then any difficulty.")
SCORE_RULE = (f"Each exercise is worth its points (easy {POINTS[Difficulty.EASY]:g}, medium "
              f"{POINTS[Difficulty.MEDIUM]:g}, hard {POINTS[Difficulty.HARD]:g}); a pass (its core hidden cases) "
              f"earns {PASS_BASE:.0%} of them plus {1 - PASS_BASE:.0%} times the fraction of its follow-up "
              f"questions answered correctly (all of it when it has none), and each hint used costs "
              f"{HINT_PENALTY:.0%} of its points. The score is the points earned over the points drawn, out of 100.")


def scopes() -> list[tuple[str, str, str]]:
    """(scope_kind, scope, label) of every scope a session may draw from: the collections, then the tracks."""
    return ([(ScopeKind.COLLECTION.value, c.value, c.value) for c in catalog.Collection]
            + [(ScopeKind.TRACK.value, t.value, t.title) for t in catalog.Track])


def scope_label(scope_kind: str, scope: str) -> str:
    """The label of a scope ("Jane Street", "Serving systems and scheduling"); BadRequest if unknown."""
    for k, v, label in scopes():
        if k == scope_kind and v == scope:
            return label
    raise services.BadRequest(
        f"unknown scope {scope_kind} {scope!r}; collections: {', '.join(c.value for c in catalog.Collection)}; "
        f"tracks: {', '.join(t.value for t in catalog.Track)}")


def in_scope(ex: catalog.Exercise, scope_kind: str, scope: str) -> bool:
    if scope_kind == ScopeKind.COLLECTION.value:
        return scope in [c.value for c in ex.meta.collections]
    return ex.meta.track.value == scope


def candidates(scope_kind: str, scope: str) -> list[catalog.Exercise]:
    """The catalog's exercises of a scope (BadRequest for an unknown scope)."""
    scope_label(scope_kind, scope)
    return [ex for ex in services.catalog_exercises() if in_scope(ex, scope_kind, scope)]


def lengths_for(scope_kind: str, scope: str) -> list[int]:
    """The lengths of ``LENGTHS`` whose rule the scope can fill (e.g. a track without implement or
    debug exercises fills only the 30-minute one). BadRequest for an unknown scope."""
    pool = candidates(scope_kind, scope)
    out = []
    for m in LENGTHS:
        try:
            draw(pool, m, 0, set())   # whether a slot can be filled does not depend on the seed
        except ValueError:
            continue
        out.append(m)
    return out


def _widenings(slot: Slot) -> list[tuple[tuple[Kind, ...], tuple[Difficulty, ...]]]:
    """The (kinds, difficulties) a slot tries in order: itself, wider kinds, then any difficulty."""
    wider = slot.kinds + (WIDER_KINDS.get(slot.role, ()) if slot.role else ())
    steps = [(slot.kinds, slot.difficulties), (wider, slot.difficulties), (wider, _ALL_DIFFICULTIES)]
    out = []
    for st in steps:
        if st not in out:
            out.append(st)
    return out


def draw(candidates: list[catalog.Exercise], minutes: int, seed: int,
         recently_passed: set[str]) -> list[tuple[str, str]]:
    """The exercises of a session: [(slug, role)] in the order shown, role "implement" or "calculate".

    Pure and deterministic: the same candidates (in any order), minutes, seed and recently passed
    slugs give the same draw. Each slot of ``SLOTS[minutes]`` takes, in turn, an exercise that fits
    it and is not in ``recently_passed``, else one that fits and is; when none of the scope's
    exercises fits, the slot widens (``WIDER_KINDS``, then any difficulty). Unavailable exercises
    and those already drawn are never drawn. Raises ``ValueError`` for a length not in ``LENGTHS``
    or when a slot stays empty (the message names the length and the slot)."""
    if minutes not in SLOTS:
        raise ValueError(f"a mock interview lasts {', '.join(map(str, LENGTHS))} minutes, not {minutes}")
    rng = random.Random(seed)
    pool = sorted((ex for ex in candidates if not ex.unavailable), key=lambda ex: ex.slug)
    taken: set[str] = set()
    out: list[tuple[str, str]] = []
    for slot in SLOTS[minutes]:
        chosen = None
        for kinds, diffs in _widenings(slot):
            fits = [ex for ex in pool if ex.slug not in taken and ex.meta.kind in kinds and ex.meta.difficulty in diffs]
            fresh = [ex for ex in fits if ex.slug not in recently_passed]
            if fresh or fits:
                chosen = rng.choice(fresh or fits)
                break
        if chosen is None:
            raise ValueError(f"none of the scope's {len(pool)} available exercises fills the "
                             f"{slot.role or 'medium'} slot of a {minutes}-minute interview")
        taken.add(chosen.slug)
        out.append((chosen.slug, slot.role or ROLE_OF_KIND[chosen.meta.kind]))
    return out


def recently_passed(s: Session, user_id: int, at: datetime | None = None) -> set[str]:
    """Slugs the user passed (a passing submit) in the ``REPEAT_DAYS`` days before ``at``."""
    at = _at(at)
    since = at - timedelta(days=REPEAT_DAYS)
    rows = s.exec(select(Submission.slug, Submission.created_at).where(
        Submission.user_id == user_id, Submission.kind == SubmissionKind.SUBMIT.value,
        Submission.passed == True, services.counts_as_attempt())).all()   # noqa: E712
    return {slug for slug, t in rows if since <= _aware(t) < at}


# -- sessions -------------------------------------------------------------------------------------
def cohort_seed(ci: CohortInterview, user_id: int) -> int:
    """The draw's seed of ``user_id`` in a scheduled interview: ``ci.seed`` for a shared draw; for a
    per-student draw the first 6 bytes of sha256("<ci.seed>:<user_id>") (48 bits: fits a BIGINT)."""
    if ci.draw == DrawMode.SAME.value:
        return ci.seed
    return int.from_bytes(hashlib.sha256(f"{ci.seed}:{user_id}".encode()).digest()[:6], "big")


def start_session(s: Session, user_id: int, *, scope_kind: str, scope: str, minutes: int, seed: int | None = None,
                  source: str = "web", cohort_interview: CohortInterview | None = None,
                  avoid_recent: bool = True, replay: bool = False, now: datetime | None = None) -> InterviewSession:
    """Draw and start a mock interview for ``user_id``; returns the session (its items committed).

    ``seed`` None draws a fresh one (a scheduled interview's comes from the schedule); ``replay``:
    the user chose the seed (to replay a draw), which the report and the history say. A cohort
    interview drawing one set for everyone ignores the user's history (``avoid_recent`` off); its
    session ends at its window's close if that comes first. Raises ``BadRequest`` for an unknown
    scope or length, a scope with nothing to draw, or when the user already has an active session."""
    t = _at(now)
    if minutes not in LENGTHS:
        raise services.BadRequest(f"a mock interview lasts {', '.join(map(str, LENGTHS))} minutes, not {minutes}")
    label = scope_label(scope_kind, scope)
    if seed is not None and not -(2**63) <= seed < 2**63:
        raise services.BadRequest("the seed is a whole number between -2^63 and 2^63 - 1")
    active_session(s, user_id, now=t)   # ends (and commits) the sessions whose time ran out
    # Two starts at once: each takes the gate first (a row lock on PostgreSQL, the write lock on
    # SQLite, held until the commit below), so the second one sees the first one's session.
    # the gate's row first, so that take_gate never rolls back (a rollback would expire the
    # caller's loaded objects); then no transaction is open, as take_gate needs
    insert_or_ignore(s, SubmissionGate, name=START_GATE, taken=0)
    s.commit()
    take_gate(s, START_GATE)
    try:
        current = s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                        InterviewSession.finished_at == None)   # noqa: E711
                         .order_by(InterviewSession.id)).first()
        if current is not None:
            raise services.BadRequest(f"you already have a mock interview under way (#{current.id}, "
                                      f"{remaining_seconds(current, t) // 60} minutes left): finish it first")
        return _start_locked(s, user_id, t, scope_kind=scope_kind, scope=scope, label=label, minutes=minutes,
                             seed=seed, source=source, cohort_interview=cohort_interview, avoid_recent=avoid_recent,
                             chosen_seed=replay)
    except BaseException:
        s.rollback()    # releases the gate
        raise


def _start_locked(s: Session, user_id: int, t: datetime, *, scope_kind: str, scope: str, label: str, minutes: int,
                  seed: int | None, source: str, cohort_interview: CohortInterview | None,
                  avoid_recent: bool, chosen_seed: bool) -> InterviewSession:
    """``start_session`` under the gate: draw, insert and commit (the commit releases the gate)."""
    if cohort_interview is not None:
        if seed is None:
            seed = cohort_seed(cohort_interview, user_id)
        if cohort_interview.draw == DrawMode.SAME.value:
            avoid_recent = False
    if seed is None:
        seed = secrets.randbits(62)
    recent = recently_passed(s, user_id, t) if avoid_recent else set()
    try:
        drawn = draw(candidates(scope_kind, scope), minutes, seed, recent)
    except ValueError as e:
        raise services.BadRequest(f"{label}: {e}") from None
    ends = t + timedelta(minutes=minutes)
    if cohort_interview is not None:
        ends = min(ends, _aware(cohort_interview.closes_at))
    sess = InterviewSession(user_id=user_id, scope_kind=scope_kind, scope=scope, minutes=minutes, seed=seed,
                            replay=chosen_seed and cohort_interview is None,
                            hint_penalty=HINT_PENALTY, started_at=t, ends_at=ends, source=source,
                            cohort_interview_id=cohort_interview.id if cohort_interview is not None else None)
    s.add(sess)
    s.flush()
    for i, (slug, role) in enumerate(drawn):
        ex = catalog.get(slug)
        services.ensure_exercise_row(s, ex)
        s.add(InterviewItem(session_id=sess.id, position=i, slug=slug, role=role, points=POINTS[ex.meta.difficulty]))
    s.commit()
    s.refresh(sess)
    return sess


def replay(s: Session, session: InterviewSession) -> list[tuple[str, str]]:
    """The draw of ``session`` again, from its seed and the user's passes before it started (the
    catalog of today: an exercise added since may change it)."""
    same = False
    if session.cohort_interview_id is not None:
        ci = s.get(CohortInterview, session.cohort_interview_id)
        same = ci is not None and ci.draw == DrawMode.SAME.value
    recent = set() if same else recently_passed(s, session.user_id, session.started_at)
    return draw(candidates(session.scope_kind, session.scope), session.minutes, session.seed, recent)


def _end_of(session: InterviewSession) -> datetime:
    ends = _aware(session.ends_at)
    fin = _aware(session.finished_at)
    return min(ends, fin) if fin is not None else ends


def _expire(s: Session, session: InterviewSession, t: datetime) -> InterviewSession:
    """End ``session`` (freezing its report) if its time ran out by ``t``."""
    if session.finished_at is None and t >= _aware(session.ends_at):
        _freeze(s, session, _aware(session.ends_at), "time")
    return session


def active_session(s: Session, user_id: int, now: datetime | None = None) -> InterviewSession | None:
    """The user's session under way at ``now``, or None. A session whose time ran out is ended
    here (its report frozen), lazily."""
    t = _at(now)
    rows = s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                 InterviewSession.finished_at == None)   # noqa: E711
                  .order_by(InterviewSession.id)).all()
    out = None
    for sess in rows:
        _expire(s, sess, t)
        if sess.finished_at is None:
            out = sess
    return out


def get_session(s: Session, user_id: int, session_id: int, now: datetime | None = None) -> InterviewSession:
    """The user's own session ``session_id`` (ended first if its time ran out); ``NotFound`` for
    another user's and for none."""
    sess = s.get(InterviewSession, session_id, populate_existing=True)
    if sess is None or sess.user_id != user_id:
        raise services.NotFound(f"no mock interview {session_id}")
    return _expire(s, sess, _at(now))


def session_items(s: Session, session: InterviewSession) -> list[InterviewItem]:
    """The session's exercises, in the order shown."""
    return list(s.exec(select(InterviewItem).where(InterviewItem.session_id == session.id)
                       .order_by(InterviewItem.position)).all())


def remaining_seconds(session: InterviewSession, now: datetime | None = None) -> int:
    """Whole seconds left (rounded up), 0 once the session is over."""
    if session.finished_at is not None:
        return 0
    left = (_aware(session.ends_at) - _at(now)).total_seconds()
    return max(0, math.ceil(left))


def item_in_active_session(s: Session, user_id: int, slug: str,
                           now: datetime | None = None) -> tuple[InterviewSession, InterviewItem] | None:
    """(session, item) when ``slug`` is an exercise of the user's active session, else None."""
    sess = active_session(s, user_id, now)
    if sess is None:
        return None
    item = s.exec(select(InterviewItem).where(InterviewItem.session_id == sess.id,
                                              InterviewItem.slug == slug)).first()
    return (sess, item) if item is not None else None


def made_in_session(s: Session, user_id: int, slug: str, at: datetime) -> bool:
    """Whether a submission of ``slug`` made at ``at`` falls within one of the user's sessions
    that contains it (the worker then withholds the counterexample)."""
    at = _aware(at)
    rows = s.exec(select(InterviewSession).join(InterviewItem, InterviewItem.session_id == InterviewSession.id)
                  .where(InterviewSession.user_id == user_id, InterviewItem.slug == slug)).all()
    return any(_aware(r.started_at) <= at < _end_of(r) for r in rows)


def use_hint(s: Session, user_id: int, ex: catalog.Exercise, now: datetime | None = None) -> int:
    """Reveal the next hint of ``ex`` (``services.reveal_hint``); returns how many are now shown.
    Within an active session containing ``ex``, a newly revealed hint is counted on its item (each
    costs ``HINT_PENALTY`` of the exercise's points); a hint already shown before costs nothing."""
    before = services.hints_shown(s, user_id, ex.slug)
    hit = item_in_active_session(s, user_id, ex.slug, now)
    shown = services.reveal_hint(s, user_id, ex)
    if hit is not None and shown > before:
        item = hit[1]
        s.refresh(item)
        item.hints_used += shown - before
        s.add(item)
        s.commit()
    return shown


# -- the report -----------------------------------------------------------------------------------
class ItemReport(BaseModel):
    """One exercise of a session as the report shows it."""
    position: int
    slug: str
    title: str
    role: str
    difficulty: str = ""
    kind: str = ""
    points: float
    passed: bool                               # a submit attempt passed its core hidden cases
    minutes_to_first_pass: float | None = None  # from the session's start to the first passing submit
    attempts: int = 0                          # graded submissions (run and submit) in the session
    submits: int = 0
    hints_used: int = 0
    last_status: str | None = None             # verdict.Status value of the last attempt
    failing_categories: list[str] = []         # of the last attempt's failing core cases (case_category)
    followups: list[FollowupResult] = []
    followups_fraction: float = 1.0            # correct / asked (1.0 when the exercise has none)
    earned: float = 0.0


class InterviewReport(BaseModel):
    """A session's report: per exercise and overall (``score``, 0..100, by ``rule``)."""
    session_id: int
    scope_kind: str = ""
    scope: str = ""
    scope_label: str
    minutes: int
    started_at: datetime
    ended_at: datetime
    items: list[ItemReport]
    score: float
    rule: str = SCORE_RULE
    hint_penalty: float = HINT_PENALTY
    finished_by: Literal["user", "time"]
    cohort_interview_id: int | None = None
    replay: bool = False          # a replayed draw (the user chose the seed): not a fresh interview
    seed: int = 0


def case_category(name: str) -> str:
    """The category of a hidden case's name: its leading words up to the first one with a digit or
    '=' ("attention-B2-H4-T8-S16" -> "attention", "shard positions: N=4, p=2" -> "shard positions",
    "rejects-negative-t" -> "rejects-negative-t"); the whole name when the first word has one."""
    head = name.split(":", 1)[0].strip()
    kept = ""
    for word, sep in re.findall(r"([^-_ ]*)([-_ ]*)", head):
        if any(ch.isdigit() for ch in word) or "=" in word:
            break
        kept += word + sep
    kept = kept.strip("-_ ")
    return kept or name.strip()


def failing_categories(v: Verdict | None) -> list[str]:
    """Distinct categories (``case_category``) of a verdict's failing core cases, with their
    statuses ("attention (wrong answer)"), in the order of the cases."""
    if v is None:
        return []
    out: list[str] = []
    for c in v.cases:
        if c.group == CORE and not c.passed:
            label = f"{case_category(c.name)} ({c.status.value.replace('_', ' ')})"
            if label not in out:
                out.append(label)
    return out


def _attempts(s: Session, session: InterviewSession, slugs: list[str], end: datetime) -> dict[str, list[Submission]]:
    """slug -> the user's finished gradings of it made in [started_at, end), oldest first."""
    start = _aware(session.started_at)
    rows = s.exec(select(Submission).where(Submission.user_id == session.user_id, Submission.slug.in_(slugs),
                                           services.counts_as_attempt(), Submission.state == JobState.DONE.value)
                  .order_by(Submission.created_at, Submission.id)).all()
    out: dict[str, list[Submission]] = {slug: [] for slug in slugs}
    for sub in rows:
        if start <= _aware(sub.created_at) < end:
            out[sub.slug].append(sub)
    return out


def compute_report(s: Session, session: InterviewSession, end: datetime,
                   finished_by: Literal["user", "time"]) -> InterviewReport:
    """The report of ``session`` over [started_at, end) from the rows as they are (not frozen)."""
    items = session_items(s, session)
    attempts = _attempts(s, session, [i.slug for i in items], end)
    context = _followups.interview_context(session.id)
    started = _aware(session.started_at)
    out = []
    for it in items:
        try:
            ex = catalog.get(it.slug)
            title, diff, kind, folder = ex.meta.title, ex.meta.difficulty.value, ex.meta.kind.value, ex.folder
        except catalog.CatalogError:   # removed from the catalog since: the report still stands
            title, diff, kind, folder = it.slug, "", "", None
        subs = attempts[it.slug]
        passes = [x for x in subs if x.kind == SubmissionKind.SUBMIT.value and x.passed]
        first = passes[0] if passes else None
        last = subs[-1] if subs else None
        fus = _followups.results(s, session.user_id, it.slug, folder, context) if folder is not None else []
        frac = sum(f.correct for f in fus) / len(fus) if fus else 1.0
        factor = max(0.0, 1.0 - session.hint_penalty * it.hints_used)
        earned = it.points * factor * (PASS_BASE + (1 - PASS_BASE) * frac) if first else 0.0
        out.append(ItemReport(
            position=it.position, slug=it.slug, title=title, role=it.role, difficulty=diff, kind=kind,
            points=it.points, passed=first is not None,
            minutes_to_first_pass=(_aware(first.created_at) - started).total_seconds() / 60 if first else None,
            attempts=len(subs), submits=sum(x.kind == SubmissionKind.SUBMIT.value for x in subs),
            hints_used=it.hints_used, last_status=last.status if last else None,
            failing_categories=failing_categories(services.verdict_of(last)) if last else [],
            followups=fus, followups_fraction=frac, earned=earned))
    total = sum(i.points for i in out)
    score = 100.0 * sum(i.earned for i in out) / total if total else 0.0
    return InterviewReport(session_id=session.id, scope_kind=session.scope_kind, scope=session.scope,
                           scope_label=_label_or_scope(session), minutes=session.minutes,
                           started_at=started, ended_at=end, items=out, score=score, rule=SCORE_RULE,
                           hint_penalty=session.hint_penalty, finished_by=finished_by,
                           cohort_interview_id=session.cohort_interview_id, replay=session.replay,
                           seed=session.seed)


def _label_or_scope(session: InterviewSession) -> str:
    try:
        return scope_label(session.scope_kind, session.scope)
    except services.BadRequest:
        return session.scope


def _freeze(s: Session, session: InterviewSession, end: datetime, finished_by: Literal["user", "time"]) -> None:
    """End ``session`` at ``end``: compute and store its report once (a concurrent end keeps the first)."""
    rep = compute_report(s, session, end, finished_by)
    # only while unfinished: when another request ended it first, its report stands
    s.exec(update(InterviewSession).where(InterviewSession.id == session.id,
                                          InterviewSession.finished_at == None)   # noqa: E711
           .values(finished_at=end, score=rep.score, report_json=rep.model_dump_json()))
    s.commit()
    s.refresh(session)


def finish_session(s: Session, user_id: int, session_id: int, now: datetime | None = None) -> InterviewReport:
    """End the user's session now (or at its end, if the time ran out) and return its report;
    a finished session's report as it was frozen. ``NotFound`` for another user's session."""
    t = _at(now)
    sess = get_session(s, user_id, session_id, t)   # ends it if the time ran out
    if sess.finished_at is None:
        _freeze(s, sess, t, "user")
    return report(s, sess, t)


def report(s: Session, session: InterviewSession, now: datetime | None = None) -> InterviewReport:
    """The session's report: the frozen one once it ended; while it runs, the report so far (the
    caller decides whether to show it)."""
    t = _at(now)
    _expire(s, session, t)
    if session.report_json:
        return InterviewReport.model_validate_json(session.report_json)
    return compute_report(s, session, min(t, _aware(session.ends_at)), "user")


def history(s: Session, user_id: int, now: datetime | None = None) -> list[InterviewSession]:
    """The user's finished sessions, newest first (one whose time ran out is ended first)."""
    active_session(s, user_id, now)
    return list(s.exec(select(InterviewSession).where(InterviewSession.user_id == user_id,
                                                      InterviewSession.finished_at != None)   # noqa: E711
                       .order_by(InterviewSession.started_at.desc(), InterviewSession.id.desc())).all())


# -- what a session closes and opens --------------------------------------------------------------
def lock_reason(s: Session, user_id: int, slug: str, now: datetime | None = None) -> str | None:
    """Why the editorial and the reference of ``slug`` are closed to the user because of a mock
    interview, or None. During an active session everything is closed (and other users' results);
    after a cohort interview, the exercises of its set stay closed until its window closes, and for
    good when its instructor allows no review (unless the user passed them outside it)."""
    t = _at(now)
    sess = active_session(s, user_id, t)
    if sess is not None:
        return (f"editorials, references and other users' results are closed during your mock interview "
                f"(until {_aware(sess.ends_at):%H:%M} UTC)")
    rows = s.exec(select(InterviewSession, CohortInterview)
                  .join(InterviewItem, InterviewItem.session_id == InterviewSession.id)
                  .join(CohortInterview, CohortInterview.id == InterviewSession.cohort_interview_id)
                  .where(InterviewSession.user_id == user_id, InterviewItem.slug == slug)).all()
    for sess, ci in rows:
        if t < _aware(ci.closes_at):
            return (f"this exercise is in the mock interview {ci.title!r}: its editorial and reference open "
                    f"when the interview closes ({_aware(ci.closes_at):%Y-%m-%d %H:%M} UTC)")
        if not ci.review_after and not _passed_outside(s, user_id, slug, sess):
            return (f"this exercise was in the mock interview {ci.title!r}, whose instructors keep its review "
                    f"closed: its editorial and reference unlock after your code passes the hidden cases outside "
                    f"that interview")
    return None


def _passed_outside(s: Session, user_id: int, slug: str, session: InterviewSession) -> bool:
    """Whether the user has a passing submit of ``slug`` made before ``session`` started or after it ended."""
    start, end = _aware(session.started_at), _end_of(session)
    rows = s.exec(select(Submission.created_at).where(
        Submission.user_id == user_id, Submission.slug == slug, Submission.kind == SubmissionKind.SUBMIT.value,
        Submission.passed == True, services.counts_as_attempt())).all()   # noqa: E712
    return any(not start <= _aware(c) < end for c in rows)


def opened_by_interview(s: Session, user_id: int, slug: str, now: datetime | None = None) -> bool:
    """Whether a finished session of the user that contained ``slug`` opens its editorial (passed
    or not): a session of the user's own, or a cohort interview that has closed and allows review."""
    t = _at(now)
    rows = s.exec(select(InterviewSession)
                  .join(InterviewItem, InterviewItem.session_id == InterviewSession.id)
                  .where(InterviewSession.user_id == user_id, InterviewItem.slug == slug,
                         InterviewSession.finished_at != None)).all()   # noqa: E711
    for sess in rows:
        if sess.cohort_interview_id is None:
            return True
        ci = s.get(CohortInterview, sess.cohort_interview_id)
        if ci is not None and ci.review_after and t >= _aware(ci.closes_at):
            return True
    return False


def report_dict(rep: InterviewReport) -> dict:
    """The report as JSON-ready data (an API answer)."""
    return json.loads(rep.model_dump_json())


def followup_context(s: Session, user_id: int, slug: str, now: datetime | None = None) -> str:
    """The ``FollowupAnswer.context`` the user's answers to ``slug``'s follow-ups go to now:
    ``followups.interview_context(id)`` within an active mock interview that drew ``slug``, else
    ``followups.PRACTICE``. Raises ``services.Locked`` (403) before the user's code passed the hidden
    cases (within a session: a pass made during the session)."""
    hit = item_in_active_session(s, user_id, slug, now)
    if hit is not None:
        session = hit[0]
        if not _followups.passed_since(s, user_id, slug, session.started_at):
            raise services.Locked("the follow-up questions open once your code passes the hidden cases "
                                  "in this mock interview")
        return _followups.interview_context(session.id)
    if not _followups.passed_since(s, user_id, slug):
        raise services.Locked("the follow-up questions open once your code passes the hidden cases")
    return _followups.PRACTICE
