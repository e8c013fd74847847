"""WRONG (input checks): accepts context_len=True (bool is an int subclass), which the statement rejects."""
from inferprep.specs import ModelConfig

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _check(m):
    if m.kv_lora_rank == 0:
        if m.n_kv_heads < 1 or m.n_heads % m.n_kv_heads:
            raise ValueError("bad gqa")
    if m.n_routed_experts > 0:
        if not (1 <= m.experts_per_token <= m.n_routed_experts):
            raise ValueError("bad k")
        if not (0 <= m.first_dense_layers <= m.n_layers):
            raise ValueError("bad first dense")

def _attn_per_layer(m):
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        rq, rkv, n, p, v = m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        q = d * rq + rq * H * (n + p) if rq > 0 else d * H * (n + p)
        return q + d * (rkv + p) + rkv * H * (n + v) + H * v * d
    h, K = m.head_dim, m.n_kv_heads
    return d * H * h + 2 * d * K * h + H * h * d

def _mlp(m, F):
    return 3 * m.hidden_size * F

def param_counts(model):
    m = model
    _check(m)
    d, V, Ln = m.hidden_size, m.vocab_size, m.n_layers
    emb = V * d
    head = 0 if m.tied_embeddings else V * d
    attn = Ln * _attn_per_layer(m)
    if m.n_routed_experts > 0:
        nd = m.first_dense_layers
        nm = Ln - nd
        per_moe_all = d * m.n_routed_experts + (m.n_routed_experts + m.n_shared_experts) * _mlp(m, m.moe_ffn_size)
        per_moe_act = d * m.n_routed_experts + (m.experts_per_token + m.n_shared_experts) * _mlp(m, m.moe_ffn_size)
        mlp = nd * _mlp(m, m.ffn_size) + nm * per_moe_all
        mlp_act = nd * _mlp(m, m.ffn_size) + nm * per_moe_act
    else:
        mlp = mlp_act = Ln * _mlp(m, m.ffn_size)
    per_layer_norm = 2 * d
    if m.kv_lora_rank > 0:
        per_layer_norm += m.kv_lora_rank + (m.q_lora_rank if m.q_lora_rank > 0 else 0)
    norm = Ln * per_layer_norm + d
    total = emb + head + attn + mlp + norm
    active = attn + mlp_act + V * d
    return {"embedding": emb, "lm_head": head, "attention": attn, "mlp": mlp, "norm": norm,
            "total": total, "active_matmul": active}

def _slope(m):
    if m.kv_lora_rank > 0:
        dqk, dv = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    else:
        dqk = dv = m.head_dim
    return m.n_layers * 2 * m.n_heads * (dqk + dv)

def flops_per_token(model, context_len):
    if not isinstance(context_len, int) or context_len < 1:
        raise ValueError("context_len")
    w = 2 * param_counts(model)["active_matmul"]
    a = _slope(model) * context_len
    return {"weights": w, "attention": a, "total": w + a}

def attention_crossover_context(model):
    w = 2 * param_counts(model)["active_matmul"]
    s = _slope(model)
    return max(1, -(-w // s))
