"""WRONG: computes D = rowsum(dO * O) in the input dtype (bf16) and casts afterwards: D is rounded to bf16 (spacing 0.5 near 128), so dS = P * (dP - D) is off wherever D is large next to dP - D."""

from __future__ import annotations
import math
import torch

_DT = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

def flash_attention_backward(q, k, v, o, lse, do, causal=False, block_q=64, block_k=64, scale=None):
    for t in (q, k, v, o, do):
        if t.dim() != 4:
            raise ValueError("not 4-D")
        if t.shape != q.shape or t.dtype != q.dtype:
            raise ValueError("shape/dtype differs")
    if q.dtype not in _DT:
        raise ValueError("dtype")
    B, H, N, d = q.shape
    if lse.shape != (B, H, N):
        raise ValueError("lse shape")
    if block_q < 1 or block_k < 1:
        raise ValueError("block")
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    cdt = torch.float64 if q.dtype == torch.float64 else torch.float32
    qc, kc, vc, oc, doc = (t.to(cdt) for t in (q, k, v, o, do))
    L = lse.to(cdt)
    D = (do * o).sum(-1).to(cdt)
    dq = torch.zeros_like(qc); dk = torch.zeros_like(kc); dv = torch.zeros_like(vc)
    dev = q.device
    for j0 in range(0, N, block_k):
        j1 = min(j0 + block_k, N)
        kj, vj = kc[:, :, j0:j1], vc[:, :, j0:j1]
        for i0 in range(0, N, block_q):
            i1 = min(i0 + block_q, N)
            if causal and j0 > i1 - 1:
                continue
            qi, doi = qc[:, :, i0:i1], doc[:, :, i0:i1]
            s = scale * (qi @ kj.transpose(-1, -2))
            if causal and j1 - 1 > i0:
                mask = torch.arange(j0, j1, device=dev).unsqueeze(0) <= torch.arange(i0, i1, device=dev).unsqueeze(-1)
                s = s.masked_fill(~mask, float("-inf"))
            p = torch.exp(s - L[:, :, i0:i1].unsqueeze(-1))
            dv[:, :, j0:j1] += p.transpose(-1, -2) @ doi
            dp = doi @ vj.transpose(-1, -2)
            ds = p * (dp - D[:, :, i0:i1].unsqueeze(-1))
            dq[:, :, i0:i1] += scale * (ds @ kj)
            dk[:, :, j0:j1] += scale * (ds.transpose(-1, -2) @ qi)
    return dq.to(q.dtype), dk.to(q.dtype), dv.to(q.dtype)
