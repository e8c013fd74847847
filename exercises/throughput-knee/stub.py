"""The throughput knee of t(b) = a + c*b (seconds per decode step of b sequences).

Throughput X(b) = b / (a + c*b) tokens/s, ceiling 1/c. GPU and dtype come from inferprep.specs
(datasheet peaks: dense tensor-core FLOP/s, peak HBM bytes/s). Full definitions: statement.md.
"""

from __future__ import annotations

from inferprep.specs import GPU, DType


def step_time_coefficients(weight_bytes: float, kv_bytes_per_token: float, context_len: int,
                           flops_per_token: float, gpu: GPU, dtype: DType, overhead_s: float) -> tuple[float, float]:
    """(a, c) in seconds and seconds per sequence.

    a = overhead_s + weight_bytes / gpu.hbm_bytes_per_s
    c = context_len * kv_bytes_per_token / gpu.hbm_bytes_per_s + flops_per_token / gpu.dense_flops(dtype)
    Raises: ValueError on negative or non-finite inputs, wrong types, no peak for dtype, or c <= 0.
    """
    raise NotImplementedError


def fit_step_time(batches: list[int], step_times_s: list[float]) -> tuple[float, float]:
    """Ordinary least squares (a, c) of step time (s) on batch size.

    Raises: ValueError on length mismatch, batch not an int >= 1, time not finite > 0, or fewer
        than two distinct batch sizes.
    """
    raise NotImplementedError


def knee_batch(a: float, c: float) -> float:
    """a / c: the batch at which throughput is half the ceiling. Raises ValueError unless a >= 0, c > 0."""
    raise NotImplementedError


def batch_for_fraction(a: float, c: float, fraction: float) -> int:
    """Smallest int b >= 1 with b / (a + c*b) >= fraction / c. Raises ValueError unless 0 < fraction < 1."""
    raise NotImplementedError


def max_batch_kv(kv_pool_bytes: int, kv_bytes_per_token: int, context_len: int, block_size: int) -> int:
    """Resident sequences: kv_pool_bytes // (ceil(context_len / block_size) * block_size * kv_bytes_per_token)."""
    raise NotImplementedError


def throughput_report(a: float, c: float, max_batch: int, fraction: float) -> dict:
    """Dict with keys ceiling_tokens_per_s, knee_batch, batch_for_fraction, max_throughput_tokens_per_s,
    fraction_of_ceiling, binding ("kv_cache" | "compute"). See the statement's table."""
    raise NotImplementedError
