"""/api/progress: your status per exercise, per track and per collection, and activity per day."""

from __future__ import annotations

from fastapi import APIRouter

from ... import services
from ..deps import CurrentUser, SessionDep
from .schemas import ProgressPublic, TallyPublic

router = APIRouter(tags=["progress"])


@router.get("/progress", response_model=ProgressPublic)
def read_progress(s: SessionDep, user: CurrentUser) -> ProgressPublic:
    p = services.progress(s, user)
    return ProgressPublic(overall=TallyPublic.of(p.overall), by_track=[TallyPublic.of(t) for t in p.by_track],
                          by_collection=[TallyPublic.of(t) for t in p.by_collection],
                          exercises={r.slug: r.status for r in p.rows}, timeline=p.timeline)
