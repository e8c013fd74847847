"""The CLI's link to the local database: ``inferprep list`` shows your status and ``inferprep
grade`` records each grading (unless ``--no-record``), so the web shows work done in your own
editor. Both use the same database as ``inferprep serve`` (``Settings``)."""

from __future__ import annotations

from . import catalog, db, services
from .models import LOCAL_USER_ID
from .settings import get_settings
from .verdict import Verdict


def _url() -> str:
    url = get_settings().db_url
    db.prepare(url)
    return url


def local_status() -> dict[str, str]:
    """slug -> "solved" | "attempted" | "untouched" for the local user."""
    with db.session_scope(_url()) as s:
        st = services.status_map(s, LOCAL_USER_ID)
    return {e.slug: st.get(e.slug, "untouched") for e in catalog.all_exercises()}


def record_cli_grade(ex: catalog.Exercise, code: str, verdict: Verdict) -> int:
    """Record a CLI grading as a finished submission of the local user, made at ``interview.now()``
    (the clock a mock interview's window is read with); returns its id."""
    from . import interview
    with db.session_scope(_url()) as s:
        return services.record_finished(s, LOCAL_USER_ID, ex, code, verdict, source="cli", now=interview.now()).id
