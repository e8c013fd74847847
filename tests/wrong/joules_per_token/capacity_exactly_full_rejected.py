"""WRONG: rejects a batch whose bytes equal gpu.hbm_bytes (>= where the statement says "exceeds", i.e. >), so
a step reading exactly the H100's 80e9 bytes raises ValueError instead of returning its curve. It used to pass
because no case filled memory exactly."""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType


def _pos(name: str, v, *, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {v!r}")
    return float(v)


def _int(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return v


def joules_per_token(power_w_per_gpu: float, tokens_per_s: float, n_gpus: int) -> float:
    """Energy per token of a group of n_gpus GPUs that together emit tokens_per_s."""
    p = _pos("power_w_per_gpu", power_w_per_gpu)
    x = _pos("tokens_per_s", tokens_per_s)
    n = _int("n_gpus", n_gpus, 1)
    return n * p / x


def _spreads(power: list[float], tput: list[float], jpt: list[float]) -> dict:
    ps, xs = max(power) / min(power), max(tput) / min(tput)
    return {
        "joules_spread": max(jpt) / min(jpt),
        "throughput_spread": xs,
        "power_spread": ps,
        "moved_by": "throughput" if xs > ps else "power",
    }


def energy_curve(gpu: GPU, dtype: DType, weight_bytes: float, kv_bytes_per_token: float, context_len: int,
                 flops_per_token: float, batches: list, floor_power_w: float, overhead_s: float) -> dict:
    """Roofline step time, modelled power and joules per token for each decode batch."""
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("gpu must be an inferprep.specs.GPU and dtype an inferprep.specs.DType")
    w = _pos("weight_bytes", weight_bytes)
    kv = _pos("kv_bytes_per_token", kv_bytes_per_token, allow_zero=True)
    ctx = _int("context_len", context_len, 0)
    f = _pos("flops_per_token", flops_per_token)
    floor = _pos("floor_power_w", floor_power_w)
    oh = _pos("overhead_s", overhead_s, allow_zero=True)
    if floor > gpu.tdp_w:
        raise ValueError("floor_power_w exceeds the board's TDP")
    if not isinstance(batches, (list, tuple)) or not batches:
        raise ValueError("batches must be a non-empty list")
    peak, bw = gpu.dense_flops(dtype), gpu.hbm_bytes_per_s
    times, tput, power, jpt = [], [], [], []
    for b in batches:
        b = _int("batch", b, 1)
        nbytes = w + b * ctx * kv
        if nbytes >= gpu.hbm_bytes:
            raise ValueError(f"batch {b}: weights and KV ({nbytes:.3g} B) exceed the GPU's memory")
        t_mem, t_cmp = nbytes / bw, b * f / peak
        t = max(t_mem, t_cmp) + oh
        p = floor + (gpu.tdp_w - floor) * (t_cmp / t)
        times.append(t)
        tput.append(b / t)
        power.append(p)
        jpt.append(p * t / b)
    out = {"step_time_s": times, "tokens_per_s": tput, "power_w": power, "joules_per_token": jpt}
    out.update(_spreads(power, tput, jpt))
    return out


def measured_energy_report(power_w_per_gpu: list, tokens_per_s: list, n_gpus: int, tdp_w: float) -> dict:
    """Joules per token from measured per-GPU power and group throughput, one entry per batch."""
    n = _int("n_gpus", n_gpus, 1)
    cap = _pos("tdp_w", tdp_w)
    if not isinstance(power_w_per_gpu, (list, tuple)) or not isinstance(tokens_per_s, (list, tuple)):
        raise ValueError("power_w_per_gpu and tokens_per_s must be lists")
    if len(power_w_per_gpu) != len(tokens_per_s) or not power_w_per_gpu:
        raise ValueError("power_w_per_gpu and tokens_per_s must be non-empty and of equal length")
    power = [_pos("power", p) for p in power_w_per_gpu]
    tput = [_pos("tokens_per_s", x) for x in tokens_per_s]
    if max(power) > cap:
        raise ValueError("a per-GPU power reading exceeds the TDP: it is not a per-GPU reading")
    jpt = [n * p / x for p, x in zip(power, tput)]
    out = {"joules_per_token": jpt}
    out.update(_spreads(power, tput, jpt))
    return out
