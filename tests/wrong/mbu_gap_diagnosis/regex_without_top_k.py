"""WRONG: sampling pattern without top_k (only topk). Killed by kernel-class-table."""

from __future__ import annotations

import functools
import math
import re

from inferprep.specs import DType, GPU, ModelConfig

# Kernel classes, tried in this order; case-insensitive search anywhere in the kernel name.
KERNEL_CLASSES = (
    ("attention", re.compile(r"flash_fwd|flash_mla|paged_attention|fmha|BatchDecode", re.I)),
    ("gemm", re.compile(r"gemm|gemv|nvjet|cutlass|cublas", re.I)),
    ("sampling", re.compile(r"sampl|softmax|topk|top_p|argmax", re.I)),
)
BUCKETS = ("gemm_efficiency", "attention", "non_gemm_kernels", "launch_gaps", "sampling_cpu")
TIE_MS = 1e-9                    # ms: buckets closer than this are equal


def rank(means: dict) -> list[str]:
    """The bucket names, largest mean first; means within TIE_MS of each other are a tie, kept
    in the listed order (so 0 and 5e-10 ms rank as equals, not by their float noise)."""
    def cmp(a: str, b: str) -> int:
        if abs(means[a] - means[b]) <= TIE_MS:
            return BUCKETS.index(a) - BUCKETS.index(b)
        return -1 if means[a] > means[b] else 1
    return sorted(BUCKETS, key=functools.cmp_to_key(cmp))


def kernel_class(name: str) -> str:
    for cls, pattern in KERNEL_CLASSES:
        if pattern.search(name):
            return cls
    return "other"


# ---- the floor (same counting as decode-floor) ---------------------------------------------

def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_model(m: ModelConfig) -> None:
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.n_routed_experts > 0:
        raise ValueError("MoE models are out of scope: the experts a step reads depend on routing")
    if m.kv_lora_rank == 0:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")


def _attention_params(m: ModelConfig) -> int:
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:                      # MLA, Hugging Face DeepSeek-V2/V3 layout
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        kv_a = d * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv_a + kv_b + H * m.v_head_dim * d
    hd = m.head_dim
    return d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d


def _kv_elements_per_token(m: ModelConfig) -> int:
    if m.kv_lora_rank > 0:
        return m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    return m.n_layers * 2 * m.n_kv_heads * m.head_dim


def floor_ms(model: ModelConfig, gpu: GPU, context_lens: list[int], weight_dtype: DType,
             kv_dtype: DType) -> dict:
    """{"weights_ms", "kv_ms", "floor_ms"}: the bytes a decode step reads over peak bandwidth."""
    _check_model(model)
    if not isinstance(context_lens, (list, tuple)) or len(context_lens) == 0:
        raise ValueError("context_lens must be a non-empty list of ints (one per sequence)")
    for L in context_lens:
        _check_int("context length", L, 1)
    m = model
    weights = m.n_layers * (_attention_params(m) + 3 * m.hidden_size * m.ffn_size) \
        + m.vocab_size * m.hidden_size                     # LM head, tied or not
    w_ms = 1e3 * weights * weight_dtype.bytes_per_element / gpu.hbm_bytes_per_s
    kv_ms = 1e3 * _kv_elements_per_token(m) * sum(context_lens) * kv_dtype.bytes_per_element \
        / gpu.hbm_bytes_per_s
    return {"weights_ms": w_ms, "kv_ms": kv_ms, "floor_ms": w_ms + kv_ms}


# ---- reading the trace ---------------------------------------------------------------------

def kernels_by_step(trace: dict) -> dict[int, list[tuple[float, float, str]]]:
    """step -> [(start_us, end_us, kernel class)] sorted by start, from the trace's kernel events."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError('trace must be a dict with a "traceEvents" list')
    steps: dict[int, list] = {}
    for e in trace["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        step = (e.get("args") or {}).get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            raise ValueError("every kernel event needs an int args['step']")
        ts, dur = float(e["ts"]), float(e["dur"])
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0:
            raise ValueError("kernel ts/dur must be finite, dur >= 0")
        steps.setdefault(step, []).append((ts, ts + dur, kernel_class(e["name"])))
    if len(steps) < 2:
        raise ValueError("need kernels of at least two steps (the last step is never complete)")
    for ks in steps.values():
        ks.sort()
    return steps


def step_windows(steps: dict) -> list[tuple[int, float, float]]:
    """(step, start, end) of every complete step: from its first kernel's start to the next
    step's first kernel's start. The last step (largest number) has no end and is dropped."""
    order = sorted(steps)
    return [(s, steps[s][0][0], steps[n][0][0]) for s, n in zip(order, order[1:])]


def gap_buckets(trace: dict, model: ModelConfig, gpu: GPU, context_lens: list[int],
                weight_dtype: DType, kv_dtype: DType) -> dict:
    """Per-step averages over the complete steps, in ms: step, floor, MBU and the five buckets."""
    f = floor_ms(model, gpu, context_lens, weight_dtype, kv_dtype)
    steps = kernels_by_step(trace)
    windows = step_windows(steps)
    total = {k: 0.0 for k in ("step",) + BUCKETS}
    for s, start, end in windows:
        busy = {"gemm": 0.0, "attention": 0.0, "sampling": 0.0, "other": 0.0}
        for ts, te, cls in steps[s]:
            busy[cls] += te - ts
        last_end = max(te for _, te, _ in steps[s])
        # idle GPU time between the step's first kernel start and its last kernel end
        launch_gaps = (last_end - start) - sum(busy.values())
        total["step"] += (end - start) / 1e3
        total["gemm_efficiency"] += busy["gemm"] / 1e3 - f["weights_ms"]
        total["attention"] += busy["attention"] / 1e3 - f["kv_ms"]
        total["non_gemm_kernels"] += busy["other"] / 1e3
        total["launch_gaps"] += launch_gaps / 1e3
        total["sampling_cpu"] += (busy["sampling"] + (end - last_end)) / 1e3
    n = len(windows)
    out = {"complete_steps": n, "step_ms": total["step"] / n, "floor_ms": f["floor_ms"]}
    out["mbu"] = out["floor_ms"] / out["step_ms"]
    for k in BUCKETS:
        out[k + "_ms"] = total[k] / n
    out["ranking"] = rank({k: out[k + "_ms"] for k in BUCKETS})
    return out
