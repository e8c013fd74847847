"""The dashboard: progress by track and by collection, and what to do next."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ... import services
from ..deps import CurrentUser, SessionDep
from ..templating import templates

router = APIRouter(include_in_schema=False)


@router.get("/")
def dashboard(request: Request, s: SessionDep, user: CurrentUser):
    p = services.progress(s, user)
    recent = services.list_submissions(s, user, limit=5)
    return templates().TemplateResponse(request, "dashboard.html", {"p": p, "recent": recent, "nav": "dashboard"})
