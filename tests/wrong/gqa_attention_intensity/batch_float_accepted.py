"""WRONG (input checks): accepts any real batch or context length >= 1 (1.0, and NaN slips through
every comparison); the statement asks for an int (not bool) and a ValueError otherwise."""
from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_dtype(name: str, v) -> None:
    if not isinstance(v, DType):
        raise ValueError(f"{name} must be an inferprep.specs.DType, got {type(v).__name__}")


def _validate(m: ModelConfig) -> None:
    _check_int("n_layers", m.n_layers, 1)
    _check_int("n_heads", m.n_heads, 1)
    if m.kv_lora_rank == 0:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")


def _per_token(m: ModelConfig) -> tuple[int, int]:
    """(attention FLOPs, cached elements) per layer per cached token of one sequence."""
    if m.kv_lora_rank > 0:
        r, p = m.kv_lora_rank, m.qk_rope_head_dim
        return 2 * m.n_heads * (2 * r + p), r + p
    h = m.head_dim
    return 2 * m.n_heads * 2 * h, 2 * m.n_kv_heads * h


def decode_attention_intensity(model: ModelConfig, kv_dtype: DType, batch: int,
                               context_len: int) -> float:
    """FLOPs per HBM byte of one decode step's attention over ``batch`` sequences of
    ``context_len`` cached tokens each."""
    _validate(model)
    _check_dtype("kv_dtype", kv_dtype)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 1)
    flops, elems = _per_token(model)
    n = batch * model.n_layers * context_len
    return (n * flops) / (n * elems * kv_dtype.bytes_per_element)


def decode_weight_gemm_intensity(batch: int, weight_dtype: DType) -> float:
    """FLOPs per weight byte of a decode weight GEMM over ``batch`` tokens: 2 * batch / s."""
    _check_int("batch", batch, 1)
    _check_dtype("weight_dtype", weight_dtype)
    return 2 * batch / weight_dtype.bytes_per_element


def attention_regime(model: ModelConfig, gpu: GPU, kv_dtype: DType, compute_dtype: DType) -> dict:
    """Decode attention against the ridge of ``compute_dtype``:
    {"intensity", "ridge", "fraction_of_ridge", "bound"}."""
    _check_dtype("compute_dtype", compute_dtype)
    intensity = decode_attention_intensity(model, kv_dtype, 1, 1)
    ridge = gpu.dense_flops(compute_dtype) / gpu.hbm_bytes_per_s
    return {"intensity": intensity, "ridge": ridge, "fraction_of_ridge": intensity / ridge,
            "bound": "compute" if intensity >= ridge else "memory"}


def heads_per_kv_head_for_ridge(gpu: GPU, kv_dtype: DType, compute_dtype: DType) -> int:
    """Smallest query-heads-per-KV-head ratio at which GQA decode attention reaches the ridge."""
    _check_dtype("kv_dtype", kv_dtype)
    _check_dtype("compute_dtype", compute_dtype)
    ridge = gpu.dense_flops(compute_dtype) / gpu.hbm_bytes_per_s
    return max(1, math.ceil(ridge * kv_dtype.bytes_per_element / 2))
