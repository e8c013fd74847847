"""WRONG: flash_attention_tiles uses 1/sqrt(head_dim) instead of hbm.scale. It passed while every tile case set hbm.scale to 1/sqrt(d); the hidden tile cases now vary it (0.3, 1.0, 0.05, 0, 2)."""

from __future__ import annotations

import math

import torch


def _check(q, k, v, block_q, block_k):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be 4-D (batch, heads, seq, head_dim)")
    if q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k, v must have one shape, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError("q, k, v must have one dtype")
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise ValueError(f"unsupported dtype {q.dtype}")
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be >= 1")


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def flash_attention_forward(q, k, v, causal=False, block_q=64, block_k=64, scale=None):
    _check(q, k, v, block_q, block_k)
    n, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    acc_t = _acc_dtype(q.dtype)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=acc_t, device=q.device)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        qi = q[..., i0:i1, :].to(acc_t)
        m = torch.full(qi.shape[:-1], -math.inf, dtype=acc_t, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(qi.shape, dtype=acc_t, device=q.device)
        j_end = i1 if causal else n          # keys past the tile's last query are skipped
        for j0 in range(0, j_end, block_k):
            j1 = min(j0 + block_k, n)
            s = (qi @ k[..., j0:j1, :].to(acc_t).transpose(-1, -2)) * scale
            if causal and j1 - 1 > i0:        # the tile crosses the diagonal
                rows = torch.arange(i0, i1, device=q.device)[:, None]
                cols = torch.arange(j0, j1, device=q.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            alpha = torch.where(m_new == -math.inf, torch.zeros_like(m), torch.exp(m - m_new))
            p = torch.exp(s - torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)[..., None])
            l = alpha * l + p.sum(-1)
            acc = alpha[..., None] * acc + p @ v[..., j0:j1, :].to(acc_t)
            m = m_new
        out[..., i0:i1, :] = (acc / l[..., None]).to(q.dtype)
        lse[..., i0:i1] = m + torch.log(l)
    return out, lse


def needed_kv_tiles(i: int, n: int, block_q: int, block_k: int, causal: bool) -> list[int]:
    """The K/V tiles Q tile i must read: all of them, or with causal those starting at or
    before the tile's last query."""
    tk = -(-n // block_k)
    if not causal:
        return list(range(tk))
    last = min((i + 1) * block_q, n) - 1
    return [j for j in range(tk) if j * block_k <= last]


def flash_attention_tiles(hbm, causal=False):
    """The same algorithm against the grader's HBM model (one head)."""
    n, bq, bk, scale = hbm.seq_len, hbm.block_q, hbm.block_k, 1.0 / math.sqrt(hbm.head_dim)
    for i in range(-(-n // bq)):
        qi = hbm.load_q(i)
        acc_t = _acc_dtype(qi.dtype)
        qi = qi.to(acc_t)
        i0 = i * bq
        m = torch.full(qi.shape[:-1], -math.inf, dtype=acc_t, device=qi.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(qi.shape, dtype=acc_t, device=qi.device)
        for j in needed_kv_tiles(i, n, bq, bk, causal):
            kj, vj = hbm.load_k(j).to(acc_t), hbm.load_v(j).to(acc_t)
            j0 = j * bk
            s = (qi @ kj.T) * scale
            if causal:
                rows = torch.arange(i0, i0 + qi.shape[0], device=qi.device)[:, None]
                cols = torch.arange(j0, j0 + kj.shape[0], device=qi.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            alpha = torch.where(m_new == -math.inf, torch.zeros_like(m), torch.exp(m - m_new))
            p = torch.exp(s - torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)[:, None])
            l = alpha * l + p.sum(-1)
            acc = alpha[:, None] * acc + p @ vj
            m = m_new
        hbm.store_o(i, acc / l[:, None])
        hbm.store_lse(i, m + torch.log(l))


def hbm_traffic(seq_len, head_dim, block_q, block_k, causal=False):
    """Elements moved between HBM and the chip for one head, tiled and naive.

    tiled: Q read once; K and V tile j read once for every Q tile that needs it; O and lse
    written once. naive (FlashAttention paper, Algorithm 0): S = QK^T written, read back for the
    softmax, P written, read back with V, O written; the causal mask does not shrink S or P."""
    if min(seq_len, head_dim, block_q, block_k) < 1:
        raise ValueError("all sizes must be >= 1")
    n, d = seq_len, head_dim
    kv_rows = 0
    for i in range(-(-n // block_q)):
        for j in needed_kv_tiles(i, n, block_q, block_k, causal):
            kv_rows += min(block_k, n - j * block_k)
    return {
        "flash_reads": n * d + 2 * d * kv_rows,
        "flash_writes": n * d + n,
        "naive_reads": 3 * n * d + 2 * n * n,
        "naive_writes": n * d + 2 * n * n,
    }
