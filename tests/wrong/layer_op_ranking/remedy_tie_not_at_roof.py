"""WRONG: remedies call an op at the roof only when its FLOPs time strictly exceeds its bytes time; when the two are equal the op is already at the ridge (compute-bound as much as memory-bound), and the remedy is "none". Passed while no case had the two times exactly equal."""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig

OPS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "attention", "elementwise")
GEMMS = OPS[:4]
ELEMENTWISE_KERNELS = 6


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _validate(m: ModelConfig, gpu: GPU, dtype) -> float:
    if m.n_routed_experts > 0 or m.kv_lora_rank > 0:
        raise ValueError("layer-op-ranking models dense GQA layers only (no MoE, no MLA)")
    for f in ("hidden_size", "n_heads", "n_kv_heads", "head_dim", "ffn_size"):
        _check_int(f, getattr(m, f), 1)
    if m.n_heads % m.n_kv_heads:
        raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")
    if not isinstance(dtype, DType):
        raise ValueError("dtype must be an inferprep.specs.DType")
    return gpu.dense_flops(dtype)               # ValueError where there is no peak


def _check_launch(launch_us) -> None:
    if isinstance(launch_us, bool) or not isinstance(launch_us, (int, float)) \
            or not math.isfinite(launch_us) or launch_us < 0:
        raise ValueError("launch_us must be a finite number >= 0")


def _gemm_weights(m: ModelConfig) -> dict[str, int]:
    d, H, K, h, F = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim, m.ffn_size
    return {"qkv_proj": d * (H + 2 * K) * h, "o_proj": H * h * d, "gate_up_proj": 2 * d * F,
            "down_proj": F * d}


def _terms_s(m: ModelConfig, gpu: GPU, dtype: DType, batch: int, L: int) -> dict[str, tuple]:
    """op -> (compute seconds, memory seconds, kernels)."""
    peak, bw, s = gpu.dense_flops(dtype), gpu.hbm_bytes_per_s, dtype.bytes_per_element
    d, H, K, h, F = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim, m.ffn_size
    out = {op: (2 * batch * n / peak, n * s / bw, 1) for op, n in _gemm_weights(m).items()}
    out["attention"] = (batch * 4 * H * h * L / peak, batch * 2 * K * h * L * s / bw, 1)
    act_elems = batch * (10 * d + 2 * (H + K) * h + 3 * F)
    out["elementwise"] = (0.0, act_elems * s / bw, ELEMENTWISE_KERNELS)
    return out


def layer_op_times(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int,
                   launch_us: float) -> dict[str, float]:
    """Microseconds per op of one decoder layer's decode step."""
    _validate(model, gpu, dtype)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 1)
    _check_launch(launch_us)
    terms = _terms_s(model, gpu, dtype, batch, context_len)
    return {op: k * launch_us + 1e6 * max(c, mem) for op, (c, mem, k) in terms.items()}


def op_ranking(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int,
               launch_us: float) -> list[str]:
    """Ops from slowest to fastest; ties keep the order of OPS."""
    t = layer_op_times(model, gpu, dtype, batch, context_len, launch_us)
    return sorted(OPS, key=lambda op: -t[op])    # sorted() is stable


def _attention_on_top(model, gpu, dtype, b, L, launch_us) -> bool:
    t = layer_op_times(model, gpu, dtype, b, L, launch_us)
    return all(t["attention"] >= t[op] for op in OPS if op != "attention")


MAX_BATCH = 2 ** 40


def ranking_flip_batch(model: ModelConfig, gpu: GPU, dtype: DType, context_len: int,
                       launch_us: float) -> int | None:
    """Smallest batch at which attention is at least as slow as every other op; None if never."""
    _validate(model, gpu, dtype)
    _check_int("context_len", context_len, 1)
    _check_launch(launch_us)
    if not _attention_on_top(model, gpu, dtype, MAX_BATCH, context_len, launch_us):
        return None
    lo, hi = 0, MAX_BATCH                       # the condition holds on an up-set of batches
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _attention_on_top(model, gpu, dtype, mid, context_len, launch_us):
            hi = mid
        else:
            lo = mid
    return hi


def remedies(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int) -> dict[str, str]:
    """Per op, what closes its gap: "batch", "architecture", "fusion" or "none" (at the roof)."""
    _validate(model, gpu, dtype)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 1)
    terms = _terms_s(model, gpu, dtype, batch, context_len)
    out = {}
    for op in GEMMS:
        c, mem, _ = terms[op]
        out[op] = "none" if c > mem else "batch"              # WRONG: at c == mem the op is at the roof
    c, mem, _ = terms["attention"]
    out["attention"] = "none" if c > mem else "architecture"
    out["elementwise"] = "fusion"
    return out
