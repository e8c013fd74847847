"""WRONG: MLA query width read from head_dim and value width from qk_nope_head_dim (weights and attention FLOPs). Killed by prefill-flops-mla-rope96-v160-linear."""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig

VERDICTS = ("ok", "tight", "breaks")


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_model(m) -> None:
    if not isinstance(m, ModelConfig):
        raise ValueError("model must be an inferprep.specs.ModelConfig")
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.kv_lora_rank == 0:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")
    if m.n_routed_experts > 0:
        if not 1 <= m.experts_per_token <= m.n_routed_experts:
            raise ValueError("experts_per_token must be in [1, n_routed_experts]")
        if not 0 <= m.first_dense_layers <= m.n_layers:
            raise ValueError("first_dense_layers must be in [0, n_layers]")


def _check_dtype(name: str, dt) -> None:
    if not isinstance(dt, DType):
        raise ValueError(f"{name} must be an inferprep.specs.DType")


def _check_prompt_len(prompt_len) -> None:
    if prompt_len is not None:
        _check_int("prompt_len", prompt_len, 1)


def _qk_v_dims(m: ModelConfig) -> tuple[int, int]:
    if m.kv_lora_rank > 0:
        return m.head_dim, m.qk_nope_head_dim
    return m.head_dim, m.head_dim


def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk, v = _qk_v_dims(m)
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + v)
        return q + kv_a + kv_b + H * v * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def _active_mlp_params(m: ModelConfig) -> int:
    """Matmul weights one token multiplies in the MLP/MoE blocks of all layers (router counted)."""
    d = m.hidden_size
    dense = 3 * d * m.ffn_size
    if m.n_routed_experts == 0:
        return m.n_layers * dense
    n_moe = m.n_layers - m.first_dense_layers
    per_moe = d * m.n_routed_experts + (m.experts_per_token + m.n_shared_experts) * 3 * d * m.moe_ffn_size
    return m.first_dense_layers * dense + n_moe * per_moe


def body_params(m: ModelConfig) -> int:
    """Active matmul weights of the decoder layers: every prompt token multiplies each once."""
    return m.n_layers * _attention_params(m) + _active_mlp_params(m)


def attention_flops_per_key(m: ModelConfig) -> int:
    """FLOPs one query token spends on one cached key over all layers: QK^T and PV, 2 per MAC."""
    qk, v = _qk_v_dims(m)
    return m.n_layers * 2 * m.n_heads * (qk + v)


def kv_bytes_per_token(model: ModelConfig, kv_dtype: DType) -> float:
    """KV-cache bytes one token adds, all layers: GQA 2*L*K*hd*s; MLA L*(r_kv + p)*s."""
    _check_model(model)
    _check_dtype("kv_dtype", kv_dtype)
    m = model
    if m.kv_lora_rank > 0:
        elems = m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    else:
        elems = m.n_layers * 2 * m.n_kv_heads * m.head_dim
    return elems * kv_dtype.bytes_per_element


def prefill_flops_per_token(model: ModelConfig, prompt_len: int | None = None) -> float:
    """Prefill FLOPs per prompt token.

    prompt_len None: 2 * body params (the part linear in the prompt length).
    prompt_len P: + attention over (P + 1) / 2 keys on average (causal, own key included)
    + the LM head applied once per request (2 * V * d / P).
    """
    _check_model(model)
    _check_prompt_len(prompt_len)
    m = model
    f = 2.0 * body_params(m)
    if prompt_len is not None:
        P = prompt_len
        f += attention_flops_per_key(m) * (P + 1) / 2 + 2.0 * m.vocab_size * m.hidden_size / P
    return f


def link_verdict(bytes_per_s: float, link_gbps: float) -> str:
    """"ok" below 50% of the link, "tight" from 50% to 100% inclusive, "breaks" above 100%.

    link_gbps: the link in decimal gigabits per second (400 for a 400 Gb/s NIC = 50e9 bytes/s).
    """
    for name, v in (("bytes_per_s", bytes_per_s), ("link_gbps", link_gbps)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number")
    if bytes_per_s < 0:
        raise ValueError("bytes_per_s must be >= 0")
    if link_gbps <= 0:
        raise ValueError("link_gbps must be > 0")
    return _verdict(bytes_per_s / (link_gbps * 1e9 / 8))


def _verdict(fraction: float) -> str:
    if fraction < 0.5:
        return "ok"
    if fraction <= 1.0:
        return "tight"
    return "breaks"


def kv_transfer_rate(model: ModelConfig, gpu: GPU, n_gpus: int, compute_dtype: DType, mfu: float,
                     kv_dtype: DType, prompt_len: int | None = None) -> dict:
    """KV bytes/s a busy prefill instance of n_gpus GPUs emits, per instance and per GPU, and
    the verdict against one NIC per GPU (gpu.nic_bytes_per_s)."""
    _check_model(model)
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    _check_int("n_gpus", n_gpus, 1)
    _check_dtype("compute_dtype", compute_dtype)
    _check_dtype("kv_dtype", kv_dtype)
    if isinstance(mfu, bool) or not isinstance(mfu, (int, float)) or not 0 < mfu <= 1:
        raise ValueError("mfu must be a number in (0, 1]")
    _check_prompt_len(prompt_len)
    peak = gpu.dense_flops(compute_dtype)          # dense peak; ValueError where there is none
    kv = kv_bytes_per_token(model, kv_dtype)
    flops = prefill_flops_per_token(model, prompt_len)
    s_per_token = flops / (n_gpus * peak * mfu)
    instance = kv / s_per_token
    per_gpu = instance / n_gpus
    fraction = per_gpu / gpu.nic_bytes_per_s
    return {
        "kv_bytes_per_token": kv,
        "prefill_flops_per_token": flops,
        "prefill_s_per_token": s_per_token,
        "bytes_per_s_instance": instance,
        "bytes_per_s_per_gpu": per_gpu,
        "nic_fraction": fraction,
        "verdict": _verdict(fraction),
        "min_link_gbps": per_gpu * 8 / 1e9,
    }
