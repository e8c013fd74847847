"""Tables of mock interviews, follow-up answers, opt-in leaderboards (issue 18) and the performance
stage's figure on a submission (issue 19); migration c004.

``InterviewSession``: one timed mock interview of one user. Its exercises were drawn by a rule from
a scope (a collection such as "Jane Street", or a track) with a recorded ``seed``, so the draw can be
replayed; ``ends_at`` is fixed at the start, so a reload or a server restart loses nothing. Attempts
are not copied here: they are the user's graded submissions of the session's exercises made between
``started_at`` and the session's end (``finished_at`` or ``ends_at``, whichever is first).
``InterviewItem``: one drawn exercise of a session, with the hints the user revealed in it.
``FollowupAnswer``: a user's answer to one follow-up question (``followups.toml``) of an exercise,
in practice mode (``context`` "practice") or in a session (``context`` "interview:<id>").
``CohortInterview``: a mock interview an instructor scheduled for a cohort (a window; one drawn set
for everyone or a draw per student). ``LeaderboardEntry``: a user's opt-in to one leaderboard
(``board``: "interview:<cohort interview id>" or "perf:<slug>:<device kind>"), with the pseudonym
shown there; leaderboards are off by default and list only those who opted in.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import BigInteger, Column, String, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from .models import utcnow


class ScopeKind(str, Enum):
    COLLECTION = "collection"   # scope is a catalog.Collection value ("Jane Street", "Google DeepMind")
    TRACK = "track"             # scope is a catalog.Track value ("serving", ...)


class DrawMode(str, Enum):
    SAME = "same"                # one drawn set for every student of the cohort
    PER_STUDENT = "per_student"  # a draw per student, seeded from the schedule's seed and the user id


class CohortInterview(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    cohort_id: int = Field(foreign_key="cohort.id", index=True)
    title: str = Field(max_length=200)
    scope_kind: str = Field(sa_type=String(20))        # a ScopeKind value
    scope: str = Field(max_length=100)
    minutes: int
    opens_at: datetime
    closes_at: datetime
    draw: str = Field(default=DrawMode.SAME.value, sa_type=String(20))   # a DrawMode value
    seed: int = Field(sa_type=BigInteger)
    review_after: bool = True         # students may read their report and the editorials after closes_at
    leaderboard: bool = False         # the instructor enabled the pseudonymous leaderboard
    created_at: datetime = Field(default_factory=utcnow)


class InterviewSession(SQLModel, table=True):
    # a student takes a scheduled cohort interview once (practice sessions have NULL here: no limit)
    __table_args__ = (UniqueConstraint("user_id", "cohort_interview_id"),)
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    cohort_interview_id: int | None = Field(default=None, foreign_key="cohortinterview.id", index=True)
    scope_kind: str = Field(sa_type=String(20))        # a ScopeKind value
    scope: str = Field(max_length=100)
    minutes: int                                        # 30, 45, 60 or 90
    seed: int = Field(sa_type=BigInteger)               # the draw's seed: same seed, same history -> same draw
    replay: bool = False                                # the user chose the seed (a replayed draw): marked as such
    hint_penalty: float = 0.1                           # the fraction of an exercise's points each hint costs
    started_at: datetime = Field(default_factory=utcnow)
    ends_at: datetime                                   # started_at + minutes, fixed at the start
    finished_at: datetime | None = None                 # when the user finished or the time ran out (set lazily)
    score: float | None = None                          # set at the end (0..100)
    report_json: str | None = Field(default=None, sa_column=Column(Text))   # the frozen report at the end
    source: str = Field(default="web", max_length=20)   # web | cli


class InterviewItem(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("session_id", "position"),)
    id: int | None = Field(default=None, primary_key=True)
    session_id: int = Field(foreign_key="interviewsession.id", index=True)
    position: int                                       # 0, 1, 2: the order shown
    slug: str = Field(foreign_key="exercise.slug", max_length=100)
    role: str = Field(max_length=20)                    # "implement" or "calculate": the slot of the rule it fills
    points: float = 1.0
    hints_used: int = 0


class FollowupAnswer(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("user_id", "slug", "question_id", "context"),)
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    slug: str = Field(foreign_key="exercise.slug", max_length=100)
    question_id: str = Field(max_length=100)
    context: str = Field(default="practice", max_length=40)   # "practice" or "interview:<session id>"
    answer_json: str = Field(sa_column=Column(Text, nullable=False))
    correct: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class LeaderboardEntry(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("user_id", "board"),)
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    board: str = Field(max_length=200, index=True)      # "interview:<cohort interview id>" or "perf:<slug>:<device kind>"
    alias: str = Field(max_length=64)                   # the pseudonym shown on the board
    created_at: datetime = Field(default_factory=utcnow)
