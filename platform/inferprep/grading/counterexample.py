"""Counterexamples: after a failing hidden case, a small fresh input the submission gets wrong.

A grader opts in by defining, beside ``grade(g)``::

    def counterexample(g: Grading, trial: Trial) -> None:
        n = trial.size                                  # 1, 1, 1, 1, 2, 2, ...: smallest first
        x = torch.randn(n, 3, generator=trial.generator())
        g.show_input(x=x)
        expect_tensor(g.call("softmax", x), g.reference().softmax(x), rtol=1e-6)

Each call is one *trial*: it builds one input from ``trial.rng`` (or ``trial.generator()``), runs
the submission on it and compares it with the reference using the usual checks (``expect_*``,
``fail``). A trial that fails is the counterexample: its input, the submission's last call, and
what the checks compared (expected and got) are shown with the verdict, as for a public example.
A trial that returns ``False`` stops the search: no small input can show the failed cases (a
statistical test, a question about a hidden specimen).

The judge calls it only when a core hidden case failed with a wrong answer or a runtime error
and the submission's process is still alive, after every hidden case, never on public examples or
in ``check-exercise``. The trials' randomness comes from the grading's salt under its own label, so
it is never a hidden case's data; trials run until one fails, ``SEARCH_BUDGET_S`` of wall time
(grader and submission together) is spent or ``MAX_TRIALS`` were tried; the submission's CPU limit
for the whole run still holds. Nothing that happens in the search changes the verdict: if the
process dies (a time limit, a crash), the search stops without a counterexample.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..runner.process import RunFailed, SubmissionRaised
from ..verdict import CaseDetail, Counterexample
from .checks import WrongAnswer
from .detail import CaseTrace

log = logging.getLogger("inferprep.counterexample")

SEARCH_BUDGET_S = 2.0
"""Wall seconds one search may take, the grader's work and the submission's calls together."""

TRIALS_PER_SIZE = 4
MAX_SIZE = 8
MAX_TRIALS = 64


@dataclass
class Trial:
    """One attempt: ``size`` (1 upward, the grader decides what it scales: rows, requests,
    ranks...), ``rng`` (seeded from the grading's salt and the attempt number), ``failed`` (names of
    the core cases that failed, to aim the search at their kind)."""

    number: int
    size: int
    rng: random.Random
    failed: tuple[str, ...] = field(default_factory=tuple)

    def generator(self) -> torch.Generator:
        """A CPU torch generator seeded from ``rng``."""
        return torch.Generator().manual_seed(self.rng.randrange(1 << 62))

    def pick(self, kinds: dict[str, str]) -> str | None:
        """Aim at a failed case's kind: ``kinds`` maps a case-name prefix to a kind; returns the kind
        of a failed case (cycling through them trial by trial; the longest matching prefix names a
        case's kind), or None if no failed case matches."""
        hit = []
        for name in self.failed:
            prefixes = [p for p in kinds if name.startswith(p)]
            if prefixes:
                hit.append(kinds[max(prefixes, key=len)])
        hit = list(dict.fromkeys(hit))
        return hit[self.number % len(hit)] if hit else None


def size_of(number: int) -> int:
    """Trial ``number``'s size: ``TRIALS_PER_SIZE`` trials per size, 1 upward, at most ``MAX_SIZE``."""
    return min(MAX_SIZE, 1 + number // TRIALS_PER_SIZE)


def trial_of(salt: int, number: int, failed: tuple[str, ...] = ()) -> Trial:
    """Trial ``number`` of the grading with secret ``salt``: the same trial every time (a
    counterexample can be replayed), drawn apart from every hidden case's randomness."""
    return Trial(number, size_of(number), random.Random(f"inferprep counterexample:{salt}:{number}"), tuple(failed))


def search(g, fn: Callable, *, budget_s: float = SEARCH_BUDGET_S, clock: Callable[[], float] = time.monotonic,
           max_trials: int = MAX_TRIALS) -> Counterexample | None:
    """Run ``fn(g, trial)`` on trials of growing size until one fails; returns that counterexample
    or None. ``clock`` (seconds) measures the budget (a test injects one); the submission's calls
    are also cut off when the budget's wall time is out."""
    start = clock()
    deadline = start + budget_s
    failed = tuple(g.failed_cases)
    proc = g.proc
    saved_cap = proc.wall_deadline
    proc.wall_deadline = time.monotonic() + budget_s
    try:
        for number in range(max_trials):
            if clock() >= deadline or proc.dead is not None:
                return None
            trial = trial_of(g.salt, number, failed)
            g._case_start_record = len(proc.records)  # noqa: SLF001 - g.calls then lists this trial's calls
            trace = CaseTrace(reveal=True)
            try:
                with trace:
                    if fn(g, trial) is False:
                        return None
            except WrongAnswer as e:
                return _found(trace, str(e), number, clock() - start)
            except SubmissionRaised as e:
                found = _found(trace, f"{e}\n{e.traceback}".strip(), number, clock() - start)
                found.detail.got = f"raised {e}"
                return found
            except RunFailed:
                return None  # the process is gone (a limit, or the search's own deadline)
            except Exception:  # noqa: BLE001 - the grader's trial is broken: no counterexample, no harm
                log.exception("counterexample trial %d failed in the grader", number)
                return None
        return None
    finally:
        proc.wall_deadline = saved_cap


def _found(trace: CaseTrace, message: str, number: int, seconds: float) -> Counterexample:
    return Counterexample(message=message[:8000], detail=trace.detail() or CaseDetail(), attempts=number + 1, seconds=round(seconds, 4))
