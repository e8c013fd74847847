"""mbu-gap-diagnosis: the byte floor of a decode step, and where a trace's missing time goes.

Inputs are ``inferprep.specs`` values (a dense ``ModelConfig``, a ``GPU``, ``DType`` s) and a
PyTorch-profiler-like Chrome trace (a dict with a ``"traceEvents"`` list). Rules in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def floor_ms(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
             kv_dtype: DType) -> dict:
    """Bytes one decode step must read, over peak HBM bandwidth.

    Returns ``{"weights_ms": float, "kv_ms": float, "floor_ms": float}``.

    Raises:
        ValueError: ``context_lens`` not a non-empty list/tuple of ints >= 1; an MoE model; an
            inconsistent model (see the statement).
    """
    raise NotImplementedError


def gap_buckets(trace: dict, model: ModelConfig, gpu: GPU, context_lens: list[int],
                weight_dtype: DType, kv_dtype: DType) -> dict:
    """Per-step averages (ms) over the trace's complete steps.

    Returns ``{"complete_steps": int, "step_ms", "floor_ms", "mbu", "gemm_efficiency_ms",
    "attention_ms", "non_gemm_kernels_ms", "launch_gaps_ms", "sampling_cpu_ms": float,
    "ranking": [the five bucket names, largest first]}``.

    Raises:
        ValueError: as ``floor_ms``; ``trace`` not a dict with a ``"traceEvents"`` list; a kernel
            event without an int ``args["step"]``; kernels of fewer than two steps.
    """
    raise NotImplementedError
