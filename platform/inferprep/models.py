"""Database tables (SQLModel). One module, one family per entity.

Local mode has one implicit user (``LOCAL_USER_ID``); cohort mode (accounts, roles, API tokens)
fills the same tables. A ``Submission`` row is both the record of an attempt and the job of the
grading queue (``queue.py``): ``state`` is queued -> running -> done (or cancelled by its owner
while queued or running: no verdict, and it counts as no attempt), ``worker``, ``attempt`` and
``lease_expires_at`` belong to the queue, ``verdict_json`` / ``status`` / ``score`` to the result.
A scratch run is a job of kind ``scratch`` and no attempt: every listing, count of progress and
instructor's view takes ``GRADED`` rows only.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum

from sqlalchemy import BigInteger, Column, String, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

LOCAL_USER_ID = 1


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# Enums are stored as their plain string values (no database enum types, so migrations stay
# simple on both SQLite and PostgreSQL).
class Role(str, Enum):
    STUDENT = "student"
    INSTRUCTOR = "instructor"


class SubmissionKind(str, Enum):
    RUN = "run"          # the public examples
    SUBMIT = "submit"    # the hidden cases
    SCRATCH = "scratch"  # a scratch run: the user's snippet against their code, never graded (migration c003)


class JobState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"   # by its owner before it finished: no verdict, counts as no attempt


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    email: str | None = Field(default=None, max_length=320, unique=True)
    password_hash: str | None = Field(default=None, max_length=500)
    is_admin: bool = False
    is_instructor: bool = False   # may create cohorts (cohort mode; migration c001)
    created_at: datetime = Field(default_factory=utcnow)


class Cohort(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    join_code: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow)


class Membership(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("user_id", "cohort_id"),)
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    cohort_id: int = Field(foreign_key="cohort.id", index=True)
    role: str = Field(default=Role.STUDENT.value, sa_type=String(20))   # a Role value
    created_at: datetime = Field(default_factory=utcnow)


class ApiToken(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    name: str = Field(max_length=200)
    token_hash: str = Field(max_length=128, unique=True)
    created_at: datetime = Field(default_factory=utcnow)
    last_used_at: datetime | None = None


class Exercise(SQLModel, table=True):
    """A copy of the catalog's metadata, synced on start, so queries can join and filter."""
    slug: str = Field(primary_key=True, max_length=100)
    title: str = Field(max_length=300)
    track: str = Field(max_length=40, index=True)
    difficulty: str = Field(max_length=20)
    kind: str = Field(max_length=20)
    synced_at: datetime = Field(default_factory=utcnow)


class Draft(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("user_id", "slug"),)
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    slug: str = Field(foreign_key="exercise.slug", max_length=100)
    code: str = Field(sa_column=Column(Text, nullable=False))
    hints_shown: int = 0
    updated_at: datetime = Field(default_factory=utcnow)


class Submission(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    slug: str = Field(foreign_key="exercise.slug", max_length=100, index=True)
    kind: str = Field(sa_type=String(10))                     # a SubmissionKind value
    source: str = Field(default="web", max_length=20)      # web | api | cli
    code: str = Field(sa_column=Column(Text, nullable=False))
    device: str = Field(default="cpu", max_length=10)       # the device it must be graded on
    idempotency_key: str | None = Field(default=None, max_length=100, unique=True)
    # the queue
    state: str = Field(default=JobState.QUEUED.value, sa_type=String(10), index=True)  # a JobState value
    worker: str | None = Field(default=None, max_length=200)
    attempt: int = 0
    lease_expires_at: datetime | None = None
    # the result
    status: str | None = Field(default=None, max_length=30)  # verdict.Status value once done
    score: float | None = None
    passed: bool = False
    cases_json: str | None = Field(default=None, sa_column=Column(Text))    # live per-case progress
    verdict_json: str | None = Field(default=None, sa_column=Column(Text))  # the full Verdict
    retry_of: int | None = Field(default=None, foreign_key="submission.id")
    # a scratch job's snippet (kind "scratch"; its result, a ScratchResult, is in verdict_json):
    # shown to its owner only (migration c003)
    snippet: str | None = Field(default=None, sa_column=Column(Text))
    # the performance stage (issue 19; exercises with ``perf = true``): the submission's median time
    # over the reference's on the same inputs, set when the stage ran and the timing was not flagged;
    # the per-exercise leaderboard ranks by it per device kind (migration c004)
    perf_ratio: float | None = None
    # the grading's secret (``judge.grade``'s ``salt``), drawn by the worker when it claims the job
    # and stored before grading, so ``inferprep admin replay`` can re-run the same hidden cases.
    # Server-side only: no page, API schema, verdict or export shows it (migration c002).
    salt: int | None = Field(default=None, sa_type=BigInteger)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    started_at: datetime | None = None
    finished_at: datetime | None = None


GRADED = Submission.kind != SubmissionKind.SCRATCH.value
"""The rows that are gradings (run or submit): the filter of every listing, progress count and
instructor's view. Scratch runs are jobs of the queue and nothing else."""
