"""WRONG: compares the overhead with the memory time instead of the whole step. Killed by exact-overhead-just-under-10pct-flags."""
import math

from inferprep.specs import DType, GPU, ModelConfig

FLAGS = ("small_batch_overhead", "long_context_attention", "kv_capacity", "communication")
CHECKS = {"small_batch_overhead": "batch1_with_and_without_cuda_graphs",
          "long_context_attention": "context_sweep_at_fixed_batch",
          "kv_capacity": "engine_log_max_concurrency",
          "communication": "nccl_allreduce_at_message_size"}


def _int(v, lo):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _validate(m, tp):
    if not isinstance(m, ModelConfig) or m.n_routed_experts > 0:
        raise ValueError("dense ModelConfig")
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "ffn_size"):
        if getattr(m, f) < 1:
            raise ValueError(f)
    if not _int(tp, 1) or m.n_heads % tp:
        raise ValueError("tp")
    if m.kv_lora_rank == 0:
        K = m.n_kv_heads
        if K < 1 or m.head_dim < 1 or m.n_heads % K:
            raise ValueError("kv heads")
        if (tp <= K and K % tp) or (tp > K and tp % K):
            raise ValueError("kv heads vs tp")


def _params(m):
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank else d * H * qk
        attn = q + d * (m.kv_lora_rank + m.qk_rope_head_dim) \
            + m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim) + H * m.v_head_dim * d
    else:
        attn = 2 * d * H * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim
    return m.n_layers * (attn + 3 * d * m.ffn_size) + m.vocab_size * d


def _attn_flops_per_key(m):
    if m.kv_lora_rank:
        qk, v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    else:
        qk = v = m.head_dim
    return m.n_layers * 2 * m.n_heads * (qk + v)


def _kv_token_gpu(m, tp, kd):
    if m.kv_lora_rank:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * kd.bytes_per_element
    return m.n_layers * 2 * max(1, m.n_kv_heads // tp) * m.head_dim * kd.bytes_per_element


def _peak(gpu, wd):
    if wd is DType.FP8 and gpu.fp8_dense_flops is not None:
        return gpu.fp8_dense_flops
    return gpu.bf16_dense_flops


def step_model(model, gpu, tp, batch, context_len, weight_dtype, kv_dtype, overhead_s, bw_efficiency,
               allreduce_latency_s, link_bytes_per_s=None):
    _validate(model, tp)
    if not isinstance(gpu, GPU) or not isinstance(weight_dtype, DType) or not isinstance(kv_dtype, DType):
        raise ValueError("gpu / dtypes")
    if not _int(batch, 1) or not _int(context_len, 1):
        raise ValueError("batch / context_len")
    if not _num(overhead_s) or overhead_s < 0 or not _num(allreduce_latency_s) or allreduce_latency_s < 0:
        raise ValueError("overhead / latency")
    if not _num(bw_efficiency) or not 0 < bw_efficiency <= 1:
        raise ValueError("bw_efficiency")
    if link_bytes_per_s is not None and (not _num(link_bytes_per_s) or link_bytes_per_s <= 0):
        raise ValueError("link")
    bw = gpu.hbm_bytes_per_s * bw_efficiency
    P = _params(model)
    weight_s = P * weight_dtype.bytes_per_element / tp / bw
    kv_s = batch * context_len * _kv_token_gpu(model, tp, kv_dtype) / bw
    compute_s = batch * (2 * P + _attn_flops_per_key(model) * context_len) / tp / _peak(gpu, weight_dtype)
    comm_s = 0.0
    if tp > 1:
        link = link_bytes_per_s if link_bytes_per_s is not None else gpu.nvlink_bytes_per_s / 2
        per = allreduce_latency_s + 2 * (tp - 1) / tp * batch * model.hidden_size * 2 / link
        comm_s = 2 * model.n_layers * per
    mem = weight_s + kv_s
    t = overhead_s + max(mem, compute_s) + comm_s
    return {"weight_s": weight_s, "kv_s": kv_s, "compute_s": compute_s, "comm_s": comm_s,
            "overhead_s": float(overhead_s), "t_s": t,
            "binding": "memory" if mem >= compute_s else "compute"}


def regime_flags(step, batch, context_len, tp, num_blocks, block_size):
    if not (_int(batch, 1) and _int(context_len, 1) and _int(tp, 1) and _int(block_size, 1)
            and _int(num_blocks, 0)):
        raise ValueError("ints")
    out = []
    if step["overhead_s"] >= 0.1 * (step["weight_s"] + step["kv_s"]):
        out.append("small_batch_overhead")
    if step["kv_s"] >= step["weight_s"]:
        out.append("long_context_attention")
    if batch * math.ceil(context_len / block_size) > num_blocks:
        out.append("kv_capacity")
    if tp > 1 and step["comm_s"] >= 0.1 * step["t_s"]:
        out.append("communication")
    return out


def audit(points, model, gpu, weight_dtype, kv_dtype, overhead_s, bw_efficiency, allreduce_latency_s,
          num_blocks, block_size, tol, link_bytes_per_s=None):
    if not _num(tol) or tol <= 0:
        raise ValueError("tol")
    if not isinstance(points, list) or not points:
        raise ValueError("points")
    res = []
    for p in points:
        if not isinstance(p, dict) or any(k not in p for k in ("tp", "batch", "context_len", "measured_s")):
            raise ValueError("point")
        if not _num(p["measured_s"]) or p["measured_s"] <= 0:
            raise ValueError("measured_s")
        s = step_model(model, gpu, p["tp"], p["batch"], p["context_len"], weight_dtype, kv_dtype,
                       overhead_s, bw_efficiency, allreduce_latency_s, link_bytes_per_s)
        flags = regime_flags(s, p["batch"], p["context_len"], p["tp"], num_blocks, block_size)
        r = p["measured_s"] / s["t_s"] - 1
        outside = abs(r) > tol
        res.append({"model_s": s["t_s"], "residual": r, "outside_tol": outside, "flags": flags,
                    "checks": [CHECKS[f] for f in flags],
                    "trusted": not outside and not flags})
    return res
