"""/api/exercises: list and read exercises (public files only), drafts, the unlocked solution."""

from __future__ import annotations

from fastapi import APIRouter

from ... import interview, services, unlock
from ..deps import CurrentUser, ExerciseDep, SessionDep, SettingsDep
from .schemas import DraftIn, ExerciseDetail, ExercisePublic, SolutionPublic, detail

router = APIRouter(prefix="/exercises", tags=["exercises"])


@router.get("", response_model=list[ExercisePublic])
def list_exercises(s: SessionDep, user: CurrentUser, track: str = "", collection: str = "", difficulty: str = "",
                   kind: str = "", status: str = "", q: str = "") -> list[ExercisePublic]:
    """Every exercise with your status; filters combine (``q`` searches title, slug, tags, summary)."""
    rows = services.exercise_rows(s, user, track=track, collection=collection, difficulty=difficulty,
                                  kind=kind, status=status, q=q)
    return [ExercisePublic.of(r) for r in rows]


@router.get("/{slug}", response_model=ExerciseDetail)
def read_exercise(ex: ExerciseDep, s: SessionDep, user: CurrentUser) -> ExerciseDetail:
    """The statement, stub and public examples, your draft and the hints revealed so far."""
    return detail(s, user, ex)


@router.put("/{slug}/draft", status_code=204)
def save_draft(ex: ExerciseDep, body: DraftIn, s: SessionDep, user: CurrentUser, settings: SettingsDep) -> None:
    """Save your code for this exercise (the page autosaves through the same call)."""
    services.save_draft(s, user, ex.slug, body.code, max_bytes=settings.max_code_bytes)


@router.post("/{slug}/hints", response_model=list[str])
def reveal_hint(ex: ExerciseDep, s: SessionDep, user: CurrentUser) -> list[str]:
    """Reveal the next hint; returns every hint revealed so far. Within a mock interview each hint
    costs 10% of that exercise's points (``interview.use_hint`` counts it)."""
    return ex.meta.hints[:interview.use_hint(s, user, ex)]


@router.get("/{slug}/solution", response_model=SolutionPublic, responses={403: {"description": "not solved yet"}})
def read_solution(ex: ExerciseDep, s: SessionDep, user: CurrentUser) -> SolutionPublic:
    """The editorial and the reference solution: 403 until your code passes the hidden cases."""
    editorial, reference = unlock.unlocked_texts(s, user, ex)
    return SolutionPublic(editorial=editorial, reference=reference)
