"""moe-calibration: calibration tokens per expert, GPTQ vs round-to-nearest, a coverage plan."""

from __future__ import annotations

import torch


def expert_token_counts(router_logits: torch.Tensor, top_k: int) -> list[int]:
    """router_logits: (N, E) floating. Each row picks its top_k largest logits (ties: lower expert
    id first). Returns the number of tokens routed to each expert (list of E ints)."""
    raise NotImplementedError


def expected_tokens(routing_share: list[float], num_tokens: int, top_k: int) -> dict:
    """Keys 'expected' (n * k * share per expert) and 'p_zero' ((1 - k * share) ** n), lists of floats."""
    raise NotImplementedError


def rtn_quantize(W: torch.Tensor, bits: int) -> torch.Tensor:
    """Round-to-nearest on GPTQ's asymmetric per-row grid. Returns float64 (d_out, d_in)."""
    raise NotImplementedError


def gptq_quantize(W: torch.Tensor, X: torch.Tensor, bits: int, percdamp: float = 0.01,
                  blocksize: int = 128, act_order: bool = False) -> torch.Tensor:
    """GPTQ of W (d_out, d_in) calibrated on X (n, d_in), in float64, pinned as the statement says.
    No rows (or all-zero X): returns rtn_quantize(W, bits)."""
    raise NotImplementedError


def gptq_vs_rtn(W: torch.Tensor, X_calib: torch.Tensor, X_test: torch.Tensor, token_grid: list[int],
                bits: int, percdamp: float) -> dict:
    """Keys 'rtn_error' (float), 'gptq_errors' (list of floats, one per grid entry), 'crossover' (int or None)."""
    raise NotImplementedError


def calibration_plan(routed_counts: list[int], targeted_counts: list[int], d_in: int,
                     min_tokens_per_dim: float) -> list[str]:
    """One of 'gptq', 'gptq_targeted', 'rtn' per expert."""
    raise NotImplementedError
