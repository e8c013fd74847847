"""ridge-point: the roofline's ridge and the decode batch at which weight GEMMs reach it.

Inputs are ``inferprep.specs`` values: ``GPU`` (e.g. ``H100_SXM``; dense peaks in FLOP/s,
``hbm_bytes_per_s`` in bytes/s) and ``DType`` (``bytes_per_element``). The graders also pass
made-up GPUs. Use ``gpu.dense_flops(dtype)`` for the peak; it raises ValueError where the table
has none.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU


def ridge_point(gpu: GPU, dtype: DType) -> float:
    """Ridge point of ``gpu`` for tensor-core math in ``dtype``: dense peak / HBM bandwidth
    (FLOP/byte).

    Raises:
        ValueError: ``dtype`` has no dense peak on ``gpu`` (e.g. FP8 on A100, INT8, FP32).
    """
    raise NotImplementedError


def roofline(gpu: GPU, dtype: DType, intensity: float) -> dict:
    """The roofline at arithmetic intensity ``intensity`` (FLOP/byte, >= 0).

    Returns ``{"ridge": float, "attainable_flops": float, "bound": "memory" | "compute"}``:
    attainable = min(peak, intensity * bandwidth) in FLOP/s; "compute" when intensity >= ridge.

    Raises:
        ValueError: ``intensity`` negative, NaN or infinite; ``dtype`` without a peak.
    """
    raise NotImplementedError


def decode_gemm_intensity(batch: int, weight_dtype: DType) -> float:
    """Arithmetic intensity (FLOP/byte) of a decode weight GEMM over ``batch`` tokens whose
    weights are stored in ``weight_dtype``; only weight bytes count.

    Raises:
        ValueError: ``batch`` not an int >= 1.
    """
    raise NotImplementedError


def compute_bound_batch(gpu: GPU, weight_dtype: DType, compute_dtype: DType) -> int:
    """Smallest decode batch (>= 1) at which a weight GEMM with weights in ``weight_dtype`` and
    math in ``compute_dtype`` is compute-bound (intensity >= ridge of ``compute_dtype``).

    Raises:
        ValueError: ``compute_dtype`` without a peak on ``gpu``.
    """
    raise NotImplementedError
