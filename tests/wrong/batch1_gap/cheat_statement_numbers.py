"""WRONG: cheat: returns the statement's eager example whatever the trace. Killed by llama-8b-h100-eager-ctx1024."""

from __future__ import annotations


def batch1_attribution(trace, model, gpu, context_len, weight_dtype, kv_dtype):
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("trace must be a dict")
    if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
        raise ValueError("context_len")
    return {"complete_steps": 3, "step_ms": 11.301300999999048, "floor_ms": 4.520458087164179,
            "launch_overhead_ms": 4.355112000301481, "cpu_gaps_ms": 1.0, "sync_ms": 0.024,
            "small_unfused_kernels_ms": 0.405, "sampling_ms": 0.022,
            "kernel_efficiency_ms": 0.9747309125482883,
            "ranking": ["launch_overhead", "cpu_gaps", "kernel_efficiency", "small_unfused_kernels",
                        "sync", "sampling"],
            "uses_cuda_graphs": False, "first_fix": "cuda_graphs"}
