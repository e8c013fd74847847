"""WRONG: causal skip off by one (skips key tile j when j*B_k >= last query row, instead of >): a key tile that starts exactly on the query tile's last row is never read, so that row loses its diagonal key."""

from __future__ import annotations
import math
import torch

_DT = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

def _check(q, k, v, block_q, block_k):
    for t in (q, k, v):
        if t.dim() != 4:
            raise ValueError("not 4-D")
    if q.shape != k.shape or q.shape != v.shape:
        raise ValueError("shapes differ")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError("dtypes differ")
    if q.dtype not in _DT:
        raise ValueError("dtype")
    if block_q < 1 or block_k < 1:
        raise ValueError("block")

def _tile(qi, kj, vj, m, l, acc, scale, mask=None):
    s = scale * (qi @ kj.transpose(-1, -2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    mn = torch.maximum(m, s.amax(-1))
    fin = torch.isfinite(mn)
    mn_safe = torch.where(fin, mn, torch.zeros_like(mn))
    alpha = torch.where(fin, torch.exp(m - mn_safe), torch.zeros_like(mn))
    p = torch.exp(s - mn_safe.unsqueeze(-1))
    p = torch.where(fin.unsqueeze(-1), p, torch.zeros_like(p))
    l = alpha * l + p.sum(-1)
    acc = alpha.unsqueeze(-1) * acc + p @ vj
    return mn, l, acc

def flash_attention_forward(q, k, v, causal=False, block_q=64, block_k=64, scale=None):
    _check(q, k, v, block_q, block_k)
    B, H, N, d = q.shape
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    cdt = torch.float64 if q.dtype == torch.float64 else torch.float32
    qc, kc, vc = q.to(cdt), k.to(cdt), v.to(cdt)
    out = torch.empty(B, H, N, d, dtype=cdt, device=q.device)
    lse = torch.empty(B, H, N, dtype=cdt, device=q.device)
    for i0 in range(0, N, block_q):
        i1 = min(i0 + block_q, N)
        qi = qc[:, :, i0:i1]
        m = torch.full((B, H, i1 - i0), float("-inf"), dtype=cdt, device=q.device)
        l = torch.zeros((B, H, i1 - i0), dtype=cdt, device=q.device)
        acc = torch.zeros((B, H, i1 - i0, d), dtype=cdt, device=q.device)
        for j0 in range(0, N, block_k):
            if causal and j0 >= i1 - 1:
                break
            j1 = min(j0 + block_k, N)
            mask = None
            if causal and j1 - 1 > i0:
                rows = torch.arange(i0, i1, device=q.device).unsqueeze(-1)
                cols = torch.arange(j0, j1, device=q.device).unsqueeze(0)
                mask = cols <= rows
            m, l, acc = _tile(qi, kc[:, :, j0:j1], vc[:, :, j0:j1], m, l, acc, scale, mask)
        out[:, :, i0:i1] = acc / l.unsqueeze(-1)
        lse[:, :, i0:i1] = m + torch.log(l)
    return out.to(q.dtype), lse

def flash_attention_tiles(hbm, causal=False):
    N, d, bq, bk, scale = hbm.seq_len, hbm.head_dim, hbm.block_q, hbm.block_k, hbm.scale
    nq = (N + bq - 1) // bq
    nk = (N + bk - 1) // bk
    for i in range(nq):
        i0 = i * bq
        i1 = min(i0 + bq, N)
        qi = hbm.load_q(i).to(torch.float32)
        m = torch.full((i1 - i0,), float("-inf"))
        l = torch.zeros(i1 - i0)
        acc = torch.zeros(i1 - i0, d)
        for j in range(nk):
            j0 = j * bk
            if causal and j0 >= i1 - 1:
                break
            kj = hbm.load_k(j)
            vj = hbm.load_v(j)
            j1 = j0 + kj.shape[0]
            mask = None
            if causal and j1 - 1 > i0:
                mask = torch.arange(j0, j1).unsqueeze(0) <= torch.arange(i0, i1).unsqueeze(-1)
            m, l, acc = _tile(qi, kj, vj, m, l, acc, scale, mask)
        hbm.store_o(i, acc / l.unsqueeze(-1))
        hbm.store_lse(i, m + torch.log(l))

def hbm_traffic(seq_len, head_dim, block_q, block_k, causal=False):
    for a in (seq_len, head_dim, block_q, block_k):
        if a < 1:
            raise ValueError("size < 1")
    N, d = seq_len, head_dim
    nq = (N + block_q - 1) // block_q
    nk = (N + block_k - 1) // block_k
    tot = 0
    for i in range(nq):
        last = min((i + 1) * block_q, N) - 1
        for j in range(nk):
            if causal and j * block_k > last:
                break
            tot += min(block_k, N - j * block_k)
    return {"flash_reads": N * d + 2 * d * tot, "flash_writes": N * d + N,
            "naive_reads": 3 * N * d + 2 * N * N, "naive_writes": N * d + 2 * N * N}
