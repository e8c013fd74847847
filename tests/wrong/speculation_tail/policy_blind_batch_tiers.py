"""WRONG: an acceptance-blind table of batch size (g = 4 up to 48 requests, 1 up to 128, else 0) that never reads the estimates. Killed by policy-day-64-confident, policy-day-160-confident and policy-8b-h200-mid-doubtful."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel

GMAX = 8
BREAK_EVEN_ITERS = 100
WEAKEST_SLACK = 1.1


# -- validation ----------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_alpha(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1


def _check_models(target, drafter) -> None:
    if not isinstance(target, StepModel) or not isinstance(drafter, StepModel):
        raise ValueError("target and drafter must be inferprep.sim.step_model.StepModel values")


def _check_context(context_len) -> None:
    if not _is_int(context_len) or context_len < 0:
        raise ValueError(f"context_len must be an int >= 0, got {context_len!r}")


def _check_g(g) -> None:
    if not _is_int(g) or not 0 <= g <= GMAX:
        raise ValueError(f"a draft length must be an int in [0, {GMAX}], got {g!r}")


def _check_alphas(alphas, name="alpha") -> None:
    if not isinstance(alphas, (list, tuple)) or len(alphas) == 0:
        raise ValueError(f"{name} must be a non-empty list")
    if any(not _is_alpha(a) for a in alphas):
        raise ValueError(f"every {name} must be a finite number in [0, 1]")


def _check_trace(trace) -> None:
    if not isinstance(trace, (list, tuple)) or len(trace) == 0:
        raise ValueError("trace must be a non-empty list of batches")
    for i, b in enumerate(trace):
        if not isinstance(b, dict) or not {"level", "context_len", "alpha"} <= set(b):
            raise ValueError(f"batch {i} must be a dict with keys level, context_len, alpha")
        if not isinstance(b["level"], str) or not b["level"]:
            raise ValueError(f"batch {i}: level must be a non-empty str")
        _check_context(b["context_len"])
        _check_alphas(b["alpha"])


# -- the step model ------------------------------------------------------------------------------

def expected_tokens(alpha: float, g: int) -> float:
    """Tokens one step emits for a request with i.i.d. acceptance alpha and g drafts."""
    if alpha == 1:
        return g + 1.0
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def _forward_s(sm: StepModel, c: int, qs) -> float:
    """StepModel.step_s of rows (q, c, q), one per entry of qs, with equal rows grouped (the
    same sum, computed faster: count x attention time of one row)."""
    counts = {}
    for q in qs:
        counts[q] = counts.get(q, 0) + 1
    tokens = sum(qs)
    attention = sum(n * sm.attention_s(q, c) for q, n in sorted(counts.items()))
    return sm.t_fixed_s + sm.gemm_s(tokens, tokens) + attention


def batch_step_s(target: StepModel, drafter: StepModel, context_len: int, gs) -> float:
    """One step of a batch whose request i drafts gs[i] tokens (0: plain decode row):
    target.step_s([(g + 1, c, g + 1) ...]) + max(gs) * drafter.step_s([(1, c, 1)] * b)."""
    verify = _forward_s(target, context_len, [g + 1 for g in gs])
    G = max(gs)
    if G == 0:
        return verify
    return verify + G * _forward_s(drafter, context_len, [1] * len(gs))


def break_even_alpha(target, drafter, batch_size, context_len, g):
    """The acceptance at which a homogeneous batch of ``batch_size`` requests, all drafting g,
    emits tokens exactly as fast per request as without speculation: E(alpha, g) = R with
    R = step(all g) / step(all 0). 0.0 if R <= 1; None if R >= g + 1 (never breaks even)."""
    _check_models(target, drafter)
    if not _is_int(batch_size) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    _check_context(context_len)
    _check_g(g)
    ratio = (batch_step_s(target, drafter, context_len, [g] * batch_size)
             / batch_step_s(target, drafter, context_len, [0] * batch_size))
    if ratio <= 1:
        return 0.0
    if ratio >= g + 1:
        return None
    lo, hi = 0.0, 1.0                     # E(., g) increases from 1 to g + 1 on [0, 1]
    for _ in range(BREAK_EVEN_ITERS):
        mid = (lo + hi) / 2
        if expected_tokens(mid, g) < ratio:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def quantile(xs, p_percent: int):
    """The element at index (p * n) // 100 of the sorted list (p in percent, an int)."""
    s = sorted(xs)
    return s[min(len(s) - 1, (p_percent * len(s)) // 100)]


def tail_report(target, drafter, trace, draft_lengths) -> dict:
    """Per-request time per output token of ``trace`` under the given draft lengths, and who
    owns its p99."""
    _check_models(target, drafter)
    _check_trace(trace)
    if not isinstance(draft_lengths, (list, tuple)) or len(draft_lengths) != len(trace):
        raise ValueError("draft_lengths must hold one list per batch of the trace")
    tpot, tpot_off, alphas, levels = [], [], [], []
    for batch, gs in zip(trace, draft_lengths):
        if not isinstance(gs, (list, tuple)) or len(gs) != len(batch["alpha"]):
            raise ValueError("each batch's draft lengths must have one entry per request")
        for g in gs:
            _check_g(g)
        c = batch["context_len"]
        step = batch_step_s(target, drafter, c, gs)
        plain = batch_step_s(target, drafter, c, [0] * len(gs))
        for a, g in zip(batch["alpha"], gs):
            tpot.append(step / expected_tokens(a, g))
            tpot_off.append(plain)
            alphas.append(a)
            levels.append(batch["level"])
    n = len(tpot)
    p99 = quantile(tpot, 99)
    owners = [i for i in range(n) if tpot[i] >= p99]
    by_level = {}
    for i in owners:
        by_level[levels[i]] = by_level.get(levels[i], 0) + 1
    return {
        "tpot_s": tpot,
        "mean_s": sum(tpot) / n,
        "p50_s": quantile(tpot, 50),
        "p99_s": p99,
        "slowed_share": sum(1 for t, o in zip(tpot, tpot_off) if t > o * (1 + 1e-9)) / n,
        "p99_owners": by_level,
        "p99_alpha_max": max(alphas[i] for i in owners),
    }


# -- the policy ----------------------------------------------------------------------------------

def draft_lengths(target, drafter, context_len, alpha_est) -> list:
    """ATTACK: acceptance-blind batch-size tiers (g = 4 up to 48 requests, 1 up to 128, else 0);
    never reads the estimates."""
    _check_models(target, drafter)
    _check_context(context_len)
    _check_alphas(alpha_est, "alpha_est")
    b = len(alpha_est)
    return [4 if b <= 48 else 1 if b <= 128 else 0] * b
