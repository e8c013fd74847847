"""speculative-decoding-basics: tokens per verification step, the accept/resample rule's exact
output distribution, and the batch at which verification stops riding on spare compute.
Read the statement (`inferprep show speculative-decoding-basics`) for the exact rules."""

from __future__ import annotations

from fractions import Fraction  # noqa: F401  (probabilities cross as strings; parse them)

from inferprep.sim.step_model import StepModel


def expected_tokens(alpha: float, g: int) -> float:
    """Mean number of tokens one verification step of g drafts emits, each draft accepted with
    probability ``alpha`` independently: the accepted prefix plus one token from the target.

    Raises:
        ValueError: ``alpha`` outside [0, 1] or NaN; ``g`` not an int or negative.
    """
    raise NotImplementedError


def emitted_distribution(p: list[str], q: list[str]) -> dict:
    """Exact distribution of the token one draft-then-verify position emits.

    ``p`` (target) and ``q`` (draft) are lists of V fraction strings ("3/10"), each summing to
    exactly 1. Returns ``{"alpha": str, "accepted": list[str], "resampled": list[str],
    "emitted": list[str]}`` (every value ``str(Fraction)``), see the statement.

    Raises:
        ValueError: lengths differ or are 0, an entry not a string fractions.Fraction parses,
            a negative entry, a list that does not sum to exactly 1.
    """
    raise NotImplementedError


def spare_compute_batch(step_model: StepModel, g: int) -> dict:
    """The largest batch b whose verification step (b rows of g + 1 tokens, each with a logit
    row) keeps the weight GEMMs memory-bound under ``step_model``.

    Returns ``{"knee_tokens": float, "max_batch": int}``.

    Raises:
        ValueError: ``g`` not an int or negative.
    """
    raise NotImplementedError
