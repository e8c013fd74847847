"""WRONG (input checks): never checks n_kv_heads >= 1, so n_kv_heads = 0 dies in a modulo.

`n_heads % 0` raises ZeroDivisionError, not the promised ValueError. No old case had n_kv_heads = 0.
"""

from __future__ import annotations

from inferprep.specs import ModelConfig


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _validate(m: ModelConfig) -> None:
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.kv_lora_rank == 0:
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


def _norm_params(m: ModelConfig) -> int:
    per_layer = 2 * m.hidden_size
    if m.kv_lora_rank > 0:
        per_layer += m.kv_lora_rank + (m.q_lora_rank if m.q_lora_rank > 0 else 0)
    return m.n_layers * per_layer + m.hidden_size


def _mlp_params(m: ModelConfig) -> tuple[int, int]:
    """(stored, active per token) weights of all MLP / MoE blocks; gated MLPs have 3 matrices."""
    d = m.hidden_size
    dense = 3 * d * m.ffn_size
    if m.n_routed_experts == 0:
        return m.n_layers * dense, m.n_layers * dense
    expert = 3 * d * m.moe_ffn_size
    router = d * m.n_routed_experts
    n_moe = m.n_layers - m.first_dense_layers
    stored = m.first_dense_layers * dense + n_moe * (
        router + (m.n_routed_experts + m.n_shared_experts) * expert)
    active = m.first_dense_layers * dense + n_moe * (
        router + (m.experts_per_token + m.n_shared_experts) * expert)
    return stored, active


def param_counts(model: ModelConfig) -> dict[str, int]:
    """Parameter counts by kind; see the statement for the keys."""
    _validate(model)
    m = model
    emb = m.vocab_size * m.hidden_size
    attn = m.n_layers * _attention_params(m)
    mlp, mlp_active = _mlp_params(m)
    norm = _norm_params(m)
    head = 0 if m.tied_embeddings else emb
    return {
        "embedding": emb,
        "lm_head": head,
        "attention": attn,
        "mlp": mlp,
        "norm": norm,
        "total": emb + head + attn + mlp + norm,
        "active_matmul": attn + mlp_active + emb,      # the LM head multiplies, tied or not
    }


def _attention_flops_per_key(m: ModelConfig) -> int:
    qk, v = _qk_v_dims(m)
    return m.n_layers * 2 * m.n_heads * (qk + v)


def flops_per_token(model: ModelConfig, context_len: int) -> dict[str, int]:
    """Forward FLOPs of one token that attends to ``context_len`` keys (itself included)."""
    _validate(model)
    _check_int("context_len", context_len, 1)
    weights = 2 * param_counts(model)["active_matmul"]
    attention = _attention_flops_per_key(model) * context_len
    return {"weights": weights, "attention": attention, "total": weights + attention}


def attention_crossover_context(model: ModelConfig) -> int:
    """Smallest context length at which attention FLOPs per token reach the weight FLOPs."""
    _validate(model)
    weights = 2 * param_counts(model)["active_matmul"]
    per_key = _attention_flops_per_key(model)
    return max(1, -(-weights // per_key))
