"""Follow-up questions: what an interviewer asks once the code works (``exercises/<slug>/followups.toml``).

Each question has a machine-checkable answer of one of four types:

- ``single``: ``choices`` (2..8 strings), ``answer`` the 0-based index of the right one;
- ``multiple``: ``choices``, ``answer`` the sorted list of the right indices (at least one);
- ``number``: ``answer`` a float, ``unit`` (e.g. "ms", "GB/s", "tokens"), ``tolerance`` (relative,
  0 < tol <= 0.5) and ``reference_expr``: a Python expression evaluated with the exercise's
  reference module's names in scope, which ``check-exercise`` evaluates and compares with
  ``answer`` (every numeric answer is computed by the reference);
- ``order``: ``items`` (3..8 strings, shown shuffled, never in the right order: with 2 that
  would give the answer away), ``answer`` the indices of ``items`` in the
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

    @model_validator(mode="after")
    def _sources_named(self):
        blank = [i for i, src in enumerate(self.sources) if len(src.strip()) < 10]
        if blank:
            raise ValueError(f"sources {blank} are blank or too short: give a URL or a paper with its section")
        return self


def _distinct(what: str, xs: list[str]) -> None:
    seen = [x.strip().lower() for x in xs]
    dup = sorted({x for x in seen if seen.count(x) > 1})
    if dup:
        raise ValueError(f"{what} repeat: {dup}")
    if any(not x for x in seen):
        raise ValueError(f"{what} may not be blank")


class SingleChoice(_Question):
    type: Literal["single"]
    choices: list[str] = Field(min_length=2, max_length=8)
    answer: int

    @model_validator(mode="after")
    def _answer_in_range(self):
        _distinct("choices", self.choices)
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index of choices (0..{len(self.choices) - 1})")
        return self


class MultipleChoice(_Question):
    type: Literal["multiple"]
    choices: list[str] = Field(min_length=2, max_length=8)
    answer: list[int] = Field(min_length=1)

    @model_validator(mode="after")
    def _answer_indices(self):
        _distinct("choices", self.choices)
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
    # at least 3: the shown order is never the answer, so with 2 items it would be its reverse
    items: list[str] = Field(min_length=3, max_length=8)
    answer: list[int]

    @model_validator(mode="after")
    def _permutation(self):
        _distinct("items", self.items)
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
    """The questions of ``path`` (a followups.toml), or raise ``MalformedFollowups`` naming the file
    and, for an error inside a question, that question (its id, or its position when it has none)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MalformedFollowups(f"{path}: not valid TOML ({e})") from None
    except OSError as e:
        raise MalformedFollowups(f"{path}: cannot read ({e.strerror})") from None
    try:
        return list(FollowupFile.model_validate(data).question)
    except ValidationError as e:
        raise MalformedFollowups(f"{path}: " + "; ".join(_describe(err, data) for err in e.errors())) from None


def _describe(err: dict, data: dict) -> str:
    """One pydantic error as a sentence naming the question ([[question]] number n and its id)."""
    loc = list(err.get("loc", ()))
    where = "the file"
    if len(loc) >= 2 and loc[0] == "question" and isinstance(loc[1], int):
        raw = data.get("question") if isinstance(data, dict) else None
        qid = raw[loc[1]].get("id") if isinstance(raw, list) and loc[1] < len(raw) and isinstance(raw[loc[1]], dict) else None
        where = f"question {loc[1] + 1}" + (f" ({qid!r})" if isinstance(qid, str) else "")
        loc = [x for x in loc[2:] if x not in ("single", "multiple", "number", "order")]
    field = ".".join(str(x) for x in loc)
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    return f"{where}: {field + ': ' if field else ''}{msg}"


def reference_namespace(reference_path: Path) -> dict:
    """The names of the exercise's reference module (imported from ``reference_path``, trusted
    code of the repository, never a submission's), plus ``math``, for ``reference_expr``."""
    import importlib.util
    import math as _math
    spec = importlib.util.spec_from_file_location(f"_inferprep_followups_ref_{reference_path.stem}", reference_path)
    if spec is None or spec.loader is None:
        raise MalformedFollowups(f"{reference_path}: cannot import the reference")
    import sys
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod    # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(spec.name, None)
    return {"math": _math, **vars(mod)}


def evaluate(q: "NumberAnswer", namespace: dict) -> float:
    """The value of ``q.reference_expr`` in ``namespace``; raises ``MalformedFollowups`` (naming the
    question) when it fails or is not a finite real number."""
    try:
        value = eval(compile(q.reference_expr, f"<reference_expr of {q.id}>", "eval"), dict(namespace))  # noqa: S307
    except Exception as e:   # any error of the expression is the file's fault
        raise MalformedFollowups(f"question {q.id!r}: reference_expr {q.reference_expr!r} failed: "
                                 f"{type(e).__name__}: {e}") from None
    if hasattr(value, "item"):      # a 0-d tensor or numpy scalar
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MalformedFollowups(f"question {q.id!r}: reference_expr {q.reference_expr!r} gave {value!r}, "
                                 "not a finite number")
    return float(value)


def validate(exercise_dir: Path, reference_path: Path) -> list[str]:
    """Every problem of ``exercise_dir``'s followups.toml (``[]``: none, or no file), as sentences
    naming the file and the question: the schema (3 to 5 questions, distinct choices, explanations
    and sources present), and each number question's ``answer`` against its ``reference_expr``
    evaluated over the reference module (within the question's tolerance)."""
    path = exercise_dir / FILE_NAME
    if not path.is_file():
        return []
    try:
        qs = parse(path)
    except MalformedFollowups as e:
        return [str(e)]
    numbers = [q for q in qs if isinstance(q, NumberAnswer)]
    if not numbers:
        return []
    try:
        ns = reference_namespace(reference_path)
    except Exception as e:   # a missing or broken reference: report, never crash the check
        return [f"{path}: cannot evaluate reference_expr, the reference {reference_path} does not import "
                f"({type(e).__name__}: {e})"]
    problems = []
    for q in numbers:
        try:
            value = evaluate(q, ns)
        except MalformedFollowups as e:
            problems.append(f"{path}: {e}")
            continue
        if abs(value - q.answer) > q.tolerance * abs(q.answer):
            problems.append(f"{path}: question {q.id!r}: answer {q.answer:g} {q.unit} but reference_expr "
                            f"{q.reference_expr!r} computes {value:.6g} (tolerance {q.tolerance:g}, relative)")
    return problems


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


def revealed(context: str, answered: int, total: int) -> bool:
    """Whether verdicts, right answers and explanations show now. In practice mode each shows as soon
    as its question is answered; within a mock interview they wait until every follow-up of the
    exercise is answered, since an explanation can hint at the next question's answer and the
    interview's score counts each first answer."""
    return context == PRACTICE or answered >= total


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


# -- who may answer, in which context ---------------------------------------------------------------
def passed_since(s, user_id: int, slug: str, since=None) -> bool:
    """Whether the user has a passed hidden-case submission of ``slug`` (made at or after ``since``)."""
    from sqlmodel import select

    from .models import Submission, SubmissionKind
    q = select(Submission.id).where(Submission.user_id == user_id, Submission.slug == slug,
                                    Submission.kind == SubmissionKind.SUBMIT.value,
                                    Submission.passed == True)  # noqa: E712
    if since is not None:
        q = q.where(Submission.created_at >= since)
    return s.exec(q).first() is not None


def answer_rows(s, user_id: int, slug: str, context: str) -> dict:
    """question id -> the user's (first) ``FollowupAnswer`` in ``context``: one query for a panel."""
    from sqlmodel import select

    from .interview_models import FollowupAnswer
    return {a.question_id: a for a in s.exec(select(FollowupAnswer).where(
        FollowupAnswer.user_id == user_id, FollowupAnswer.slug == slug, FollowupAnswer.context == context))}


def answer_row(s, user_id: int, slug: str, question_id: str, context: str):
    """The user's (first) ``FollowupAnswer`` to ``question_id`` in ``context``, or None."""
    from sqlmodel import select

    from .interview_models import FollowupAnswer
    return s.exec(select(FollowupAnswer).where(
        FollowupAnswer.user_id == user_id, FollowupAnswer.slug == slug,
        FollowupAnswer.question_id == question_id, FollowupAnswer.context == context)).first()


# -- showing an order question, and reading typed answers -------------------------------------------
def display_order(user_id: int, slug: str, q: Ordering) -> list[int]:
    """The order ``q.items`` are shown in to this user: a permutation of item indices, fixed per
    (user, exercise, question) so a reload shows the same list, and never the right answer."""
    import random
    shown = list(range(len(q.items)))
    random.Random(f"{user_id}:{slug}:{q.id}").shuffle(shown)
    if shown == q.answer:            # never show the solution as the starting order
        shown = shown[1:] + shown[:1]
    return shown


def _indices(text: str, what: str) -> list[int]:
    parts = [p for p in text.replace(" ", ",").split(",") if p.strip()]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"give {what} as whole numbers separated by commas, e.g. \"2,0,1\"") from None


def parse_text(q: Question, text: str, *, shown: list[int] | None = None, base: int = 0):
    """A typed answer to ``q`` as ``is_correct`` takes it. ``text``: a choice's index (single), indices
    separated by commas (multiple), a number (number; a trailing unit is allowed), or the shown
    items' labels in the chosen order (order; ``shown`` is ``display_order``). Labels and indices
    count from ``base`` (0 on the command line, 1 in the browser's text field). Raises ValueError
    (a sentence) for text that is none of these."""
    text = (text or "").strip()
    if not text:
        raise ValueError("give an answer")
    if isinstance(q, SingleChoice):
        idx = _indices(text, "the choice")
        if len(idx) != 1:
            raise ValueError("pick exactly one choice")
        return idx[0] - base
    if isinstance(q, MultipleChoice):
        return sorted({i - base for i in _indices(text, "the choices")})
    if isinstance(q, NumberAnswer):
        if text.endswith(q.unit):
            text = text[: -len(q.unit)].strip()
        try:
            return float(text.replace("_", ""))
        except ValueError:
            raise ValueError(f"give a number (in {q.unit})") from None
    if isinstance(q, Ordering):
        labels = [i - base for i in _indices(text, "the order")]
        n = len(q.items)
        if sorted(labels) != list(range(n)):
            raise ValueError(f"give each of the {n} labels ({base}..{n - 1 + base}) once, in your order")
        shown = shown if shown is not None else list(range(n))
        return [shown[i] for i in labels]
    raise TypeError(f"unknown question type {type(q).__name__}")


def describe_answer(q: Question, given) -> str:
    """A recorded answer (``answer_json`` decoded) in words: the choices' texts, the number with its
    unit, or the items in the given order."""
    try:
        if isinstance(q, SingleChoice):
            return q.choices[given]
        if isinstance(q, MultipleChoice):
            return "; ".join(q.choices[i] for i in given) or "(none)"
        if isinstance(q, NumberAnswer):
            return f"{float(given):g} {q.unit}"
        if isinstance(q, Ordering):
            return " → ".join(q.items[i] for i in given)
    except (IndexError, TypeError, ValueError):
        pass
    return json.dumps(given)


def right_answer(q: Question) -> str:
    """The right answer in words (shown with the explanation once the user answered)."""
    if isinstance(q, NumberAnswer):
        return f"{q.answer:g} {q.unit} (within {q.tolerance:.0%})"
    return describe_answer(q, q.answer)
