"""WRONG: calls PyTorch's fused CPU backward, torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward, with the saved O and lse instead of writing the tiles: the statement forbids the library's attention kernels, and the grader replaces them (exercise.toml `forbidden`) with a function that raises."""

from __future__ import annotations

import math

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check(q, k, v, o, lse, do, block_q, block_k):
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor (batch, heads, seq, head_dim)")
        if t.shape != q.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(q.shape)}")
        if t.dtype != q.dtype:
            raise ValueError(f"{name} has dtype {t.dtype}, expected {q.dtype}")
    if q.dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {q.dtype}")
    if not isinstance(lse, torch.Tensor) or tuple(lse.shape) != tuple(q.shape[:-1]):
        raise ValueError(f"lse must have shape {tuple(q.shape[:-1])}")
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be >= 1")


def flash_attention_backward(q, k, v, o, lse, do, causal=False, block_q=64, block_k=64, scale=None):
    _check(q, k, v, o, lse, do, block_q, block_k)
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        do, q, k, v, o, lse.to(torch.float64 if q.dtype == torch.float64 else torch.float32), 0.0, causal,
        scale=None if scale is None else float(scale))
    return dq, dk, dv
