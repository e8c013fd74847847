"""decode-floor: the millisecond floor of one decode step and the gaps above it.

Inputs are ``inferprep.specs`` values: a dense ``ModelConfig``, a ``GPU`` (``hbm_bytes_per_s``:
peak HBM bandwidth, bytes/s) and ``DType`` s (``bytes_per_element``). Definitions in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def decode_floor(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
                 kv_dtype: DType) -> dict:
    """Bytes one decode step reads and the time floor they set at peak bandwidth.

    ``context_lens[i]``: keys sequence i attends to this step (its own new token included).
    Returns ``{"weight_bytes": float, "kv_bytes": float, "floor_ms": float}``.

    Raises:
        ValueError: ``context_lens`` not a non-empty list or tuple, a length not an int >= 1, an MoE model, an
            inconsistent model (see the statement).
    """
    raise NotImplementedError


def decode_gaps(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
                kv_dtype: DType, bandwidth_efficiency: float, overhead_ms: float) -> dict:
    """A modelled step time split into the weight floor and three gaps.

    Returns ``{"weights_ms", "kv_ms", "bandwidth_gap_ms", "overhead_ms", "step_ms": float,
    "largest_gap": "kv" | "bandwidth" | "overhead"}``.

    Raises:
        ValueError: as ``decode_floor``; ``bandwidth_efficiency`` outside (0, 1];
            ``overhead_ms`` negative or not finite.
    """
    raise NotImplementedError
