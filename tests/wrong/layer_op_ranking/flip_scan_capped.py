"""Wrong: finds the flip batch by scanning b = 1, 2, ... up to a fixed cap (20,000) and returns None past it, so a flip beyond the cap (L=200 with 1 ms launches on an H100: ~26,500) is reported as never."""
import math

OPS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj", "attention", "elementwise"]

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _check(m, gpu, dtype, launch_us=0.0):
    if m.n_routed_experts > 0 or m.kv_lora_rank > 0:
        raise ValueError("dense gqa only")
    if m.n_kv_heads < 1 or m.n_heads % m.n_kv_heads:
        raise ValueError("gqa")
    if isinstance(launch_us, bool) or not isinstance(launch_us, (int, float)) or not math.isfinite(launch_us) or launch_us < 0:
        raise ValueError("launch")
    return gpu.dense_flops(dtype)

def _parts(m, gpu, dtype, b, L):
    """(flops, bytes, kernels) per op"""
    d, H, K, h, F = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim, m.ffn_size
    s = dtype.bytes_per_element
    out = {}
    for name, N in (("qkv_proj", d * (H + 2 * K) * h), ("o_proj", H * h * d),
                    ("gate_up_proj", 2 * d * F), ("down_proj", F * d)):
        out[name] = (2 * b * N, N * s, 1)
    out["attention"] = (b * 4 * H * h * L, b * 2 * K * h * L * s, 1)
    out["elementwise"] = (0, b * (10 * d + 2 * (H + K) * h + 3 * F) * s, 6)
    return out

def layer_op_times(model, gpu, dtype, batch, context_len, launch_us):
    for x in (batch, context_len):
        if not _isint(x) or x < 1:
            raise ValueError("int")
    peak = _check(model, gpu, dtype, launch_us)
    bw = gpu.hbm_bytes_per_s
    res = {}
    for k, (f, by, n) in _parts(model, gpu, dtype, batch, context_len).items():
        res[k] = n * launch_us + max(f / peak, by / bw) * 1e6
    return res

def op_ranking(model, gpu, dtype, batch, context_len, launch_us):
    t = layer_op_times(model, gpu, dtype, batch, context_len, launch_us)
    return sorted(OPS, key=lambda k: (-t[k], OPS.index(k)))

def _flip_at(model, gpu, dtype, b, L, launch_us):
    t = layer_op_times(model, gpu, dtype, b, L, launch_us)
    return all(t["attention"] >= t[k] for k in OPS if k != "attention")

def ranking_flip_batch(model, gpu, dtype, context_len, launch_us):
    if not _isint(context_len) or context_len < 1:
        raise ValueError("int")
    peak = _check(model, gpu, dtype, launch_us)
    bw = gpu.hbm_bytes_per_s
    s = dtype.bytes_per_element
    # beyond b_lin every op is linear in b: t = c0 + c1 * b
    b_lin = max(1, math.ceil(s * peak / (2 * bw)) + 1)
    b = 1
    while b <= b_lin:
        if _flip_at(model, gpu, dtype, b, context_len, launch_us):
            return b
        b += 1
    while b <= 20000:
        if _flip_at(model, gpu, dtype, b, context_len, launch_us):
            return b
        b += 1
    return None
    p1 = _parts(model, gpu, dtype, 1, context_len)
    def lin(k):
        f, by, n = p1[k]
        return n * launch_us, max(f / peak, by / bw) * 1e6
    a0, a1 = lin("attention")
    need = b_lin + 1
    for k in OPS:
        if k == "attention":
            continue
        c0, c1 = lin(k)
        # a0 + a1 b >= c0 + c1 b
        if a1 > c1:
            need = max(need, math.ceil((c0 - a0) / (a1 - c1)))
        elif a1 == c1 and a0 >= c0:
            continue
        else:
            return None
    b = max(need - 2, b_lin + 1)
    while not _flip_at(model, gpu, dtype, b, context_len, launch_us):
        b += 1
    return b

def remedies(model, gpu, dtype, batch, context_len):
    for x in (batch, context_len):
        if not _isint(x) or x < 1:
            raise ValueError("int")
    peak = _check(model, gpu, dtype)
    bw = gpu.hbm_bytes_per_s
    res = {}
    for k, (f, by, n) in _parts(model, gpu, dtype, batch, context_len).items():
        if k == "elementwise":
            res[k] = "fusion"
        elif f / peak >= by / bw:
            res[k] = "none"
        elif k == "attention":
            res[k] = "architecture"
        else:
            res[k] = "batch"
    return res
