"""WRONG: causal_work counts a tile only when some key position is strictly before some query position, dropping one-token tiles whose key is the query itself. Killed by "work per rank and step: N=6, p=3, zigzag"."""

from __future__ import annotations

import math

import torch

from inferprep.specs import DType, GPU, ModelConfig

SCHEMES = ("contiguous", "zigzag")


def _int(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def _check_layout(n_total: int, p: int, scheme: str) -> None:
    _int("n_total", n_total, 1)
    _int("p", p, 1)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    parts = p if scheme == "contiguous" else 2 * p
    if n_total % parts:
        raise ValueError(f"{scheme} sharding needs n_total to be a multiple of {parts}")


def _chunks(n_total: int, p: int, rank: int, scheme: str) -> list[tuple[int, int]]:
    """The contiguous runs [start, end) of positions rank ``rank`` holds, in order."""
    if scheme == "contiguous":
        n = n_total // p
        return [(rank * n, (rank + 1) * n)]
    c = n_total // (2 * p)
    return [(rank * c, (rank + 1) * c), ((2 * p - 1 - rank) * c, (2 * p - rank) * c)]


def shard_positions(n_total: int, p: int, rank: int, scheme: str) -> torch.Tensor:
    """Absolute positions held by ``rank``, ascending (int64)."""
    _check_layout(n_total, p, scheme)
    _int("rank", rank, 0)
    if rank >= p:
        raise ValueError("rank must be < p")
    return torch.cat([torch.arange(a, b, dtype=torch.int64) for a, b in _chunks(n_total, p, rank, scheme)])


# -- ring attention ----------------------------------------------------------------------------------
def _block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor,
           scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal attention of local queries on one K/V block: (output, lse), float64. Rows with no
    visible key get output 0 and lse -inf, which the merge ignores."""
    group = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    s = (q @ k.transpose(1, 2)) * scale
    s = s.masked_fill(kpos[None, None, :] > qpos[None, :, None], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
    return p @ v, lse


def _merge(o1, l1, o2, l2):
    """Combine two partial softmax results by their log-sum-exps."""
    lse = torch.logaddexp(l1, l2)
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    w1 = torch.exp(l1 - safe)[..., None]
    w2 = torch.exp(l2 - safe)[..., None]
    return w1 * o1 + w2 * o2, lse


def _check_qkv(q, k, v) -> tuple[int, int, int, int]:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"{name} must be a 3-D tensor (heads, tokens, head_dim)")
        if not t.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor")
    hq, n, d = q.shape
    hkv = k.shape[0]
    if k.shape != v.shape or k.shape[1:] != (n, d):
        raise ValueError("k and v must both have shape (H_kv, n, head_dim) matching q's n and head_dim")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError("q, k and v must share one dtype")
    if hkv == 0 or hq % hkv:
        raise ValueError("the number of query heads must be a positive multiple of the KV heads")
    if n == 0 or d == 0:
        raise ValueError("empty q")
    return hq, hkv, n, d


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, comm, n_total: int, scheme: str) -> torch.Tensor:
    """This rank's causal attention output (H_q, n, d) over the whole sequence, passing K/V."""
    hq, hkv, n, d = _check_qkv(q, k, v)
    r, p = comm.rank, comm.world_size
    _check_layout(n_total, p, scheme)
    if n * p != n_total:
        raise ValueError(f"each rank holds n_total / p = {n_total // p} tokens, q has {n}")
    scale = 1.0 / math.sqrt(d)
    q64 = q.to(torch.float64)
    qpos = shard_positions(n_total, p, r, scheme)
    out = torch.zeros(hq, n, d, dtype=torch.float64, device=q.device)
    lse = torch.full((hq, n), float("-inf"), dtype=torch.float64, device=q.device)
    held = torch.cat([k.reshape(-1), v.reshape(-1)])          # the message: K then V, input dtype
    for s in range(p):
        src = (r - s) % p                                     # whose K/V this rank holds now
        kb, vb = held.view(2, hkv, n, d).to(q.device, torch.float64).unbind(0)
        incoming = comm.send_recv(held) if s < p - 1 else None   # p - 1 steps: never send the last block
        kpos = shard_positions(n_total, p, src, scheme).to(q.device)
        if bool((kpos.min() <= qpos.max()).item()):           # skip blocks that are fully masked
            o_b, l_b = _block(q64, kb, vb, qpos.to(q.device), kpos, scale)
            out, lse = _merge(out, lse, o_b, l_b)
        if incoming is not None:
            held = incoming.to(q.device)
    return out.to(q.dtype)


# -- work per rank and step ------------------------------------------------------------------------------
def causal_work(n_total: int, p: int, scheme: str) -> dict:
    """Score elements (one head) rank r computes at ring step s: tiles of (query run, key run)
    that are not fully masked, counted in full."""
    _check_layout(n_total, p, scheme)
    work = [[0] * p for _ in range(p)]
    for r in range(p):
        for s in range(p):
            src = (r - s) % p
            for qa, qb in _chunks(n_total, p, r, scheme):
                for ka, kb in _chunks(n_total, p, src, scheme):
                    if ka < qb - 1:                           # BUG: strict, drops a key equal to the query
                        work[r][s] += (qb - qa) * (kb - ka)
    per_rank = [sum(w) for w in work]
    makespan = sum(max(work[r][s] for r in range(p)) for s in range(p))
    return {"work": work, "per_rank": per_rank, "makespan": makespan,
            "efficiency": sum(per_rank) / (p * makespan)}


# -- traffic and overlap -------------------------------------------------------------------------------
def _check_model(model: ModelConfig) -> None:
    if model.kv_lora_rank > 0:
        raise ValueError("MLA models are not covered: K/V here are per-head tensors")
    for f in ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim"):
        _int(f, getattr(model, f), 1)
    if model.n_heads % model.n_kv_heads:
        raise ValueError("n_heads must be a multiple of n_kv_heads")


def cp_traffic(model: ModelConfig, n_tokens: int, p: int, dtype: DType) -> dict:
    """Bytes one rank sends for one prefill of n_tokens over p ranks: pass-KV ring attention
    (context parallel) versus the two ring all-reduces per layer of tensor parallelism."""
    _check_model(model)
    _int("n_tokens", n_tokens, 1)
    _int("p", p, 2)
    if n_tokens % p:
        raise ValueError("n_tokens must be a multiple of p")
    b = dtype.bytes_per_element
    step = (n_tokens // p) * 2 * model.n_kv_heads * model.head_dim * b
    cp_layer = (p - 1) * step
    tp_layer = 2 * (2 * (p - 1) / p) * n_tokens * model.hidden_size * b
    return {"kv_bytes_per_step": float(step), "cp_bytes_per_layer": float(cp_layer),
            "cp_bytes": float(cp_layer * model.n_layers), "tp_bytes_per_layer": float(tp_layer),
            "tp_bytes": float(tp_layer * model.n_layers), "tp_over_cp": tp_layer / cp_layer}


def overlap_threshold(model: ModelConfig, gpu: GPU, dtype: DType, link: str, attention_efficiency: float,
                      scheme: str) -> float:
    """Tokens per rank from which one ring step's K/V transfer takes no longer than its attention."""
    _check_model(model)
    if link == "nvlink":
        bw = gpu.nvlink_bytes_per_s / 2                      # the table sums both directions
    elif link == "nic":
        bw = gpu.nic_bytes_per_s                             # one direction already
    else:
        raise ValueError("link must be 'nvlink' or 'nic'")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}")
    eff = attention_efficiency
    if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not (0 < eff <= 1):
        raise ValueError("attention_efficiency must be in (0, 1]")
    if dtype not in (DType.BF16, DType.FP16, DType.FP8):
        raise ValueError(f"attention runs in BF16, FP16 or FP8, not {dtype}")
    peak = gpu.dense_flops(dtype)
    c = 1.0 if scheme == "contiguous" else 0.5               # share of an n x n block one step computes
    # transfer n * 2 * H_kv * d * b / bw  <=  compute c * 4 * n^2 * d * H_q / (peak * eff)
    return model.n_kv_heads * dtype.bytes_per_element * peak * eff / (2 * c * model.n_heads * bw)
