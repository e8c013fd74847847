"""WRONG (input checks): roofline picks the peak by hand and falls back to the 16-bit peak, so FP8 on an A100 or INT4 math gets a roofline instead of a ValueError.

The old grader tried those dtypes on ridge_point and compute_bound_batch only, so this passed.
"""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_dtype(name: str, v) -> None:
    if not isinstance(v, DType):
        raise ValueError(f"{name} must be an inferprep.specs.DType, got {type(v).__name__}")


def ridge_point(gpu: GPU, dtype: DType) -> float:
    """Dense tensor-core peak for ``dtype`` over peak HBM bandwidth, FLOP/byte."""
    _check_dtype("dtype", dtype)
    return gpu.dense_flops(dtype) / gpu.hbm_bytes_per_s


def roofline(gpu: GPU, dtype: DType, intensity: float) -> dict:
    """Attainable FLOP/s at ``intensity`` and which roof binds ("memory" below the ridge)."""
    _check_dtype("dtype", dtype)
    if isinstance(intensity, bool) or not isinstance(intensity, (int, float)) \
            or not math.isfinite(intensity) or intensity < 0:
        raise ValueError(f"intensity must be a finite number >= 0, got {intensity!r}")
    # FP8 where the GPU has it, else the 16-bit peak
    peak = gpu.fp8_dense_flops if dtype is DType.FP8 and gpu.fp8_dense_flops else gpu.bf16_dense_flops
    ridge = peak / gpu.hbm_bytes_per_s
    return {"ridge": ridge,
            "attainable_flops": min(peak, intensity * gpu.hbm_bytes_per_s),
            "bound": "compute" if intensity >= ridge else "memory"}


def decode_gemm_intensity(batch: int, weight_dtype: DType) -> float:
    """FLOPs per weight byte of a decode GEMM over ``batch`` tokens: 2 * batch / bytes per weight."""
    _check_int("batch", batch, 1)
    _check_dtype("weight_dtype", weight_dtype)
    return 2 * batch / weight_dtype.bytes_per_element


def compute_bound_batch(gpu: GPU, weight_dtype: DType, compute_dtype: DType) -> int:
    """Smallest decode batch whose weight GEMMs reach the ridge of ``compute_dtype``."""
    _check_dtype("weight_dtype", weight_dtype)
    ridge = ridge_point(gpu, compute_dtype)
    return max(1, math.ceil(ridge * weight_dtype.bytes_per_element / 2))
