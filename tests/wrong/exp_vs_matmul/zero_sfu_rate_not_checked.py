"""WRONG (input checks): never checks gpu.sfu_ops_per_s > 0, so a GPU without SFU throughput divides by zero (ZeroDivisionError) instead of raising the promised ValueError."""
import math
from inferprep.specs import GPU, DType

def _common(gpu, dtype, head_dim):
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("types")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
        raise ValueError("head_dim")
    peak = gpu.dense_flops(dtype)
    sfu = gpu.sfu_ops_per_s
    return peak, sfu

def exp_to_matmul_ratio(gpu, dtype, head_dim):
    peak, sfu = _common(gpu, dtype, head_dim)
    return float(peak / (4 * head_dim * sfu))

def exp_time_share(gpu, dtype, head_dim):
    r = exp_to_matmul_ratio(gpu, dtype, head_dim)
    return r / (1 + r)

def attention_fraction_of_peak(gpu, dtype, head_dim, mma_efficiency, overlap_exp):
    r = exp_to_matmul_ratio(gpu, dtype, head_dim)
    e = mma_efficiency
    if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or not (0 < e <= 1):
        raise ValueError("eff")
    if not isinstance(overlap_exp, bool):
        raise ValueError("overlap")
    t = max(1 / e, r) if overlap_exp else 1 / e + r
    return 1 / t

_MAP = {"exp_serialized_with_gemm": "pingpong_scheduling",
        "softmax_waits_on_gemm": "intra_warpgroup_pipelining",
        "global_memory_latency": "warp_specialization_tma",
        "synchronous_mma": "wgmma",
        "fp8_outlier_error": "incoherent_processing"}

def fa3_remedy(problem):
    if not isinstance(problem, str) or problem not in _MAP:
        raise ValueError("problem")
    return _MAP[problem]
