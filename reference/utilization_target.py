"""Reference: the highest utilization that meets a p99 TTFT target, from the M/G/1 queue.

One replica serves prefills one at a time, first come first served, with Poisson arrivals
(M/G/1). TTFT = time waiting in the queue + the request's own prefill. The mean wait is the
Pollaczek-Khinchine formula; its tail is approximated by an exponential whose mass at t > 0 is
rho (the probability of having to wait at all):

    E[W]      = rho * S * (1 + cs2) / (2 * (1 - rho))
    P(W > t) ~= rho * exp(-t / tau),   tau = E[W] / rho = S * (1 + cs2) / (2 * (1 - rho))
    W_p       = tau * ln(rho / (1 - p))   if rho > 1 - p, else 0
    TTFT_p    = S + W_p
"""

from __future__ import annotations

import math


def _number(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise ValueError(f"{name} must be a number, got {v!r}")
    return float(v)


def _check_common(prefill_s, cs2, p) -> None:
    if not 0 < _number("prefill_s", prefill_s) < math.inf:
        raise ValueError(f"prefill_s must be a finite number > 0 (seconds), got {prefill_s!r}")
    if not 0 <= _number("cs2", cs2) < math.inf:
        raise ValueError(f"cs2 must be a finite number >= 0, got {cs2!r}")
    if not 0 < _number("p", p) < 1:
        raise ValueError(f"p must be in (0, 1) (0.99 for p99), got {p!r}")


def _ttft(rho: float, prefill_s: float, cs2: float, p: float) -> float:
    q = 1.0 - p                                   # P(W > W_p) = q
    if rho <= q:                                  # fewer than q of the requests wait at all
        return prefill_s
    tau = prefill_s * (1.0 + cs2) / (2.0 * (1.0 - rho))
    return prefill_s + tau * math.log(rho / q)


def ttft_quantile(rho: float, prefill_s: float, cs2: float, p: float = 0.99) -> float:
    """p-quantile of TTFT (seconds) at utilization rho: S + W_p (see the module docstring)."""
    if not 0 <= _number("rho", rho) < 1:
        raise ValueError(f"rho must be in [0, 1) (a fraction, not a percent), got {rho!r}")
    _check_common(prefill_s, cs2, p)
    return _ttft(float(rho), float(prefill_s), float(cs2), float(p))


def max_utilization(prefill_s: float, cs2: float, ttft_target_s: float, p: float = 0.99) -> float:
    """The largest rho in [0, 1) with ttft_quantile(rho) <= target; 0.0 when target < S.

    TTFT_p equals S on [0, 1-p] and rises strictly to infinity on (1-p, 1), so for a target
    T >= S the answer is the root of TTFT_p(rho) = T in [1-p, 1). Bisection down to adjacent
    floats: lo always meets the target, hi never does.
    """
    _check_common(prefill_s, cs2, p)
    if not 0 < _number("ttft_target_s", ttft_target_s) < math.inf:
        raise ValueError(f"ttft_target_s must be a finite number > 0 (seconds), got {ttft_target_s!r}")
    S, c, T, p = float(prefill_s), float(cs2), float(ttft_target_s), float(p)
    if T < S:
        return 0.0                                # even an idle replica takes S
    lo, hi = 1.0 - p, 1.0
    while True:
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            return lo
        if _ttft(mid, S, c, p) <= T:
            lo = mid
        else:
            hi = mid


def prefill_moments(fixed_s: float, per_token_s: float, mean_len: float, var_len: float) -> dict:
    """Mean and squared coefficient of variation of an affine prefill time a + b*L.

    Prompt length L has mean ``mean_len`` and variance ``var_len`` (tokens, tokens^2). The fixed
    part a adds to the mean but not to the spread, so cs2 of the prefill time is smaller than the
    cs2 of the prompt length: b^2 Var L / (a + b E L)^2.
    """
    a = _number("fixed_s", fixed_s)
    b = _number("per_token_s", per_token_s)
    m = _number("mean_len", mean_len)
    v = _number("var_len", var_len)
    for name, x in (("fixed_s", a), ("per_token_s", b), ("mean_len", m), ("var_len", v)):
        if not 0 <= x < math.inf:
            raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    mean_s = a + b * m
    if mean_s <= 0:
        raise ValueError("the mean prefill time fixed_s + per_token_s * mean_len must be > 0")
    return {"mean_s": mean_s, "cs2": b * b * v / (mean_s * mean_s)}


# Which textbook assumption each engine (or non-engine) mechanism breaks.
ASSUMPTIONS = ("poisson_arrivals", "one_in_service", "iid_service", "work_conserving",
               "run_to_completion", "none")
BREAKS = {
    "continuous_batching": "one_in_service",       # many requests share every step
    "decode_interference": "iid_service",          # a prefill's time depends on the decodes beside it
    "prefix_cache_hits": "iid_service",            # service depends on what earlier requests cached
    "kv_admission_blocking": "work_conserving",    # waits while compute idles: the pool is full
    "recompute_preemption": "run_to_completion",   # evicted and restarted from scratch
    "bursty_client_traffic": "poisson_arrivals",   # the clients', not the engine's
    "tokenizer_overhead": "none",                  # a constant before the queue: subtract it from T
    "network_rtt": "none",                         # a constant outside the engine
}
MECHANISMS = tuple(BREAKS)


def engine_violations(mechanisms: list[str]) -> dict[str, str]:
    """Map each mechanism name to the assumption (from ASSUMPTIONS) it breaks."""
    if not isinstance(mechanisms, (list, tuple)):
        raise ValueError("mechanisms must be a list of mechanism names")
    out = {}
    for m in mechanisms:
        if not isinstance(m, str) or m not in BREAKS:
            raise ValueError(f"unknown mechanism {m!r}; expected one of {list(MECHANISMS)}")
        out[m] = BREAKS[m]
    return out
