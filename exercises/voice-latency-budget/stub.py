"""voice-latency-budget: a 300 ms budget to the first audible clause, and the LLM tier it sizes.

``step_model`` is an ``inferprep.sim.step_model.StepModel`` (you may call ``step_model.step_s``).
Every rule is in the statement.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def budget_lines(budget_ms: float, lines: dict) -> dict:
    """The LLM's share and the largest line.

    ``lines``: exactly the keys "capture", "network_rtt", "endpoint", "asr", "tts", "playout"
    (ms >= 0). Returns ``{"llm_share_ms": float, "largest_line": str,
    "largest_is_model": bool}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def first_clause(step_model: StepModel, batch: int, turn: dict) -> dict:
    """TTFT, TPOT and time to the first clause, in ms, for a replica decoding ``batch`` turns.

    ``turn``: {"ctx", "new_tokens", "cached_tokens", "clause_tokens"} (ints).
    Returns ``{"ttft_ms": float, "tpot_ms": float, "first_clause_ms": float}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def size_llm_tier(step_model: StepModel, share_ms: float, queue_reserve_ms: float, turn: dict,
                  max_num_seqs: int, traffic: dict) -> dict:
    """The largest batch meeting the share and the replicas a call volume needs.

    ``traffic``: {"calls", "turn_interval_s", "tokens_per_turn", "rho"}.
    Returns ``{"b_max": int, "tpot_ms": float, "first_clause_ms": float,
    "concurrent_turns": float, "replicas": int | None, "gpus": int | None}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError
