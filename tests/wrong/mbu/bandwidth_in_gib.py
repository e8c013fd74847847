"""WRONG: reads the datasheet bandwidth as GiB/s (x 2^30 / 1e9). Killed by mbu-log-0-llama-3.1-70b-h100-sxm-tp8."""
import math

from inferprep.specs import DType, GPU, ModelConfig

LABELS = ("correct", "weights_only", "achievable_denominator", "node_bytes_gpu_peak",
          "gpu_bytes_node_peak", "mean_of_ratios", "idle_in_denominator", "kv_once_per_batch")
KEYS = ("step", "t_start_s", "duration_s", "context_lens", "num_prefill_tokens")


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate(model, tp, wd, kd):
    if not isinstance(model, ModelConfig) or model.n_routed_experts > 0:
        raise ValueError("need a dense ModelConfig")
    if not isinstance(wd, DType) or not isinstance(kd, DType):
        raise ValueError("dtypes must be DType")
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "ffn_size"):
        if getattr(model, f) < 1:
            raise ValueError(f)
    if not _int(tp) or tp < 1:
        raise ValueError("tp")
    if model.n_heads % tp:
        raise ValueError("heads % tp")
    if model.kv_lora_rank == 0:
        K = model.n_kv_heads
        if K < 1 or model.head_dim < 1 or model.n_heads % K:
            raise ValueError("kv heads")
        if (tp <= K and K % tp) or (tp > K and tp % K):
            raise ValueError("kv heads vs tp")


def _lens_ok(lens, empty_ok):
    if not isinstance(lens, (list, tuple)) or (not lens and not empty_ok):
        raise ValueError("context_lens")
    for L in lens:
        if not _int(L) or L < 1:
            raise ValueError("context length")


def _weight_params(m):
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank else d * H * qk
        attn = q + d * (m.kv_lora_rank + m.qk_rope_head_dim) \
            + m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim) + H * m.v_head_dim * d
    else:
        attn = 2 * d * H * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim
    return m.n_layers * (attn + 3 * d * m.ffn_size) + m.vocab_size * d


def _kv_per_token(m, tp, kd):
    if m.kv_lora_rank > 0:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * kd.bytes_per_element
    return m.n_layers * 2 * max(1, m.n_kv_heads // tp) * m.head_dim * kd.bytes_per_element


def _bytes(model, tp, lens, wd, kd):
    w = _weight_params(model) * wd.bytes_per_element / tp
    kv = sum(lens) * _kv_per_token(model, tp, kd)
    return float(w), float(kv)


def step_bytes_per_gpu(model, tp, context_lens, weight_dtype, kv_dtype):
    _validate(model, tp, weight_dtype, kv_dtype)
    _lens_ok(context_lens, False)
    w, kv = _bytes(model, tp, context_lens, weight_dtype, kv_dtype)
    return {"weight_bytes": w, "kv_bytes": kv}


def _check_log(log, gpu):
    if not isinstance(gpu, GPU) or not _num(gpu.hbm_bytes_per_s) or not (
            math.isfinite(gpu.hbm_bytes_per_s) and gpu.hbm_bytes_per_s > 0):
        raise ValueError("gpu")
    if not isinstance(log, list) or not log:
        raise ValueError("log")
    for r in log:
        if not isinstance(r, dict) or any(k not in r for k in KEYS):
            raise ValueError("row")
        d = r["duration_s"]
        if not _num(d) or not math.isfinite(d) or d <= 0:
            raise ValueError("duration")
        if not _int(r["num_prefill_tokens"]) or r["num_prefill_tokens"] < 0:
            raise ValueError("prefill")
        _lens_ok(r["context_lens"], True)


def _busy(log):
    return [r for r in log if r["context_lens"] and r["num_prefill_tokens"] == 0]


def _peak(gpu):
    return gpu.hbm_bytes_per_s / 1e9 * 2**30


def mbu(log, model, gpu, tp, weight_dtype, kv_dtype):
    _validate(model, tp, weight_dtype, kv_dtype)
    _check_log(log, gpu)
    used = _busy(log)
    if not used:
        raise ValueError("no busy decode step")
    moved = sum(sum(_bytes(model, tp, r["context_lens"], weight_dtype, kv_dtype)) for r in used)
    busy = sum(r["duration_s"] for r in used)
    return {"mbu": moved / (busy * _peak(gpu)), "busy_s": busy, "bytes_per_gpu": moved,
            "steps_used": len(used), "steps_excluded": len(log) - len(used)}


def dashboard_numbers(log, model, gpu, tp, weight_dtype, kv_dtype, achievable_fraction):
    f = achievable_fraction
    if not _num(f) or not 0 < f < 1:
        raise ValueError("achievable_fraction")
    r = mbu(log, model, gpu, tp, weight_dtype, kv_dtype)
    M, T, peak = r["mbu"], r["busy_s"], _peak(gpu)
    used = _busy(log)
    kv_tok = _kv_per_token(model, tp, kv_dtype)
    w_sum = once = ratios = 0.0
    for row in used:
        w, kv = _bytes(model, tp, row["context_lens"], weight_dtype, kv_dtype)
        w_sum += w
        once += w + max(row["context_lens"]) * kv_tok
        ratios += (w + kv) / (row["duration_s"] * peak)
    wall = sum(row["duration_s"] for row in log)
    return {"correct": M, "weights_only": w_sum / (T * peak),
            "achievable_denominator": M / f,
            "node_bytes_gpu_peak": M * tp, "gpu_bytes_node_peak": M / tp,
            "mean_of_ratios": ratios / len(used),
            "idle_in_denominator": r["bytes_per_gpu"] / (wall * peak),
            "kv_once_per_batch": once / (T * peak)}


def diagnose_dashboard(log, model, gpu, tp, weight_dtype, kv_dtype, achievable_fraction, reported_mbu):
    if not _num(reported_mbu) or not math.isfinite(reported_mbu) or reported_mbu <= 0:
        raise ValueError("reported_mbu")
    nums = dashboard_numbers(log, model, gpu, tp, weight_dtype, kv_dtype, achievable_fraction)
    hits = [k for k in LABELS if abs(reported_mbu - nums[k]) <= 1e-6 * nums[k]]
    if len(hits) != 1:
        raise ValueError("no single match")
    return hits[0]
