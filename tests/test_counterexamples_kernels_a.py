"""Counterexamples for the kernels track (first half): for each opted-in exercise a known-wrong
variant whose mistake shows on a small input gets a counterexample, and replaying that trial
separates the variant from the reference; the reference fails none of the first trials aimed at
any kind of failed case."""

import pytest

from test_counterexamples import run_trial
from inferprep import catalog
from inferprep.grading import Grading, load_module
from inferprep.grading import counterexample as ce
from inferprep.runner import judge, sandbox
from inferprep.runner.process import SubmissionProcess
from inferprep.verdict import INPUT_CHECKS, Status
from inferprep.wrong_variants import source_of

WRONG = {
    "batch-invariance": "round_half_away",
    "bf16-running-sum": "half_ulp_rule",
    "causal-mask-offset": "top_left_tril",
    "flash-attention-backward": "drops_d",
    "flash-attention-forward": "m_init_zero",
    "fp8-attention": "channel_is_per_row",
    "fp8-kv-cache": "max_240",
    "kernel-timing": "median_upper_middle",
}


@pytest.mark.parametrize("slug", sorted(WRONG))
def test_wrong_variant_gets_a_counterexample_that_really_fails(slug):
    ex = catalog.get(slug)
    wrong = source_of(ex.module, WRONG[slug])
    salt = 20240917
    v = judge.grade(ex, wrong, salt=salt)
    assert v.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR), v.summary
    found = v.counterexample
    assert found is not None and not found.withheld, [(c.name, c.message[:80]) for c in v.cases if not c.passed]
    assert found.message and found.detail is not None and found.detail.input and found.detail.call
    failed = tuple(c.name for c in v.cases if not c.passed and c.group != INPUT_CHECKS)
    trial = ce.trial_of(salt, found.attempts - 1, failed)
    shown = run_trial(ex, wrong, trial, salt)
    assert shown and found.message.startswith(shown)
    assert run_trial(ex, ex.reference_path.read_text(), ce.trial_of(salt, found.attempts - 1, failed), salt) is None


@pytest.mark.parametrize("slug", sorted(WRONG))
def test_reference_fails_no_trial(slug):
    """Every kind the grader aims at, at the first sizes, passes with the reference."""
    ex = catalog.get(slug)
    grader = load_module(ex.grader_path, f"_test_ce_kernels_{ex.module}")
    kinds = tuple(grader._CE_KINDS)
    proc = SubmissionProcess(ex.reference_path.read_text(), ex.meta.entrypoints, time_s=ex.meta.limits.time_s,
                             memory_mib=ex.meta.limits.memory_mib, mode=sandbox.sandbox_mode(None))
    try:
        assert proc.start().get("op") == "ready"
        g = Grading(proc, device="cpu", public=False, reference_path=ex.reference_path, salt=7)
        g.results = []
        for number in range(2 * len(kinds) + 4):
            with g.case(f"trial {number}"):
                grader.counterexample(g, ce.trial_of(7, number, (kinds[number % len(kinds)],)))
    finally:
        proc.close()
    assert [(c.name, c.message) for c in g.results if not c.passed] == []
