"""Wrong: adds the per-step overhead to the memory time inside the max (max(t_mem + overhead, t_compute)) instead of after it, so compute-bound steps lose their overhead."""
import math
from inferprep.specs import GPU, DType

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _isnum(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

def joules_per_token(power_w_per_gpu, tokens_per_s, n_gpus):
    if not _isnum(power_w_per_gpu) or power_w_per_gpu <= 0 or not _isnum(tokens_per_s) or tokens_per_s <= 0:
        raise ValueError("num")
    if not _isint(n_gpus) or n_gpus < 1:
        raise ValueError("n")
    return float(n_gpus * power_w_per_gpu / tokens_per_s)

def _spreads(jpt, tps, pw):
    js = max(jpt) / min(jpt)
    ts = max(tps) / min(tps)
    ps = max(pw) / min(pw)
    return {"joules_spread": js, "throughput_spread": ts, "power_spread": ps,
            "moved_by": "throughput" if ts > ps else "power"}

def energy_curve(gpu, dtype, weight_bytes, kv_bytes_per_token, context_len, flops_per_token,
                 batches, floor_power_w, overhead_s):
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("types")
    peak = gpu.dense_flops(dtype)
    for x in (weight_bytes, flops_per_token, floor_power_w):
        if not _isnum(x) or x <= 0:
            raise ValueError(">0")
    for x in (kv_bytes_per_token, overhead_s):
        if not _isnum(x) or x < 0:
            raise ValueError(">=0")
    if not _isint(context_len) or context_len < 0:
        raise ValueError("ctx")
    if floor_power_w > gpu.tdp_w:
        raise ValueError("floor")
    if not isinstance(batches, list) or not batches:
        raise ValueError("batches")
    for b in batches:
        if not _isint(b) or b < 1:
            raise ValueError("b")
    st, tp, pw, jp = [], [], [], []
    for b in batches:
        by = weight_bytes + b * context_len * kv_bytes_per_token
        if by > gpu.hbm_bytes:
            raise ValueError("fit")
        tm = by / gpu.hbm_bytes_per_s
        tc = b * flops_per_token / peak
        t = max(tm + overhead_s, tc)
        P = floor_power_w + (gpu.tdp_w - floor_power_w) * tc / t
        st.append(float(t)); tp.append(float(b / t)); pw.append(float(P)); jp.append(float(P * t / b))
    out = {"step_time_s": st, "tokens_per_s": tp, "power_w": pw, "joules_per_token": jp}
    out.update(_spreads(jp, tp, pw))
    return out

def measured_energy_report(power_w_per_gpu, tokens_per_s, n_gpus, tdp_w):
    if not isinstance(power_w_per_gpu, (list, tuple)) or not isinstance(tokens_per_s, (list, tuple)):
        raise ValueError("lists")
    if len(power_w_per_gpu) != len(tokens_per_s) or not power_w_per_gpu:
        raise ValueError("len")
    for x in list(power_w_per_gpu) + list(tokens_per_s):
        if not _isnum(x) or x <= 0:
            raise ValueError("val")
    if not _isint(n_gpus) or n_gpus < 1:
        raise ValueError("n")
    if not _isnum(tdp_w) or tdp_w <= 0:
        raise ValueError("tdp")
    if any(p > tdp_w for p in power_w_per_gpu):
        raise ValueError("over tdp")
    jp = [float(n_gpus * p / t) for p, t in zip(power_w_per_gpu, tokens_per_s)]
    out = {"joules_per_token": jp}
    out.update(_spreads(jp, list(tokens_per_s), list(power_w_per_gpu)))
    return out
