"""Verdicts: the structured result of grading one submission.

Statuses follow an online judge's fixed priority (DMOJ's set): when several apply, the first in
``STATUS_PRIORITY`` is the run's status. Hidden cases come in two groups: ``core`` (the task on
valid inputs, edge cases included) and ``input checks`` (the ValueError cases). The status, the
score (passed core points / core points) and ``passed``/``total`` are the core group's alone: a
correct algorithm without input validation passes; ``input_checks_passed``/``input_checks_total``
are shown beside it ("Passed; input checks 12/19") and decide nothing. Everything downstream (the
CLI's exit code, the database, progress, the editorial, analytics) follows the status.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Status(str, Enum):
    INTERNAL_ERROR = "internal_error"
    INVALID_SUBMISSION = "invalid_submission"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    RUNTIME_ERROR = "runtime_error"
    WRONG_ANSWER = "wrong_answer"
    PASSED = "passed"

    @property
    def label(self) -> str:
        return STATUS_LABELS[self]


STATUS_PRIORITY = list(Status)
STATUS_LABELS = {
    Status.INTERNAL_ERROR: "Internal error (not your fault; retry)",
    Status.INVALID_SUBMISSION: "Invalid submission",
    Status.TIME_LIMIT: "Time limit exceeded",
    Status.MEMORY_LIMIT: "Memory limit exceeded",
    Status.OUTPUT_LIMIT: "Output limit exceeded",
    Status.RUNTIME_ERROR: "Runtime error",
    Status.WRONG_ANSWER: "Wrong answer",
    Status.PASSED: "Passed",
}


def worst(statuses) -> Status:
    """The highest-priority status of ``statuses`` (PASSED for an empty iterable)."""
    ss = set(statuses)
    for s in STATUS_PRIORITY:
        if s in ss:
            return s
    return Status.PASSED


CORE = "core"
INPUT_CHECKS = "input checks"
GROUPS = (CORE, INPUT_CHECKS)


class Difference(BaseModel):
    """One element where a tensor differs: its index, the expected and the submitted value."""
    index: list[int]
    expected: float | int | bool | str
    got: float | int | bool | str


class TensorDiff(BaseModel):
    """How two tensors compare: shapes, dtypes, how many elements are out of tolerance, the first
    few of them and the largest errors (absolute, and relative to |expected|)."""
    model_config = ConfigDict(ser_json_inf_nan="strings")  # a tolerance may be infinite; JSON has no inf

    expected_shape: list[int]
    got_shape: list[int]
    expected_dtype: str
    got_dtype: str
    rtol: float = 0.0
    atol: float = 0.0
    mismatched: int = 0
    total: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    first: list[Difference] = Field(default_factory=list)


class CaseDetail(BaseModel):
    """What a case ran on and what came back, shown for public examples and counterexamples only
    (never with a hidden case's expected values). Values are short text renderings."""
    input: dict[str, str] = Field(default_factory=dict, description="argument name -> value, as the grader describes them")
    call: str = Field("", description="the last call of the submission in this case, with its arguments")
    name: str = Field("", description="what the compared value is (output, rank 0, ...)")
    expected: str | None = None
    got: str | None = None
    diff: TensorDiff | None = None


class CaseResult(BaseModel):
    name: str
    passed: bool
    status: Status
    message: str = ""
    seconds: float = 0.0
    points: float = 1.0
    group: str = CORE
    detail: CaseDetail | None = None


class Counterexample(BaseModel):
    """A small, freshly generated input on which the submission and the reference disagree, found
    after a failing hidden case (never the hidden case's own data). ``withheld``: one was found but
    its content is not shown yet (a mock interview shows it when the session ends)."""
    withheld: bool = False
    message: str = ""
    detail: CaseDetail | None = None
    attempts: int = 0
    seconds: float = 0.0


class PerfResult(BaseModel):
    """The performance stage (exercises with ``perf = true``, after every core case passed).

    Times are the parent's wall seconds per timed request, medians over ``n`` repetitions, each on
    fresh inputs; the submission and the reference (in a trusted child of its own) ran interleaved
    on the same inputs. ``overhead_s``: the median of the same timed request without the call in
    the reference's child (unmasking the inputs, L2 flush, synchronisation, the outputs' digest:
    ``runner.perf_wire``), subtracted from both
    medians before the ratios. ``ratio``: the submission's net time / the reference's (lower is
    faster; 0.5 = twice as fast); ``roofline_ratio``: the submission's net time / the roofline
    floor (>= 1 on real hardware), None without a floor. ``status``: ``measured``, ``flagged``
    (a time the platform does not believe: faster than the hardware allows; never ranked),
    ``failed`` (an output on the fresh inputs was wrong, the submission raised or died: not a pass
    of the stage), ``error`` (the platform's own failure) or ``skipped``."""

    status: Literal["measured", "flagged", "failed", "error", "skipped"]
    message: str = ""
    device_kind: str = "cpu"
    ratio: float | None = None
    roofline_ratio: float | None = None
    median_s: float | None = None
    spread_s: float | None = Field(None, description="interquartile range of the submission's times, seconds")
    n: int = 0
    reference_median_s: float | None = None
    reference_spread_s: float | None = None
    reference_n: int = 0
    overhead_s: float | None = None
    floor_s: float | None = None
    converged: bool = False
    stopped: str = ""
    flagged: bool = False
    reason: str = ""

    @property
    def rankable(self) -> bool:
        """A ratio the leaderboard may rank: measured, not flagged."""
        return self.status == "measured" and self.ratio is not None and not self.flagged

    @property
    def line(self) -> str:
        """One line for the CLI and the web: "perf (cpu): 0.82x the reference's time (median
        1.20 ms, IQR 0.03 ms, n=40); no roofline for cpu"."""
        head = f"perf ({self.device_kind}): "
        if self.status in ("failed", "error", "skipped"):
            return head + f"{self.status}: {self.message}"
        ratio = f"{self.ratio:.2f}x the reference's time" if self.ratio is not None else "no ratio"
        parts = [ratio + f" (median {_ms(self.median_s)}, IQR {_ms(self.spread_s)}, n={self.n}"
                 + ("" if self.converged else f", stopped at {self.stopped or 'cap'}") + ")"]
        if self.roofline_ratio is not None:
            parts.append(f"{self.roofline_ratio:.2f}x the roofline floor")
        elif self.device_kind == "cpu":
            parts.append("no roofline for cpu")
        else:
            parts.append(f"no roofline for {self.device_kind}")
        if self.flagged:
            parts.append(f"FLAGGED: {self.reason}")
        return head + "; ".join(parts)


def _ms(s: float | None) -> str:
    return "?" if s is None else f"{s * 1e3:.3g} ms"


class Verdict(BaseModel):
    slug: str
    public: bool = False
    status: Status
    message: str = ""
    score: float = 0.0
    passed: int = 0
    total: int = 0
    cases: list[CaseResult] = Field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    device: str = "cpu"
    sandbox: str = ""
    seconds: float = 0.0
    versions: dict[str, str] = Field(default_factory=dict)
    input_checks_passed: int = 0
    input_checks_total: int = 0
    counterexample: Counterexample | None = None
    perf: PerfResult | None = None
    """The performance stage's result (perf exercises only, when asked for and the core passed)."""
    platform_retries: int = 0
    """How many times the platform ran this grading again after failing it itself (the sandbox
    could not start, the warm pool's server died); never the student's doing, counted nowhere."""

    @property
    def ok(self) -> bool:
        return self.status == Status.PASSED

    @property
    def summary(self) -> str:
        """"Passed; input checks 12/19", "Wrong answer; 31/40 cases"."""
        s = self.status.label if self.status != Status.PASSED else "Passed"
        if self.status != Status.PASSED and self.total:
            s += f"; {self.passed}/{self.total} cases"
        if self.input_checks_total:
            s += f"; input checks {self.input_checks_passed}/{self.input_checks_total}"
        return s

    @classmethod
    def from_cases(cls, slug: str, cases: list[CaseResult], run_status: Status | None = None,
                   message: str = "", **kw) -> "Verdict":
        core = [c for c in cases if c.group != INPUT_CHECKS]
        checks = [c for c in cases if c.group == INPUT_CHECKS]
        total_pts = sum(c.points for c in core)
        got = sum(c.points for c in core if c.passed)
        statuses = [c.status for c in core]
        # a grader failure is the platform's whatever group it happened in
        statuses += [c.status for c in checks if c.status == Status.INTERNAL_ERROR]
        if run_status is not None:
            statuses.append(run_status)
        if not core and run_status is None:
            statuses.append(Status.INTERNAL_ERROR)
            message = message or "the grader produced no core cases"
        status = worst(statuses)
        return cls(slug=slug, status=status, message=message, cases=cases,
                   passed=sum(c.passed for c in core), total=len(core),
                   input_checks_passed=sum(c.passed for c in checks), input_checks_total=len(checks),
                   score=(got / total_pts if total_pts else 0.0) if status != Status.INTERNAL_ERROR else 0.0,
                   **kw)


SCRATCH_OK = "ok"
SCRATCH_STATUSES = (SCRATCH_OK, Status.INTERNAL_ERROR.value, Status.INVALID_SUBMISSION.value,
                    Status.TIME_LIMIT.value, Status.MEMORY_LIMIT.value, Status.OUTPUT_LIMIT.value,
                    Status.RUNTIME_ERROR.value)
"""A scratch run's statuses: ``ok`` (the snippet ran to its end) or why it did not. No
``wrong_answer`` or ``passed``: nothing is compared or graded."""
ScratchStatus = Literal[SCRATCH_STATUSES]


class ScratchResult(BaseModel):
    """What a scratch run (``runner.scratch.run``) gives back: the user's snippet ran with their
    submission bound to ``solution``. Never graded and never a submission's verdict.

    ``status``: one of ``SCRATCH_STATUSES``; ``message``: why it did not finish ("ZeroDivisionError:
    division by zero", "CPU time limit of 2 s exceeded"), empty when ok; ``traceback``: the
    exception's traceback with the user's files named ``solution.py`` and ``scratch.py``;
    ``stdout``/``stderr``: the child's output (the first 64 KiB each); ``cpu_s``: CPU seconds the
    child process used (loading the submission and the snippet), what the time limit counts;
    ``time_limit_s``: that limit; ``seconds``: wall seconds of the whole run, start-up included.

    Parsing ignores unknown fields, so an internal-error ``Verdict`` that the queue wrote for a
    scratch job (a worker died) reads as an internal-error ``ScratchResult``."""

    slug: str
    status: ScratchStatus
    message: str = ""
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    cpu_s: float = 0.0
    time_limit_s: float = 0.0
    seconds: float = 0.0
    device: str = "cpu"
    sandbox: str = ""

    @property
    def ok(self) -> bool:
        return self.status == SCRATCH_OK

    @property
    def label(self) -> str:
        """"Ran", "Runtime error", "Time limit exceeded", ..."""
        return "Ran" if self.ok else Status(self.status).label
