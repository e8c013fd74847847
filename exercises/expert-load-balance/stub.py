"""expert-load-balance: the step time of an expert-parallel MoE layer, the skew threshold,
DeepSeek's EPLB placement rule and the decay of a stale placement.

Inputs are plain lists of numbers, ``inferprep.specs`` values (``GPU``, ``DType``) and ints.
Definitions, tie rules and errors are in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU


def gpu_step_time(counts: list[float], gpu_of: list[int], n_gpus: int, gpu: GPU, dtype: DType,
                  expert_bytes: float, flops_per_token: float) -> dict:
    """Per-GPU time of one MoE layer step and the step time (the busiest GPU).

    ``counts[i]``: tokens physical expert i processes this step; ``gpu_of[i]``: its GPU.
    Returns ``{"per_gpu_s": list[float] (n_gpus,), "step_s": float, "busiest_gpu": int}``.

    Raises:
        ValueError: see the statement (lengths, GPU indices, negative or non-finite counts,
            dtype without a tensor-core peak, non-positive sizes).
    """
    raise NotImplementedError


def skew_threshold(expert_counts: list[float], top_k: int, gpu: GPU, dtype: DType, expert_bytes: float,
                   flops_per_token: float) -> dict:
    """Tokens per step at which the hottest expert's GEMM turns compute-bound.

    Returns ``{"ridge_tokens_per_expert": float, "hot_share": float, "threshold_batch": float}``.
    """
    raise NotImplementedError


def rebalance(load: list[float], num_physical: int, n_gpus: int, n_groups: int = 1, n_nodes: int = 1) -> dict:
    """DeepSeek's EPLB rule: replicate hot experts, pack the replicas onto GPUs.

    Returns ``{"phy2log": list[int] (num_physical,), "replica_count": list[int] (E,),
    "gpu_load": list[float] (n_gpus,)}``; slot s lives on GPU ``s // (num_physical // n_gpus)``.
    """
    raise NotImplementedError


def decay_curve(daily_loads: list[list[float]], num_physical: int, n_gpus: int, gpu: GPU, dtype: DType,
                expert_bytes: float, flops_per_token: float, n_groups: int = 1, n_nodes: int = 1) -> list[float]:
    """Step time under the plan fit to day 0, divided by the step time under the plan fit to the
    same day, for every day (the first ratio is 1.0)."""
    raise NotImplementedError
