"""roofline-server-model: a decode step-time model from roofline terms, residuals against measured
points, and the regimes where the model should not be trusted.

Inputs are ``inferprep.specs`` values: a dense ``ModelConfig``, a ``GPU`` (peak HBM bandwidth,
dense tensor-core peaks, NVLink both directions summed) and ``DType`` s. Times in seconds.
Exact definitions in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig

FLAGS = ("small_batch_overhead", "long_context_attention", "kv_capacity", "communication")
CHECKS = {
    "small_batch_overhead": "batch1_with_and_without_cuda_graphs",
    "long_context_attention": "context_sweep_at_fixed_batch",
    "kv_capacity": "engine_log_max_concurrency",
    "communication": "nccl_allreduce_at_message_size",
}


def step_model(model: ModelConfig, gpu: GPU, tp: int, batch: int, context_len: int,
               weight_dtype: DType, kv_dtype: DType, overhead_s: float, bw_efficiency: float,
               allreduce_latency_s: float, link_bytes_per_s: float | None = None) -> dict:
    """Modelled time of one decode step on one GPU of a TP group.

    Returns ``{"weight_s", "kv_s", "compute_s", "comm_s", "overhead_s", "t_s": float,
    "binding": "memory" | "compute"}`` with
    t_s = overhead_s + max(weight_s + kv_s, compute_s) + comm_s.

    Raises:
        ValueError: a bad model, GPU, dtype, tp, batch, context_len, overhead, efficiency,
            latency or link bandwidth (see the statement).
    """
    raise NotImplementedError


def regime_flags(step: dict, batch: int, context_len: int, tp: int, num_blocks: int,
                 block_size: int) -> list[str]:
    """The flags of ``FLAGS`` (in that order) that hold for a ``step_model`` result.

    Raises:
        ValueError: batch, context_len, tp or block_size not an int >= 1; num_blocks not an
            int >= 0.
    """
    raise NotImplementedError


def audit(points: list[dict], model: ModelConfig, gpu: GPU, weight_dtype: DType, kv_dtype: DType,
          overhead_s: float, bw_efficiency: float, allreduce_latency_s: float, num_blocks: int,
          block_size: int, tol: float, link_bytes_per_s: float | None = None) -> list[dict]:
    """Per point ``{"tp", "batch", "context_len", "measured_s"}``, in order:
    ``{"model_s", "residual", "outside_tol", "flags", "checks", "trusted"}``.

    Raises:
        ValueError: empty or malformed points, measured_s or tol not finite and > 0, and the
            errors of ``step_model`` and ``regime_flags``.
    """
    raise NotImplementedError
