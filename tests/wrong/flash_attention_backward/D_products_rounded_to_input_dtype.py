"""WRONG: D = rowsum(dO * O) with each product dO * O taken in the input dtype (each product rounded to bf16) and only the sum in float32; the statement casts do and o to float32 before the product. Passed while every bf16 case had products rounding both ways (errors cancel); the large-D bf16 case with products that all round upwards catches it."""
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
    n, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    acc_t = torch.float64 if q.dtype == torch.float64 else torch.float32
    dev = q.device
    D = (do * o).to(acc_t).sum(-1)                                 # WRONG: products rounded to the input dtype
    L = lse.to(acc_t)
    dq = torch.zeros(q.shape, dtype=acc_t, device=dev)
    dk = torch.empty(q.shape, dtype=acc_t, device=dev)
    dv = torch.empty(q.shape, dtype=acc_t, device=dev)
    for j0 in range(0, n, block_k):
        j1 = min(j0 + block_k, n)
        kj, vj = k[..., j0:j1, :].to(acc_t), v[..., j0:j1, :].to(acc_t)
        dkj = torch.zeros(kj.shape, dtype=acc_t, device=dev)
        dvj = torch.zeros(vj.shape, dtype=acc_t, device=dev)
        first_q = (j0 // block_q) * block_q if causal else 0   # Q tiles wholly above the diagonal see none of these keys
        for i0 in range(first_q, n, block_q):
            i1 = min(i0 + block_q, n)
            qi, doi = q[..., i0:i1, :].to(acc_t), do[..., i0:i1, :].to(acc_t)
            s = (qi @ kj.transpose(-1, -2)) * scale
            if causal and j1 - 1 > i0:
                rows = torch.arange(i0, i1, device=dev)[:, None]
                cols = torch.arange(j0, j1, device=dev)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            p = torch.exp(s - L[..., i0:i1, None])
            dvj += p.transpose(-1, -2) @ doi
            dp = doi @ vj.transpose(-1, -2)
            ds = p * (dp - D[..., i0:i1, None])
            dq[..., i0:i1, :] += scale * (ds @ kj)
            dkj += scale * (ds.transpose(-1, -2) @ qi)
        dk[..., j0:j1, :] = dkj
        dv[..., j0:j1, :] = dvj
    return dq.to(q.dtype), dk.to(q.dtype), dv.to(q.dtype)
