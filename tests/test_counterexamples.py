"""Counterexamples (grading.counterexample): after a failing hidden case the judge finds a small
fresh input the submission gets wrong. For each opted-in exercise a known-wrong variant gets one,
and replaying that trial really separates the variant from the reference; the reference fails no
trial; the search keeps to its budget (an injected clock) and changes nothing in the verdict."""

from types import SimpleNamespace

import pytest

from inferprep import catalog
from inferprep.grading import Grading, WrongAnswer, load_module
from inferprep.grading import counterexample as ce
from inferprep.runner import judge, sandbox
from inferprep.runner.process import SubmissionProcess, SubmissionRaised
from inferprep.verdict import INPUT_CHECKS, Status
from inferprep.wrong_variants import source_of

WRONG = {
    "sampling-order": "ignores_order",
    "scheduler-loop": "preempt_oldest",
    "beam-search-cow": "tie_break_token_first",
    "speculative-verifier": "accept_u_le_ratio",
    "ring-reduce-scatter": "overwrite_instead_of_add",
}


def _grader(ex):
    return load_module(ex.grader_path, f"_test_ce_grader_{ex.module}")


def run_trial(ex, code: str, trial: ce.Trial, salt: int) -> str | None:
    """Run one counterexample trial against ``code`` in a fresh sandboxed child: the failure it
    shows (the wrong answer or the exception), or None when the submission passes it."""
    proc = SubmissionProcess(code, ex.meta.entrypoints, time_s=ex.meta.limits.time_s,
                             memory_mib=ex.meta.limits.memory_mib, mode=sandbox.sandbox_mode(None))
    try:
        assert proc.start().get("op") == "ready"
        g = Grading(proc, device="cpu", public=False, reference_path=ex.reference_path, salt=salt)
        try:
            _grader(ex).counterexample(g, trial)
        except (WrongAnswer, SubmissionRaised) as e:
            return str(e)
        return None
    finally:
        proc.close()


@pytest.mark.parametrize("slug", sorted(WRONG))
def test_wrong_variant_gets_a_counterexample_that_really_fails(slug):
    ex = catalog.get(slug)
    wrong = source_of(ex.module, WRONG[slug])
    salt = 20240917
    v = judge.grade(ex, wrong, salt=salt)
    assert v.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR), v.summary
    found = v.counterexample
    assert found is not None and not found.withheld, [(c.name, c.message[:80]) for c in v.cases if not c.passed]
    assert found.message and found.detail is not None and (found.detail.input or found.detail.call)
    assert 1 <= found.attempts <= ce.MAX_TRIALS
    # the same trial, replayed: the wrong variant fails it with the same message, the reference passes it
    failed = tuple(c.name for c in v.cases if not c.passed and c.group != INPUT_CHECKS)
    shown = run_trial(ex, wrong, ce.trial_of(salt, found.attempts - 1, failed), salt)
    assert shown and found.message.startswith(shown)
    assert run_trial(ex, ex.reference_path.read_text(), ce.trial_of(salt, found.attempts - 1, failed), salt) is None


@pytest.mark.parametrize("slug", sorted(WRONG))
def test_reference_fails_no_trial(slug):
    """The trials are sound: a correct solution passes every one of the first sizes, aimed at
    every failed-case kind the exercise has."""
    ex = catalog.get(slug)
    ref = ex.reference_path.read_text()
    proc = SubmissionProcess(ref, ex.meta.entrypoints, time_s=ex.meta.limits.time_s,
                             memory_mib=ex.meta.limits.memory_mib, mode=sandbox.sandbox_mode(None))
    grader = _grader(ex)
    kinds = tuple(getattr(grader, "_CE_KINDS", {}).keys()) or ("any case",)
    try:
        assert proc.start().get("op") == "ready"
        g = Grading(proc, device="cpu", public=False, reference_path=ex.reference_path, salt=7)
        g.results = []
        for number in range(12):
            with g.case(f"trial {number}"):
                suffix = ", each rank alone" if number % 2 else " x"  # ring-reduce-scatter: SPMD and alone
                grader.counterexample(g, ce.trial_of(7, number, (kinds[number % len(kinds)] + suffix,)))
    finally:
        proc.close()
    assert [(c.name, c.message) for c in g.results if not c.passed] == []


def test_withheld_counterexample_shows_nothing_but_that_it_exists():
    ex = catalog.get("sampling-order")
    wrong = source_of("sampling_order", "ignores_order")
    v = judge.grade(ex, wrong, salt=5, counterexample=False)
    assert v.status == Status.WRONG_ANSWER
    assert v.counterexample is not None and v.counterexample.withheld
    assert v.counterexample.detail is None and v.counterexample.message == ""
    shown = judge.grade(ex, wrong, salt=5)
    assert shown.counterexample.detail is not None and not shown.counterexample.withheld
    assert [c.model_dump() | {"seconds": 0} for c in v.cases] == [c.model_dump() | {"seconds": 0} for c in shown.cases]


def test_hidden_cases_record_no_detail():
    """Hidden cases never carry input, expected or got (only public examples and counterexamples)."""
    ex = catalog.get("sampling-order")
    v = judge.grade(ex, source_of("sampling_order", "ignores_order"), salt=3)
    assert v.cases and all(c.detail is None for c in v.cases)


# -- the search loop itself, without a sandbox ---------------------------------------------------
class FakeClock:
    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def fake_grading():
    proc = SimpleNamespace(wall_deadline=None, dead=None, records=[])
    return SimpleNamespace(salt=11, failed_cases=["random-0"], proc=proc, _case_start_record=0)


def test_search_stops_at_its_budget():
    sizes = []
    clock = FakeClock(0.25)  # every reading of the clock: 0.25 s later
    found = ce.search(fake_grading(), lambda g, trial: sizes.append(trial.size), budget_s=2.0, clock=clock)
    assert found is None
    assert 1 <= len(sizes) <= 8  # 2 s of budget at >= 0.25 s a trial
    assert sizes == sorted(sizes) and sizes[0] == 1  # smallest first


def test_search_returns_the_first_failing_trial_and_restores_the_cap():
    g = fake_grading()
    tried = []

    def trial_fn(gr, trial):
        tried.append(trial.number)
        Grading.show_input(n=trial.size)
        if trial.number == 5:
            raise WrongAnswer(f"differs at size {trial.size}")

    found = ce.search(g, trial_fn, clock=FakeClock(0.001))
    assert tried == list(range(6))
    assert found.attempts == 6 and found.message == f"differs at size {ce.size_of(5)}"
    assert found.detail.input == {"n": str(ce.size_of(5))}
    assert g.proc.wall_deadline is None


def test_trial_returning_false_stops_the_search():
    calls = []
    assert ce.search(fake_grading(), lambda g, t: calls.append(t) or False, clock=FakeClock(0.001)) is None
    assert len(calls) == 1


def test_trials_are_replayable_and_apart_from_the_salt_of_other_labels():
    a, b = ce.trial_of(99, 3), ce.trial_of(99, 3)
    assert a.rng.random() == b.rng.random() and a.size == ce.size_of(3)
    assert ce.trial_of(99, 3).rng.random() != ce.trial_of(98, 3).rng.random()


def test_pick_aims_at_the_longest_matching_prefix():
    t = ce.Trial(0, 1, ce.random.Random(0), ("verify: draw ties (u*total ...)", "is_lossless #3"))
    assert t.pick({"verify: ": "random", "verify: draw ties": "ties"}) == "ties"
    assert ce.Trial(0, 1, ce.random.Random(0), ("is_lossless #1",)).pick({"verify: ": "random"}) is None
