"""When a user may read an exercise's editorial and reference solution.

Three rules, applied in this order: a mock interview under way closes everything, and a cohort's
scheduled interview keeps its exercises closed until its window closes (``interview.lock_reason``);
otherwise the user's own pass, or the end of a mock interview that drew the exercise, opens them
(``services.is_solved``, ``interview.opened_by_interview``), the latter not for an exercise assigned
to the student whose deadline has not passed (``assigned_open``); a cohort's unlock policy may keep them
closed longer (``release_policy.release_check``). It sits above ``services`` and ``interview`` so
that neither imports the other to apply these rules.

Errors: ``errors.Locked`` (HTTP 403) with the reason in one sentence.
"""

from __future__ import annotations

from sqlmodel import Session, select

from . import catalog, interview
from .cohort_models import Assignment
from .models import Membership, Role
from .errors import Locked
from .release_policy import release_check
from .services import is_solved


def check_unlocked(s: Session, user_id: int, slug: str) -> None:
    """Raise ``Locked`` (with the reason, a sentence) unless the user may read the editorial and
    the reference of ``slug``."""
    why = interview.lock_reason(s, user_id, slug)
    if why:
        raise Locked(why)
    if not is_solved(s, user_id, slug):
        if not interview.opened_by_interview(s, user_id, slug):
            raise Locked("the editorial and the reference unlock after your code passes the hidden cases")
        why = assigned_open(s, user_id, slug)
        if why:
            raise Locked(why)
    release_check(s, user_id, slug)   # a cohort's policy may keep them closed longer


def assigned_open(s: Session, user_id: int, slug: str) -> str | None:
    """Why a mock interview's end may not open ``slug`` (unpassed) to the user: it is assigned to
    them in a cohort and its deadline has not passed (or it has none); else None. Without this, a
    student could start a practice interview that draws an assigned exercise (a chosen seed does
    it), finish it at once and read the editorial before doing the assignment."""
    now = interview.now()
    rows = s.exec(select(Assignment.deadline).join(Membership, Membership.cohort_id == Assignment.cohort_id)
                  .where(Membership.user_id == user_id, Membership.role == Role.STUDENT.value,
                         Assignment.slug == slug)).all()
    for deadline in rows:
        if deadline is None or interview._aware(deadline) > now:
            when = f"after its deadline ({interview._aware(deadline):%Y-%m-%d %H:%M} UTC)" if deadline else \
                "once you pass it"
            return (f"this exercise is assigned to you: ending a mock interview does not open its editorial; "
                    f"it opens {when}")
    return None


def editorial_lock(s: Session, user_id: int, slug: str) -> str | None:
    """None when the user may read the editorial and the reference of ``slug``, else why not."""
    try:
        check_unlocked(s, user_id, slug)
    except Locked as e:
        return str(e)
    return None


def unlocked_texts(s: Session, user_id: int, ex: catalog.Exercise) -> tuple[str, str]:
    """(editorial, reference source) once the user may read them; raises ``Locked``."""
    check_unlocked(s, user_id, ex.slug)
    ref = ex.reference_path.read_text(encoding="utf-8") if ex.reference_path.is_file() else ""
    return ex.editorial, ref
