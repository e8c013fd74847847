"""Response and request models of the JSON API (never the grader, reference or editorial)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ... import catalog, services
from ...models import Submission
from ...verdict import CaseResult, Verdict


class ExercisePublic(BaseModel):
    slug: str
    title: str
    track: str
    difficulty: str
    kind: str
    collections: list[str]
    tags: list[str]
    summary: str
    status: str = Field(description="solved | attempted | untouched")

    @classmethod
    def of(cls, row: services.ExerciseRow) -> "ExercisePublic":
        m = row.ex.meta
        return cls(slug=m.slug, title=m.title, track=m.track.value, difficulty=m.difficulty.value,
                   kind=m.kind.value, collections=[c.value for c in m.collections], tags=m.tags,
                   summary=m.summary, status=row.status)


class ExerciseDetail(ExercisePublic):
    entrypoints: list[str]
    devices: list[str]
    files: dict[str, str] = Field(description="statement.md, stub.py, examples.py")
    code: str = Field(description="your last draft, or the stub")
    hints: list[str] = Field(description="the hints revealed so far")
    hints_total: int
    unlocked: bool = Field(description="the editorial and reference are readable (after a pass)")


class DraftIn(BaseModel):
    code: str


class SubmissionCreate(BaseModel):
    code: str
    kind: str = Field("submit", pattern="^(run|submit)$", description="run: public examples; submit: hidden cases")
    idempotency_key: str | None = Field(None, max_length=100)


class SubmissionPublic(BaseModel):
    id: int
    slug: str
    kind: str
    source: str
    state: str = Field(description="queued | running | done | cancelled (no verdict; counts as no attempt)")
    status: str | None = Field(description="the verdict's status once done")
    score: float | None
    passed: bool
    device: str
    attempt: int
    queue_position: int
    created_at: datetime
    started_at: datetime | None = Field(None, description="when a worker began grading it (UTC)")
    finished_at: datetime | None
    cases: list[CaseResult] = Field(description="finished cases (live while running); a public example's "
                                    "detail holds its input, call, expected and got")
    verdict: Verdict | None = Field(description="the whole verdict once done, with the counterexample after a "
                                                "failing hidden case (withheld: found, not shown)")
    code: str | None = None

    @classmethod
    def of(cls, sub: Submission, *, position: int = 0, with_code: bool = True) -> "SubmissionPublic":
        v = services.verdict_of(sub)
        return cls(id=sub.id, slug=sub.slug, kind=sub.kind, source=sub.source, state=sub.state, status=sub.status,
                   score=sub.score, passed=sub.passed, device=sub.device, attempt=sub.attempt,
                   queue_position=position, created_at=sub.created_at, started_at=sub.started_at,
                   finished_at=sub.finished_at,
                   cases=v.cases if v else services.live_cases(sub), verdict=v,
                   code=sub.code if with_code else None)


class SolutionPublic(BaseModel):
    editorial: str
    reference: str


class TallyPublic(BaseModel):
    key: str
    title: str
    solved: int
    attempted: int
    untouched: int

    @classmethod
    def of(cls, t: services.Tally) -> "TallyPublic":
        return cls(key=t.key, title=t.title, solved=t.counts["solved"], attempted=t.counts["attempted"],
                   untouched=t.counts["untouched"])


class ProgressPublic(BaseModel):
    overall: TallyPublic
    by_track: list[TallyPublic]
    by_collection: list[TallyPublic]
    exercises: dict[str, str] = Field(description="slug -> solved | attempted | untouched")
    timeline: list[tuple[str, int, int]] = Field(description="(day, gradings, cumulative solved)")


def detail(s, user_id: int, ex: catalog.Exercise) -> ExerciseDetail:
    row = services.ExerciseRow(ex, services.status_map(s, user_id).get(ex.slug, "untouched"))
    shown = services.hints_shown(s, user_id, ex.slug)
    return ExerciseDetail(**ExercisePublic.of(row).model_dump(), entrypoints=ex.meta.entrypoints,
                          devices=ex.meta.devices, files=ex.public_files, code=services.current_code(s, user_id, ex),
                          hints=ex.meta.hints[:shown], hints_total=len(ex.meta.hints),
                          unlocked=services.is_solved(s, user_id, ex.slug))
