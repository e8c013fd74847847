"""Mock interviews in the browser (issue 18): the start page with the history, one session's page,
Finish (with a confirmation that needs no JavaScript), the report; and the countdown banner every
page shows while a session is under way.

Routes (all scoped by the current user; another user's session id answers 404):

- ``GET /interview``: the start form (scope: the collections then the tracks; a length of 30, 45,
  60 or 90 minutes with the draw rule of each; the hint cost and the score rule stated up front),
  the session under way if any, and the history (finished sessions, newest first) with the scores
  over time as an inline SVG.
- ``POST /interview/start``: fields ``scope`` ("<scope kind>:<scope>", e.g. "collection:Jane
  Street"), ``minutes``, optional ``seed`` (replays a draw); 303 to the new session's page.
- ``GET /interview/{id}``: the drawn exercises (title, kind, role, passed or not yet, attempts)
  with links, the countdown, Finish; a finished session's page is its report (303).
- ``POST /interview/{id}/finish``: without ``confirm=yes`` it answers the confirmation page
  (a second form); with it, it ends the session and 303s to the report.
- ``GET /interview/{id}/report``: the report (303 to the session's page while it runs).

Templates reach the active session through ``interview_banner(request)`` (a ``Banner`` or
None, read once per request), ``interview_item(request, slug)`` (the item of ``slug`` in the
session under way, or None) and ``interview_lock(request, slug)`` (``interview.lock_reason``),
globals that ``install`` registers. The banner's times are the server's (``interview.now``):
``static/app.js`` ticks the countdown from ``data-ends-at`` corrected by ``data-now`` (the
server's clock at rendering), so a skewed client clock or a reload changes nothing, and at zero
it loads the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse

from ... import cohort_interviews, db, interview, services
from ...interview_models import InterviewSession
from ...models import LOCAL_USER_ID
from ..deps import CurrentUser, RowId, SessionDep
from ..forms import FormDep
from ..templating import templates

router = APIRouter(include_in_schema=False)

# -- helpers --------------------------------------------------------------------------------------
def aware(t: datetime) -> datetime:
    """``t`` as an aware UTC time (SQLite hands back naive UTC)."""
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def clock_text(seconds: int) -> str:
    """Remaining time as the countdown shows it: "m:ss", or "h:mm:ss" from an hour up."""
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def scope_label(kind: str, scope: str) -> str:
    return next((label for k, v, label in interview.scopes() if k == kind and v == scope), scope)


def scope_value(kind: str, scope: str) -> str:
    """The start form's value of a scope: "<kind>:<scope>"."""
    return f"{kind}:{scope}"


def parse_start(form: dict) -> tuple[str, str, int, int | None]:
    """(scope kind, scope, minutes, seed or None) from the start form; ``BadRequest`` naming the field."""
    raw = str(form.get("scope", ""))
    kind, sep, scope = raw.partition(":")
    if not sep or (kind, scope) not in {(k, v) for k, v, _ in interview.scopes()}:
        raise services.BadRequest("choose a scope: one of the collections or tracks listed")
    try:
        minutes = int(str(form.get("minutes", "")))
    except ValueError:
        minutes = 0
    if minutes not in interview.LENGTHS:
        raise services.BadRequest(f"choose a length of {', '.join(map(str, interview.LENGTHS))} minutes")
    seed_text = str(form.get("seed", "")).strip()
    seed = None
    if seed_text:
        try:
            seed = int(seed_text)
        except ValueError:
            raise services.BadRequest("the seed is a whole number (or leave it empty for a fresh draw)") from None
        if not 0 <= seed < 2**63:
            raise services.BadRequest("the seed is between 0 and 2^63 - 1")
    return kind, scope, minutes, seed


@dataclass
class Banner:
    """The active session as every page's banner shows it."""
    session_id: int
    label: str
    ends_at: str           # ISO 8601, UTC
    now: str               # the server's clock when the page was rendered, ISO 8601
    remaining_s: int
    slugs: frozenset[str]

    @property
    def remaining_text(self) -> str:
        return clock_text(self.remaining_s)


def request_user(request: Request) -> int | None:
    """The user a page was rendered for: the local user in local mode, the signed-in one in cohort
    mode (None on a page that asked nobody to sign in, e.g. /login)."""
    if not request.app.state.cohort_mode:
        return LOCAL_USER_ID
    user = getattr(request.state, "user", None)
    return None if user is None else user.id


_MISSING = object()


def banner(request: Request) -> Banner | None:
    """The active session of the page's user as a ``Banner``, or None; read once per request."""
    cached = getattr(request.state, "interview_banner", _MISSING)
    if cached is not _MISSING:
        return cached
    found = None
    user = request_user(request)
    if user is not None:
        with db.session_scope(request.app.state.settings.db_url) as s:
            t = interview.now()
            sess = interview.active_session(s, user, t)
            if sess is not None:
                found = Banner(session_id=sess.id, label=scope_label(sess.scope_kind, sess.scope),
                               ends_at=aware(sess.ends_at).isoformat(), now=t.isoformat(),
                               remaining_s=interview.remaining_seconds(sess, t),
                               slugs=frozenset(i.slug for i in interview.session_items(s, sess)))
    request.state.interview_banner = found
    return found


def in_session(request: Request, slug: str) -> bool:
    """Whether ``slug`` is one of the exercises of the session under way (its hints cost points)."""
    b = banner(request)
    return b is not None and slug in b.slugs


def lock(request: Request, slug: str) -> str | None:
    """Why a mock interview keeps the editorial and reference of ``slug`` closed, or None."""
    user = request_user(request)
    if user is None:
        return None
    with db.session_scope(request.app.state.settings.db_url) as s:
        return interview.lock_reason(s, user, slug)


def install(app: FastAPI) -> None:
    """Register the router and the templates' globals."""
    app.include_router(router)
    templates().env.globals.update(interview_banner=banner, interview_item=in_session, interview_lock=lock,
                                   interview_hint_pct=round(100 * interview.HINT_PENALTY))


def sparkline(sessions: list[InterviewSession], width: int = 300, height: int = 60) -> list[tuple[float, float, InterviewSession]]:
    """(x, y, session) per finished session, oldest first, for an SVG of ``width`` x ``height``:
    x spreads the sessions evenly, y maps a score of 0..100 to the bottom..top (4 px margins)."""
    pts = [x for x in reversed(sessions) if x.score is not None]
    n = len(pts)
    out = []
    for i, sess in enumerate(pts):
        x = width / 2 if n == 1 else 4 + (width - 8) * i / (n - 1)
        y = height - 4 - (height - 8) * max(0.0, min(100.0, sess.score)) / 100
        out.append((round(x, 1), round(y, 1), sess))
    return out


def items_view(s, sess: InterviewSession, rep) -> list[dict]:
    """The session's exercises as its page lists them (the live report gives passed and attempts)."""
    by_pos = {i.position: i for i in rep.items}
    out = []
    for it in interview.session_items(s, sess):
        ex = services.get_exercise(it.slug)
        r = by_pos.get(it.position)
        out.append({"item": it, "ex": ex, "passed": bool(r and r.passed), "attempts": r.attempts if r else 0,
                    "hints": it.hints_used})
    return out


def review_closed(s, sess: InterviewSession, t: datetime) -> str | None:
    """Why the owner may not read the report (and score) of ``sess`` yet: a scheduled interview's
    report opens when its window closes, and only if its instructor allows review
    (``cohort_interviews.review_lock``); None for any other session."""
    return cohort_interviews.review_lock(s, sess, t)


def report_home(s, sess: InterviewSession, t: datetime) -> str:
    """Where a finished session leads: its report, or (report still closed) its scheduled
    interview's page, which says when the report opens."""
    if sess.cohort_interview_id is not None and review_closed(s, sess, t):
        return f"/cohort/interviews/{sess.cohort_interview_id}"
    return f"/interview/{sess.id}/report"


def visible_history(s, past: list[InterviewSession], t: datetime) -> list[InterviewSession]:
    """``past`` with the scores of sessions whose report is still closed (``review_closed``)
    blanked (detached copies: nothing is written back)."""
    out = []
    for sess in past:
        if sess.cohort_interview_id is not None and review_closed(s, sess, t):
            sess = InterviewSession.model_validate(sess.model_dump())
            sess.score = None
        out.append(sess)
    return out


# -- routes ---------------------------------------------------------------------------------------
@router.get("/interview")
def start_page(request: Request, s: SessionDep, user: CurrentUser):
    t = interview.now()
    active = interview.active_session(s, user, t)
    past = visible_history(s, interview.history(s, user), t)
    ctx = {"nav": "interview", "scopes": interview.scopes(), "lengths": interview.LENGTHS,
           "rules": interview.RULE_TEXT, "score_rule": interview.SCORE_RULE,
           "hint_pct": round(100 * interview.HINT_PENALTY), "repeat_days": interview.REPEAT_DAYS,
           "active": active, "history": past, "spark": sparkline(past), "label": scope_label, "aware": aware,
           "value": scope_value}
    if active is not None:
        ctx["active_items"] = items_view(s, active, interview.report(s, active, t))
        ctx["active_left"] = clock_text(interview.remaining_seconds(active, t))
    return templates().TemplateResponse(request, "interview.html", ctx)


@router.post("/interview/start")
def start(request: Request, form: FormDep, s: SessionDep, user: CurrentUser):
    kind, scope, minutes, seed = parse_start(form)
    sess = interview.start_session(s, user, scope_kind=kind, scope=scope, minutes=minutes, seed=seed, source="web",
                                   replay=seed is not None)
    return RedirectResponse(f"/interview/{sess.id}", status_code=303)


def _session_or_report(s, user: int, session_id: int):
    """(the session, now); ends it first if its time ran out (``active_session`` freezes it)."""
    t = interview.now()
    sess = interview.get_session(s, user, session_id)   # NotFound for another user's
    interview.active_session(s, user, t)
    s.refresh(sess)
    return sess, t


@router.get("/interview/{session_id}")
def session_page(request: Request, session_id: RowId, s: SessionDep, user: CurrentUser):
    sess, t = _session_or_report(s, user, session_id)
    if sess.finished_at is not None:
        return RedirectResponse(report_home(s, sess, t), status_code=303)
    rep = interview.report(s, sess, t)
    return templates().TemplateResponse(request, "interview_session.html", {
        "nav": "interview", "sess": sess, "items": items_view(s, sess, rep), "label": scope_label(sess.scope_kind, sess.scope),
        "left": clock_text(interview.remaining_seconds(sess, t)), "hint_pct": round(100 * interview.HINT_PENALTY),
        "score_rule": interview.SCORE_RULE})


@router.post("/interview/{session_id}/finish")
def finish(request: Request, session_id: RowId, form: FormDep, s: SessionDep, user: CurrentUser):
    sess, t = _session_or_report(s, user, session_id)
    if sess.finished_at is None and form.get("confirm") != "yes":
        return templates().TemplateResponse(request, "interview_finish.html", {
            "nav": "interview", "sess": sess, "label": scope_label(sess.scope_kind, sess.scope),
            "left": clock_text(interview.remaining_seconds(sess, t)),
            "unpassed": [v for v in items_view(s, sess, interview.report(s, sess, t)) if not v["passed"]]})
    interview.finish_session(s, user, sess.id, t)
    s.refresh(sess)
    return RedirectResponse(report_home(s, sess, t), status_code=303)


@router.get("/interview/{session_id}/report")
def report_page(request: Request, session_id: RowId, s: SessionDep, user: CurrentUser):
    sess, t = _session_or_report(s, user, session_id)
    if sess.finished_at is None:
        return RedirectResponse(f"/interview/{sess.id}", status_code=303)
    closed = review_closed(s, sess, t)
    if closed:      # a scheduled interview's report: not before its window closes, nor with review off
        raise services.Locked(closed)
    rep = interview.report(s, sess, t)
    locks = {i.slug: interview.lock_reason(s, user, i.slug, t) for i in rep.items}
    return templates().TemplateResponse(request, "interview_report.html", {
        "nav": "interview", "sess": sess, "rep": rep, "locks": locks, "hint_pct": round(100 * interview.HINT_PENALTY)})


__all__ = ["router", "install", "banner", "clock_text", "sparkline", "parse_start", "Banner"]
