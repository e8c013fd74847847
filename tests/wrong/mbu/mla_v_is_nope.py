"""WRONG: MLA value width taken from qk_nope_head_dim (kv_b r_kv*H*2n, output H*n*d). Killed by bytes-made-up-mla-v160-tp1-fp16-fp8-b3."""
from __future__ import annotations

import math

from inferprep.specs import DType, GPU, ModelConfig

LABELS = ("correct", "weights_only", "achievable_denominator", "node_bytes_gpu_peak",
          "gpu_bytes_node_peak", "mean_of_ratios", "idle_in_denominator", "kv_once_per_batch")
MATCH_RTOL = 1e-6
ROW_KEYS = ("step", "t_start_s", "duration_s", "context_lens", "num_prefill_tokens")


# ---- validation --------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_model(model, tp, weight_dtype, kv_dtype) -> None:
    if not isinstance(model, ModelConfig):
        raise ValueError("model must be an inferprep.specs.ModelConfig")
    for name, dt in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if not isinstance(dt, DType):
            raise ValueError(f"{name} must be an inferprep.specs.DType")
    if model.n_routed_experts > 0:
        raise ValueError("MoE models: which experts a step reads depends on routing")
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "ffn_size"):
        if not _is_int(getattr(model, f)) or getattr(model, f) < 1:
            raise ValueError(f"model.{f} must be an int >= 1")
    if not _is_int(tp) or tp < 1:
        raise ValueError("tp must be an int >= 1")
    if model.n_heads % tp:
        raise ValueError(f"n_heads={model.n_heads} is not divisible by tp={tp}")
    if model.kv_lora_rank == 0:
        K = model.n_kv_heads
        if not _is_int(K) or K < 1 or not _is_int(model.head_dim) or model.head_dim < 1:
            raise ValueError("a GQA model needs n_kv_heads >= 1 and head_dim >= 1")
        if model.n_heads % K:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        if (tp <= K and K % tp) or (tp > K and tp % K):
            raise ValueError(f"n_kv_heads={K} and tp={tp}: one must divide the other")


def _check_setup(model, gpu, tp, weight_dtype, kv_dtype) -> None:
    _check_model(model, tp, weight_dtype, kv_dtype)
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    if not _is_real(gpu.hbm_bytes_per_s) or not gpu.hbm_bytes_per_s > 0 \
            or not math.isfinite(gpu.hbm_bytes_per_s):
        raise ValueError("gpu.hbm_bytes_per_s must be a finite number > 0")


def _check_lens(context_lens, allow_empty: bool) -> None:
    if not isinstance(context_lens, (list, tuple)) or (not context_lens and not allow_empty):
        raise ValueError("context_lens must be a list of ints" + ("" if allow_empty else ", non-empty"))
    for L in context_lens:
        if not _is_int(L) or L < 1:
            raise ValueError(f"a context length must be an int >= 1, got {L!r}")


def _check_log(log) -> None:
    if not isinstance(log, (list, tuple)) or not log:
        raise ValueError("log must be a non-empty list of step rows (dicts)")
    for i, row in enumerate(log):
        if not isinstance(row, dict) or any(k not in row for k in ROW_KEYS):
            raise ValueError(f"row {i} must be a dict with the keys {list(ROW_KEYS)}")
        d = row["duration_s"]
        if not _is_real(d) or not math.isfinite(d) or d <= 0:
            raise ValueError(f"row {i}: duration_s must be a finite number > 0")
        p = row["num_prefill_tokens"]
        if not _is_int(p) or p < 0:
            raise ValueError(f"row {i}: num_prefill_tokens must be an int >= 0")
        _check_lens(row["context_lens"], allow_empty=True)


# ---- bytes one GPU reads in one decode step ----------------------------------------------

def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (2 * m.qk_nope_head_dim)
        return q + kv_a + kv_b + H * m.qk_nope_head_dim * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def decode_weight_params(m: ModelConfig) -> int:
    """Matmul weights one decode step reads: attention + MLP of every layer + LM head."""
    return m.n_layers * (_attention_params(m) + 3 * m.hidden_size * m.ffn_size) \
        + m.vocab_size * m.hidden_size


def kv_heads_per_gpu(m: ModelConfig, tp: int) -> int:
    """vLLM's ModelConfig.get_num_kv_heads: an MLA latent is one 'head' on every rank; GQA heads
    are split across ranks and replicated once there are fewer heads than ranks."""
    if m.kv_lora_rank > 0:
        return 1
    return max(1, m.n_kv_heads // tp)


def kv_bytes_per_token_per_gpu(m: ModelConfig, tp: int, kv_dtype: DType) -> float:
    s = kv_dtype.bytes_per_element
    if m.kv_lora_rank > 0:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * s
    return m.n_layers * 2 * kv_heads_per_gpu(m, tp) * m.head_dim * s


def step_bytes_per_gpu(model: ModelConfig, tp: int, context_lens: list[int], weight_dtype: DType,
                       kv_dtype: DType) -> dict:
    """{"weight_bytes", "kv_bytes"}: what ONE GPU of a TP group reads in one decode step."""
    _check_model(model, tp, weight_dtype, kv_dtype)
    _check_lens(context_lens, allow_empty=False)
    return _step_bytes(model, tp, context_lens, weight_dtype, kv_dtype)


def _step_bytes(model, tp, context_lens, weight_dtype, kv_dtype) -> dict:
    w = decode_weight_params(model) * weight_dtype.bytes_per_element / tp
    kv = sum(context_lens) * kv_bytes_per_token_per_gpu(model, tp, kv_dtype)
    return {"weight_bytes": float(w), "kv_bytes": float(kv)}


# ---- MBU over a log ----------------------------------------------------------------------

def _is_busy_decode(row: dict) -> bool:
    return len(row["context_lens"]) > 0 and row["num_prefill_tokens"] == 0


def mbu(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
        kv_dtype: DType) -> dict:
    """{"mbu", "busy_s", "bytes_per_gpu", "steps_used", "steps_excluded"} over busy decode steps."""
    _check_setup(model, gpu, tp, weight_dtype, kv_dtype)
    _check_log(log)
    used = [r for r in log if _is_busy_decode(r)]
    if not used:
        raise ValueError("no busy decode step in the log: MBU is undefined")
    moved = 0.0
    busy_s = 0.0
    for r in used:
        b = _step_bytes(model, tp, r["context_lens"], weight_dtype, kv_dtype)
        moved += b["weight_bytes"] + b["kv_bytes"]
        busy_s += r["duration_s"]
    return {"mbu": moved / (busy_s * gpu.hbm_bytes_per_s), "busy_s": busy_s,
            "bytes_per_gpu": moved, "steps_used": len(used), "steps_excluded": len(log) - len(used)}


def dashboard_numbers(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
                      kv_dtype: DType, achievable_fraction: float) -> dict:
    """The right MBU and what each of the seven dashboard mistakes reports instead."""
    _check_fraction(achievable_fraction)
    right = mbu(log, model, gpu, tp, weight_dtype, kv_dtype)
    peak = gpu.hbm_bytes_per_s
    used = [r for r in log if _is_busy_decode(r)]
    kv_tok = kv_bytes_per_token_per_gpu(model, tp, kv_dtype)
    weights = once = ratios = 0.0
    for r in used:
        b = _step_bytes(model, tp, r["context_lens"], weight_dtype, kv_dtype)
        weights += b["weight_bytes"]
        once += b["weight_bytes"] + max(r["context_lens"]) * kv_tok
        ratios += (b["weight_bytes"] + b["kv_bytes"]) / (r["duration_s"] * peak)
    wall_s = sum(r["duration_s"] for r in log)
    m, t = right["mbu"], right["busy_s"]
    return {
        "correct": m,
        "weights_only": weights / (t * peak),
        "achievable_denominator": m / achievable_fraction,
        "node_bytes_gpu_peak": m * tp,
        "gpu_bytes_node_peak": m / tp,
        "mean_of_ratios": ratios / len(used),
        "idle_in_denominator": right["bytes_per_gpu"] / (wall_s * peak),
        "kv_once_per_batch": once / (t * peak),
    }


def diagnose_dashboard(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
                       kv_dtype: DType, achievable_fraction: float, reported_mbu: float) -> str:
    """The one label whose number matches reported_mbu within relative 1e-6."""
    if not _is_real(reported_mbu) or not math.isfinite(reported_mbu) or reported_mbu <= 0:
        raise ValueError("reported_mbu must be a finite number > 0")
    nums = dashboard_numbers(log, model, gpu, tp, weight_dtype, kv_dtype, achievable_fraction)
    hits = [k for k in LABELS if abs(reported_mbu - nums[k]) <= MATCH_RTOL * nums[k]]
    if len(hits) != 1:
        raise ValueError(f"reported_mbu matches {len(hits)} candidates; exactly one is needed")
    return hits[0]


def _check_fraction(f) -> None:
    if not _is_real(f) or not 0 < f < 1:
        raise ValueError("achievable_fraction must be in (0, 1)")

