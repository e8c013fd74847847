"""speculative-verifier's statement quotes how many times the grader calls ``is_lossless`` in one run
(part 2, the proxy paragraph: a submission budgets its 20 CPU seconds by it). The figure is counted
here from the grader itself, by running its part 2 against a stand-in grading that answers every
``is_lossless`` call as a correct test would, so adding or removing a hidden specimen without
updating the statement fails."""

import re
from contextlib import contextmanager
from pathlib import Path

import pytest

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[1]
SLUG = "speculative-verifier"


class _CountingGrading:
    """The part of ``Grading`` that ``_part2`` uses. ``call("is_lossless", spec, V, seed)`` answers
    right (True exactly for a lossless specimen) and records one digest per (spec, seed), so the
    seed cases see the same calls for the same seed and different ones for two seeds."""

    def __init__(self, salt: int):
        self.salt = salt
        self.calls: list[tuple[str, str]] = []          # (case name, function called)
        self.failures: list[tuple[str, str]] = []
        self._case = ""

    @contextmanager
    def case(self, name: str, **_):
        self._case = name
        try:
            yield
        except Exception as e:                           # a case that fails is recorded, not fatal
            self.failures.append((name, str(e)))

    def host(self, obj, methods):
        return obj

    def call(self, fn: str, *args):
        self.calls.append((self._case, fn))
        assert fn == "is_lossless"
        spec, V, seed = args
        assert spec.vocab_size == V
        if spec.record:
            spec.digests.append(f"{V}:{seed}")
        return spec.bias is None


def _statement_figure() -> int:
    text = (ROOT / "exercises" / SLUG / "statement.md").read_text()
    found = re.findall(r"The grader calls `is_lossless` (\d+) times in one run", text)
    assert len(found) == 1, "the statement's sentence giving the number of is_lossless calls moved or changed"
    return int(found[0])


@pytest.mark.parametrize("slug", [SLUG])
@pytest.mark.parametrize("salt", [0, 1, 12345])
def test_statement_counts_the_graders_is_lossless_calls(slug, salt):
    ref = load_module(ROOT / "reference" / "speculative_verifier.py", "_count_spec_reference")
    grader = load_module(ROOT / "graders" / "speculative_verifier.py", "_count_spec_grader")
    g = _CountingGrading(salt)
    grader._part2(g, ref)
    assert g.failures == []                              # a correct test passes every part-2 case
    numbered = [c for c, _ in g.calls if c.startswith("is_lossless #")]
    seed_cases = [c for c, _ in g.calls if not c.startswith("is_lossless #")]
    # one call per hidden specimen (7 lossless, one per bias), then the seed cases: the same seed
    # twice (2 calls), and a second seed (1 call: the first run of seed a is reused)
    assert len(numbered) == len(set(numbered)) == len(grader.LOSSLESS_FEATURES) + len(grader.BIASES)
    assert len(seed_cases) == 3
    assert len(g.calls) == _statement_figure()


def test_the_statement_quotes_the_time_budgets():
    """The proxy paragraph's limits: the run's CPU seconds, the hosted verifier's own budget of the
    same size (``SubmissionProcess.served``) and the wall-clock backstop, from the exercise's limit."""
    from inferprep import catalog
    from inferprep.runner.process import wall_backstop_s

    t = catalog.get(SLUG).meta.limits.time_s
    text = " ".join((ROOT / "exercises" / SLUG / "statement.md").read_text().split())
    assert f"your whole run has {t:g} CPU seconds" in text
    assert f"a budget of its own, also {t:g} CPU seconds for the whole run" in text
    assert f"2 × {t:g} + 8 = {wall_backstop_s(t):g} s" in text
