"""Dependencies: ``Annotated`` aliases so handlers read like prose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlmodel import Session

from .. import catalog, cohorts, notify, queue, services
from ..db import session_scope
from ..models import LOCAL_USER_ID, User
from ..settings import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.settings.db_url) as s:
        yield s


SessionDep = Annotated[Session, Depends(get_session)]


def account(request: Request, s: SessionDep) -> User | None:
    """Who is asking: None in local mode (the one implicit user); in cohort mode the signed-in
    user, looked up once per request by ``app.state.sign_in`` (``accounts.signed_in``, which
    raises ``LoginRequired`` for anyone else). A hook in ``app.state`` rather than FastAPI's
    ``dependency_overrides``: with any override set, FastAPI analyses every dependency's signature
    again on every request (``get_dependant``, 0.3-2 ms of CPU per page)."""
    sign_in = request.app.state.sign_in
    return None if sign_in is None else sign_in(request, s)


Account = Annotated[User | None, Depends(account)]


def current_user(user: Account) -> int:
    """The id every service call is scoped by: ``LOCAL_USER_ID`` in local mode, else the signed-in user's."""
    return LOCAL_USER_ID if user is None else user.id


def exercise_from_path(slug: str, user: Account) -> catalog.Exercise:
    """The exercise named in the path; ``NotFound`` for no such exercise. In cohort mode only after
    signing in, and a slug that could not name a folder never reaches the file system."""
    return services.get_exercise(slug if user is None else cohorts.valid_slug(slug))


def admission(request: Request) -> queue.AdmitFn | None:
    """What a new grading (a submission or a retry) must pass: nothing in local mode; in cohort mode
    the queue limit and the cohort's hourly rate (``app.state.admit``: ``cohorts.admit``)."""
    return request.app.state.admit


def announce_cancel(request: Request, sub_id: int) -> None:
    """Tell this process's worker (it kills the grading's child) and event streams that ``sub_id``
    was cancelled; other processes hear it from PostgreSQL (``queue.cancel`` notifies)."""
    hub: notify.Hub = request.app.state.hub
    hub.publish(notify.CANCEL, sub_id)
    hub.publish(notify.SUBMISSION, sub_id)


def assignments(s: SessionDep, user: Account) -> dict:
    """slug -> ``cohorts.Assigned``: the exercises assigned to the current user in the cohorts
    they are a student of (with their deadlines); empty in local mode."""
    return {} if user is None else cohorts.assigned_to(s, user.id)


SettingsDep = Annotated[Settings, Depends(get_settings)]
CurrentUser = Annotated[int, Depends(current_user)]
ExerciseDep = Annotated[catalog.Exercise, Depends(exercise_from_path)]
Admission = Annotated[queue.AdmitFn | None, Depends(admission)]
Assignments = Annotated[dict, Depends(assignments)]


RowId = Annotated[int, Path(ge=-(2**63), le=2**63 - 1)]
"""A row id in a path: a number the database's 64-bit integers hold (a larger one is refused as
bad input, never passed to the driver, whose overflow would be a 500)."""
