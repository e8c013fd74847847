"""WRONG: marks bursty client traffic as breaking nothing (it is not the engine, but it breaks Poisson arrivals) and the tokenizer's constant as breaking iid service. Killed by mechanisms-all."""
import math

ASSUMPTION_OF = {
    "continuous_batching": "one_in_service",
    "decode_interference": "iid_service",
    "prefix_cache_hits": "iid_service",
    "kv_admission_blocking": "work_conserving",
    "recompute_preemption": "run_to_completion",
    "bursty_client_traffic": "none",
    "tokenizer_overhead": "iid_service",
    "network_rtt": "none",
}


def _num(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        raise ValueError(f"not a number: {x!r}")
    return float(x)


def _check(S, cs2, p):
    if not 0 < _num(S) < math.inf:
        raise ValueError("prefill_s must be finite and > 0")
    if not 0 <= _num(cs2) < math.inf:
        raise ValueError("cs2 must be finite and >= 0")
    if not 0 < _num(p) < 1:
        raise ValueError("p must be in (0, 1)")


def _q(rho, S, cs2, p):
    q = 1 - p
    if rho <= q:
        return S
    tau = S * (1 + cs2) / (2 * (1 - rho))
    return S + tau * math.log(rho / q)


def ttft_quantile(rho, prefill_s, cs2, p=0.99):
    if not 0 <= _num(rho) < 1:
        raise ValueError("rho must be in [0, 1)")
    _check(prefill_s, cs2, p)
    return _q(float(rho), float(prefill_s), float(cs2), float(p))


def max_utilization(prefill_s, cs2, ttft_target_s, p=0.99):
    _check(prefill_s, cs2, p)
    if not 0 < _num(ttft_target_s) < math.inf:
        raise ValueError("ttft_target_s must be finite and > 0")
    S, c, T, p = float(prefill_s), float(cs2), float(ttft_target_s), float(p)
    if T < S:
        return 0.0
    lo, hi = 1 - p, 1.0
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _q(mid, S, c, p) <= T:
            lo = mid
        else:
            hi = mid
    return lo


def prefill_moments(fixed_s, per_token_s, mean_len, var_len):
    vals = [_num(v) for v in (fixed_s, per_token_s, mean_len, var_len)]
    if any(not 0 <= v < math.inf for v in vals):
        raise ValueError("arguments must be finite and >= 0")
    a, b, m, v = vals
    mean = a + b * m
    if mean <= 0:
        raise ValueError("zero mean prefill time")
    return {"mean_s": mean, "cs2": b * b * v / mean ** 2}


def engine_violations(mechanisms):
    if not isinstance(mechanisms, (list, tuple)):
        raise ValueError("mechanisms must be a list")
    out = {}
    for m in mechanisms:
        if m not in ASSUMPTION_OF:
            raise ValueError(f"unknown mechanism {m!r}")
        out[m] = ASSUMPTION_OF[m]
    return out
