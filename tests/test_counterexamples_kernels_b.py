"""Counterexamples for the kernels track (second half): for each opted-in exercise a known-wrong
variant gets one, and replaying that trial separates the variant from the reference; the reference
fails none of the first trials of any kind the grader aims at."""

import importlib.util

import pytest

from test_counterexamples import _grader
from inferprep import catalog
from inferprep.grading import Grading, WrongAnswer
from inferprep.grading import counterexample as ce
from inferprep.runner import judge, sandbox
from inferprep.runner.process import SubmissionProcess, SubmissionRaised
from inferprep.verdict import INPUT_CHECKS, Status
from inferprep.wrong_variants import source_of

WRONG = {
    "kv-quant-keys-values": "round_half_up",
    "mla-absorption": "mask_off_by_one",
    "moe-calibration": "ties_to_higher_id",
    "moe-sorted-layout": "weight_by_token",
    "niah-vs-perplexity": "cheat_always_rope",
    "rope": "bf16_positions",
    "sliding-window-tiles": "off_by_one_window",
    "triton-softmax": "no_max_subtraction",
}
NEEDS_TRITON = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
SLUGS = [pytest.param(s, marks=NEEDS_TRITON) if s.startswith("triton-") else s for s in sorted(WRONG)]


def _start(ex, code: str) -> SubmissionProcess:
    """A sandboxed child for ``code`` as the judge starts it (forbidden shortcuts, Triton prepared)."""
    proc = SubmissionProcess(code, ex.meta.entrypoints, time_s=ex.meta.limits.time_s,
                             memory_mib=ex.meta.limits.memory_mib, mode=sandbox.sandbox_mode(None),
                             forbidden=ex.meta.forbidden, requires=ex.meta.requires)
    assert proc.start().get("op") == "ready"
    return proc


def run_trial(ex, code: str, trial: ce.Trial, salt: int) -> str | None:
    """The failure ``code`` shows on one counterexample trial (the wrong answer or the exception),
    or None when it passes."""
    proc = _start(ex, code)
    try:
        g = Grading(proc, device="cpu", public=False, reference_path=ex.reference_path, salt=salt)
        try:
            _grader(ex).counterexample(g, trial)
        except (WrongAnswer, SubmissionRaised) as e:
            return str(e)
        return None
    finally:
        proc.close()


@pytest.mark.parametrize("slug", SLUGS)
def test_wrong_variant_gets_a_counterexample_that_really_fails(slug):
    ex = catalog.get(slug)
    wrong = source_of(ex.module, WRONG[slug])
    salt = 20240917
    v = judge.grade(ex, wrong, salt=salt)
    assert v.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR), v.summary
    found = v.counterexample
    assert found is not None and not found.withheld, [(c.name, c.message[:80]) for c in v.cases if not c.passed]
    assert found.message and found.detail is not None and (found.detail.input or found.detail.call)
    failed = tuple(c.name for c in v.cases if not c.passed and c.group != INPUT_CHECKS)
    trial = found.attempts - 1
    shown = run_trial(ex, wrong, ce.trial_of(salt, trial, failed), salt)
    assert shown and found.message.startswith(shown)
    assert run_trial(ex, ex.reference_path.read_text(), ce.trial_of(salt, trial, failed), salt) is None


@pytest.mark.parametrize("slug", SLUGS)
def test_reference_fails_no_trial(slug):
    """Every kind the grader aims at (its case-name prefixes), over the first sizes."""
    ex = catalog.get(slug)
    grader = _grader(ex)
    prefixes = sorted(getattr(grader, "_CE_KINDS", {})) or ["specimen "]
    proc = _start(ex, ex.reference_path.read_text())
    try:
        g = Grading(proc, device="cpu", public=False, reference_path=ex.reference_path, salt=7)
        g.results = []
        for prefix in prefixes:
            for number in range(0, 3 * ce.TRIALS_PER_SIZE, 2):
                with g.case(f"{prefix} trial {number}"):
                    grader.counterexample(g, ce.trial_of(7, number, (f"{prefix}x",)))
    finally:
        proc.close()
    assert [(c.name, c.message) for c in g.results if not c.passed] == []
