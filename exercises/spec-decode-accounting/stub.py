"""spec-decode-accounting: draft tokens in the step's token budget, what a rejection rolls
back, and the batch where speculation starts delivering fewer tokens per second.
Read the statement (`inferprep show spec-decode-accounting`) for the exact rules."""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def schedule_running(token_budget: int, draft_lens: list[int]) -> dict:
    """Tokens each running decode request gets this step, in queue order; request i carries
    ``draft_lens[i]`` drafts.

    Returns ``{"scheduled_tokens": list[int], "scheduled_drafts": list[int],
    "tokens_used": int, "budget_left": int}``.

    Raises:
        ValueError: a negative budget; ``draft_lens`` not a list or with a negative entry.
    """
    raise NotImplementedError


def rollback_trace(num_computed_tokens: int, blocks_held: int, block_size: int, lookahead: int,
                   kv_bytes_per_token: float, steps: list) -> list[dict]:
    """Replay verification steps ``(drafts, accepted)`` of one request.

    Returns one dict per step: ``{"num_computed_tokens", "tokens_emitted", "num_rejected",
    "blocks_held", "stale_slots": int, "wasted_kv_bytes": float}``.

    Raises:
        ValueError: see the statement (accepted > drafts, too few blocks held, ...).
    """
    raise NotImplementedError


def spec_step(step_model: StepModel, draft_model: StepModel, b: int, c: int, g: int,
              alpha: float) -> dict:
    """A plain decode step and a speculative step (g drafter forwards + one verification) for
    b identical requests with c cached tokens.

    Returns ``{"plain_s", "verify_s", "draft_s", "spec_s", "speedup": float,
    "plain_gemm_bound", "verify_gemm_bound": "memory" | "compute"}``.
    """
    raise NotImplementedError


def losing_batch(step_model: StepModel, draft_model: StepModel, c: int, g: int, alpha: float,
                 kv_pool_tokens: int) -> dict:
    """The smallest batch whose KV fits where speculation delivers fewer tokens/s than plain
    decoding. Returns ``{"max_batch": int, "losing_batch": int | None}``."""
    raise NotImplementedError
