"""Dependencies: ``Annotated`` aliases so handlers read like prose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from .. import catalog, notify, queue, services
from ..db import session_scope
from ..models import LOCAL_USER_ID
from ..settings import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.settings.db_url) as s:
        yield s


def current_user() -> int:
    """Local mode: the one implicit user. Cohort mode replaces this with the signed-in user."""
    return LOCAL_USER_ID


def exercise_from_path(slug: str) -> catalog.Exercise:
    return services.get_exercise(slug)


def admission() -> queue.AdmitFn | None:
    """What a new grading (a submission or a retry) must pass: nothing in local mode; cohort mode
    replaces this with the queue limit and the cohort's hourly rate (``cohorts.admit``)."""
    return None


def announce_cancel(request: Request, sub_id: int) -> None:
    """Tell this process's worker (it kills the grading's child) and event streams that ``sub_id``
    was cancelled; other processes hear it from PostgreSQL (``queue.cancel`` notifies)."""
    hub: notify.Hub = request.app.state.hub
    hub.publish(notify.CANCEL, sub_id)
    hub.publish(notify.SUBMISSION, sub_id)


def assignments() -> dict:
    """slug -> ``cohorts.Assigned``: the exercises assigned to the current user. None in local
    mode; cohort mode replaces this with the assignments of the student's cohorts."""
    return {}


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
CurrentUser = Annotated[int, Depends(current_user)]
ExerciseDep = Annotated[catalog.Exercise, Depends(exercise_from_path)]
Admission = Annotated[queue.AdmitFn | None, Depends(admission)]
Assignments = Annotated[dict, Depends(assignments)]
