"""batch1-gap: attribute a batch-1 decode step's time above the byte floor, from one trace.

Inputs: a PyTorch-profiler-like Chrome trace (a dict with a ``"traceEvents"`` list) and
``inferprep.specs`` values (a dense ``ModelConfig``, a ``GPU``, ``DType`` s). Rules in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def batch1_attribution(trace: dict, model: ModelConfig, gpu: GPU, context_len: int,
                       weight_dtype: DType, kv_dtype: DType) -> dict:
    """Per-step averages (ms) over the trace's complete steps.

    Returns ``{"complete_steps": int, "step_ms", "floor_ms", "launch_overhead_ms",
    "cpu_gaps_ms", "sync_ms", "small_unfused_kernels_ms", "sampling_ms",
    "kernel_efficiency_ms": float, "ranking": [the six bucket names, largest first],
    "uses_cuda_graphs": bool, "first_fix": str}``.

    Raises:
        ValueError: ``context_len`` not an int >= 1; an MoE or inconsistent model; ``trace``
            not a dict with a ``"traceEvents"`` list; a kernel event without an int
            ``args["step"]``; kernels of fewer than two steps.
    """
    raise NotImplementedError
