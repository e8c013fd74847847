"""WRONG: `scale = scale or 1/sqrt(d)`: an explicit scale of 0.0 is falsy and becomes the default. With scale 0 every visible key has the same weight, so each query must average the values it may see."""

from __future__ import annotations

import math

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def causal_mask(t, s, device="cpu"):
    if isinstance(t, bool) or isinstance(s, bool) or not isinstance(t, int) or not isinstance(s, int):
        raise ValueError("t and s must be ints")
    if t < 0 or s < 0:
        raise ValueError(f"t and s must be >= 0, got t={t}, s={s}")
    q_pos = torch.arange(t, device=device) + (s - t)      # absolute positions of the new queries
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
    scale = float(scale or 1.0 / math.sqrt(d))
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
