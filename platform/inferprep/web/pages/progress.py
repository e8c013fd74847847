"""The progress page: every attempt over time, status per exercise, completion per track."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ... import services
from ..deps import CurrentUser, SessionDep
from ..templating import templates

router = APIRouter(include_in_schema=False)


@router.get("/progress")
def progress_page(request: Request, s: SessionDep, user: CurrentUser):
    p = services.progress(s, user)
    subs = services.list_submissions(s, user, limit=500)
    return templates().TemplateResponse(request, "progress.html", {"p": p, "subs": subs, "nav": "progress"})
