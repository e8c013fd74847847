"""How many experts does one MoE decode step read? See the statement for every definition.

Routing model: each token picks top_k distinct experts out of num_experts, every k-subset
equally likely, tokens independent. Constants for DeepSeek-V3 come from its Hugging Face
config.json (n_routed_experts 256, num_experts_per_tok 8, 58 MoE layers, expert = 3*7168*2048
params); see also inferprep.specs.
"""

from __future__ import annotations

import torch


def expected_distinct_experts(num_experts: int, top_k: int, batch: int) -> float:
    """Expected distinct experts one MoE layer touches for ``batch`` decode tokens.

    Args: num_experts E >= 1, top_k k in [1, E], batch B >= 0 (all int, not bool).
    Returns: a float in [0, E]; 0.0 for B = 0. Relative tolerance 1e-9.
    Raises: ValueError on any argument outside those ranges.
    """
    raise NotImplementedError


def distinct_experts(topk_ids: torch.Tensor, num_experts: int) -> int:
    """Distinct expert ids in one routing decision.

    Args: topk_ids: (B, k) integer tensor (any integer dtype, any device); num_experts: int >= 1.
    Returns: int, 0 when B = 0.
    Raises: ValueError if topk_ids is not a 2-D integer tensor, k is not in [1, num_experts],
        an id is outside [0, num_experts), or a row repeats an id.
    """
    raise NotImplementedError


def moe_step_bytes(batch: int, num_experts: int, top_k: int, num_moe_layers: int,
                   expert_params: int, always_params: int, bytes_per_param: float) -> float:
    """Expected weight bytes one decode step reads from HBM (bytes, float).

    bytes_per_param * (always_params + num_moe_layers * D(B) * expert_params), D(B) the expected
    distinct experts per layer. always_params: weights read in full every step (attention, dense
    MLPs, shared experts, routers, final norm, LM head; not the embedding table).
    Raises: ValueError on batch < 1, negative sizes, bytes_per_param not finite > 0, or the
        routing errors of expected_distinct_experts.
    """
    raise NotImplementedError


def moe_cost_profile(batch: int, num_experts: int, top_k: int, num_moe_layers: int,
                     expert_params: int, always_params: int, bytes_per_param: float) -> dict:
    """Step bytes against a dense model of equal size and against the active-params estimate.

    Returns: dict with float values under exactly the keys "experts_per_layer",
        "expert_fraction", "step_bytes", "bytes_per_token", "dense_step_bytes", "active_bytes",
        "bandwidth_saving", "compute_saving" (definitions in the statement).
    Raises: as moe_step_bytes, and ValueError when the model has no parameters.
    """
    raise NotImplementedError


def batch_for_expert_fraction(num_experts: int, top_k: int, fraction: float) -> int:
    """Smallest batch B >= 1 with 1 - (1 - k/E)**B >= fraction.

    Raises: ValueError on routing errors or fraction outside the open interval (0, 1).
    """
    raise NotImplementedError
