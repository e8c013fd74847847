r"""WRONG: any cpu_op with '::' anywhere is a dispatched operator, not only ^[A-Za-z_]\w*::. Killed by sampler-and-operator-names."""

from __future__ import annotations

import bisect
import functools
import math
import re

from inferprep.specs import DType, GPU, ModelConfig

KERNEL_CLASSES = (   # tried in this order; case-insensitive search anywhere in the name
    ("attention", re.compile(r"flash_fwd|flash_mla|paged_attention|fmha|BatchDecode", re.I)),
    ("gemm", re.compile(r"gemm|gemv|nvjet|cutlass|cublas", re.I)),
    ("sampling", re.compile(r"sampl|softmax|topk|top_k|top_p|argmax", re.I)),
)
SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
OPERATOR = re.compile(r"[A-Za-z_]\w*::")        # a dispatched operator: "aten::mm", "_C::rms_norm"
SAMPLER = re.compile(r"sampl", re.I)
# host states, highest priority first, and the GPU-idle bucket each one is charged to
HOST_STATES = ("sync", "sampling", "launch_overhead", "cpu_gaps")
BUCKETS = ("launch_overhead", "cpu_gaps", "sync", "small_unfused_kernels", "sampling",
           "kernel_efficiency")
TIE_MS = 1e-9                    # ms: buckets closer than this are equal
FIXES = {"launch_overhead": "cuda_graphs", "cpu_gaps": "move_host_work_off_critical_path",
         "sync": "remove_sync", "small_unfused_kernels": "fuse_kernels",
         "sampling": "fused_gpu_sampling", "kernel_efficiency": "kernel_tuning"}


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


def host_state(e: dict) -> str:
    """The state one host event puts the thread in (before priorities between nested events)."""
    name = e["name"]
    if e["cat"] == "cuda_runtime":
        return "sync" if name in SYNC_CALLS else "launch_overhead"
    if SAMPLER.search(name):
        return "sampling"
    if "::" in name:
        return "launch_overhead"
    return "cpu_gaps"


# ---- the floor (decode-floor's counting, one sequence) -------------------------------------

def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def floor_ms(m: ModelConfig, gpu: GPU, context_len: int, weight_dtype: DType, kv_dtype: DType):
    """(weights_ms, kv_ms) at peak bandwidth for one sequence of context_len keys."""
    for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
        _check_int(f, getattr(m, f), 1)
    if m.n_routed_experts > 0:
        raise ValueError("MoE models are out of scope: the experts a step reads depend on routing")
    _check_int("context_len", context_len, 1)
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        attn = q + d * (m.kv_lora_rank + m.qk_rope_head_dim) \
            + m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim) + H * m.v_head_dim * d
        kv_per_token = m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim)
    else:
        _check_int("n_kv_heads", m.n_kv_heads, 1)
        _check_int("head_dim", m.head_dim, 1)
        if m.n_heads % m.n_kv_heads:
            raise ValueError(f"n_heads={m.n_heads} is not a multiple of n_kv_heads={m.n_kv_heads}")
        hd = m.head_dim
        attn = d * H * hd + 2 * d * m.n_kv_heads * hd + H * hd * d
        kv_per_token = m.n_layers * 2 * m.n_kv_heads * hd
    weights = m.n_layers * (attn + 3 * d * m.ffn_size) + m.vocab_size * d
    bw = gpu.hbm_bytes_per_s
    return (1e3 * weights * weight_dtype.bytes_per_element / bw,
            1e3 * kv_per_token * context_len * kv_dtype.bytes_per_element / bw)


# ---- intervals -----------------------------------------------------------------------------

def _union(intervals) -> list[list[float]]:
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _inside(union, starts, t: float) -> bool:
    i = bisect.bisect_right(starts, t) - 1
    return i >= 0 and t < union[i][1]


def host_timeline(host: dict) -> list[tuple[float, float, str]]:
    """Disjoint sorted (start, end, state) pieces of host time, each labelled with the
    highest-priority state of the events covering it (time outside every event is absent)."""
    starts = {s: [iv[0] for iv in u] for s, u in host.items()}
    pts = sorted({p for u in host.values() for iv in u for p in iv})
    pieces = []
    for x, y in zip(pts, pts[1:]):
        mid = (x + y) / 2
        for state in HOST_STATES[:-1] + ("cpu_gaps",):
            if _inside(host[state], starts[state], mid):
                if pieces and pieces[-1][2] == state and pieces[-1][1] == x:
                    pieces[-1] = (pieces[-1][0], y, state)
                else:
                    pieces.append((x, y, state))
                break
    return pieces


def charge(a: float, b: float, timeline, starts) -> dict:
    """How the host spent the idle interval [a, b): microseconds per state."""
    out = {s: 0.0 for s in HOST_STATES}
    i = max(0, bisect.bisect_right(starts, a) - 1)
    covered = 0.0
    while i < len(timeline) and timeline[i][0] < b:
        x, y, state = timeline[i]
        o = min(b, y) - max(a, x)
        if o > 0:
            out[state] += o
            covered += o
        i += 1
    out["cpu_gaps"] += (b - a) - covered      # no host event at all: un-instrumented host time
    return out


def _read(trace: dict):
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError('trace must be a dict with a "traceEvents" list')
    steps: dict[int, list] = {}
    host = {s: [] for s in HOST_STATES}
    graphs = False
    for e in trace["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat not in ("kernel", "cpu_op", "cuda_runtime"):
            continue
        ts, dur = float(e["ts"]), float(e["dur"])
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0:
            raise ValueError("event ts/dur must be finite, dur >= 0")
        if cat == "kernel":
            step = (e.get("args") or {}).get("step")
            if isinstance(step, bool) or not isinstance(step, int):
                raise ValueError("every kernel event needs an int args['step']")
            steps.setdefault(step, []).append((ts, ts + dur, kernel_class(e["name"])))
        else:
            host[host_state(e)].append((ts, ts + dur))
            graphs |= cat == "cuda_runtime" and e["name"] == "cudaGraphLaunch"
    if len(steps) < 2:
        raise ValueError("need kernels of at least two steps (the last step is never complete)")
    for ks in steps.values():
        ks.sort()
    return steps, {s: _union(v) for s, v in host.items()}, graphs


def batch1_attribution(trace: dict, model: ModelConfig, gpu: GPU, context_len: int,
                       weight_dtype: DType, kv_dtype: DType) -> dict:
    """Per-step averages (ms) over the complete steps of the six buckets, their ranking and the
    first fix to try."""
    w_ms, kv_ms = floor_ms(model, gpu, context_len, weight_dtype, kv_dtype)
    steps, host, graphs = _read(trace)
    timeline = host_timeline(host)
    tstarts = [p[0] for p in timeline]
    order = sorted(steps)
    total = {k: 0.0 for k in BUCKETS + ("step",)}
    for s, nxt in zip(order, order[1:]):
        ks = steps[s]
        start, end = ks[0][0], steps[nxt][0][0]
        busy = {"gemm": 0.0, "attention": 0.0, "sampling": 0.0, "other": 0.0}
        for ts, te, cls in ks:
            busy[cls] += te - ts
        # GPU-idle intervals of the window [start, end)
        idle, t = [], start
        for ts, te, _ in ks:
            if ts > t:
                idle.append((t, ts))
            t = max(t, te)
        if end > t:
            idle.append((t, end))
        charged = {k: 0.0 for k in HOST_STATES}
        for a, b in idle:
            for state, us in charge(a, b, timeline, tstarts).items():
                charged[state] += us
        total["step"] += (end - start) / 1e3
        total["launch_overhead"] += charged["launch_overhead"] / 1e3
        total["cpu_gaps"] += charged["cpu_gaps"] / 1e3
        total["sync"] += charged["sync"] / 1e3
        total["small_unfused_kernels"] += busy["other"] / 1e3
        total["sampling"] += (busy["sampling"] + charged["sampling"]) / 1e3
        total["kernel_efficiency"] += (busy["gemm"] + busy["attention"]) / 1e3 - w_ms - kv_ms
    n = len(order) - 1
    out = {"complete_steps": n, "step_ms": total["step"] / n, "floor_ms": w_ms + kv_ms}
    for k in BUCKETS:
        out[k + "_ms"] = total[k] / n
    out["ranking"] = rank({k: out[k + "_ms"] for k in BUCKETS})
    out["uses_cuda_graphs"] = graphs
    first = out["ranking"][0]
    if first == "launch_overhead" and graphs:      # graphs are already on: the next suspect
        first = out["ranking"][1]
    out["first_fix"] = FIXES[first]
    return out
