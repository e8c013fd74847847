"""WRONG (input checks): accepts context_len=True (bool is an int subclass), which the statement rejects."""
import math
from inferprep.specs import GPU, DType

def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

def generation_speedup(old, new, dtype, weight_bytes, kv_bytes_per_token, context_len,
                       flops_per_token, memory_fraction, reserve_bytes):
    if not isinstance(old, GPU) or not isinstance(new, GPU) or not isinstance(dtype, DType):
        raise ValueError("types")
    po, pn = old.dense_flops(dtype), new.dense_flops(dtype)
    for x in (weight_bytes, kv_bytes_per_token, flops_per_token):
        if not _num(x) or x <= 0:
            raise ValueError("pos")
    if not _num(reserve_bytes) or reserve_bytes < 0:
        raise ValueError("reserve")
    if not _num(memory_fraction) or not (0 < memory_fraction <= 1):
        raise ValueError("frac")
    if not isinstance(context_len, int) or context_len < 1:
        raise ValueError("ctx")

    def B(g):
        num = memory_fraction * g.hbm_bytes - weight_bytes - reserve_bytes
        if num <= 0:
            return 0
        return math.floor(num / (context_len * kv_bytes_per_token))

    def X(g, b):
        return b / max((weight_bytes + b * context_len * kv_bytes_per_token) / g.hbm_bytes_per_s,
                       b * flops_per_token / g.dense_flops(dtype))

    bo, bn = B(old), B(new)
    if bo < 1 or bn < 1:
        raise ValueError("does not fit")
    res = {"compute": pn / po, "bandwidth": new.hbm_bytes_per_s / old.hbm_bytes_per_s,
           "capacity": X(new, bn) / X(old, bo), "max_batch_old": bo, "max_batch_new": bn}
    best = "compute"
    for k in ("bandwidth", "capacity"):
        if res[k] > res[best]:
            best = k
    res["largest"] = best
    return res
