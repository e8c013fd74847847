"""Time a kernel and check the number against the roofline (see statement.md).

Objects you receive (``inferprep.sim.kernel_clock`` has real ones for CUDA and CPU):
    kernel()                       launch the work once (asynchronous on a GPU)
    flush()                        launch a write over more than the L2 cache
    timer.record() -> int          timestamp event on the device stream, in launch order
    timer.synchronize()            wait until everything queued has run
    timer.elapsed(a, b) -> float   seconds between events a and b; RuntimeError if either has
                                   not completed yet
"""

from __future__ import annotations

from inferprep.specs import GPU, DType


def time_kernel(kernel, flush, timer, warmup: int, reps: int) -> dict:
    """Warm up, then time ``reps`` cold-cache launches on device events.

    Args:
        warmup: untimed launches first (int >= 0).
        reps: timed launches (int >= 1), each after a flush.

    Returns:
        {"times": list of reps floats (seconds, in order), "median": float, "iqr": float
        (75th - 25th percentile, linear interpolation), "min": float}.

    Raises:
        ValueError: warmup < 0, reps < 1, or either not an int (before any launch).
    """
    raise NotImplementedError


def check_plausible(seconds: float, bytes_moved: float, flops: float, gpu: GPU, dtype: DType) -> dict:
    """Achieved bandwidth and FLOP/s against the GPU's peaks (``inferprep.specs``).

    Returns:
        {"bytes_per_s", "flops_per_s", "bandwidth_fraction", "compute_fraction", "floor_s",
        "plausible"}: fractions of ``gpu.hbm_bytes_per_s`` and ``gpu.dense_flops(dtype)``;
        floor_s = max(bytes / bandwidth, flops / peak) in seconds; plausible = seconds >= floor_s.

    Raises:
        ValueError: seconds <= 0 or not finite; negative or non-finite bytes/flops; no dense
        peak for dtype on this GPU.
    """
    raise NotImplementedError
