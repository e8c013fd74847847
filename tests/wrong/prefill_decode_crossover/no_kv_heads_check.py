"""WRONG (input checks): never checks n_kv_heads >= 1, so n_kv_heads = 0 dies in a modulo.

`n_heads % 0` raises ZeroDivisionError, not the promised ValueError. No old case had n_kv_heads = 0.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


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


def _body_params(m: ModelConfig) -> tuple[int, int]:
    """(stored, active per token) matmul weights of all layers (no LM head)."""
    attn = m.n_layers * _attention_params(m)
    mlp, mlp_active = _mlp_params(m)
    return attn + mlp, attn + mlp_active


def _kv_elements_per_token(m: ModelConfig) -> int:
    if m.kv_lora_rank > 0:                      # MLA caches the latent and the shared rope key
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim


def _attention_flops_per_key(m: ModelConfig) -> int:
    qk, v = _qk_v_dims(m)
    return m.n_layers * 2 * m.n_heads * (qk + v)


def _check_dtype(gpu: GPU, dtype) -> float:
    if not isinstance(dtype, DType):
        raise ValueError(f"dtype must be an inferprep.specs.DType, got {type(dtype).__name__}")
    return gpu.dense_flops(dtype)               # ValueError where the GPU has no peak


def _times_s(m: ModelConfig, gpu: GPU, dtype: DType, P: int, n_gpus: int) -> tuple[float, float]:
    peak = _check_dtype(gpu, dtype) * n_gpus
    bw = gpu.hbm_bytes_per_s * n_gpus
    s = dtype.bytes_per_element
    stored, active = _body_params(m)
    head = m.vocab_size * m.hidden_size
    flops = 2 * P * active + 2 * head + _attention_flops_per_key(m) * P * (P + 1) // 2
    nbytes = s * (stored + head) + s * P * _kv_elements_per_token(m)
    return flops / peak, nbytes / bw


def ttft(model: ModelConfig, gpu: GPU, dtype: DType, prompt_len: int, n_gpus: int = 1) -> dict:
    """Roofline TTFT of one prompt: {"compute_ms", "memory_ms", "ttft_ms", "bound"}."""
    _validate(model)
    _check_int("prompt_len", prompt_len, 1)
    _check_int("n_gpus", n_gpus, 1)
    c, mem = _times_s(model, gpu, dtype, prompt_len, n_gpus)
    return {"compute_ms": 1e3 * c, "memory_ms": 1e3 * mem, "ttft_ms": 1e3 * max(c, mem),
            "bound": "compute" if c >= mem else "memory"}


def prefill_crossover_tokens(model: ModelConfig, gpu: GPU, dtype: DType) -> int:
    """Smallest prompt length whose prefill compute time reaches its memory time."""
    _validate(model)
    _check_dtype(gpu, dtype)

    def compute_bound(P: int) -> bool:
        c, mem = _times_s(model, gpu, dtype, P, 1)
        return c >= mem

    hi = 1
    while not compute_bound(hi):
        hi *= 2
    lo = hi // 2                                # not compute-bound at lo (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid
    return hi
