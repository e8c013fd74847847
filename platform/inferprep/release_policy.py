"""When a student may read an exercise's editorial and reference beyond their own pass: their
cohorts' unlock policy (``CohortPolicy.unlock``, ``Assignment.deadline``).

``unlock.check_unlocked`` asks ``release_check`` after checking the student's own pass; with no
cohort membership (local mode) it never locks anything. It lives here, below both ``services``
and ``cohorts`` (which re-exports it), so neither has to import the other to apply it.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlmodel import Session, select

from .cohort_models import Assignment, CohortPolicy, Unlock
from .errors import Locked
from .models import Membership, Role, utcnow


def aware(t: datetime | None) -> datetime | None:
    """``t`` as an aware UTC time (SQLite returns naive ones); None stays None."""
    return t if t is None or t.tzinfo else t.replace(tzinfo=timezone.utc)


def release_check(s: Session, user_id: int, slug: str, now: datetime | None = None) -> None:
    """Raise ``Locked`` if a cohort the user studies in withholds this editorial and reference
    (the caller has already checked the user's own pass)."""
    now = now or utcnow()
    rows = s.exec(select(Membership.cohort_id, CohortPolicy.unlock)
                  .join(CohortPolicy, CohortPolicy.cohort_id == Membership.cohort_id, isouter=True)
                  .where(Membership.user_id == user_id, Membership.role == Role.STUDENT.value)).all()
    for cohort_id, unlock in rows:
        if unlock == Unlock.NEVER.value:
            raise Locked("your cohort's instructors keep editorials and references closed")
        if unlock == Unlock.AFTER_DEADLINE.value:
            a = s.exec(select(Assignment).where(Assignment.cohort_id == cohort_id, Assignment.slug == slug)).first()
            if a is not None and (a.deadline is None or aware(a.deadline) > now):
                when = f"after the deadline ({aware(a.deadline):%Y-%m-%d %H:%M} UTC)" if a.deadline else \
                    "when your instructors set a deadline"
                raise Locked(f"the editorial and the reference of an assigned exercise open {when}")
