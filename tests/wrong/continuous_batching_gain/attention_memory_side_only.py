"""WRONG: prices decode attention as the KV read kvb*context/BW only, dropping the FLOP side of the max. Killed by step-model-mqa64-slow-int4kv-compute-bound-attention-n8-b2-context4096."""

from __future__ import annotations

import heapq
import math

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_real(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")


def _check_trace(lengths, b) -> None:
    if not isinstance(lengths, (list, tuple)) or len(lengths) == 0:
        raise ValueError("lengths must be a non-empty list of ints >= 1")
    for L in lengths:
        _check_int("output length", L, 1)
    _check_int("b", b, 1)


def _active_from_diff(diff: list[int], steps: int) -> list[int]:
    active, n = [], 0
    for s in range(1, steps + 1):
        n += diff[s]
        active.append(n)
    return active


def _static_active(lengths, b) -> list[int]:
    out: list[int] = []
    for i in range(0, len(lengths), b):
        group = lengths[i:i + b]
        longest = max(group)
        diff = [0] * (longest + 2)
        for L in group:                       # member busy at group steps 1..L
            diff[1] += 1
            diff[L + 1] -= 1
        out += _active_from_diff(diff, longest)
    return out


def _continuous_active(lengths, b) -> list[int]:
    free_at = [1] * min(b, len(lengths))     # the step at which each slot is next free
    starts_ends = []
    for L in lengths:                         # FCFS: the next request takes the earliest free slot
        start = heapq.heappop(free_at)
        starts_ends.append((start, start + L - 1))
        heapq.heappush(free_at, start + L)
    steps = max(end for _, end in starts_ends)
    diff = [0] * (steps + 2)
    for start, end in starts_ends:
        diff[start] += 1
        diff[end + 1] -= 1
    return _active_from_diff(diff, steps)


def schedule(lengths: list[int], b: int) -> dict:
    """Busy slots per decode step: {"static_active": [n_1, ...], "continuous_active": [...]}."""
    _check_trace(lengths, b)
    lengths = list(lengths)
    return {"static_active": _static_active(lengths, b),
            "continuous_active": _continuous_active(lengths, b)}


def _timed(active_static, active_cont, step_cost) -> dict:
    static_s = sum(step_cost(n) for n in active_static)
    cont_s = sum(step_cost(n) for n in active_cont)
    return {"static_s": static_s, "continuous_s": cont_s, "gain": static_s / cont_s,
            "static_steps": len(active_static), "continuous_steps": len(active_cont)}


def batching_gain(lengths: list[int], b: int, a: float, c: float) -> dict:
    """Both schedules timed with t(n) = a + c*n seconds per step of n busy slots."""
    _check_trace(lengths, b)
    _check_real("a", a)
    _check_real("c", c)
    if a + c <= 0:
        raise ValueError("a + c must be > 0 (a step must cost something)")
    sched = schedule(lengths, b)
    return _timed(sched["static_active"], sched["continuous_active"], lambda n: a + c * n)


def step_model_gain(lengths: list[int], b: int, step_model: StepModel, context: int) -> dict:
    """Both schedules timed with the StepModel: a step of n busy slots is n decode rows
    (1, context - 1, 1), i.e. t(n) = step_model.decode_step_s([context] * n)."""
    _check_trace(lengths, b)
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    _check_int("context", context, 1)
    sm = step_model
    attention_row = sm.kv_bytes_per_token * context / sm.bytes_per_s          # the same for every row
    cost = {}

    def step_cost(n: int) -> float:
        if n not in cost:
            cost[n] = sm.t_fixed_s + sm.gemm_s(n, n) + n * attention_row
        return cost[n]

    sched = schedule(lengths, b)
    return _timed(sched["static_active"], sched["continuous_active"], step_cost)


def length_statistic(lengths: list[int], b: int) -> float:
    """r = static steps / (total tokens / b): the sum over groups of the group's longest output,
    times b, over the sum of all outputs. With N a multiple of b this is E[max of b] / E[L]."""
    _check_trace(lengths, b)
    lengths = list(lengths)
    static_steps = sum(max(lengths[i:i + b]) for i in range(0, len(lengths), b))
    return b * static_steps / sum(lengths)


def harmonic_gain(b: int) -> float:
    """E[max of b i.i.d. exponentials] / E[one] = H_b = 1 + 1/2 + ... + 1/b."""
    _check_int("b", b, 1)
    return math.fsum(1.0 / k for k in range(1, b + 1))


def token_budget_point(step_model: StepModel, budget_tokens: int) -> dict:
    """Where a per-step token budget sits on the weight-GEMM roofline of the StepModel."""
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    _check_int("budget_tokens", budget_tokens, 1)
    sm = step_model
    memory_s = sm.weight_bytes / sm.bytes_per_s
    compute_s = 2 * sm.body_params * budget_tokens / sm.flops_per_s
    gemm = max(memory_s, compute_s)
    return {"knee_tokens": memory_s * sm.flops_per_s / (2 * sm.body_params),
            "bound": "compute" if compute_s > memory_s else "memory",
            "gemm_s": gemm, "compute_utilization": compute_s / gemm}
