"""Wrong: with q_lora_rank == 0 (no query LoRA, as in DeepSeek-V2-Lite) counts no query weights or FLOPs instead of the plain d x H*(qk_nope + qk_rope) projection."""
def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _attn(m):
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        rq, rkv, n, p, v = m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        q = d * rq + rq * H * (n + p)
        return q + d * (rkv + p) + rkv * H * (n + v) + H * v * d
    h, K = m.head_dim, m.n_kv_heads
    return d * H * h + 2 * d * K * h + H * h * d

def _counts(m):
    d = m.hidden_size
    if m.kv_lora_rank == 0 and (m.n_kv_heads < 1 or m.n_heads % m.n_kv_heads):
        raise ValueError("gqa")
    attn = _attn(m)
    dense = 3 * d * m.ffn_size
    if m.n_routed_experts > 0:
        E, k = m.n_routed_experts, m.experts_per_token
        if not (1 <= k <= E):
            raise ValueError("k")
        e = 3 * d * m.moe_ffn_size
        nd = m.first_dense_layers
        nm = m.n_layers - nd
        act = m.n_layers * attn + nd * dense + nm * (d * E + (k + m.n_shared_experts) * e)
        sto = m.n_layers * attn + nd * dense + nm * (d * E + (E + m.n_shared_experts) * e)
    else:
        act = sto = m.n_layers * (attn + dense)
    return act, sto, m.vocab_size * d

def _slope(m):
    if m.kv_lora_rank > 0:
        dqk, dv = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    else:
        dqk = dv = m.head_dim
    return m.n_layers * 2 * m.n_heads * (dqk + dv)

def _c(m):
    if m.kv_lora_rank > 0:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim

def _times(m, gpu, dtype, P, n):
    peak = gpu.dense_flops(dtype)
    act, sto, head = _counts(m)
    s = dtype.bytes_per_element
    flops = 2 * P * act + 2 * head + _slope(m) * P * (P + 1) / 2
    byts = s * (sto + head) + s * P * _c(m)
    return flops / (n * peak) * 1e3, byts / (n * gpu.hbm_bytes_per_s) * 1e3

def ttft(model, gpu, dtype, prompt_len, n_gpus=1):
    if not _isint(prompt_len) or prompt_len < 1 or not _isint(n_gpus) or n_gpus < 1:
        raise ValueError("bad int")
    c, mem = _times(model, gpu, dtype, prompt_len, n_gpus)
    return {"compute_ms": c, "memory_ms": mem, "ttft_ms": max(c, mem),
            "bound": "compute" if c >= mem else "memory"}

def prefill_crossover_tokens(model, gpu, dtype):
    _times(model, gpu, dtype, 1, 1)
    P = 1
    while True:
        c, mem = _times(model, gpu, dtype, P, 1)
        if c >= mem:
            return P
        P += 1
