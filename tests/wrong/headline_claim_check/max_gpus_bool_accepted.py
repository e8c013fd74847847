"""WRONG (input checks): validates n_gpus but lets max_gpus be a bool (True is an int subclass); the
statement rejects a bool for both."""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType, ModelConfig

CONDITIONS = ("batch", "quantization", "speculation", "tensor_parallel")
MIN_BYTES_PER_PARAM = DType.INT4.bytes_per_element     # the smallest weight format in the table


def _attention_params(m: ModelConfig) -> int:
    d, h = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                                  # Multi-head Latent Attention
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * h * qk if m.q_lora_rank > 0 else d * h * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)
        o = h * m.v_head_dim * d
        return q + kv_a + kv_b + o
    return d * h * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim + h * m.head_dim * d


def decode_weight_params(model: ModelConfig) -> int:
    """Parameters one batch-1 decode step multiplies (and so reads): the active weights."""
    if not isinstance(model, ModelConfig):
        raise ValueError("model must be an inferprep.specs.ModelConfig")
    d = model.hidden_size
    total = 0
    for layer in range(model.n_layers):
        total += _attention_params(model)
        if model.n_routed_experts > 0 and layer >= model.first_dense_layers:
            experts = model.experts_per_token + model.n_shared_experts
            total += d * model.n_routed_experts + experts * 3 * d * model.moe_ffn_size
        else:
            total += 3 * d * model.ffn_size
    return total + d * model.vocab_size                     # LM head (read even when tied)


def kv_bytes_per_token(model: ModelConfig, kv_dtype: DType) -> float:
    """KV-cache bytes one token adds, all layers."""
    if not isinstance(model, ModelConfig) or not isinstance(kv_dtype, DType):
        raise ValueError("model must be a ModelConfig and kv_dtype a DType")
    if model.kv_lora_rank > 0:
        per_layer = model.kv_lora_rank + model.qk_rope_head_dim
    else:
        per_layer = 2 * model.n_kv_heads * model.head_dim
    return model.n_layers * per_layer * kv_dtype.bytes_per_element


def check_claim(model: ModelConfig, gpu: GPU, claimed_tokens_per_s: float, context_len: int, weight_dtype: DType,
                kv_dtype: DType, n_gpus: int, max_gpus: int, max_tokens_per_step: float) -> dict:
    """The implied bandwidth of a single-stream claim and the conditions that could explain it."""
    if not isinstance(gpu, GPU) or not isinstance(weight_dtype, DType):
        raise ValueError("gpu must be a GPU and weight_dtype a DType")
    claim = claimed_tokens_per_s
    if isinstance(claim, bool) or not isinstance(claim, (int, float)) or not math.isfinite(claim) or claim <= 0:
        raise ValueError("claimed_tokens_per_s must be a finite number > 0")
    if isinstance(max_gpus, bool):
        max_gpus = int(max_gpus)
    for name, v, lo in (("context_len", context_len, 0), ("n_gpus", n_gpus, 1), ("max_gpus", max_gpus, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}")
    tau = max_tokens_per_step
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not math.isfinite(tau) or tau < 1:
        raise ValueError("max_tokens_per_step must be a finite number >= 1")
    params = decode_weight_params(model)
    w_bytes = params * weight_dtype.bytes_per_element
    kv_seq = context_len * kv_bytes_per_token(model, kv_dtype)
    per_token = w_bytes + kv_seq
    implied = claim * per_token
    bw = n_gpus * gpu.hbm_bytes_per_s
    fraction = implied / bw

    max_bpp = max(0.0, (bw / claim - kv_seq) / params)
    min_gpus = math.ceil(implied / gpu.hbm_bytes_per_s)
    # batch: the claim read as aggregate tokens/s of b streams sharing one weight read per step
    if claim * kv_seq < bw:
        min_batch = max(1, math.ceil(claim * w_bytes / (bw - claim * kv_seq)))
    else:
        min_batch = 0
    fits = min_batch > 0 and w_bytes + min_batch * kv_seq <= n_gpus * gpu.hbm_bytes

    conditions = []
    if fraction > 1.0:
        if fits:
            conditions.append("batch")
        if max_bpp >= MIN_BYTES_PER_PARAM:
            conditions.append("quantization")
        if fraction <= tau:
            conditions.append("speculation")
        if min_gpus <= max_gpus:
            conditions.append("tensor_parallel")
    return {
        "bytes_per_token": per_token,
        "implied_bytes_per_s": implied,
        "fraction_of_peak": fraction,
        "physical": fraction <= 1.0,
        "max_weight_bytes_per_param": max_bpp,
        "min_tokens_per_step": max(1.0, fraction),
        "min_gpus": min_gpus,
        "min_batch": min_batch,
        "conditions": conditions,
    }
