"""ttft-tpot-admission: the chain TPOT -> chunk -> prefill rate -> absorbable backlog, and an
admission rule with a remedy per failure kind. Rules, outputs and errors: see the statement."""

from __future__ import annotations

from inferprep.sim.step_model import StepModel

DECISIONS = ("admit", "saturated", "too_long", "backlog")
REMEDIES = ("admit", "route_to_replica", "prefill_pool", "retry_after", "reject")


def max_chunk(step_model: StepModel, tpot_s: float, decode_contexts: list[int], prefix: int) -> int:
    """Largest chunk C >= 0 whose step (one decode row (1, c, 1) per entry of decode_contexts,
    plus the row (C, prefix, 1)) lasts at most tpot_s; 0 if even C = 1 does not fit.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def prefill_finish_times(step_model: StepModel, tpot_s: float, decode_contexts: list[int],
                         prompts: list[int]) -> list[float]:
    """Time (s, from 0) at which each prompt of the FCFS queue ``prompts`` finishes prefilling,
    one chunk of one prompt per step beside the decoders; ``math.inf`` for a prompt that never does.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def admit(step_model: StepModel, tpot_s: float, ttft_s: float, decode_contexts: list[int],
          queue_ahead: list[int], prompt: int, others: list = ()) -> dict:
    """Admission decision for a new prompt behind ``queue_ahead`` on this replica, and a remedy.

    ``others``: ``[decode_contexts, queue_ahead]`` of each other replica.
    Returns ``{"decision", "projected_ttft_s", "remedy", "replica", "retry_after_s"}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError
