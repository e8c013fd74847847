"""Cohort-mode tables (issue 5), next to ``models.py``'s core tables.

``AuthSession``: a server-side sign-in. The cookie carries a random token; the table keeps only
its keyed digest (``auth.digest``), so a copy of the database cannot be replayed as cookies.
``CohortPolicy``: one row per cohort (when editorials and references unlock, the per-student
submission rate). ``Assignment``: an exercise assigned to a cohort, with an optional deadline.
``SubmissionGate``: the lock row that makes admitting a submission under the limits atomic
(``queue.enqueue``). ``SignInThrottle``: failed sign-ins per account and per client address
(``auth.authenticate``), in the database so every web process shares them (migration c002).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import BigInteger, Index, String, UniqueConstraint
from sqlmodel import Field, SQLModel

from .models import Submission, utcnow


class Unlock(str, Enum):
    """When a student may read an exercise's editorial and reference solution."""
    ON_PASS = "on_pass"              # after their own passing submission (local mode's rule)
    AFTER_DEADLINE = "after_deadline"  # after their pass and the assignment's deadline
    NEVER = "never"                  # not in this cohort


class AuthSession(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=64)            # digest of the cookie token
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime


class CohortPolicy(SQLModel, table=True):
    cohort_id: int = Field(primary_key=True, foreign_key="cohort.id")
    unlock: str = Field(default=Unlock.ON_PASS.value, sa_type=String(20))   # an Unlock value
    submissions_per_hour: int = Field(default=60, ge=0)                    # 0: no limit


class Assignment(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("cohort_id", "slug"),)
    id: int | None = Field(default=None, primary_key=True)
    cohort_id: int = Field(foreign_key="cohort.id", index=True)
    slug: str = Field(foreign_key="exercise.slug", max_length=100)
    deadline: datetime | None = None


class SubmissionGate(SQLModel, table=True):
    """A row every admission of a new submission updates first (``queue.take_gate``): the update
    serializes the check-the-limits-then-insert transactions (a row lock on PostgreSQL, the write
    lock on SQLite). ``taken`` counts how often it was taken; its value matters to nobody."""
    name: str = Field(primary_key=True, max_length=40)
    taken: int = Field(default=0, sa_type=BigInteger)


class SignInThrottle(SQLModel, table=True):
    """Sign-in attempts in the current window for one key: ``sha256("account:" + email)`` or
    ``sha256("address:" + client address)`` (hex; the email itself is not stored)."""
    key: str = Field(primary_key=True, max_length=64)
    failures: int = 0
    window_start: datetime = Field(default_factory=utcnow, index=True)


# The rate limit counts one user's recent submissions (migration c001).
Index("ix_submission_user_created", Submission.user_id, Submission.created_at)
