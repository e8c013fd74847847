"""WRONG: fills masked scores with the finite -1e4 and then zeroes the rows with no visible key: when the visible scores are themselves around -1e4 or lower, the "masked" keys get real weight (T=2, S=5, q=-100, k=100, scale=1, v_j=j gives [2.0, 2.0] instead of [1.5, 2.0])."""

from __future__ import annotations
import math
import torch

_DT = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

def causal_mask(t, s, device="cpu"):
    if t < 0 or s < 0:
        raise ValueError("negative")
    i = torch.arange(t, device=device).unsqueeze(-1)
    j = torch.arange(s, device=device).unsqueeze(0)
    return j <= i + (s - t)

def attention_with_cache(q, k, v, scale=None):
    for x in (q, k, v):
        if x.dim() != 4:
            raise ValueError("not 4-D")
    if k.shape != v.shape:
        raise ValueError("k/v shape")
    if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[3] != k.shape[3]:
        raise ValueError("q/k")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in _DT:
        raise ValueError("dtype")
    B, H, T, d = q.shape
    S = k.shape[2]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    cdt = torch.float64 if q.dtype == torch.float64 else torch.float32
    qc, kc, vc = q.to(cdt), k.to(cdt), v.to(cdt)
    s = scale * (qc @ kc.transpose(-1, -2))
    mask = causal_mask(T, S, device=q.device)
    s = s.masked_fill(~mask, -1e4)
    m = s.amax(-1, keepdim=True) if S > 0 else torch.zeros(B, H, T, 1, dtype=cdt, device=q.device)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    l = p.sum(-1, keepdim=True)
    out = (p @ vc) / torch.where(l > 0, l, torch.ones_like(l))
    out = torch.where(mask.any(-1).unsqueeze(-1), out, torch.zeros_like(out))
    return out.to(q.dtype)
