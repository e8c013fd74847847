"""WRONG (input checks): takes mma_efficiency=True as 1.0 (True is an int in Python).

The statement says a bool is rejected; no old case passed one, so this passed.
"""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType

PROBLEMS = {
    # problem -> the FlashAttention-3 technique that removes it (Shah et al. 2024, arXiv:2407.08608)
    "exp_serialized_with_gemm": "pingpong_scheduling",
    "softmax_waits_on_gemm": "intra_warpgroup_pipelining",
    "global_memory_latency": "warp_specialization_tma",
    "synchronous_mma": "wgmma",
    "fp8_outlier_error": "incoherent_processing",
}
TECHNIQUES = tuple(sorted(set(PROBLEMS.values())))


def _check(gpu, dtype, head_dim) -> None:
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("gpu must be an inferprep.specs.GPU and dtype an inferprep.specs.DType")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
        raise ValueError(f"head_dim must be an int >= 1, got {head_dim!r}")
    if gpu.sfu_ops_per_s <= 0:
        raise ValueError("the GPU has no special-function throughput")


def matmul_flops_per_score(head_dim: int) -> int:
    return 4 * head_dim


def exp_to_matmul_ratio(gpu: GPU, dtype: DType, head_dim: int) -> float:
    """Time of one score element's exponential over the time of its 4d tensor-core FLOPs."""
    _check(gpu, dtype, head_dim)
    peak = gpu.dense_flops(dtype)
    return peak / (matmul_flops_per_score(head_dim) * gpu.sfu_ops_per_s)


def exp_time_share(gpu: GPU, dtype: DType, head_dim: int) -> float:
    """Share of the time spent on exponentials when they do not overlap the matmuls."""
    r = exp_to_matmul_ratio(gpu, dtype, head_dim)
    return r / (1.0 + r)


def attention_fraction_of_peak(gpu: GPU, dtype: DType, head_dim: int, mma_efficiency: float,
                               overlap_exp: bool) -> float:
    """Upper bound on achieved / dense peak tensor-core FLOP/s of the attention forward pass."""
    r = exp_to_matmul_ratio(gpu, dtype, head_dim)
    if not isinstance(mma_efficiency, (int, float)) \
            or not math.isfinite(mma_efficiency) or not 0.0 < mma_efficiency <= 1.0:
        raise ValueError("mma_efficiency must be a number in (0, 1]")
    if not isinstance(overlap_exp, bool):
        raise ValueError("overlap_exp must be a bool")
    # time per score element, in units of (4d / peak)
    mm = 1.0 / mma_efficiency
    t = max(mm, r) if overlap_exp else mm + r
    return 1.0 / t


def fa3_remedy(problem: str) -> str:
    """The FlashAttention-3 technique that addresses ``problem``."""
    if not isinstance(problem, str) or problem not in PROBLEMS:
        raise ValueError(f"unknown problem {problem!r}; expected one of {sorted(PROBLEMS)}")
    return PROBLEMS[problem]
