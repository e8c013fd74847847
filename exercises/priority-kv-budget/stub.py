"""priority-kv-budget: the KV a batch class may hold for an interactive TPOT target.

``step_model`` is an ``inferprep.sim.step_model.StepModel`` (you may import and use it). A
sequence at context c decodes as the row (1, c, 1) and holds c + 1 KV tokens during the step.
Every rule is in the statement.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def kv_cost_per_token_s(step_model: StepModel) -> float:
    """Seconds one held KV token adds to every decode step: max(kvb / BW, A / F)."""
    raise NotImplementedError


def batch_kv_budget(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
                    batch_ctx: int, pool_tokens: int) -> dict:
    """The most batch sequences at context ``batch_ctx`` that keep the step within the target
    next to the interactive sequences and fit the pool.

    Returns ``{"base_tpot_s": float, "max_batch_seqs": int, "kv_tokens": int,
    "kv_bytes": float, "tpot_at_budget_s": float, "binding": "tpot" | "pool" | "infeasible"}``.

    Raises:
        ValueError: target not finite > 0; contexts not ints >= 0; interactive list empty;
            pool_tokens not an int >= 1.
    """
    raise NotImplementedError


def admit_batch_request(kv_budget_tokens: int, running: list, prompt_tokens: int,
                        max_tokens: int) -> bool:
    """True iff the final KV (prompt + max_tokens) of every running batch sequence
    ``(prompt_tokens, generated_tokens, max_tokens)`` and of the new one fits the budget.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def tpot_guard(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
               batch_ctx: list[int], free_kv_tokens: int) -> dict:
    """What vLLM's priority policy preempts this step (memory only) versus the fewest
    preemptions an interactive TPOT target needs.

    Returns ``{"tpot_before_s": float, "engine_preempted": list[int],
    "tpot_after_engine_s": float, "policy_preempted": list[int],
    "tpot_after_policy_s": float, "meets_target": bool}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError
