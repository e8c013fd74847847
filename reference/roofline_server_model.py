"""Reference: a decode step-time model from roofline terms, its residuals against measured points,
and the regimes where it should not be trusted.

One decode step of `batch` sequences, each attending to `context_len` keys, on one GPU of a TP
group: weights and KV stream from HBM while the tensor cores work (the two overlap, so the slower
one counts), then a fixed per-step overhead and the TP all-reduces are added (they do not overlap).
"""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig

FLAGS = ("small_batch_overhead", "long_context_attention", "kv_capacity", "communication")
CHECKS = {
    "small_batch_overhead": "batch1_with_and_without_cuda_graphs",
    "long_context_attention": "context_sweep_at_fixed_batch",
    "kv_capacity": "engine_log_max_concurrency",
    "communication": "nccl_allreduce_at_message_size",
}
ACT_BYTES = 2            # BF16 activations in the all-reduce
SHARE = 0.1              # overhead or communication >= 10% of the step
POINT_KEYS = ("tp", "batch", "context_len", "measured_s")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_model(m, tp) -> None:
    if not isinstance(m, ModelConfig):
        raise ValueError("model must be an inferprep.specs.ModelConfig")
    if m.n_routed_experts > 0:
        raise ValueError("MoE models: the experts a step reads depend on routing")
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "ffn_size"):
        if not _is_int(getattr(m, f)) or getattr(m, f) < 1:
            raise ValueError(f"model.{f} must be an int >= 1")
    if not _is_int(tp) or tp < 1:
        raise ValueError("tp must be an int >= 1")
    if m.n_heads % tp:
        raise ValueError(f"n_heads={m.n_heads} is not divisible by tp={tp}")
    if m.kv_lora_rank == 0:
        K = m.n_kv_heads
        if not _is_int(K) or K < 1 or not _is_int(m.head_dim) or m.head_dim < 1 or m.n_heads % K:
            raise ValueError("a GQA model needs n_kv_heads >= 1 dividing n_heads, and head_dim >= 1")
        if (tp <= K and K % tp) or (tp > K and tp % K):
            raise ValueError(f"n_kv_heads={K} and tp={tp}: one must divide the other")


# ---- counts (decode-floor / flops-per-token conventions) ----------------------------------

def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv_a + kv_b + H * m.v_head_dim * d
    return 2 * d * m.n_heads * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim


def decode_weight_params(m: ModelConfig) -> int:
    """Matmul weights a decode step reads (and multiplies): attention + MLP + LM head."""
    return m.n_layers * (_attention_params(m) + 3 * m.hidden_size * m.ffn_size) \
        + m.vocab_size * m.hidden_size


def attn_flops_per_key(m: ModelConfig) -> int:
    """Attention FLOPs per query token per cached key, all layers: q.k and p.v per head."""
    if m.kv_lora_rank > 0:
        qk, v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    else:
        qk = v = m.head_dim
    return m.n_layers * 2 * m.n_heads * (qk + v)


def kv_bytes_per_token_per_gpu(m: ModelConfig, tp: int, kv_dtype: DType) -> float:
    s = kv_dtype.bytes_per_element
    if m.kv_lora_rank > 0:                        # the latent is whole on every rank
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * s
    return m.n_layers * 2 * max(1, m.n_kv_heads // tp) * m.head_dim * s


def math_peak(gpu: GPU, weight_dtype: DType) -> float:
    """FP8 weights run FP8 math where the GPU has it; everything else runs in BF16."""
    if weight_dtype is DType.FP8 and gpu.fp8_dense_flops is not None:
        return gpu.fp8_dense_flops
    return gpu.bf16_dense_flops


# ---- the model ----------------------------------------------------------------------------

def step_model(model: ModelConfig, gpu: GPU, tp: int, batch: int, context_len: int,
               weight_dtype: DType, kv_dtype: DType, overhead_s: float, bw_efficiency: float,
               allreduce_latency_s: float, link_bytes_per_s: float | None = None) -> dict:
    """{"weight_s", "kv_s", "compute_s", "comm_s", "overhead_s", "t_s", "binding"}."""
    _check_model(model, tp)
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    if not isinstance(weight_dtype, DType) or not isinstance(kv_dtype, DType):
        raise ValueError("dtypes must be inferprep.specs.DType values")
    for name, v in (("batch", batch), ("context_len", context_len)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1")
    if not _is_real(overhead_s) or overhead_s < 0:
        raise ValueError("overhead_s must be a finite number >= 0")
    if not _is_real(bw_efficiency) or not 0 < bw_efficiency <= 1:
        raise ValueError("bw_efficiency must be in (0, 1]")
    if not _is_real(allreduce_latency_s) or allreduce_latency_s < 0:
        raise ValueError("allreduce_latency_s must be a finite number >= 0")
    if link_bytes_per_s is not None and (not _is_real(link_bytes_per_s) or link_bytes_per_s <= 0):
        raise ValueError("link_bytes_per_s must be None or a finite number > 0")

    bw = gpu.hbm_bytes_per_s * bw_efficiency
    weight_s = decode_weight_params(model) * weight_dtype.bytes_per_element / tp / bw
    kv_s = batch * context_len * kv_bytes_per_token_per_gpu(model, tp, kv_dtype) / bw
    flops = batch * (2 * decode_weight_params(model) + attn_flops_per_key(model) * context_len) / tp
    compute_s = flops / math_peak(gpu, weight_dtype)
    comm_s = 0.0
    if tp > 1:
        link = link_bytes_per_s if link_bytes_per_s is not None else gpu.nvlink_bytes_per_s / 2
        ring_bytes = 2 * (tp - 1) / tp * batch * model.hidden_size * ACT_BYTES
        comm_s = 2 * model.n_layers * (allreduce_latency_s + ring_bytes / link)
    memory_s = weight_s + kv_s
    t_s = overhead_s + max(memory_s, compute_s) + comm_s
    return {"weight_s": weight_s, "kv_s": kv_s, "compute_s": compute_s, "comm_s": comm_s,
            "overhead_s": float(overhead_s), "t_s": t_s,
            "binding": "memory" if memory_s >= compute_s else "compute"}


def regime_flags(step: dict, batch: int, context_len: int, tp: int, num_blocks: int,
                 block_size: int) -> list[str]:
    """The regimes (in FLAGS order) where a measured point may leave the model."""
    for name, v, lo in (("batch", batch, 1), ("context_len", context_len, 1), ("tp", tp, 1),
                        ("num_blocks", num_blocks, 0), ("block_size", block_size, 1)):
        if not _is_int(v) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}")
    flags = []
    if step["overhead_s"] >= SHARE * step["t_s"]:
        flags.append("small_batch_overhead")
    if step["kv_s"] >= step["weight_s"]:
        flags.append("long_context_attention")
    if batch * -(-context_len // block_size) > num_blocks:
        flags.append("kv_capacity")
    if tp > 1 and step["comm_s"] >= SHARE * step["t_s"]:
        flags.append("communication")
    return flags


def audit(points: list[dict], model: ModelConfig, gpu: GPU, weight_dtype: DType, kv_dtype: DType,
          overhead_s: float, bw_efficiency: float, allreduce_latency_s: float, num_blocks: int,
          block_size: int, tol: float, link_bytes_per_s: float | None = None) -> list[dict]:
    """Per measured point: {"model_s", "residual", "outside_tol", "flags", "checks", "trusted"}."""
    if not _is_real(tol) or tol <= 0:
        raise ValueError("tol must be a finite number > 0")
    if not isinstance(points, (list, tuple)) or not points:
        raise ValueError("points must be a non-empty list of dicts")
    out = []
    for p in points:
        if not isinstance(p, dict) or any(k not in p for k in POINT_KEYS):
            raise ValueError(f"each point needs the keys {list(POINT_KEYS)}")
        if not _is_real(p["measured_s"]) or p["measured_s"] <= 0:
            raise ValueError("measured_s must be a finite number > 0")
        step = step_model(model, gpu, p["tp"], p["batch"], p["context_len"], weight_dtype, kv_dtype,
                          overhead_s, bw_efficiency, allreduce_latency_s, link_bytes_per_s)
        flags = regime_flags(step, p["batch"], p["context_len"], p["tp"], num_blocks, block_size)
        residual = p["measured_s"] / step["t_s"] - 1
        outside = abs(residual) > tol
        out.append({"model_s": step["t_s"], "residual": residual, "outside_tol": outside,
                    "flags": flags, "checks": [CHECKS[f] for f in flags],
                    "trusted": not outside and not flags})
    return out
