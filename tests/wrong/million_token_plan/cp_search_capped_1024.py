"""WRONG: searches context parallelism up to 1,024 nodes and calls anything bigger impossible. Killed by replacement-cp-thousands-of-nodes."""
from __future__ import annotations

import dataclasses
import math

from inferprep.specs import DType, GPU, ModelConfig

GPUS_PER_NODE = 8          # one DGX/HGX node
MENU = ("mha", "mqa", "layers_x2", "head_dim_x2", "context_x2")


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_model(m: ModelConfig) -> None:
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.n_routed_experts > 0:
        raise ValueError("MoE models are out of scope: dense models only")
    if m.kv_lora_rank == 0:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")


def _check_dtype(name: str, dt) -> None:
    if not isinstance(dt, DType):
        raise ValueError(f"{name} must be an inferprep.specs.DType")


def _qk_v_dims(m: ModelConfig) -> tuple[int, int]:
    if m.kv_lora_rank > 0:
        return m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    return m.head_dim, m.head_dim


def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk, _ = _qk_v_dims(m)
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv_a + kv_b + H * m.v_head_dim * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def _stored_params(m: ModelConfig) -> int:
    """Every stored parameter: embedding, untied LM head, attention, MLP, norms."""
    d, V = m.hidden_size, m.vocab_size
    norms = m.n_layers * 2 * d + d
    if m.kv_lora_rank > 0:
        norms += m.n_layers * (m.kv_lora_rank + (m.q_lora_rank if m.q_lora_rank > 0 else 0))
    head = 0 if m.tied_embeddings else V * d
    return V * d + head + m.n_layers * (_attention_params(m) + 3 * d * m.ffn_size) + norms


def _kv_elements_per_token(m: ModelConfig) -> int:
    if m.kv_lora_rank > 0:                      # the latent and the shared RoPE key
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim


def kv_bytes_per_request(model: ModelConfig, context_len: int, kv_dtype: DType) -> float:
    """KV cache of one request holding context_len tokens, bytes."""
    _check_model(model)
    _check_int("context_len", context_len, 1)
    _check_dtype("kv_dtype", kv_dtype)
    return float(_kv_elements_per_token(model) * context_len * kv_dtype.bytes_per_element)


def prefill_flops(model: ModelConfig, prompt_len: int) -> dict:
    """FLOPs of a causal prefill: token t (1-based) attends to t keys, itself included."""
    _check_model(model)
    _check_int("prompt_len", prompt_len, 1)
    m, P = model, prompt_len
    active = m.n_layers * (_attention_params(m) + 3 * m.hidden_size * m.ffn_size) \
        + m.vocab_size * m.hidden_size                  # the LM head multiplies every token
    qk, v = _qk_v_dims(m)
    weights = 2 * active * P
    attention = m.n_layers * 2 * m.n_heads * (qk + v) * (P * (P + 1) // 2)
    total = weights + attention
    return {"weights": float(weights), "attention": float(attention), "total": float(total),
            "attention_share": attention / total}


def _kv_heads_per_gpu(m: ModelConfig, tp: int) -> int:
    """vLLM ModelConfig.get_num_kv_heads: MLA keeps its one latent on every rank; GQA heads are
    split over TP ranks and replicated when there are fewer heads than ranks."""
    if m.n_heads % tp:
        raise ValueError(f"n_heads={m.n_heads} is not divisible by tp={tp}")
    if m.kv_lora_rank > 0:
        return 1
    K = m.n_kv_heads
    if K % tp and tp % K:
        raise ValueError(f"n_kv_heads={K} and tp={tp}: neither divides the other")
    return max(1, K // tp)


def plan_fits(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
              weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """Per-GPU memory of one request under TP x CP and whether it fits util x HBM."""
    _check_model(model)
    _check_int("n_gpus", n_gpus, 1)
    _check_int("tp", tp, 1)
    _check_int("context_len", context_len, 1)
    if n_gpus % tp:
        raise ValueError(f"n_gpus={n_gpus} is not a multiple of tp={tp}")
    _check_dtype("weight_dtype", weight_dtype)
    _check_dtype("kv_dtype", kv_dtype)
    if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
        raise ValueError("util must be in (0, 1]")
    if isinstance(reserve_bytes, bool) or not isinstance(reserve_bytes, (int, float)) \
            or not math.isfinite(reserve_bytes) or reserve_bytes < 0:
        raise ValueError("reserve_bytes must be a finite number >= 0")
    m = model
    heads = _kv_heads_per_gpu(m, tp)
    cp = n_gpus // tp
    tokens = -(-context_len // cp)                      # the rank holding the most tokens
    if m.kv_lora_rank > 0:
        per_token = m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    else:
        per_token = m.n_layers * 2 * heads * m.head_dim
    weights = _stored_params(m) * weight_dtype.bytes_per_element / tp
    kv = tokens * per_token * kv_dtype.bytes_per_element
    need = weights + kv + reserve_bytes
    budget = util * gpu.hbm_bytes
    return {"cp": cp, "kv_heads_per_gpu": heads, "weights_per_gpu": float(weights),
            "kv_per_gpu": float(kv), "need": float(need), "budget": float(budget),
            "fits": need <= budget}


def replacement(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
                weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """{"fits", "replacement": "none"|"fp8_kv"|"context_parallel"|"impossible", "n_gpus"}."""
    args = (weight_dtype, kv_dtype, util, reserve_bytes)
    if plan_fits(model, gpu, n_gpus, tp, context_len, *args)["fits"]:
        return {"fits": True, "replacement": "none", "n_gpus": n_gpus}
    if kv_dtype.bytes_per_element > DType.FP8.bytes_per_element and plan_fits(
            model, gpu, n_gpus, tp, context_len, weight_dtype, DType.FP8, util, reserve_bytes)["fits"]:
        return {"fits": False, "replacement": "fp8_kv", "n_gpus": n_gpus}

    def fits_on(nodes: int) -> bool:
        return plan_fits(model, gpu, GPUS_PER_NODE * nodes, GPUS_PER_NODE, context_len, *args)["fits"]

    if not fits_on(min(context_len, 1024)):
        return {"fits": False, "replacement": "impossible", "n_gpus": 0}
    lo, hi = 1, context_len                             # fits_on is monotone in the node count
    while lo < hi:
        mid = (lo + hi) // 2
        if fits_on(mid):
            hi = mid
        else:
            lo = mid + 1
    return {"fits": False, "replacement": "context_parallel", "n_gpus": GPUS_PER_NODE * lo}


def what_breaks(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
                weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """replacement(...) after each single change of the fixed menu (GQA models only)."""
    _check_model(model)
    if model.kv_lora_rank > 0:
        raise ValueError("what_breaks takes a GQA model (kv_lora_rank == 0)")
    _check_int("context_len", context_len, 1)
    m = model
    changed = {
        "mha": (dataclasses.replace(m, n_kv_heads=m.n_heads), context_len),
        "mqa": (dataclasses.replace(m, n_kv_heads=1), context_len),
        "layers_x2": (dataclasses.replace(m, n_layers=2 * m.n_layers), context_len),
        "head_dim_x2": (dataclasses.replace(m, head_dim=2 * m.head_dim), context_len),
        "context_x2": (m, 2 * context_len),
    }
    return {k: replacement(mm, gpu, n_gpus, tp, ctx, weight_dtype, kv_dtype, util, reserve_bytes)
            for k, (mm, ctx) in changed.items()}
