"""speculation-tail: break-even acceptance, per-request tail report, and a draft-length policy.

``target`` and ``drafter`` are ``inferprep.sim.step_model.StepModel`` values (you may import and
call ``StepModel.step_s``); every formula is in the statement.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def break_even_alpha(target: StepModel, drafter: StepModel, batch_size: int, context_len: int,
                     g: int) -> float | None:
    """The per-token acceptance at which a batch of ``batch_size`` requests, all drafting ``g``
    tokens, emits tokens per request exactly as fast as without speculation.

    Returns 0.0 if speculation never slows the batch, None if it cannot break even at any
    acceptance, else the acceptance in (0, 1).

    Raises:
        ValueError: batch_size not an int >= 1, context_len not an int >= 0, g not an int in [0, 8].
    """
    raise NotImplementedError


def tail_report(target: StepModel, drafter: StepModel, trace: list[dict],
                draft_lengths: list[list[int]]) -> dict:
    """Per-request time per output token of ``trace`` (a list of batches ``{"level": str,
    "context_len": int, "alpha": [float]}``) when request j of batch i drafts
    ``draft_lengths[i][j]`` tokens per step.

    Returns ``{"tpot_s": [float], "mean_s", "p50_s", "p99_s", "slowed_share": float,
    "p99_owners": {level: int}, "p99_alpha_max": float}``.

    Raises:
        ValueError: a malformed trace or draft_lengths (see the statement).
    """
    raise NotImplementedError


def draft_lengths(target: StepModel, drafter: StepModel, context_len: int,
                  alpha_est: list[float]) -> list[int]:
    """Your policy: the draft length (int in [0, 8]) of each request of one batch, given each
    request's estimated acceptance. The grader's simulator calls it once per batch.

    Raises:
        ValueError: alpha_est empty or an estimate outside [0, 1]; context_len not an int >= 0.
    """
    raise NotImplementedError
