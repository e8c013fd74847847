"""Exponentials (special-function units) against matmuls (tensor cores) in attention.

Per score element, head dim d: 4d tensor-core FLOPs (q.k and p.v) and one exp2. Rates:
gpu.dense_flops(dtype) (dense peak, FLOP/s) and gpu.sfu_ops_per_s (exp2 results/s), from
inferprep.specs (NVIDIA datasheets, CUDA C++ Programming Guide). Definitions: statement.md.
"""

from __future__ import annotations

from inferprep.specs import GPU, DType


def exp_to_matmul_ratio(gpu: GPU, dtype: DType, head_dim: int) -> float:
    """peak / (4 * head_dim * sfu_ops_per_s). Raises ValueError on bad input or no peak for dtype."""
    raise NotImplementedError


def exp_time_share(gpu: GPU, dtype: DType, head_dim: int) -> float:
    """r / (1 + r): the exponentials' share of the time when they do not overlap the matmuls."""
    raise NotImplementedError


def attention_fraction_of_peak(gpu: GPU, dtype: DType, head_dim: int, mma_efficiency: float,
                               overlap_exp: bool) -> float:
    """1 / time, time = 1/mma_efficiency + r (serial) or max(1/mma_efficiency, r) (overlapped).

    Raises: ValueError unless 0 < mma_efficiency <= 1 and overlap_exp is a bool.
    """
    raise NotImplementedError


def fa3_remedy(problem: str) -> str:
    """One of "pingpong_scheduling", "intra_warpgroup_pipelining", "warp_specialization_tma",
    "wgmma", "incoherent_processing" for the problems listed in the statement.

    Raises: ValueError for an unknown problem.
    """
    raise NotImplementedError
