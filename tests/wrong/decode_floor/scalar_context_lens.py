"""WRONG (input checks): takes a single int for context_lens as a batch of one.

The statement asks for a list or tuple, one length per sequence, and a ValueError otherwise: a
caller who passes 4096 meant a batch, and guessing hides the bug. No old case passed a bare int.
"""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _validate(m: ModelConfig) -> None:
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.kv_lora_rank == 0:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")
    if m.n_routed_experts > 0:
        if not 1 <= m.experts_per_token <= m.n_routed_experts:
            raise ValueError("experts_per_token must be in [1, n_routed_experts]")
        if not 0 <= m.first_dense_layers <= m.n_layers:
            raise ValueError("first_dense_layers must be in [0, n_layers]")


def _qk_v_dims(m: ModelConfig) -> tuple[int, int]:
    """Width of one head's q.k dot product and of one head's value vector."""
    if m.kv_lora_rank > 0:
        return m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    return m.head_dim, m.head_dim


def _attention_params(m: ModelConfig) -> int:
    """Projection weights of one attention block (biases: none)."""
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk, _ = _qk_v_dims(m)
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv_a + kv_b + H * m.v_head_dim * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def _kv_elements_per_token(m: ModelConfig) -> int:
    if m.kv_lora_rank > 0:                      # MLA caches the latent and the shared rope key
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim


def _check_inputs(model, context_lens, weight_dtype, kv_dtype) -> None:
    _validate(model)
    if model.n_routed_experts > 0:
        raise ValueError("MoE models: which experts a step reads depends on routing "
                         "(see moe-experts-per-step)")
    for name, dt in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if not isinstance(dt, DType):
            raise ValueError(f"{name} must be an inferprep.specs.DType")
    if isinstance(context_lens, int):
        context_lens = [context_lens]              # "helpful": one int is a batch of one
    if not isinstance(context_lens, (list, tuple)) or len(context_lens) == 0:
        raise ValueError("context_lens must be a non-empty list of ints (one per sequence)")
    for L in context_lens:
        _check_int("context length", L, 1)


def decode_floor(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
                 kv_dtype: DType) -> dict:
    """Bytes one decode step reads and the floor they set: {"weight_bytes", "kv_bytes", "floor_ms"}."""
    _check_inputs(model, context_lens, weight_dtype, kv_dtype)
    m = model
    weights = m.n_layers * _attention_params(m) + m.n_layers * 3 * m.hidden_size * m.ffn_size \
        + m.vocab_size * m.hidden_size                        # LM head, tied or not
    weight_bytes = weights * weight_dtype.bytes_per_element
    if isinstance(context_lens, int):
        context_lens = [context_lens]
    kv_bytes = _kv_elements_per_token(m) * sum(context_lens) * kv_dtype.bytes_per_element
    return {"weight_bytes": weight_bytes, "kv_bytes": kv_bytes,
            "floor_ms": 1e3 * (weight_bytes + kv_bytes) / gpu.hbm_bytes_per_s}


GAP_ORDER = ("kv", "bandwidth", "overhead")


def decode_gaps(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
                kv_dtype: DType, bandwidth_efficiency: float, overhead_ms: float) -> dict:
    """Split a modelled step time into the weight floor and the three gaps above it."""
    if isinstance(bandwidth_efficiency, bool) or not isinstance(bandwidth_efficiency, (int, float)) \
            or not 0 < bandwidth_efficiency <= 1:
        raise ValueError("bandwidth_efficiency must be in (0, 1]")
    if isinstance(overhead_ms, bool) or not isinstance(overhead_ms, (int, float)) \
            or not math.isfinite(overhead_ms) or overhead_ms < 0:
        raise ValueError("overhead_ms must be a finite number >= 0")
    f = decode_floor(model, gpu, context_lens, weight_dtype, kv_dtype)
    bw = gpu.hbm_bytes_per_s
    weights_ms = 1e3 * f["weight_bytes"] / bw
    kv_ms = 1e3 * f["kv_bytes"] / bw
    bandwidth_ms = f["floor_ms"] / bandwidth_efficiency - f["floor_ms"]
    gaps = {"kv": kv_ms, "bandwidth": bandwidth_ms, "overhead": float(overhead_ms)}
    largest = max(GAP_ORDER, key=lambda k: (gaps[k], -GAP_ORDER.index(k)))
    return {"weights_ms": weights_ms, "kv_ms": kv_ms, "bandwidth_gap_ms": bandwidth_ms,
            "overhead_ms": float(overhead_ms),
            "step_ms": weights_ms + kv_ms + bandwidth_ms + overhead_ms, "largest_gap": largest}
