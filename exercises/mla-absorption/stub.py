"""MLA decode, naive and absorbed, and its roofline bill (see statement.md).

Shapes (one layer, one new token per sequence):
    q_nope: (B, H, dn)   q_pe: (B, H, dr)   c_kv: (B, S, r)   k_pe: (B, S, dr)
    w_uk: (H, dn, r)     w_uv: (H, dv, r)   cache_lens: (B,) int or None   ->  out: (B, H, dv)
DeepSeek-V3 (HF config.json; inferprep.specs.DEEPSEEK_V3): H = 128, r = kv_lora_rank = 512,
dn = qk_nope_head_dim = 128, dr = qk_rope_head_dim = 64, dv = v_head_dim = 128.
"""

from __future__ import annotations

import torch

from inferprep.specs import GPU, DType, ModelConfig


def mla_decode_naive(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None) -> torch.Tensor:
    """Decompress per-head keys (c_kv @ w_uk^T) and values (c_kv @ w_uv^T), then attention.

    scale defaults to 1 / sqrt(dn + dr). Positions >= cache_lens[b] are padding. Returns
    (B, H, dv) in q_nope's dtype (computed in float32 for bf16/fp16, float64 for float64).

    Raises:
        ValueError: shapes that disagree; cache_lens not an int (B,) tensor in [1, S].
    """
    raise NotImplementedError


def mla_decode_absorbed(q_nope, q_pe, c_kv, k_pe, w_uk, w_uv, cache_lens=None, scale=None) -> torch.Tensor:
    """Same output, attending over the latent: q_lat = w_uk^T q_nope, out = w_uv (p @ c_kv).

    Must not form per-head keys or values for the cached tokens. Same arguments, dtypes and
    errors as mla_decode_naive.
    """
    raise NotImplementedError


def mla_decode_cost(model: ModelConfig, mode: str, q_len: int = 1, kv_dtype: DType = DType.BF16) -> dict:
    """Per layer, per sequence, one decode step with q_len query tokens.

    Returns:
        {"flops_per_cached_token": int, "flops_per_query_token": int,
         "bytes_per_cached_token": float, "intensity": float (FLOP/byte)}

    Raises:
        ValueError: no MLA (kv_lora_rank == 0); mode not "naive"/"absorbed"; q_len < 1.
    """
    raise NotImplementedError


def mla_regime(model: ModelConfig, gpu: GPU, mode: str, q_len: int = 1, kv_dtype: DType = DType.BF16,
               math_dtype: DType = DType.BF16) -> dict:
    """{"intensity": float, "ridge": dense_flops(math_dtype) / hbm_bytes_per_s,
    "regime": "compute-bound" | "memory-bound"} (compute-bound iff intensity >= ridge).

    Raises:
        ValueError: as mla_decode_cost; no dense peak for math_dtype on this GPU.
    """
    raise NotImplementedError
