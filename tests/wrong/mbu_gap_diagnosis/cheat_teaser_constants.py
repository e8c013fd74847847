"""WRONG: cheat: returns the statement example's numbers whatever the trace. Killed by llama-8b-h100-b16x2048-graph."""

from __future__ import annotations


def floor_ms(model, gpu, context_lens, weight_dtype, kv_dtype):
    return {"weights_ms": 4.480393093731343, "kv_ms": 1.2820797898507463, "floor_ms": 5.762472883582089}


def gap_buckets(trace, model, gpu, context_lens, weight_dtype, kv_dtype):
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("trace must be a dict")
    return {"complete_steps": 3, "step_ms": 9.604113000000517, "floor_ms": 5.762472883582089,
            "mbu": 0.6000005293129911, "gemm_efficiency_ms": 0.7906679064295297,
            "attention_ms": 0.7094722101950298, "non_gemm_kernels_ms": 0.486,
            "launch_gaps_ms": 0.5339999997938673, "sampling_cpu_ms": 1.3215,
            "ranking": ["sampling_cpu", "gemm_efficiency", "attention", "launch_gaps", "non_gemm_kernels"]}
