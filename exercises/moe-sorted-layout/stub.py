"""moe-sorted-layout: vLLM's expert-sorted layout, a forward over it, and what it costs."""

from __future__ import annotations

import torch


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int):
    """topk_ids: (T, K) int32/int64, ids in [0, num_experts).

    Returns (sorted_token_ids: int32 (P,), expert_ids: int32 (P // block_size,), P: int) where
    P = num_tokens_post_padded = sum_e ceil(c_e / block_size) * block_size. Entries are flat slots
    t*K + k grouped by expert in increasing expert order; padding is T*K. Raises ValueError.
    """
    raise NotImplementedError


def fused_moe(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
              sorted_token_ids: torch.Tensor, expert_ids: torch.Tensor, block_size: int) -> torch.Tensor:
    """x: (T, H); w1: (E, 2I, H) [gate; up]; w2: (E, H, I); topk_weights: (T, K).

    Runs the blocks of the layout (expert id -1: block skipped); returns (T, H) in x's dtype:
    sum over a token's slots of topk_weights[slot] * w2[e] @ (silu(gate) * up). Raises ValueError.
    """
    raise NotImplementedError


def padding_cost(num_tokens: int, num_experts: int, top_k: int, block_size: int) -> dict:
    """Keys: real_rows (int), expected_padded_rows (float), expected_overhead (float), buffer_rows (int)."""
    raise NotImplementedError


def loop_overheads(num_tokens: int, num_experts: int, top_k: int, hidden: int, num_moe_layers: int,
                   dtype_bytes: int, kernels_per_expert: int) -> dict:
    """Keys: active_experts, launches_per_step, rows_per_active_expert (floats),
    gather_bytes_per_layer, scatter_add_bytes_per_layer (ints)."""
    raise NotImplementedError


def slowdown_causes() -> list[str]:
    """Sorted list of the statement's cause strings that make the per-expert loop slow."""
    raise NotImplementedError
