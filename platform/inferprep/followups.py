"""Follow-up questions: what an interviewer asks once the code works (``exercises/<slug>/followups.toml``).

Each question has a machine-checkable answer of one of four types:

- ``single``: ``choices`` (2..8 strings), ``answer`` the 0-based index of the right one;
- ``multiple``: ``choices``, ``answer`` the sorted list of the right indices (at least one);
- ``number``: ``answer`` a float, ``unit`` (e.g. "ms", "GB/s", "tokens"), ``tolerance`` (relative,
  0 < tol <= 0.5) and ``reference_expr``: a Python expression evaluated with the exercise's
  reference module's names in scope, which ``check-exercise`` evaluates and compares with
  ``answer`` (every numeric answer is computed by the reference);
- ``order``: ``items`` (2..8 strings, shown shuffled), ``answer`` the indices of ``items`` in the
  right order (a permutation).

Every question has ``explanation`` (markdown, shown after answering) and ``sources`` (at least one
public source: a URL, or a paper with its section). Questions appear after the user's code passes
(practice mode, or within a mock interview); the first answer to a question counts (one
``FollowupAnswer`` row per user, exercise, question and context).

Errors: ``MalformedFollowups`` (a file that breaks this schema; the message names the file, the
question and the fix); ``services.BadRequest`` for an answer of the wrong shape.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

FILE_NAME = "followups.toml"
ID_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


class MalformedFollowups(ValueError):
    pass


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=ID_PATTERN, max_length=100)
    prompt: str = Field(min_length=10)
    explanation: str = Field(min_length=10)
    sources: list[str] = Field(min_length=1)


class SingleChoice(_Question):
    type: Literal["single"]
    choices: list[str] = Field(min_length=2, max_length=8)
    answer: int

    @model_validator(mode="after")
    def _answer_in_range(self):
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index of choices (0..{len(self.choices) - 1})")
        return self


class MultipleChoice(_Question):
    type: Literal["multiple"]
    choices: list[str] = Field(min_length=2, max_length=8)
    answer: list[int] = Field(min_length=1)

    @model_validator(mode="after")
    def _answer_indices(self):
        if sorted(set(self.answer)) != self.answer or not all(0 <= i < len(self.choices) for i in self.answer):
            raise ValueError(f"answer {self.answer} must be sorted distinct indices of choices (0..{len(self.choices) - 1})")
        return self


class NumberAnswer(_Question):
    type: Literal["number"]
    answer: float
    unit: str = Field(min_length=1, max_length=40)
    tolerance: float = Field(gt=0, le=0.5, description="relative: |given - answer| <= tolerance * |answer|")
    reference_expr: str = Field(min_length=1, description=(
        "a Python expression over the reference module's names whose value is the answer"))

    @model_validator(mode="after")
    def _finite(self):
        if not math.isfinite(self.answer) or self.answer == 0:
            raise ValueError("answer must be finite and non-zero (the tolerance is relative)")
        return self


class Ordering(_Question):
    type: Literal["order"]
    items: list[str] = Field(min_length=2, max_length=8)
    answer: list[int]

    @model_validator(mode="after")
    def _permutation(self):
        if sorted(self.answer) != list(range(len(self.items))):
            raise ValueError(f"answer {self.answer} must be a permutation of 0..{len(self.items) - 1}")
        return self


Question = Annotated[Union[SingleChoice, MultipleChoice, NumberAnswer, Ordering], Field(discriminator="type")]


class FollowupFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: list[Question] = Field(min_length=3, max_length=5)

    @model_validator(mode="after")
    def _unique_ids(self):
        ids = [q.id for q in self.question]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"question ids repeat: {sorted(dup)}")
        return self


def parse(path: Path) -> list[Question]:
    """The questions of ``path`` (a followups.toml), or raise ``MalformedFollowups`` naming the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return list(FollowupFile.model_validate(data).question)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MalformedFollowups(f"{path}: not valid TOML ({e})") from None
    except ValidationError as e:
        raise MalformedFollowups(f"{path}: {e}") from None


_cache: dict[Path, tuple[float, list[Question]]] = {}


def load(exercise_dir: Path) -> list[Question]:
    """The follow-up questions of the exercise in ``exercise_dir`` ([] when it ships none); cached
    by modification time."""
    path = exercise_dir / FILE_NAME
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        return []
    hit = _cache.get(path)
    if hit and hit[0] == mtime:
        return hit[1]
    qs = parse(path)
    _cache[path] = (mtime, qs)
    return qs


_ANSWER = TypeAdapter(Union[int, float, list[int], str])


def is_correct(q: Question, given) -> bool:
    """Whether ``given`` (JSON-decoded: an int index, a list of indices, a number, or a list for an
    order) answers ``q``. Raises ``ValueError`` (a sentence) for an answer of the wrong shape."""
    if isinstance(q, SingleChoice):
        if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given < len(q.choices):
            raise ValueError(f"pick one of the {len(q.choices)} choices")
        return given == q.answer
    if isinstance(q, MultipleChoice):
        if (not isinstance(given, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in given)
                or not all(0 <= i < len(q.choices) for i in given)):
            raise ValueError("pick the choices that apply (a list of their indices)")
        return sorted(set(given)) == q.answer
    if isinstance(q, NumberAnswer):
        if isinstance(given, str):
            try:
                given = float(given.strip())
            except ValueError:
                raise ValueError(f"give a number (in {q.unit})") from None
        if isinstance(given, bool) or not isinstance(given, (int, float)) or not math.isfinite(given):
            raise ValueError(f"give a finite number (in {q.unit})")
        return abs(given - q.answer) <= q.tolerance * abs(q.answer)
    if isinstance(q, Ordering):
        if not isinstance(given, list) or sorted(given) != list(range(len(q.items))):
            raise ValueError(f"give an order of all {len(q.items)} items")
        return list(given) == q.answer
    raise TypeError(f"unknown question type {type(q).__name__}")


def answer_json(given) -> str:
    return json.dumps(given)


# -- answers in the database ----------------------------------------------------------------------
PRACTICE = "practice"


def interview_context(session_id: int) -> str:
    """The ``FollowupAnswer.context`` of answers given within mock interview ``session_id``."""
    return f"interview:{session_id}"


class FollowupResult(BaseModel):
    """One question as a report shows it: answered or not, and whether the first answer was right."""
    question_id: str
    prompt: str
    answered: bool = False
    correct: bool = False
    answer_json: str | None = None


def results(s, user_id: int, slug: str, exercise_dir: Path, context: str) -> list[FollowupResult]:
    """Every follow-up of the exercise with the user's first answer in ``context`` (if any)."""
    from sqlmodel import select

    from .interview_models import FollowupAnswer
    qs = load(exercise_dir)
    if not qs:
        return []
    rows = {a.question_id: a for a in s.exec(select(FollowupAnswer).where(
        FollowupAnswer.user_id == user_id, FollowupAnswer.slug == slug, FollowupAnswer.context == context))}
    out = []
    for q in qs:
        a = rows.get(q.id)
        out.append(FollowupResult(question_id=q.id, prompt=q.prompt, answered=a is not None,
                                  correct=bool(a and a.correct), answer_json=a.answer_json if a else None))
    return out


def record_answer(s, user_id: int, slug: str, exercise_dir: Path, question_id: str, given, *, context: str):
    """Record the user's answer to ``question_id`` in ``context`` and return the ``FollowupAnswer``.
    The first answer counts: a second one returns the first row unchanged. The caller checks that
    the user may see the questions (their code passed). Raises ``services.NotFound`` (no such
    question) or ``services.BadRequest`` (an answer of the wrong shape)."""
    from sqlalchemy.exc import IntegrityError
    from sqlmodel import select

    from .interview_models import FollowupAnswer
    from .errors import BadRequest, NotFound
    q = next((q for q in load(exercise_dir) if q.id == question_id), None)
    if q is None:
        raise NotFound(f"{slug} has no follow-up question {question_id!r}")
    try:
        correct = is_correct(q, given)
    except ValueError as e:
        raise BadRequest(str(e)) from None

    def existing():
        return s.exec(select(FollowupAnswer).where(
            FollowupAnswer.user_id == user_id, FollowupAnswer.slug == slug,
            FollowupAnswer.question_id == question_id, FollowupAnswer.context == context)).first()

    old = existing()
    if old is not None:
        return old
    row = FollowupAnswer(user_id=user_id, slug=slug, question_id=question_id, context=context,
                         answer_json=answer_json(given), correct=correct)
    s.add(row)
    try:
        s.commit()
    except IntegrityError:   # the same answer from two requests at once: the first one stands
        s.rollback()
        return existing()
    s.refresh(row)
    return row
