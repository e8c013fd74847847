"""Exercise pages: the filtered list, one exercise (statement, editor, verdict, history, hints),
its draft autosave, and the editorial and reference once solved."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from ... import interview, services, unlock
from ..deps import Admission, Assignments, CurrentUser, ExerciseDep, SessionDep, SettingsDep
from ..forms import FormDep
from ..templating import templates
from .followups import panel_context as followups_panel
from .submissions import verdict_context, verdict_parts

router = APIRouter(include_in_schema=False)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


@router.get("/exercises")
def exercise_list(request: Request, s: SessionDep, user: CurrentUser, assignments: Assignments, track: str = "",
                  collection: str = "", difficulty: str = "", kind: str = "", status: str = "", q: str = "",
                  assigned: str = ""):
    """The catalog, filtered; ``assigned`` (cohort mode) keeps the exercises assigned to the
    student, soonest deadline first."""
    filters = dict(track=track, collection=collection, difficulty=difficulty, kind=kind, status=status, q=q)
    rows = services.exercise_rows(s, user, **filters)
    if assigned:
        rows = sorted((r for r in rows if r.slug in assignments), key=lambda r: deadline_order(assignments[r.slug]))
    return templates().TemplateResponse(request, "exercises.html", {
        "rows": rows, "f": {**filters, "assigned": assigned}, "assignments": assignments, "nav": "exercises"})


def deadline_order(a) -> tuple:
    """Sort key of a ``cohorts.Assigned``: soonest deadline first, those without one last."""
    return (a.deadline is None, a.deadline or 0, a.slug)


def exercise_context(s, user: int, ex) -> dict:
    history = services.list_submissions(s, user, ex.slug, limit=50)
    solved = services.is_solved(s, user, ex.slug)
    draft = services.get_draft(s, user, ex.slug)
    return {"ex": ex, "code": draft.code if draft is not None else ex.stub, "history": history,
            "draft_at": draft.updated_at.isoformat() if draft is not None else "", "user_id": user,
            "hints": ex.meta.hints[:services.hints_shown(s, user, ex.slug)], "solved": solved,
            # None, or why a cohort's policy keeps the editorial closed for now
            "editorial_lock": unlock.editorial_lock(s, user, ex.slug) if solved else None,
            "status": services.status_map(s, user).get(ex.slug, "untouched")}


@router.get("/exercises/{slug}")
def exercise_page(request: Request, ex: ExerciseDep, s: SessionDep, user: CurrentUser, settings: SettingsDep,
                  assignments: Assignments):
    ctx = exercise_context(s, user, ex)
    ctx["assignment"] = assignments.get(ex.slug)
    for kind in ("run", "submit"):    # the latest of each: Examples and Result show them
        latest = next((h for h in ctx["history"] if h.kind == kind), None)
        ctx[f"{kind}_verdict"] = verdict_parts(s, latest) if latest is not None else None
    ctx.update(nav="exercises", max_code_bytes=settings.max_code_bytes)
    ctx.update(followups_panel(s, user, ex))   # issue 18: the follow-up questions once solved
    return templates().TemplateResponse(request, "exercise.html", ctx)


@router.post("/exercises/{slug}/draft")
def save_draft(request: Request, form: FormDep, ex: ExerciseDep, s: SessionDep, user: CurrentUser,
               settings: SettingsDep):
    d = services.save_draft(s, user, ex.slug, form.get("code", ""), max_bytes=settings.max_code_bytes)
    message = f"Draft saved at {d.updated_at:%H:%M:%S} UTC"
    if "application/json" in request.headers.get("accept", ""):   # the editor's autosave
        return JSONResponse({"message": message, "saved_at": d.updated_at.isoformat()})
    if is_htmx(request) or request.headers.get("accept", "").startswith("text/plain"):
        return Response(message, media_type="text/plain")
    return RedirectResponse(f"/exercises/{ex.slug}", status_code=303)


@router.post("/exercises/{slug}/submissions")
def submit(request: Request, form: FormDep, ex: ExerciseDep, s: SessionDep, user: CurrentUser,
           settings: SettingsDep, admit: Admission):
    device = services.choose_device(ex, settings.device, request.app.state.devices)
    sub = services.create_submission(s, user, ex.slug, form.get("code", ""), str(form.get("kind", "submit")),
                                     device=device, max_bytes=settings.max_code_bytes, source="web", admit=admit)
    if request.app.state.worker is not None:
        request.app.state.worker.wake()
    if is_htmx(request):
        return templates().TemplateResponse(request, "_verdict.html", verdict_context(s, sub))
    return RedirectResponse(f"/submissions/{sub.id}", status_code=303)


@router.post("/exercises/{slug}/hints")
def reveal_hint(request: Request, ex: ExerciseDep, s: SessionDep, user: CurrentUser):
    shown = interview.use_hint(s, user, ex)   # within a mock interview the hint also counts against its points
    if is_htmx(request):
        return templates().TemplateResponse(request, "_hints.html", {"ex": ex, "hints": ex.meta.hints[:shown]})
    return RedirectResponse(f"/exercises/{ex.slug}#hints", status_code=303)


@router.get("/exercises/{slug}/solution")
def solution_page(request: Request, ex: ExerciseDep, s: SessionDep, user: CurrentUser):
    editorial, reference = unlock.unlocked_texts(s, user, ex)   # 403 page until solved
    return templates().TemplateResponse(request, "solution.html", {"ex": ex, "editorial": editorial,
                                                                   "reference": reference, "nav": "exercises"})
