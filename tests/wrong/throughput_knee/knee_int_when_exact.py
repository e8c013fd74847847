"""Wrong: returns knee_batch as an int when a/c divides exactly (e.g. a = 0), not the float the statement promises."""
import math
from inferprep.specs import GPU, DType

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _isnum(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

def step_time_coefficients(weight_bytes, kv_bytes_per_token, context_len, flops_per_token, gpu, dtype, overhead_s):
    for x in (weight_bytes, kv_bytes_per_token, flops_per_token, overhead_s):
        if not _isnum(x) or x < 0:
            raise ValueError("num")
    if not _isint(context_len) or context_len < 0:
        raise ValueError("ctx")
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("types")
    peak = gpu.dense_flops(dtype)
    a = overhead_s + weight_bytes / gpu.hbm_bytes_per_s
    c = context_len * kv_bytes_per_token / gpu.hbm_bytes_per_s + flops_per_token / peak
    if not c > 0:
        raise ValueError("c")
    return (float(a), float(c))

def fit_step_time(batches, step_times_s):
    if len(batches) != len(step_times_s):
        raise ValueError("len")
    for b in batches:
        if not _isint(b) or b < 1:
            raise ValueError("b")
    for t in step_times_s:
        if not _isnum(t) or t <= 0:
            raise ValueError("t")
    if len(set(batches)) < 2:
        raise ValueError("distinct")
    n = len(batches)
    mb = sum(batches) / n
    mt = sum(step_times_s) / n
    sxy = sum((b - mb) * (t - mt) for b, t in zip(batches, step_times_s))
    sxx = sum((b - mb) ** 2 for b in batches)
    c = sxy / sxx
    a = mt - c * mb
    return (float(a), float(c))

def _ac(a, c):
    if not _isnum(a) or not _isnum(c) or a < 0 or c <= 0:
        raise ValueError("a c")

def knee_batch(a, c):
    _ac(a, c)
    return a / c if a % c else int(a // c)

def batch_for_fraction(a, c, fraction):
    _ac(a, c)
    if not _isnum(fraction) or not (0 < fraction < 1):
        raise ValueError("fraction")
    # b/(a+cb) >= f/c  <=> b c >= f a + f c b <=> b >= f a / (c (1-f))
    x = fraction * a / (c * (1 - fraction))
    return max(1, math.ceil(x))

def max_batch_kv(kv_pool_bytes, kv_bytes_per_token, context_len, block_size):
    for x in (kv_pool_bytes, kv_bytes_per_token, context_len, block_size):
        if not _isint(x):
            raise ValueError("int")
    if kv_pool_bytes < 0 or kv_bytes_per_token < 1 or context_len < 1 or block_size < 1:
        raise ValueError("range")
    per = -(-context_len // block_size) * block_size * kv_bytes_per_token
    return kv_pool_bytes // per

def throughput_report(a, c, max_batch, fraction):
    _ac(a, c)
    if not _isint(max_batch) or max_batch < 1:
        raise ValueError("mb")
    bf = batch_for_fraction(a, c, fraction)
    X = max_batch / (a + c * max_batch)
    return {"ceiling_tokens_per_s": 1 / c, "knee_batch": a / c, "batch_for_fraction": bf,
            "max_throughput_tokens_per_s": X, "fraction_of_ceiling": c * X,
            "binding": "kv_cache" if max_batch < bf else "compute"}
