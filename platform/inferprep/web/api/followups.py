"""/api/exercises/{slug}/followups: the follow-up questions of an exercise (issue 18), without their
answers, for a user whose code passed the hidden cases; and answering one (the first answer counts).

An order question lists its items in the order shown to this user (``followups.display_order``);
its answer is that list's positions (0-based) in the chosen order. Within an active mock interview
that contains the exercise the answers go to the session's context."""

from __future__ import annotations

import json
from typing import Literal, Union

from fastapi import APIRouter
from pydantic import BaseModel, Field

from ... import followups, interview, services
from ..deps import CurrentUser, ExerciseDep, SessionDep

router = APIRouter(prefix="/exercises", tags=["follow-ups"])


class FollowupQuestionPublic(BaseModel):
    id: str
    type: Literal["single", "multiple", "number", "order"]
    prompt: str = Field(description="markdown")
    choices: list[str] | None = Field(None, description="single/multiple: answer with their 0-based indices")
    items: list[str] | None = Field(None, description="order: the items as shown; answer with these positions in your order")
    unit: str | None = Field(None, description="number: the answer's unit")
    tolerance: float | None = Field(None, description="number: relative tolerance")
    answered: bool = False
    correct: bool | None = Field(None, description=(
        "once answered: whether your first answer was right (within a mock interview, once every question is answered)"))
    your_answer: str | None = Field(None, description="once answered: your first answer, in words")
    right_answer: str | None = Field(None, description="once answered")
    explanation: str | None = Field(None, description="once answered (markdown)")
    sources: list[str] | None = Field(None, description="once answered")


class FollowupsPublic(BaseModel):
    slug: str
    context: str = Field(description='"practice", or "interview:<session id>" within a mock interview')
    first_answer_counts: bool = True
    questions: list[FollowupQuestionPublic]


class FollowupAnswerIn(BaseModel):
    answer: Union[int, float, list[int]] = Field(description=(
        "single: an index; multiple: a list of indices; number: a number; order: the shown positions in order"))


class FollowupResultPublic(FollowupQuestionPublic):
    recorded: bool = Field(description="false when you had answered before: the first answer stands")


def _public(s, user: int, slug: str, q, context: str, reveal: bool = True) -> FollowupQuestionPublic:
    out = FollowupQuestionPublic(id=q.id, type=q.type, prompt=q.prompt)
    if isinstance(q, (followups.SingleChoice, followups.MultipleChoice)):
        out.choices = list(q.choices)
    elif isinstance(q, followups.NumberAnswer):
        out.unit, out.tolerance = q.unit, q.tolerance
    elif isinstance(q, followups.Ordering):
        out.items = [q.items[i] for i in followups.display_order(user, slug, q)]
    row = followups.answer_row(s, user, slug, q.id, context)
    if row is not None:
        out.answered = True
        out.your_answer = followups.describe_answer(q, json.loads(row.answer_json))
        if reveal:   # within a mock interview: once every question is answered (followups.revealed)
            out.correct = bool(row.correct)
            out.right_answer, out.explanation, out.sources = followups.right_answer(q), q.explanation, list(q.sources)
    return out


def _reveal(s, user: int, slug: str, qs, context: str) -> bool:
    return followups.revealed(context, len(followups.answer_rows(s, user, slug, context)), len(qs))


@router.get("/{slug}/followups", response_model=FollowupsPublic,
            responses={403: {"description": "your code has not passed the hidden cases yet"}})
def list_followups(ex: ExerciseDep, s: SessionDep, user: CurrentUser) -> FollowupsPublic:
    """The follow-up questions (never their answers before you answer); 403 before a pass, 404 for an
    exercise without follow-ups."""
    qs = followups.load(ex.folder)
    if not qs:
        raise services.NotFound(f"{ex.slug} has no follow-up questions")
    context = interview.followup_context(s, user, ex.slug)
    reveal = _reveal(s, user, ex.slug, qs, context)
    return FollowupsPublic(slug=ex.slug, context=context,
                           questions=[_public(s, user, ex.slug, q, context, reveal) for q in qs])


@router.post("/{slug}/followups/{question_id}", response_model=FollowupResultPublic,
             responses={403: {"description": "not passed yet"}, 404: {"description": "no such question"},
                        422: {"description": "an answer of the wrong shape"}})
def answer_followup(question_id: str, body: FollowupAnswerIn, ex: ExerciseDep, s: SessionDep,
                    user: CurrentUser) -> FollowupResultPublic:
    """Answer one question: the verdict, the explanation and the sources. The first answer counts."""
    q = next((q for q in followups.load(ex.folder) if q.id == question_id), None)
    if q is None:
        raise services.NotFound(f"{ex.slug} has no follow-up question {question_id!r}")
    context = interview.followup_context(s, user, ex.slug)
    recorded = followups.answer_row(s, user, ex.slug, q.id, context) is None
    if recorded:
        given = body.answer
        if isinstance(q, followups.Ordering):
            shown = followups.display_order(user, ex.slug, q)
            if not isinstance(given, list) or sorted(given) != list(range(len(shown))):
                raise services.BadRequest(f"give each of the {len(shown)} shown positions (0..{len(shown) - 1}) once, in your order")
            given = [shown[i] for i in given]
        followups.record_answer(s, user, ex.slug, ex.folder, q.id, given, context=context)
    reveal = _reveal(s, user, ex.slug, followups.load(ex.folder), context)
    return FollowupResultPublic(**_public(s, user, ex.slug, q, context, reveal).model_dump(), recorded=recorded)
