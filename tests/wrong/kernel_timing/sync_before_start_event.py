"""WRONG: waits for the flush (synchronize) before recording the start event, so each interval also holds the kernel's launch latency.

After the synchronize the stream is idle: the GPU stamps the start event at once and then waits
for the host to launch the kernel. Events exclude launch overhead only while the host is ahead of
the GPU; the flush queued before the start event is what keeps it ahead (Triton's do_bench:
clear the cache, record, run, record, synchronize once at the end). The old simulated device
started a kernel the instant the host called it, so this passed.
"""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's and torch's default)."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def time_kernel(kernel, flush, timer, warmup: int, reps: int) -> dict:
    for name, v, least in (("warmup", warmup, 0), ("reps", reps, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ValueError(f"{name} must be an int >= {least}, got {v!r}")
    for _ in range(warmup):          # JIT, autotuning, lazy init, clocks: not part of the number
        kernel()
    spans = []
    for _ in range(reps):
        flush()                      # cold L2: the kernel reads from HBM as it will in the model
        timer.synchronize()          # "make sure the flush is done before timing"
        start = timer.record()
        kernel()
        spans.append((start, timer.record()))
    timer.synchronize()              # events can only be read once the device has passed them
    times = [timer.elapsed(a, b) for a, b in spans]
    return {
        "times": times,
        "median": _quantile(times, 0.5),
        "iqr": _quantile(times, 0.75) - _quantile(times, 0.25),
        "min": min(times),
    }


def check_plausible(seconds: float, bytes_moved: float, flops: float, gpu: GPU, dtype: DType) -> dict:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
    for name, v in (("bytes_moved", bytes_moved), ("flops", flops)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    peak = gpu.dense_flops(dtype)    # ValueError for a dtype without a tensor-core peak
    bw = gpu.hbm_bytes_per_s
    floor = max(bytes_moved / bw, flops / peak)
    return {
        "bytes_per_s": bytes_moved / seconds,
        "flops_per_s": flops / seconds,
        "bandwidth_fraction": bytes_moved / seconds / bw,
        "compute_fraction": flops / seconds / peak,
        "floor_s": floor,
        "plausible": seconds >= floor,
    }
