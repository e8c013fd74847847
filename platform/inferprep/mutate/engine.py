"""Grade every mutant of an exercise's reference and classify it.

Each mutant's text is graded as a submission through ``runner.judge.grade`` in this process, on
the default warm-pool launcher (a fork per mutant, never an ``import torch`` per mutant), fail-fast
on the first failing core case, under one salt for the whole run (reproducible). Its CPU-time
limit is ``MUTANT_TIME_FACTOR`` times the reference's own grading time (at least
``MIN_MUTANT_TIME_S``, at most the exercise's limit).

Results, per mutant:

- ``killed``: a core case failed (wrong answer, runtime error, memory or output limit, ...);
- ``killed by input checks``: every core case passed and an input check failed (the verdict
  model's "Passed; input checks 3/4": detected, and shown apart);
- ``timed out``: the time limit stopped it (detected, shown apart);
- ``survived``: the grader passed it;
- ``equivalent``: listed in ``equivalent.toml`` and confirmed by the differential check;
- ``grader error``: the grading ended in an internal error (the grader crashed on the mutant's
  output: a grader bug; counted against the score, since a student would not get a verdict);
- ``invalid``: the mutant does not compile (left out of everything).

Score = detected (killed + killed by input checks + timed out) / non-equivalent valid mutants.
The differential check of a listed equivalent mutant grades it under more salts (other hidden data
where a grader draws from its salt; ``differential_count``) and requires every case, input checks
included, to pass each time. Under the extra salts it is graded on the cases that can notice it
(its own cases, ``selection``; left out by exclusion, so a case named only under another salt
runs). Where all of its own cases end before the grader first reads its salt
(``CaseSelection.salted``, in the reference's grading and in the mutant's own), they form a prefix
of the grading with the same data, checks and leftover state under every salt, so the extra salts
would repeat the run's salt: such a mutant is confirmed under the run's salt alone (counted in
``ExerciseRun.salt_blind_equivalents``). One case that depends on the salt and the mutant is graded
on all of its own cases, since a salt-blind case can leave state (the submission's module state, the
grader's) that a salted case then meets. Under the run's salt it is always graded whole.

Unless ``exact``, a mutant is first graded on the cases that can notice it (``selection``); one
that passes them is graded again on every case before it counts as a survivor.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

from .. import paths
from ..catalog import Exercise
from ..runner import judge
from ..verdict import INPUT_CHECKS, Status, Verdict
from . import equivalent
from ..grading import CaseSelection
from .mutants import Mutant, generate
from .selection import Planner, Reach

MUTATE_SALT = 0x5EED_CAFE_F00D
"""The salt of every grading in a run unless told otherwise (``check-exercise``'s own)."""
MUTANT_TIME_FACTOR = 2
"""A mutant's CPU-time limit, as a multiple of the reference's grading time (seconds). That time is
wall-clock and includes the grader's own work in this process, so the child's CPU budget is
already generous; each timed-out mutant costs the whole limit, so keep the factor small."""
MIN_MUTANT_TIME_S = 1.0
"""The least CPU-time limit of a mutant, seconds (the harness's limit has 1 s steps)."""
DIFFERENTIAL_SALTS = 16
"""The most extra salts a listed equivalent mutant must pass under."""
MIN_DIFFERENTIAL_SALTS = 2
"""The fewest: an exercise whose reference grades slowly gets fewer (``differential_count``). Only
a reference that grades in over 4 s gets fewer than 3 (speculative-verifier's, about 9 s a grading,
whose every grading already asks ``is_lossless`` about 25 random verifiers); with 4, its 40-odd
listed equivalents of the statistical test alone cost about 20 minutes of a full run."""
DIFFERENTIAL_BUDGET_S = 8.0
"""About how many seconds of the reference's grading time the extra salts of one listed mutant
may cost (each extra grading costs about the reference's time)."""
SCORE_GOAL = 0.95
"""The share of non-equivalent mutants every grader must detect (issue 20)."""


class Result(str, Enum):
    KILLED = "killed"
    INPUT_CHECKS = "killed by input checks"
    TIMED_OUT = "timed out"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"
    GRADER_ERROR = "grader error"
    INVALID = "invalid"


DETECTED = (Result.KILLED, Result.INPUT_CHECKS, Result.TIMED_OUT)

PHASES = ("reference", "trust", "mutants", "regrade", "differential")
"""Where a run's grading time goes: the reference's own gradings, gradings of the reference on a
case selection (``trust``), each mutant's first grading, the whole grading of a mutant that passed
its selection, and the extra salts of listed equivalents."""


@dataclass
class Outcome:
    """One mutant's result; ``detail`` names the case that killed it or what went wrong."""

    mutant: Mutant
    result: Result
    seconds: float = 0.0
    detail: str = ""


def count(outcomes: list[Outcome], *results: Result) -> int:
    return sum(o.result in results for o in outcomes)


def non_equivalent(outcomes: list[Outcome]) -> int:
    """Valid mutants not confirmed equivalent: the score's denominator."""
    return len(outcomes) - count(outcomes, Result.EQUIVALENT, Result.INVALID)


def score(outcomes: list[Outcome]) -> float | None:
    """Detected / non-equivalent valid mutants, or None when there are none."""
    n = non_equivalent(outcomes)
    return count(outcomes, *DETECTED) / n if n else None


@dataclass
class ExerciseRun:
    """Every mutant graded for one exercise, and the errors of its ``equivalent.toml``."""

    slug: str
    reference: str                       # the reference's text the mutants were made from
    reference_path: str                  # as shown in diffs, e.g. reference/rope.py
    reference_seconds: float = 0.0
    time_limit_s: float = 0.0
    generated: int = 0                   # mutants before --max-mutants sampling
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    differential_salts: int = 0          # extra salts each listed equivalent was checked under
    selected: int = 0                    # mutants graded on their own cases first
    regraded: int = 0                    # of those, graded again whole (they passed their cases)
    distrusted: int = 0                  # case selections the reference failed (graded whole)
    cases: int = 0                       # hidden cases of the grader
    salt_blind_cases: int = 0            # of those, cases that ran before the grader read its salt
    salt_blind_equivalents: int = 0      # listed equivalents noticed only by salt-blind cases (no extra salts)
    phase_seconds: dict[str, float] = field(default_factory=dict)  # grading time by PHASES (summed over jobs)

    def count(self, *results: Result) -> int:
        return count(self.outcomes, *results)

    @property
    def non_equivalent(self) -> int:
        return non_equivalent(self.outcomes)

    @property
    def score(self) -> float | None:
        """Detected / non-equivalent valid mutants, or None when there are none."""
        return score(self.outcomes)

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.result is Result.SURVIVED]

    @property
    def ok(self) -> bool:
        """No errors and the score at or above ``SCORE_GOAL``."""
        return not self.errors and (self.score is None or self.score >= SCORE_GOAL)

    def summary(self) -> str:
        s = self.score
        head = "no mutants" if s is None else f"{s:.1%} of {self.non_equivalent} non-equivalent mutants detected"
        parts = [f"{self.count(r)} {r.value}" for r in Result if self.count(r)]
        return head + (f" ({', '.join(parts)})" if parts else "")


def classify(v: Verdict) -> tuple[Result, str]:
    """A mutant's result from its fail-fast verdict, and the detail that explains it."""
    first = next((c for c in v.cases if not c.passed), None)
    detail = f"{first.name}: {first.message.splitlines()[0][:160] if first.message else first.status.value}" \
        if first is not None else (v.message.splitlines()[0][:160] if v.message else "")
    if v.status == Status.INTERNAL_ERROR:
        return Result.GRADER_ERROR, detail or "internal error"
    if v.status == Status.TIME_LIMIT:
        return Result.TIMED_OUT, detail
    if not v.ok:
        return Result.KILLED, detail
    if any(not c.passed for c in v.cases if c.group == INPUT_CHECKS):
        return Result.INPUT_CHECKS, detail
    return Result.SURVIVED, ""


def sample(mutants: list[Mutant], limit: int | None) -> list[Mutant]:
    """At most ``limit`` mutants spread evenly over the list (deterministic); all when None."""
    if limit is None or len(mutants) <= limit:
        return list(mutants)
    return [mutants[i * len(mutants) // limit] for i in range(limit)]


def time_limit(ex: Exercise, reference_seconds: float) -> float:
    """A mutant's CPU-time limit in seconds (see ``MUTANT_TIME_FACTOR``)."""
    return min(ex.meta.limits.time_s, max(MIN_MUTANT_TIME_S, math.ceil(MUTANT_TIME_FACTOR * reference_seconds)))


def equivalent_path(ex: Exercise) -> Path:
    """``tests/wrong/<module>/equivalent.toml`` of the exercise."""
    return paths.wrong_dir() / ex.module / equivalent.FILE_NAME


def with_time_limit(ex: Exercise, time_s: float) -> Exercise:
    limits = ex.meta.limits.model_copy(update={"time_s": time_s})
    return dataclasses.replace(ex, meta=ex.meta.model_copy(update={"limits": limits}))


def differential_count(reference_seconds: float) -> int:
    """How many extra salts the differential check uses: ``DIFFERENTIAL_SALTS`` for a reference
    that grades in half a second, fewer for a slower one (``DIFFERENTIAL_BUDGET_S``), never fewer
    than ``MIN_DIFFERENTIAL_SALTS``. Every extra salt is a whole grading, input checks included."""
    fits = math.ceil(DIFFERENTIAL_BUDGET_S / max(reference_seconds, 1e-3))
    return max(MIN_DIFFERENTIAL_SALTS, min(DIFFERENTIAL_SALTS, fits))


def differential_salts(salt: int, n: int = DIFFERENTIAL_SALTS) -> list[int]:
    """``n`` salts other than ``salt``, derived from it (the same run checks the same hidden data)."""
    return [(salt * 6364136223846793005 + 1442695040888963407 * (i + 1)) % (1 << 63) for i in range(n)]


NO_EXTRA_SALTS = CaseSelection(only=frozenset())
"""``differential_scope``'s answer for a listed mutant whose extra salts would repeat the run's salt."""

CHECK_RULES = "salt-blind prefix; skip by exclusion"
"""What the differential check is, as far as the confirmed cache is concerned: a change here makes
every cached confirmation stale (part of ``ConfirmedEquivalents.key``)."""

CONFIRMED_FILE = "mutate-confirmed-equivalents.json"
"""The file of ``ConfirmedEquivalents`` in the data folder (``INFERPREP_DATA_DIR``)."""


class ConfirmedEquivalents:
    """The listed equivalents whose differential check already passed, so that a later run need not
    grade them under every extra salt again (the check costs up to ``DIFFERENTIAL_SALTS`` gradings
    each).

    An entry's key covers what the check depends on: the mutant's text, the grader's text, the
    run's salt (the extra salts derive from it) and the device; its value is how many extra salts
    passed. A change to either text makes a new key, and the check runs again. A cached mutant is
    still graded under the run's salt and must survive today's grader; only the extra salts are
    skipped, and only as many as were checked. Kept as a JSON object in ``path`` (the user data
    folder by default: ``inferprep mutate --no-cache`` skips it); a missing or unreadable file is
    an empty cache. Thread-safe (the run's jobs add to it at once)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._salts: dict[str, int] = {}
        if path is not None:
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raw = {}
            if isinstance(raw, dict):
                self._salts = {k: v for k, v in raw.items() if isinstance(k, str) and type(v) is int}
        self.hits = 0

    @staticmethod
    def key(mutant_code: str, grader_text: str, salt: int, device: str) -> str:
        h = hashlib.sha256()
        for part in (mutant_code, grader_text, str(salt), device, CHECK_RULES):
            h.update(part.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()

    def covers(self, key: str, n_salts: int) -> bool:
        """Did the check of ``key`` pass under at least ``n_salts`` extra salts?"""
        with self._lock:
            return self._salts.get(key, 0) >= n_salts

    def add(self, key: str, n_salts: int) -> None:
        with self._lock:
            self._salts[key] = max(n_salts, self._salts.get(key, 0))

    def save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            data = json.dumps(dict(sorted(self._salts.items())))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(data, encoding="utf-8")
        tmp.replace(self.path)


def mutate_exercise(ex: Exercise, *, operators: list[str] | None = None, salt: int = MUTATE_SALT,
                    jobs: int = 1, max_mutants: int | None = None, device: str = "cpu",
                    sandbox_mode: str | None = None, n_differential: int | None = None, exact: bool = False,
                    only: set[str] | None = None,
                    on_outcome: Callable[[Outcome], None] | None = None,
                    on_start: Callable[[int], None] | None = None,
                    confirmed: ConfirmedEquivalents | None = None) -> ExerciseRun:
    """Generate, grade and classify the mutants of ``ex``'s reference.

    ``jobs`` gradings run at once (threads of this process, each on the warm pool); ``max_mutants``
    samples the mutants evenly (the CI sample); ``only`` keeps just the mutants with these ids
    (before sampling); ``n_differential`` extra salts check each listed
    equivalent (default: ``differential_count`` of the reference's time); ``exact`` grades every
    mutant on every case (no ``selection``); ``on_start`` hears how many mutants will be graded
    and ``on_outcome`` each result as it comes; ``confirmed`` skips the extra salts of a listed
    equivalent already confirmed for the same texts (``ConfirmedEquivalents``). Problems of the
    exercise itself (the reference does not pass, ``equivalent.toml`` is malformed or wrong) land
    in ``ExerciseRun.errors``; raises only ``ValueError`` for an unknown operator."""
    t0 = time.perf_counter()
    code = ex.reference_path.read_text(encoding="utf-8")
    run = ExerciseRun(ex.slug, code, f"reference/{ex.reference_path.name}")
    every = generate(code, operators, ex.meta.entrypoints)
    run.generated = len(every)
    try:
        entries = equivalent.load(equivalent_path(ex))
    except equivalent.EquivalentFileError as e:
        run.errors += [f"{equivalent.FILE_NAME}: {p}" for p in e.problems]
        entries = []
    if operators is not None:
        entries = [e for e in entries if e.operator in operators]
    listed, unmatched = equivalent.match(entries, every)
    run.errors += unmatched

    spent = dict.fromkeys(PHASES, 0.0)

    def grade(text: str, exercise: Exercise, with_salt: int, fail_fast: bool = True,
              cases: CaseSelection | None = None, phase: str = "mutants") -> Verdict:
        t = time.perf_counter()
        try:
            return judge.grade(exercise, text, device=device, sandbox_mode=sandbox_mode, fail_fast=fail_fast,
                               salt=with_salt, cases=cases)
        finally:
            with lock:
                spent[phase] += time.perf_counter() - t

    # The reference twice: the first grading may pay for starting the warm pool. Each grading
    # records which functions every case called (the cases a mutant is graded on first).
    seen = [CaseSelection(), CaseSelection()]
    lock = threading.Lock()
    refs = [grade(code, ex, salt, fail_fast=False, cases=c, phase="reference") for c in seen]
    k = min(range(2), key=lambda i: refs[i].seconds)
    ref = refs[k]
    run.reference_seconds = ref.seconds
    all_cases = frozenset(c.name for c in ref.cases)
    salted = frozenset(seen[k].salted) & all_cases
    run.cases, run.salt_blind_cases = len(all_cases), len(all_cases - salted)
    if not ref.ok:
        run.errors.append(f"the reference does not pass its own grader ({ref.status.value}: "
                          f"{classify(ref)[1] or ref.message[:160]}); no mutant graded")
        run.seconds = time.perf_counter() - t0
        run.phase_seconds = spent
        return run
    run.time_limit_s = time_limit(ex, ref.seconds)
    limited = with_time_limit(ex, run.time_limit_s)
    n_salts = differential_count(ref.seconds) if n_differential is None else n_differential
    salts = differential_salts(salt, n_salts)
    planner = None
    if not exact:
        def trust(cases: frozenset[str]) -> bool:
            v = grade(code, ex, salt, fail_fast=False, cases=CaseSelection(cases), phase="trust")
            return v.ok and v.input_checks_passed == v.input_checks_total
        case_seconds: dict[str, float] = {}
        for c in ref.cases:
            case_seconds[c.name] = case_seconds.get(c.name, 0.0) + c.seconds
        planner = Planner(Reach(code, ex.meta.entrypoints), seen[k].calls, case_seconds, trust)
    chosen = sample([m for m in every if only is None or m.id in only], max_mutants)
    if on_start:
        on_start(len(chosen))
    grader_path = paths.graders_dir() / f"{ex.module}.py"
    grader_text = grader_path.read_text(encoding="utf-8") if grader_path.is_file() else ""

    def first_verdict(m: Mutant, whole: CaseSelection) -> tuple[Result, str]:
        """Graded on its own cases first (``selection``), then whole (recording into ``whole``)
        if it passed them."""
        cases = planner.cases_for(m) if planner is not None else None
        if cases is not None:
            with lock:
                run.selected += 1
            result, detail = classify(grade(m.code, limited, salt, cases=CaseSelection(cases)))
            if result is not Result.SURVIVED:
                return result, detail
            with lock:
                run.regraded += 1
        return classify(grade(m.code, limited, salt, phase="mutants" if cases is None else "regrade", cases=whole))

    def differential_scope(m: Mutant, whole: CaseSelection) -> CaseSelection | None:
        """How a listed mutant is graded under the extra salts: on the cases that can notice it (a
        selection that leaves the others out by exclusion; None: every case), or not at all
        (``NO_EXTRA_SALTS``) when each of them ended before the first read of the salt in the
        reference's grading and in the mutant's own whole grading (``whole``)."""
        own = planner.cases_for(m) if planner is not None else None
        if not ((all_cases if own is None else own) & (salted | whole.salted)):
            return NO_EXTRA_SALTS
        return None if own is None else CaseSelection(skip=all_cases - own)

    def one(m: Mutant) -> Outcome:
        t = time.perf_counter()
        try:
            compile(m.code, run.reference_path, "exec")
        except (SyntaxError, ValueError) as e:
            out = Outcome(m, Result.INVALID, 0.0, str(e))
        else:
            whole = CaseSelection()
            result, detail = first_verdict(m, whole)
            if m.key in listed:
                key = ConfirmedEquivalents.key(m.code, grader_text, salt, device)
                if confirmed is not None and result is Result.SURVIVED and confirmed.covers(key, n_salts):
                    confirmed.hits += 1
                    result, detail = Result.EQUIVALENT, listed[m.key].reason
                else:
                    scope = differential_scope(m, whole) if result is Result.SURVIVED else None
                    blind = scope is NO_EXTRA_SALTS
                    result, detail = _confirm(m, result, detail, listed[m.key],
                                              lambda s: grade(m.code, limited, s, False, phase="differential",
                                                              cases=None if scope is None else CaseSelection(
                                                                  skip=scope.skip)),
                                              [] if blind else salts)
                    if result is Result.EQUIVALENT:
                        if blind:
                            with lock:
                                run.salt_blind_equivalents += 1
                        if confirmed is not None:
                            confirmed.add(key, n_salts)
            out = Outcome(m, result, time.perf_counter() - t, detail)
        if on_outcome:
            on_outcome(out)
        return out

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="mutate") as pool:
        run.outcomes = list(pool.map(one, chosen))
    if confirmed is not None:
        confirmed.save()
    run.differential_salts = n_salts
    run.phase_seconds = spent
    if planner is not None:
        run.distrusted = planner.distrusted
    for o in run.outcomes:
        if o.mutant.key in listed and o.result is not Result.EQUIVALENT:
            run.errors.append(f"{equivalent.FILE_NAME}: {listed[o.mutant.key]} is listed as equivalent, but "
                              f"{o.mutant.id} is not: {o.detail}")
    run.seconds = time.perf_counter() - t0
    return run


def _confirm(m: Mutant, result: Result, detail: str, entry: equivalent.Entry, grade_with: Callable[[int], Verdict],
             salts: list[int]) -> tuple[Result, str]:
    """The differential check of a listed mutant: it must pass every case (input checks too) under
    the run's salt and under every one of ``salts``."""
    if result is not Result.SURVIVED:
        return result, f"{result.value} under the run's salt ({detail})"
    for s in salts:
        v = grade_with(s)
        if not v.ok or v.input_checks_passed < v.input_checks_total:
            return Result.KILLED, f"refuted by salt {s}: {classify(v)[1]}"
    return Result.EQUIVALENT, entry.reason
