"""WRONG (input checks): no check that the cache holds at least one token: with S = 0 the softmax runs over
nothing and a tensor comes back instead of the ValueError the statement lists for S < 1."""

from __future__ import annotations
import math
import torch
from inferprep.specs import GPU, DType, ModelConfig

def _prep(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale):
    ts = dict(q_nope=q_nope, q_pe=q_pe, c_kv=c_kv, k_pe=k_pe, w_uk=w_uk, w_uv=w_uv)
    for n, t in ts.items():
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"{n} must be a 3-d tensor")
    B, H, dn = q_nope.shape
    Bc, S, r = c_kv.shape
    dr = q_pe.shape[2]
    dv = w_uv.shape[1]
    if tuple(q_pe.shape) != (B, H, dr): raise ValueError("q_pe shape")
    if Bc != B: raise ValueError("c_kv batch")
    if tuple(k_pe.shape) != (B, S, dr): raise ValueError("k_pe shape")
    if tuple(w_uk.shape) != (H, dn, r): raise ValueError("w_uk shape")
    if tuple(w_uv.shape) != (H, dv, r): raise ValueError("w_uv shape")
    if cache_lens is not None:
        if (not isinstance(cache_lens, torch.Tensor) or cache_lens.dim() != 1 or cache_lens.shape[0] != B
                or cache_lens.dtype.is_floating_point or cache_lens.dtype.is_complex or cache_lens.dtype == torch.bool):
            raise ValueError("cache_lens must be an integer (B,) tensor")
        if bool((cache_lens < 1).any()) or bool((cache_lens > S).any()):
            raise ValueError("cache_lens out of [1, S]")
    dt = torch.float64 if q_nope.dtype == torch.float64 else torch.float32
    if scale is None:
        scale = 1.0 / math.sqrt(dn + dr)
    dev = q_nope.device
    conv = [t.to(device=dev, dtype=dt) for t in (q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)]
    mask = None
    if cache_lens is not None:
        pos = torch.arange(S, device=dev)
        mask = pos[None, :] >= cache_lens.to(dev)[:, None]  # (B, S) True = padding
    return conv, scale, mask, q_nope.dtype

def _softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask[:, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1)

def mla_decode_naive(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None):
    (qn, qp, c, kp, wk, wv), scale, mask, odt = _prep(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale)
    K = torch.einsum("bsr,hdr->bhsd", c, wk)
    V = torch.einsum("bsr,hdr->bhsd", c, wv)
    s = (torch.einsum("bhd,bhsd->bhs", qn, K) + torch.einsum("bhd,bsd->bhs", qp, kp)) * scale
    p = _softmax(s, mask)
    return torch.einsum("bhs,bhsd->bhd", p, V).to(odt)

def mla_decode_absorbed(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None):
    (qn, qp, c, kp, wk, wv), scale, mask, odt = _prep(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale)
    q_lat = torch.einsum("bhd,hdr->bhr", qn, wk)
    s = (torch.einsum("bhr,bsr->bhs", q_lat, c) + torch.einsum("bhd,bsd->bhs", qp, kp)) * scale
    p = _softmax(s, mask)
    o_lat = torch.einsum("bhs,bsr->bhr", p, c)
    return torch.einsum("bhr,hdr->bhd", o_lat, wv).to(odt)

def _check_cost(model, mode, q_len):
    if model.kv_lora_rank == 0:
        raise ValueError("model has no MLA")
    if mode not in ("naive", "absorbed"):
        raise ValueError("mode")
    if isinstance(q_len, bool) or not isinstance(q_len, int) or q_len < 1:
        raise ValueError("q_len")

def mla_decode_cost(model: ModelConfig, mode: str, q_len: int = 1, kv_dtype: DType = DType.BF16) -> dict:
    _check_cost(model, mode, q_len)
    H, r, dn, dr, dv, T = model.n_heads, model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim, q_len
    if mode == "naive":
        fc = 2 * r * H * (dn + dv) + 2 * H * T * (dn + dr) + 2 * H * T * dv
        fq = 0
    else:
        fc = 2 * H * T * (r + dr) + 2 * H * T * r
        fq = 2 * H * dn * r + 2 * H * r * dv
    b = float((r + dr) * kv_dtype.bytes_per_element)
    return {"flops_per_cached_token": int(fc), "flops_per_query_token": int(fq),
            "bytes_per_cached_token": b, "intensity": fc / b}

def mla_regime(model, gpu, mode, q_len=1, kv_dtype=DType.BF16, math_dtype=DType.BF16) -> dict:
    c = mla_decode_cost(model, mode, q_len, kv_dtype)
    ridge = gpu.dense_flops(math_dtype) / gpu.hbm_bytes_per_s
    return {"intensity": c["intensity"], "ridge": ridge,
            "regime": "compute-bound" if c["intensity"] >= ridge else "memory-bound"}
