"""WRONG: batch_for_expert_fraction asks for a share strictly above fraction (> instead of >=); a batch whose share equals fraction exactly already reaches it (E=4, k=2, fraction 0.75: B=2, not 3). Passed while the hidden fractions stayed 1e-9 away from every batch's share."""

from __future__ import annotations

import math

import torch


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_routing(num_experts: int, top_k: int) -> None:
    _check_int("num_experts", num_experts, 1)
    _check_int("top_k", top_k, 1)
    if top_k > num_experts:
        raise ValueError(f"top_k={top_k} exceeds num_experts={num_experts}")


def expected_distinct_experts(num_experts: int, top_k: int, batch: int) -> float:
    """Expected distinct experts one MoE layer reads for a decode batch of ``batch`` tokens."""
    _check_routing(num_experts, top_k)
    _check_int("batch", batch, 0)
    if batch == 0:
        return 0.0
    miss = 1.0 - top_k / num_experts          # one token misses a given expert
    return num_experts * (1.0 - miss ** batch)


def expected_distinct_from_probs(probs) -> float:
    """Expected distinct experts for independent tokens with any routing distribution.

    ``probs: (B, E)``, row b the probability that token b picks each expert (a row sums to k).
    Linearity of expectation: sum over experts of 1 - prod over tokens of (1 - p[b, e]). Only
    these per-token marginals matter, not how a token's k picks are correlated with each other
    (group-limited routing changes the correlation, not necessarily the marginals). Not an
    entrypoint: the editorial's figures on non-uniform routing use it.
    """
    p = torch.as_tensor(probs, dtype=torch.float64)
    return float((1.0 - (1.0 - p).prod(dim=0)).sum())


def distinct_experts(topk_ids: torch.Tensor, num_experts: int) -> int:
    """Distinct experts in one routing decision ``topk_ids: (B, k)`` (integer expert ids)."""
    _check_int("num_experts", num_experts, 1)
    if not isinstance(topk_ids, torch.Tensor) or topk_ids.dim() != 2:
        raise ValueError("topk_ids must be a 2-D tensor (B, k)")
    if topk_ids.dtype.is_floating_point or topk_ids.dtype.is_complex or topk_ids.dtype == torch.bool:
        raise ValueError(f"topk_ids must hold integer expert ids, got {topk_ids.dtype}")
    B, k = topk_ids.shape
    if k < 1 or k > num_experts:
        raise ValueError(f"top_k (columns) must be in [1, num_experts], got {k}")
    if B == 0:
        return 0
    ids = topk_ids.to("cpu", torch.int64)
    if int(ids.min()) < 0 or int(ids.max()) >= num_experts:
        raise ValueError("expert id out of range [0, num_experts)")
    sorted_ids = ids.sort(dim=1).values
    if (sorted_ids[:, 1:] == sorted_ids[:, :-1]).any():
        raise ValueError("a token chose the same expert twice")
    return int(torch.unique(ids).numel())


def _check_sizes(num_moe_layers: int, expert_params: int, always_params: int, bytes_per_param: float) -> None:
    _check_int("num_moe_layers", num_moe_layers, 0)
    _check_int("expert_params", expert_params, 0)
    _check_int("always_params", always_params, 0)
    if isinstance(bytes_per_param, bool) or not isinstance(bytes_per_param, (int, float)) \
            or not math.isfinite(bytes_per_param) or bytes_per_param <= 0:
        raise ValueError("bytes_per_param must be a positive finite number")


def moe_step_bytes(batch: int, num_experts: int, top_k: int, num_moe_layers: int,
                   expert_params: int, always_params: int, bytes_per_param: float) -> float:
    """Expected weight bytes one decode step reads from HBM."""
    _check_routing(num_experts, top_k)
    _check_int("batch", batch, 1)
    _check_sizes(num_moe_layers, expert_params, always_params, bytes_per_param)
    experts = expected_distinct_experts(num_experts, top_k, batch)
    return bytes_per_param * (always_params + num_moe_layers * experts * expert_params)


def moe_cost_profile(batch: int, num_experts: int, top_k: int, num_moe_layers: int,
                     expert_params: int, always_params: int, bytes_per_param: float) -> dict:
    """Step bytes against the two baselines: a dense model of equal size, and 'active params'."""
    step = moe_step_bytes(batch, num_experts, top_k, num_moe_layers, expert_params, always_params,
                          bytes_per_param)
    total_params = always_params + num_moe_layers * num_experts * expert_params
    active_params = always_params + num_moe_layers * top_k * expert_params
    if total_params == 0:
        raise ValueError("the model has no parameters")
    experts = expected_distinct_experts(num_experts, top_k, batch)
    return {
        "experts_per_layer": experts,
        "expert_fraction": experts / num_experts,
        "step_bytes": step,
        "bytes_per_token": step / batch,
        "dense_step_bytes": bytes_per_param * total_params,
        "active_bytes": bytes_per_param * active_params,
        "bandwidth_saving": bytes_per_param * total_params / step,
        "compute_saving": total_params / active_params,
    }


def batch_for_expert_fraction(num_experts: int, top_k: int, fraction: float) -> int:
    """Smallest batch B >= 1 whose expected share of experts touched reaches ``fraction``."""
    _check_routing(num_experts, top_k)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (0.0 < fraction < 1.0):
        raise ValueError("fraction must be a number in (0, 1)")
    miss = 1.0 - top_k / num_experts
    if miss == 0.0:
        return 1
    b = max(1, math.ceil(math.log1p(-fraction) / math.log(miss)))
    # guard the float log against an off-by-one on either side
    while b > 1 and 1.0 - miss ** (b - 1) > fraction:     # WRONG: a share equal to fraction reaches it
        b -= 1
    while 1.0 - miss ** b <= fraction:
        b += 1
    return b
