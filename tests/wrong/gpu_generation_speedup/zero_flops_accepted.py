"""WRONG (input checks): lets flops_per_token be 0 (checks >= 0 instead of > 0); the roofline then
has no compute side and a result comes back where the statement asks for a ValueError."""
from __future__ import annotations

import math

from inferprep.specs import GPU, DType

REGIMES = ("compute", "bandwidth", "capacity")


def _pos(name: str, v, *, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {v!r}")
    return float(v)


def max_batch(gpu: GPU, weight_bytes: float, kv_bytes_per_token: float, context_len: int,
              memory_fraction: float, reserve_bytes: float) -> int:
    """Sequences of context_len tokens whose KV fits beside the weights on this GPU."""
    pool = memory_fraction * gpu.hbm_bytes - weight_bytes - reserve_bytes
    if pool <= 0:
        return 0
    return math.floor(pool / (context_len * kv_bytes_per_token))


def decode_throughput(gpu: GPU, dtype: DType, weight_bytes: float, kv_bytes_per_token: float, context_len: int,
                      flops_per_token: float, batch: int) -> float:
    """Tokens/s of a decode step of ``batch`` sequences on the roofline (no overhead)."""
    t_mem = (weight_bytes + batch * context_len * kv_bytes_per_token) / gpu.hbm_bytes_per_s
    t_cmp = batch * flops_per_token / gpu.dense_flops(dtype)
    return batch / max(t_mem, t_cmp)


def generation_speedup(old: GPU, new: GPU, dtype: DType, weight_bytes: float, kv_bytes_per_token: float,
                       context_len: int, flops_per_token: float, memory_fraction: float,
                       reserve_bytes: float) -> dict:
    """Speedup of ``new`` over ``old`` in the three regimes, and which is largest."""
    if not isinstance(old, GPU) or not isinstance(new, GPU) or not isinstance(dtype, DType):
        raise ValueError("old and new must be inferprep.specs.GPU and dtype an inferprep.specs.DType")
    w = _pos("weight_bytes", weight_bytes)
    kv = _pos("kv_bytes_per_token", kv_bytes_per_token)
    f = _pos("flops_per_token", flops_per_token, allow_zero=True)
    r = _pos("reserve_bytes", reserve_bytes, allow_zero=True)
    frac = _pos("memory_fraction", memory_fraction)
    if frac > 1.0:
        raise ValueError("memory_fraction must be in (0, 1]")
    if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
        raise ValueError("context_len must be an int >= 1")
    b_old = max_batch(old, w, kv, context_len, frac, r)
    b_new = max_batch(new, w, kv, context_len, frac, r)
    if b_old < 1 or b_new < 1:
        raise ValueError("not even one sequence fits on one of the GPUs")
    speedups = {
        "compute": new.dense_flops(dtype) / old.dense_flops(dtype),
        "bandwidth": new.hbm_bytes_per_s / old.hbm_bytes_per_s,
        "capacity": decode_throughput(new, dtype, w, kv, context_len, f, b_new)
        / decode_throughput(old, dtype, w, kv, context_len, f, b_old),
    }
    best = max(REGIMES, key=lambda k: (speedups[k], -REGIMES.index(k)))
    return {**speedups, "max_batch_old": b_old, "max_batch_new": b_new, "largest": best}
