"""Speedup of one GPU over another in three regimes. GPU constants come from inferprep.specs
(NVIDIA datasheets: dense tensor-core peaks, HBM bandwidth and capacity). Definitions: statement.md."""

from __future__ import annotations

from inferprep.specs import GPU, DType


def generation_speedup(old: GPU, new: GPU, dtype: DType, weight_bytes: float, kv_bytes_per_token: float,
                       context_len: int, flops_per_token: float, memory_fraction: float,
                       reserve_bytes: float) -> dict:
    """Per-GPU sizes in bytes and FLOPs.

    Returns: {"compute": float, "bandwidth": float, "capacity": float, "max_batch_old": int,
        "max_batch_new": int, "largest": "compute" | "bandwidth" | "capacity"}.
    Raises: ValueError on bad types or ranges, no dense peak for dtype, or when not even one
        sequence fits on either GPU.
    """
    raise NotImplementedError
