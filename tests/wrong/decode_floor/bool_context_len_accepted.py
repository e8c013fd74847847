"""WRONG (input checks): accepts a bool context length (True is an int subclass), which the statement rejects."""
import math

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _weights(m):
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        rq, rkv, n, p, v = m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        q = d * rq + rq * H * (n + p) if rq > 0 else d * H * (n + p)
        attn = q + d * (rkv + p) + rkv * H * (n + v) + H * v * d
    else:
        h, K = m.head_dim, m.n_kv_heads
        attn = d * H * h + 2 * d * K * h + H * h * d
    mlp = 3 * d * m.ffn_size
    return m.n_layers * (attn + mlp) + m.vocab_size * d

def _kv_per_token(m):
    if m.kv_lora_rank > 0:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim

def _check(m, context_lens):
    if m.n_routed_experts > 0:
        raise ValueError("moe")
    if m.kv_lora_rank == 0 and (m.n_kv_heads < 1 or m.n_heads % m.n_kv_heads):
        raise ValueError("gqa")
    if not isinstance(context_lens, (list, tuple)) or len(context_lens) == 0:
        raise ValueError("empty")
    for L in context_lens:
        if not isinstance(L, int) or L < 1:
            raise ValueError("bad L")

def decode_floor(model, gpu, context_lens, weight_dtype, kv_dtype):
    _check(model, context_lens)
    wb = float(_weights(model) * weight_dtype.bytes_per_element)
    kb = float(_kv_per_token(model) * kv_dtype.bytes_per_element * sum(context_lens))
    return {"weight_bytes": wb, "kv_bytes": kb, "floor_ms": (wb + kb) / gpu.hbm_bytes_per_s * 1e3}

def decode_gaps(model, gpu, context_lens, weight_dtype, kv_dtype, bandwidth_efficiency, overhead_ms):
    f = decode_floor(model, gpu, context_lens, weight_dtype, kv_dtype)
    e = bandwidth_efficiency
    if isinstance(e, bool) or not isinstance(e, (int, float)) or math.isnan(e) or not (0 < e <= 1):
        raise ValueError("eff")
    o = overhead_ms
    if isinstance(o, bool) or not isinstance(o, (int, float)) or not math.isfinite(o) or o < 0:
        raise ValueError("overhead")
    w = f["weight_bytes"] / gpu.hbm_bytes_per_s * 1e3
    k = f["kv_bytes"] / gpu.hbm_bytes_per_s * 1e3
    floor = f["floor_ms"]
    bw = floor / e - floor
    o = float(o)
    gaps = [("kv", k), ("bandwidth", bw), ("overhead", o)]
    largest = gaps[0]
    for g in gaps[1:]:
        if g[1] > largest[1]:
            largest = g
    return {"weights_ms": w, "kv_ms": k, "bandwidth_gap_ms": bw, "overhead_ms": o,
            "step_ms": w + k + bw + o, "largest_gap": largest[0]}
