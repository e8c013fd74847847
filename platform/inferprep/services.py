"""The service layer: what the pages, the JSON API and the CLI do, on top of the database.

Every function takes a session and a user id (local mode: ``LOCAL_USER_ID``), so cohort mode
adds authorization around these calls rather than inside them. Errors are ``ServiceError``
subclasses carrying the HTTP status the web layer answers with (defined in ``errors``, below
every service module, and importable from here too)::

    ServiceError
     ├── NotFound        404  unknown exercise or submission
     ├── CodeTooLarge    413  code over the size cap
     ├── NotUTF8         422  bytes that are not UTF-8
     ├── BadRequest      422  any other invalid field
     └── Locked          403  the editorial or reference before a pass
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import and_, func
from sqlalchemy.orm import defer
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from . import catalog, db, queue
from .errors import BadRequest, CodeTooLarge, Locked, NotFound, NotUTF8, ServiceError  # noqa: F401 - services' names too
from .models import Exercise as ExerciseRowModel
from .models import GRADED, Draft, JobState, Submission, SubmissionKind, utcnow
from .verdict import CaseResult, ScratchResult, Status, Verdict

log = logging.getLogger("inferprep.services")


# -- exercises ------------------------------------------------------------------------------------
catalog_exercises = catalog.well_formed_exercises
"""Every well-formed exercise (a malformed folder, e.g. one being written, is skipped)."""


def ensure_exercise_row(s: Session, ex: catalog.Exercise) -> None:
    """The exercise table row (an exercise added while the server runs gets one on first use)."""
    if s.get(ExerciseRowModel, ex.slug) is None:
        db.sync_exercises(s, [ex])


def get_exercise(slug: str) -> catalog.Exercise:
    try:
        return catalog.get(slug)
    except catalog.UnknownExercise as e:
        hint = (f"; did you mean {', '.join(e.close)}?" if e.close
                else "; the exercise list has them all")
        raise NotFound(f"no exercise {slug!r}{hint}") from None
    except catalog.CatalogError as e:
        raise NotFound(str(e)) from None


def counts_as_attempt():
    """The condition on ``Submission`` rows that count in statistics: gradings (``GRADED``: no
    scratch runs) that were not cancelled (a cancelled grading has no verdict; it still counted
    against the cohort's hourly limit)."""
    return and_(GRADED, Submission.state != JobState.CANCELLED.value)


def status_map(s: Session, user_id: int) -> dict[str, str]:
    """slug -> "solved" (a passing hidden submission) | "attempted" (any grading); others absent."""
    rows = s.exec(select(Submission.slug, Submission.kind, Submission.passed)
                  .where(Submission.user_id == user_id, counts_as_attempt())).all()
    out: dict[str, str] = {}
    for slug, kind, passed in rows:
        if kind == SubmissionKind.SUBMIT.value and passed:
            out[slug] = "solved"
        else:
            out.setdefault(slug, "attempted")
    return out


@dataclass
class ExerciseRow:
    ex: catalog.Exercise
    status: str
    attempts: int = 0

    @property
    def slug(self) -> str:
        return self.ex.slug


def exercise_rows(s: Session, user_id: int, *, track: str = "", collection: str = "", difficulty: str = "",
                  kind: str = "", status: str = "", q: str = "") -> list[ExerciseRow]:
    """The catalog with the user's status, filtered; ``q`` matches title, slug, tags and summary."""
    st = status_map(s, user_id)
    attempts = dict(s.exec(select(Submission.slug, func.count())
                           .where(Submission.user_id == user_id, counts_as_attempt())
                           .group_by(Submission.slug)).all())
    needle = q.strip().lower()
    rows = []
    for ex in catalog_exercises():
        m = ex.meta
        if track and m.track.value != track or difficulty and m.difficulty.value != difficulty:
            continue
        if kind and m.kind.value != kind or collection and collection not in [c.value for c in m.collections]:
            continue
        row = ExerciseRow(ex, st.get(ex.slug, "untouched"), attempts.get(ex.slug, 0))
        if status and row.status != status:
            continue
        if needle and needle not in " ".join([m.title, ex.slug, m.summary, *m.tags]).lower():
            continue
        rows.append(row)
    return rows


# -- drafts and hints -----------------------------------------------------------------------------
def get_draft(s: Session, user_id: int, slug: str) -> Draft | None:
    return s.exec(select(Draft).where(Draft.user_id == user_id, Draft.slug == slug)).first()


def current_code(s: Session, user_id: int, ex: catalog.Exercise) -> str:
    d = get_draft(s, user_id, ex.slug)
    return d.code if d is not None else ex.stub


def check_code(code: str | bytes, max_bytes: int, what: str = "the code") -> str:
    """The code as text; raises ``NotUTF8`` or ``CodeTooLarge`` with a message saying the cap.
    ``what`` names the text in the messages ("the snippet")."""
    if isinstance(code, bytes):
        try:
            code = code.decode("utf-8")
        except UnicodeDecodeError as e:
            raise NotUTF8(f"{what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise CodeTooLarge(f"{what} is {size} bytes; the limit is {max_bytes} bytes ({max_bytes // 1024} KiB)")
    if "\x00" in code:
        raise BadRequest(f"{what} contains a NUL character")
    return code


def save_draft(s: Session, user_id: int, slug: str, code: str | bytes, *, max_bytes: int) -> Draft:
    ensure_exercise_row(s, get_exercise(slug))
    code = check_code(code, max_bytes)
    for _ in range(2):
        d = get_draft(s, user_id, slug) or Draft(user_id=user_id, slug=slug, code=code)
        d.code, d.updated_at = code, utcnow()
        s.add(d)
        try:
            s.commit()
            break
        except IntegrityError:   # the first draft, written by two requests at once: update the winner's
            s.rollback()
    s.refresh(d)
    return d


def hints_shown(s: Session, user_id: int, slug: str) -> int:
    d = get_draft(s, user_id, slug)
    return d.hints_shown if d else 0


def reveal_hint(s: Session, user_id: int, ex: catalog.Exercise) -> int:
    """Show one more hint; returns how many are now shown."""
    ensure_exercise_row(s, ex)
    d = get_draft(s, user_id, ex.slug) or Draft(user_id=user_id, slug=ex.slug, code=ex.stub)
    d.hints_shown = min(len(ex.meta.hints), d.hints_shown + 1)
    s.add(d)
    s.commit()
    return d.hints_shown


# -- submissions ----------------------------------------------------------------------------------
def create_submission(s: Session, user_id: int, slug: str, code: str | bytes, kind: str, *, device: str,
                      max_bytes: int, source: str = "web", idempotency_key: str | None = None,
                      admit: queue.AdmitFn | None = None) -> Submission:
    """Save the draft, write the submission row as a queued job, return it. The caller wakes the worker.

    ``admit`` (cohort mode: ``cohorts.admit``) applies the limits atomically with the insert
    (``queue.enqueue``); a refusal raises after the draft is saved, so nothing typed is lost."""
    get_exercise(slug)
    if kind not in (SubmissionKind.RUN.value, SubmissionKind.SUBMIT.value):
        raise BadRequest(f"kind must be 'run' (public examples) or 'submit' (hidden cases), not {kind!r}")
    code = check_code(code, max_bytes)
    if idempotency_key:
        old = s.exec(select(Submission).where(Submission.idempotency_key == idempotency_key,
                                              Submission.user_id == user_id)).first()
        if old is not None:
            return old
    save_draft(s, user_id, slug, code, max_bytes=max_bytes)   # nothing the user wrote is lost
    sub = Submission(user_id=user_id, slug=slug, kind=kind, source=source, code=code, device=device,
                     idempotency_key=idempotency_key)
    try:
        return queue.enqueue(s, sub, admit=admit)
    except IntegrityError:   # the same key from two requests at once (a double click): one wins
        s.rollback()
        old = s.exec(select(Submission).where(Submission.idempotency_key == idempotency_key,
                                              Submission.user_id == user_id)).first() if idempotency_key else None
        if old is None:
            raise BadRequest("this idempotency key is already used; send a fresh random one (a UUID)") from None
        return old


SNIPPET_MAX_BYTES = 64 * 1024
"""The size cap of a scratch snippet, in bytes of UTF-8 (a few lines that call the solution)."""


def create_scratch(s: Session, user_id: int, slug: str, code: str | bytes, snippet: str | bytes, *, device: str,
                   max_bytes: int, admit: queue.AdmitFn | None = None) -> Submission:
    """Queue a scratch run: ``snippet`` against ``code`` (the editor's text; the draft is left to
    autosave). The job is a row of kind ``scratch``: never graded, in no listing, progress count or
    instructor's view, readable by its owner only (``get_scratch``). ``admit`` applies the limits
    of a Run (cohort mode). Raises ``NotFound``, ``NotUTF8``, ``CodeTooLarge`` or ``BadRequest``."""
    ensure_exercise_row(s, get_exercise(slug))
    code = check_code(code, max_bytes)
    snippet = check_code(snippet, SNIPPET_MAX_BYTES, "the snippet")
    sub = Submission(user_id=user_id, slug=slug, kind=SubmissionKind.SCRATCH.value, source="api", code=code,
                     snippet=snippet, device=device)
    return queue.enqueue(s, sub, admit=admit)


def get_scratch(s: Session, user_id: int, scratch_id: int) -> Submission:
    """The user's own scratch run; ``NotFound`` for anyone else's and for any other job."""
    sub = s.get(Submission, scratch_id, populate_existing=True)
    if sub is None or sub.user_id != user_id or sub.kind != SubmissionKind.SCRATCH.value:
        raise NotFound(f"no scratch run {scratch_id}")
    return sub


def scratch_result_of(sub: Submission) -> ScratchResult | None:
    return ScratchResult.model_validate_json(sub.verdict_json) if sub.verdict_json else None


def retry_submission(s: Session, user_id: int, sub_id: int, *, max_bytes: int,
                     admit: queue.AdmitFn | None = None) -> Submission:
    """Grade again (a new submission, same code) one that ended in an internal error. A retry the
    user asks for is a new grading: ``admit`` applies the same limits as to a new submission.
    (The platform's own retries, re-queueing after a worker died, make no new row and count
    against nothing.)"""
    old = get_submission(s, user_id, sub_id)
    if old.state != JobState.DONE.value or old.status != Status.INTERNAL_ERROR.value:
        raise BadRequest("only a submission that ended in an internal error can be retried")
    sub = Submission(user_id=user_id, slug=old.slug, kind=old.kind, source=old.source, code=old.code,
                     device=old.device, retry_of=old.id)
    return queue.enqueue(s, sub, admit=admit)


def get_submission(s: Session, user_id: int, sub_id: int) -> Submission:
    sub = s.get(Submission, sub_id, populate_existing=True)
    if sub is None or sub.user_id != user_id or sub.kind == SubmissionKind.SCRATCH.value:
        raise NotFound(f"no submission {sub_id}")
    return sub


def cancel_submission(s: Session, user_id: int, sub_id: int) -> tuple[Submission, bool]:
    """Cancel the user's queued or running submission: (the submission as it now is, whether this
    call cancelled it). One that had already ended is left as it was, verdict and all; another
    user's raises ``NotFound``. The caller tells the worker (``notify.CANCEL``)."""
    get_submission(s, user_id, sub_id)
    cancelled = queue.cancel(s, sub_id)
    return get_submission(s, user_id, sub_id), cancelled


def list_submissions(s: Session, user_id: int, slug: str | None = None, limit: int = 200, *,
                     summary: bool = False) -> list[Submission]:
    """The user's submissions, newest first. ``summary``: without loading their code, verdict and
    cases (a history table needs none of them; they load on first access if one is read)."""
    q = select(Submission).where(Submission.user_id == user_id, GRADED)
    if summary:
        q = q.options(defer(Submission.code), defer(Submission.verdict_json), defer(Submission.cases_json))
    if slug:
        q = q.where(Submission.slug == slug)
    return list(s.exec(q.order_by(Submission.id.desc()).limit(limit)).all())


def verdict_of(sub: Submission) -> Verdict | None:
    return Verdict.model_validate_json(sub.verdict_json) if sub.verdict_json else None


def live_cases(sub: Submission) -> list[CaseResult]:
    return [CaseResult.model_validate(c) for c in json.loads(sub.cases_json)] if sub.cases_json else []


def elapsed_seconds(sub: Submission, now: datetime | None = None) -> float:
    """Seconds a job has been grading (since ``started_at``) or, while queued, waiting (since
    ``created_at``); 0 once it has ended. The page counts on from this figure."""
    if sub.state not in queue.UNFINISHED:
        return 0.0
    since = sub.started_at if sub.state == JobState.RUNNING.value and sub.started_at else sub.created_at
    since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)   # SQLite returns naive UTC
    return max(0.0, ((now or utcnow()) - since).total_seconds())


def queue_position(s: Session, sub: Submission) -> int:
    """1 + the number of queued jobs ahead of ``sub`` (0 once it is no longer queued)."""
    if sub.state != JobState.QUEUED.value:
        return 0
    return 1 + s.exec(select(func.count()).where(Submission.state == JobState.QUEUED.value,
                                                 Submission.id < sub.id)).one()


def is_solved(s: Session, user_id: int, slug: str) -> bool:
    return s.exec(select(Submission.id).where(Submission.user_id == user_id, Submission.slug == slug,
                                              Submission.kind == SubmissionKind.SUBMIT.value,
                                              Submission.passed == True)).first() is not None  # noqa: E712


def record_finished(s: Session, user_id: int, ex: catalog.Exercise, code: str, verdict: Verdict,
                    *, source: str = "cli", now: datetime | None = None) -> Submission:
    """Record a grading done elsewhere (``inferprep grade``) as a finished submission made at
    ``now`` (default: the current time)."""
    ensure_exercise_row(s, ex)
    now = now or utcnow()
    sub = Submission(user_id=user_id, slug=ex.slug, kind="run" if verdict.public else "submit", source=source,
                     code=code, device=verdict.device, state=JobState.DONE.value, status=verdict.status.value,
                     score=verdict.score, passed=verdict.ok, verdict_json=verdict.model_dump_json(),
                     created_at=now, started_at=now, finished_at=now)
    s.add(sub)
    s.commit()
    s.refresh(sub)
    return sub


# -- progress -------------------------------------------------------------------------------------
@dataclass
class Tally:
    title: str
    key: str
    counts: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def pct(self, status: str) -> float:
        return 100.0 * self.counts[status] / self.total if self.total else 0.0


@dataclass
class Progress:
    overall: Tally
    by_track: list[Tally]
    by_collection: list[Tally]
    rows: list[ExerciseRow]
    next_up: list[ExerciseRow]
    timeline: list[tuple[str, int, int]]   # (ISO day, gradings that day, cumulative solved)


def progress(s: Session, user_id: int) -> Progress:
    rows = exercise_rows(s, user_id)
    overall = Tally("All exercises", "all", Counter(r.status for r in rows))
    by_track = []
    for t in catalog.Track:
        rs = [r for r in rows if r.ex.meta.track == t]
        if rs:
            by_track.append(Tally(t.title, t.value, Counter(r.status for r in rs)))
    by_coll = [Tally(c.value, c.value, Counter(r.status for r in rows if c in r.ex.meta.collections))
               for c in catalog.Collection]
    order = {"easy": 0, "medium": 1, "hard": 2}
    # Unfinished work first, then the easiest untouched exercise of each track in turn.
    candidates = sorted((r for r in rows if r.status != "solved"),
                        key=lambda r: (r.status != "attempted", order[r.ex.meta.difficulty.value]))
    per_track: Counter = Counter()
    next_up = []
    for r in candidates:
        if r.status == "attempted" or per_track[r.ex.meta.track] == 0:
            next_up.append(r)
            per_track[r.ex.meta.track] += 1
    next_up = next_up[:5]
    subs = s.exec(select(Submission.created_at, Submission.slug, Submission.kind, Submission.passed)
                  .where(Submission.user_id == user_id, counts_as_attempt())
                  .order_by(Submission.created_at)).all()
    per_day: Counter = Counter()
    first_pass: dict[str, str] = {}
    for created, slug, kind, passed in subs:
        day = created.date().isoformat()
        per_day[day] += 1
        if kind == "submit" and passed:
            first_pass.setdefault(slug, day)
    solved_by_day = Counter(first_pass.values())
    timeline, cum = [], 0
    for day in sorted(per_day):
        cum += solved_by_day[day]
        timeline.append((day, per_day[day], cum))
    return Progress(overall, by_track, by_coll, rows, next_up, timeline)


def choose_device(ex: catalog.Exercise, wanted: str, available: tuple[str, ...]) -> str:
    """The device a new submission is graded on: ``wanted`` (auto | cpu | cuda) among the
    server's workers' devices and the exercise's. Raises ``BadRequest`` when none fits."""
    options = [d for d in ("cuda", "cpu") if d in available and d in ex.meta.devices]
    if wanted != "auto":
        options = [d for d in options if d == wanted]
    if not options:
        raise BadRequest(f"{ex.slug} is graded on {', '.join(ex.meta.devices)}; this server grades on "
                         f"{', '.join(available)}")
    return options[0]
