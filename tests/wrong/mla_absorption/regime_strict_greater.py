"""WRONG: calls a kernel compute-bound only when its intensity is strictly above the ridge; the
statement puts the ridge itself on the compute-bound side (intensity >= ridge)."""

from __future__ import annotations

import math

import torch

from inferprep.specs import GPU, DType, ModelConfig


def _check(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens):
    for name, t, nd in (("q_nope", q_nope, 3), ("q_pe", q_pe, 3), ("c_kv", c_kv, 3), ("k_pe", k_pe, 3),
                        ("w_uk", w_uk, 3), ("w_uv", w_uv, 3)):
        if not isinstance(t, torch.Tensor) or t.dim() != nd:
            raise ValueError(f"{name} must be a {nd}-d tensor")
    B, H, dn = q_nope.shape
    S, r = c_kv.shape[1], c_kv.shape[2]
    dr = q_pe.shape[2]
    if q_pe.shape[:2] != (B, H):
        raise ValueError("q_pe must be (B, H, dr) with q_nope's B and H")
    if c_kv.shape[0] != B or k_pe.shape != (B, S, dr):
        raise ValueError("c_kv must be (B, S, r) and k_pe (B, S, dr)")
    if w_uk.shape != (H, dn, r) or w_uv.shape[0] != H or w_uv.shape[2] != r:
        raise ValueError("w_uk must be (H, dn, r) and w_uv (H, dv, r)")
    if S < 1:
        raise ValueError("the cache must hold at least one token")
    if cache_lens is not None:
        if not isinstance(cache_lens, torch.Tensor) or cache_lens.shape != (B,) or cache_lens.is_floating_point():
            raise ValueError("cache_lens must be an integer tensor of shape (B,)")
        if bool((cache_lens < 1).any()) or bool((cache_lens > S).any()):
            raise ValueError("every cache length must be in [1, S]")


def _setup(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale):
    _check(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens)
    acc = torch.float64 if q_nope.dtype == torch.float64 else torch.float32
    if scale is None:
        scale = 1.0 / math.sqrt(q_nope.shape[-1] + q_pe.shape[-1])
    S = c_kv.shape[1]
    mask = None
    if cache_lens is not None:
        mask = torch.arange(S, device=c_kv.device)[None, :] >= cache_lens.to(c_kv.device)[:, None]  # (B, S)
    return [t.to(acc) for t in (q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)], scale, mask


def _softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask[:, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1)


def mla_decode_naive(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None):
    """Decompress per-head keys and values from the latent, then ordinary attention."""
    (qn, qp, c, kp, wk, wv), scale, mask = _setup(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale)
    k_nope = torch.einsum("bsr,hdr->bhsd", c, wk)            # (B, H, S, dn)
    v = torch.einsum("bsr,hdr->bhsd", c, wv)                 # (B, H, S, dv)
    scores = (torch.einsum("bhd,bhsd->bhs", qn, k_nope) + torch.einsum("bhe,bse->bhs", qp, kp)) * scale
    p = _softmax(scores, mask)
    return torch.einsum("bhs,bhsd->bhd", p, v).to(q_nope.dtype)


def mla_decode_absorbed(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None):
    """Fold W_UK into the query and W_UV into the output: attention runs on the latent itself."""
    (qn, qp, c, kp, wk, wv), scale, mask = _setup(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens, scale)
    q_lat = torch.einsum("bhd,hdr->bhr", qn, wk)             # q_nope . (W_UK c) = (W_UK^T q_nope) . c
    scores = (torch.einsum("bhr,bsr->bhs", q_lat, c) + torch.einsum("bhe,bse->bhs", qp, kp)) * scale
    p = _softmax(scores, mask)
    o_lat = torch.einsum("bhs,bsr->bhr", p, c)               # (B, H, r)
    return torch.einsum("bhr,hdr->bhd", o_lat, wv).to(q_nope.dtype)


def _dims(model: ModelConfig):
    if not isinstance(model, ModelConfig) or model.kv_lora_rank <= 0:
        raise ValueError("model must be a ModelConfig with Multi-head Latent Attention (kv_lora_rank > 0)")
    return model.n_heads, model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim


def mla_decode_cost(model: ModelConfig, mode: str, q_len: int = 1, kv_dtype: DType = DType.BF16) -> dict:
    if mode not in ("naive", "absorbed"):
        raise ValueError(f"mode must be 'naive' or 'absorbed', got {mode!r}")
    if isinstance(q_len, bool) or not isinstance(q_len, int) or q_len < 1:
        raise ValueError(f"q_len must be an int >= 1, got {q_len!r}")
    if not isinstance(kv_dtype, DType):
        raise ValueError("kv_dtype must be an inferprep.specs.DType")
    H, r, dn, dr, dv = _dims(model)
    T = q_len
    if mode == "naive":
        per_cached = 2 * r * H * (dn + dv) + 2 * H * T * (dn + dr) + 2 * H * T * dv
        per_query = 0
    else:
        per_cached = 2 * H * T * (r + dr) + 2 * H * T * r
        per_query = 2 * H * dn * r + 2 * H * r * dv
    nbytes = (r + dr) * kv_dtype.bytes_per_element
    return {
        "flops_per_cached_token": per_cached,
        "bytes_per_cached_token": nbytes,
        "flops_per_query_token": per_query,
        "intensity": per_cached / nbytes,
    }


def mla_regime(model: ModelConfig, gpu: GPU, mode: str, q_len: int = 1, kv_dtype: DType = DType.BF16,
               math_dtype: DType = DType.BF16) -> dict:
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    intensity = mla_decode_cost(model, mode, q_len, kv_dtype)["intensity"]
    ridge = gpu.dense_flops(math_dtype) / gpu.hbm_bytes_per_s
    return {"intensity": intensity, "ridge": ridge,
            "regime": "compute-bound" if intensity > ridge else "memory-bound"}
