"""WRONG: calls PyTorch SDPA with is_causal=True, whose mask is top-left aligned (CausalVariant.UPPER_LEFT), wrong for T != S; SDPA is also forbidden here (the grader replaces it with a function that raises); its causal_mask is top-left too."""

from __future__ import annotations

import math

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def causal_mask(t, s, device="cpu"):
    if isinstance(t, bool) or isinstance(s, bool) or not isinstance(t, int) or not isinstance(s, int):
        raise ValueError("t and s must be ints")
    if t < 0 or s < 0:
        raise ValueError(f"t and s must be >= 0, got t={t}, s={s}")
    q_pos = torch.arange(t, device=device)
    k_pos = torch.arange(s, device=device)
    return k_pos[None, :] <= q_pos[:, None]


def attention_with_cache(q, k, v, scale=None):
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor (batch, heads, seq, head_dim)")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have one shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[3] != k.shape[3]:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree in batch, heads and head_dim")
    if q.dtype != k.dtype or q.dtype != v.dtype or q.dtype not in DTYPES:
        raise ValueError("q, k, v must share one floating dtype (float16, bfloat16, float32, float64)")
    t, s, d = q.shape[2], k.shape[2], q.shape[3]
    acc_t = torch.float64 if q.dtype == torch.float64 else torch.float32
    if s > 0:
        return torch.nn.functional.scaled_dot_product_attention(q.to(acc_t), k.to(acc_t), v.to(acc_t), is_causal=True,
                                                                scale=scale).to(q.dtype)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    acc_t = torch.float64 if q.dtype == torch.float64 else torch.float32
    scores = (q.to(acc_t) @ k.to(acc_t).transpose(-1, -2)) * scale
    allowed = causal_mask(t, s, device=q.device)
    scores = scores.masked_fill(~allowed, -math.inf)
    row_max = scores.amax(-1, keepdim=True) if s > 0 else torch.zeros(scores.shape[:-1] + (1,), dtype=acc_t, device=q.device)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    p = torch.exp(scores - row_max)
    denom = p.sum(-1, keepdim=True)
    p = torch.where(denom > 0, p / torch.where(denom > 0, denom, torch.ones_like(denom)), torch.zeros_like(p))
    return (p @ v.to(acc_t)).to(q.dtype)
