"""WRONG: MLA query width read from head_dim and value width from qk_nope_head_dim (kv_b and output weights). Killed by hours-mla-rope96-v160-h100-sxm-bf16-mfu0.4-teacher-ovh0.0-tokens1e+10."""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig

FORMATS = ("fp4", "fp8", "int4_weight_only", "int8_weight_only")
WEIGHT_ONLY = ("int4_weight_only", "int8_weight_only")
RULES = ("compute_bound_weight_only", "fleet_too_small", "no_kernel_for_format",
         "no_training_access", "ptq_meets_bar", "refresh_before_break_even")
CASE_KEYS = ("training_access", "format", "gpu", "fp4_dense_flops", "ptq_drop", "max_drop",
             "compute_bound_share", "fleet_gpus", "thr_ptq", "thr_qat", "qat_gpu_hours",
             "days_to_refresh")


def _is_num(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


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
    if m.n_routed_experts > 0:
        if not 1 <= m.experts_per_token <= m.n_routed_experts:
            raise ValueError("experts_per_token must be in [1, n_routed_experts]")
        if not 0 <= m.first_dense_layers <= m.n_layers:
            raise ValueError("first_dense_layers must be in [0, n_layers]")


def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk = m.head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * 2 * m.qk_nope_head_dim
        return q + kv_a + kv_b + H * m.qk_nope_head_dim * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def active_params(model: ModelConfig) -> int:
    """Matmul weights one training token multiplies: attention, active MLP/experts (router and
    shared experts included), and the LM head (tied or not). Not the embedding table."""
    _check_model(model)
    m, d = model, model.hidden_size
    dense = 3 * d * m.ffn_size
    if m.n_routed_experts == 0:
        mlp = m.n_layers * dense
    else:
        n_moe = m.n_layers - m.first_dense_layers
        mlp = m.first_dense_layers * dense + n_moe * (
            d * m.n_routed_experts + (m.experts_per_token + m.n_shared_experts) * 3 * d * m.moe_ffn_size)
    return m.n_layers * _attention_params(m) + mlp + m.vocab_size * d


def qat_gpu_hours(model: ModelConfig, tokens: float, gpu: GPU, compute_dtype: DType, mfu: float,
                  distill_teacher: bool, fakequant_overhead: float = 0.0) -> dict:
    """GPU-hours of a QAT run: 6N per token (forward + backward) scaled by the fake-quant
    overhead, plus 2N for the teacher's forward when distilling, at mfu of the dense peak."""
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    if not isinstance(compute_dtype, DType):
        raise ValueError("compute_dtype must be an inferprep.specs.DType")
    if not _is_num(tokens) or tokens <= 0:
        raise ValueError("tokens must be a finite number > 0")
    if not _is_num(mfu) or not 0 < mfu <= 1:
        raise ValueError("mfu must be a number in (0, 1]")
    if not isinstance(distill_teacher, bool):
        raise ValueError("distill_teacher must be a bool")
    if not _is_num(fakequant_overhead) or fakequant_overhead < 0:
        raise ValueError("fakequant_overhead must be a finite number >= 0")
    n = active_params(model)
    peak = gpu.dense_flops(compute_dtype)                  # dense; ValueError where none
    per_token = 6.0 * n * (1 + fakequant_overhead) + (2.0 * n if distill_teacher else 0.0)
    total = per_token * tokens
    return {"active_params": n, "flops_per_token": per_token, "total_flops": total,
            "gpu_hours": total / (peak * mfu) / 3600}


def _saved(fleet_gpus, thr_ptq, thr_qat) -> float:
    return fleet_gpus - fleet_gpus * thr_ptq / thr_qat


def fleet_saving(fleet_gpus: int, ptq_format: str, qat_format: str,
                 tokens_per_s_per_gpu: dict) -> dict:
    """Serve the same traffic in qat_format instead of ptq_format: GPUs scale by thr_ptq/thr_qat.
    Throughput depends on the format only, so the same format gives a speedup of exactly 1."""
    _check_int("fleet_gpus", fleet_gpus, 1)
    if not isinstance(tokens_per_s_per_gpu, dict):
        raise ValueError("tokens_per_s_per_gpu must be a dict format -> tokens/s per GPU")
    for f in (ptq_format, qat_format):
        if f not in tokens_per_s_per_gpu:
            raise ValueError(f"no throughput for format {f!r}")
        v = tokens_per_s_per_gpu[f]
        if not _is_num(v) or v <= 0:
            raise ValueError(f"throughput of {f!r} must be a finite number > 0")
    thr_ptq, thr_qat = tokens_per_s_per_gpu[ptq_format], tokens_per_s_per_gpu[qat_format]
    needed = fleet_gpus * thr_ptq / thr_qat
    return {"speedup": thr_qat / thr_ptq, "gpus_needed": needed,
            "gpus_saved": fleet_gpus - needed}


def break_even_days(qat_gpu_hours: float, gpus_saved: float) -> float:
    """Days until the freed GPUs have paid back the QAT run's GPU-hours; inf if none are freed."""
    if not _is_num(qat_gpu_hours) or qat_gpu_hours < 0:
        raise ValueError("qat_gpu_hours must be a finite number >= 0")
    if not _is_num(gpus_saved):
        raise ValueError("gpus_saved must be a finite number")
    if gpus_saved <= 0:
        return math.inf
    return qat_gpu_hours / (24 * gpus_saved)


def skip_qat(case: dict) -> list[str]:
    """The rules (sorted) under which a serving team should not run QAT; [] means go ahead."""
    if not isinstance(case, dict) or set(case) != set(CASE_KEYS):
        raise ValueError(f"case must be a dict with exactly the keys {list(CASE_KEYS)}")
    c = case
    if not isinstance(c["training_access"], bool):
        raise ValueError("training_access must be a bool")
    if c["format"] not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    if not isinstance(c["gpu"], GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    if c["fp4_dense_flops"] is not None and (not _is_num(c["fp4_dense_flops"]) or c["fp4_dense_flops"] <= 0):
        raise ValueError("fp4_dense_flops must be None or a finite number > 0")
    for k in ("ptq_drop", "max_drop", "qat_gpu_hours"):
        if not _is_num(c[k]) or c[k] < 0:
            raise ValueError(f"{k} must be a finite number >= 0")
    if not _is_num(c["compute_bound_share"]) or not 0 <= c["compute_bound_share"] <= 1:
        raise ValueError("compute_bound_share must be in [0, 1]")
    _check_int("fleet_gpus", c["fleet_gpus"], 1)
    for k in ("thr_ptq", "thr_qat", "days_to_refresh"):
        if not _is_num(c[k]) or c[k] <= 0:
            raise ValueError(f"{k} must be a finite number > 0")

    fmt, gpu = c["format"], c["gpu"]
    saved = _saved(c["fleet_gpus"], c["thr_ptq"], c["thr_qat"])
    rules = []
    if fmt in WEIGHT_ONLY and c["compute_bound_share"] >= 0.5:
        rules.append("compute_bound_weight_only")
    if saved < 1:
        rules.append("fleet_too_small")
    if (fmt == "fp8" and gpu.fp8_dense_flops is None) or (fmt == "fp4" and c["fp4_dense_flops"] is None):
        rules.append("no_kernel_for_format")
    if not c["training_access"]:
        rules.append("no_training_access")
    if c["ptq_drop"] <= c["max_drop"]:
        rules.append("ptq_meets_bar")
    if break_even_days(c["qat_gpu_hours"], saved) >= c["days_to_refresh"]:
        rules.append("refresh_before_break_even")
    return sorted(rules)
