"""WRONG (input checks): checks `reps` only after the warm-up launches, so an invalid `reps` raises ValueError
after the kernel already ran (the statement says: before launching anything)."""

from __future__ import annotations
import math
from inferprep.specs import GPU, DType

def _quantile(s, q):
    n = len(s)
    h = q * (n - 1)
    lo = math.floor(h)
    if lo + 1 >= n:
        return s[lo]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])

def time_kernel(kernel, flush, timer, warmup: int, reps: int) -> dict:
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    for _ in range(warmup):
        kernel()
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError(f"reps must be an int >= 1, got {reps!r}")
    events = []
    for _ in range(reps):
        flush()
        a = timer.record()
        kernel()
        b = timer.record()
        events.append((a, b))
    timer.synchronize()
    times = [float(timer.elapsed(a, b)) for a, b in events]
    s = sorted(times)
    return {"times": times, "median": _quantile(s, 0.5), "iqr": _quantile(s, 0.75) - _quantile(s, 0.25), "min": s[0]}

def _num(x):
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)

def check_plausible(seconds, bytes_moved, flops, gpu: GPU, dtype: DType) -> dict:
    if not _num(seconds) or seconds <= 0:
        raise ValueError("seconds must be a finite number > 0")
    if not _num(bytes_moved) or bytes_moved < 0:
        raise ValueError("bytes_moved must be finite and >= 0")
    if not _num(flops) or flops < 0:
        raise ValueError("flops must be finite and >= 0")
    peak = gpu.dense_flops(dtype)
    bw = gpu.hbm_bytes_per_s
    floor_s = max(bytes_moved / bw, flops / peak)
    return {"bytes_per_s": bytes_moved / seconds, "flops_per_s": flops / seconds,
            "bandwidth_fraction": (bytes_moved / seconds) / bw,
            "compute_fraction": (flops / seconds) / peak,
            "floor_s": floor_s, "plausible": seconds >= floor_s}
