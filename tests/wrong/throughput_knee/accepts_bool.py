"""WRONG (input checks): takes a bool for an int argument (True is an int in Python).

The statement says a bool is not an int; the old grader never passed one, so this passed.
"""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType

BINDINGS = ("kv_cache", "compute")


def _num(name: str, v, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number")
    if positive and v <= 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return float(v)


def _int(name: str, v, lo: int) -> int:
    if not isinstance(v, int) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return v


def step_time_coefficients(weight_bytes: float, kv_bytes_per_token: float, context_len: int,
                           flops_per_token: float, gpu: GPU, dtype: DType, overhead_s: float) -> tuple[float, float]:
    """(a, c) of t(b) = a + c*b from roofline terms, memory and compute time added (no overlap)."""
    w = _num("weight_bytes", weight_bytes, nonneg=True)
    kv = _num("kv_bytes_per_token", kv_bytes_per_token, nonneg=True)
    ctx = _int("context_len", context_len, 0)
    f = _num("flops_per_token", flops_per_token, nonneg=True)
    o = _num("overhead_s", overhead_s, nonneg=True)
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("gpu must be an inferprep.specs.GPU and dtype an inferprep.specs.DType")
    bw = gpu.hbm_bytes_per_s
    a = o + w / bw
    c = ctx * kv / bw + f / gpu.dense_flops(dtype)
    if c <= 0:
        raise ValueError("the per-sequence cost c must be > 0")
    return a, c


def fit_step_time(batches: list, step_times_s: list) -> tuple[float, float]:
    """Ordinary least squares fit of t = a + c*b to measured (batch, step time) points."""
    if not isinstance(batches, (list, tuple)) or not isinstance(step_times_s, (list, tuple)):
        raise ValueError("batches and step_times_s must be lists")
    if len(batches) != len(step_times_s):
        raise ValueError("batches and step_times_s differ in length")
    bs = [float(_int("batch", b, 1)) for b in batches]
    ts = [_num("step time", t, positive=True) for t in step_times_s]
    if len(set(bs)) < 2:
        raise ValueError("need at least two distinct batch sizes")
    n = len(bs)
    mb, mt = sum(bs) / n, sum(ts) / n
    sxx = sum((b - mb) ** 2 for b in bs)
    sxy = sum((b - mb) * (t - mt) for b, t in zip(bs, ts))
    c = sxy / sxx
    return mt - c * mb, c


def _check_ac(a, c) -> tuple[float, float]:
    return _num("a", a, nonneg=True), _num("c", c, positive=True)


def knee_batch(a: float, c: float) -> float:
    """Batch where the fixed and per-sequence costs are equal; throughput is half the ceiling."""
    a, c = _check_ac(a, c)
    return a / c


def batch_for_fraction(a: float, c: float, fraction: float) -> int:
    """Smallest integer b >= 1 with X(b) >= fraction / c."""
    a, c = _check_ac(a, c)
    f = _num("fraction", fraction)
    if not 0.0 < f < 1.0:
        raise ValueError("fraction must be in (0, 1)")
    return max(1, math.ceil(f * a / ((1.0 - f) * c)))


def max_batch_kv(kv_pool_bytes: int, kv_bytes_per_token: int, context_len: int, block_size: int) -> int:
    """Sequences of context_len tokens whose KV blocks fit in the pool at once."""
    pool = _int("kv_pool_bytes", kv_pool_bytes, 0)
    per_tok = _int("kv_bytes_per_token", kv_bytes_per_token, 1)
    ctx = _int("context_len", context_len, 1)
    bs = _int("block_size", block_size, 1)
    per_seq = -(-ctx // bs) * bs * per_tok
    return pool // per_seq


def throughput(a: float, c: float, batch: int) -> float:
    a, c = _check_ac(a, c)
    b = _int("batch", batch, 1)
    return b / (a + c * b)


def throughput_report(a: float, c: float, max_batch: int, fraction: float) -> dict:
    """The ceiling, the knee, and which ceiling binds at the KV-limited batch."""
    a, c = _check_ac(a, c)
    mb = _int("max_batch", max_batch, 1)
    bf = batch_for_fraction(a, c, fraction)
    x = mb / (a + c * mb)
    return {
        "ceiling_tokens_per_s": 1.0 / c,
        "knee_batch": a / c,
        "batch_for_fraction": bf,
        "max_throughput_tokens_per_s": x,
        "fraction_of_ceiling": x * c,
        "binding": "kv_cache" if mb < bf else "compute",
    }
