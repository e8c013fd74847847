"""WRONG: computes the scores, softmax and output in the input dtype (bf16/fp16) instead of float32: scores near +64 rounded to bf16 (spacing 0.5) shift the softmax weights by up to ~28%."""

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
    cdt = q.dtype
    qc, kc, vc = q.to(cdt), k.to(cdt), v.to(cdt)
    s = scale * (qc @ kc.transpose(-1, -2))
    mask = causal_mask(T, S, device=q.device)
    s = s.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True) if S > 0 else torch.zeros(B, H, T, 1, dtype=cdt, device=q.device)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    l = p.sum(-1, keepdim=True)
    out = (p @ vc) / torch.where(l > 0, l, torch.ones_like(l))
    return out.to(q.dtype)
