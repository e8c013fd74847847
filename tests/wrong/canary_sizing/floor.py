"""WRONG: rounds the sample size down (int()), so the achieved power falls short. Killed by rate-0.005+0.0025-a0.05-pw0.8-k1-deff1."""
import math
from statistics import NormalDist

ND = NormalDist()


def _num(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    return float(x)


def _common(alpha, k, deff):
    if not 0 < _num(alpha) < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    if _num(k) <= 0:
        raise ValueError("k must be > 0")
    if _num(deff) < 1:
        raise ValueError("deff must be >= 1")


def _pw(power):
    if not 0.5 < _num(power) < 1:
        raise ValueError("power must be in (0.5, 1)")


def _rates(p0, delta):
    if not 0 < _num(p0) < 1:
        raise ValueError("p0 must be in (0, 1)")
    if not 0 < _num(delta) or p0 + delta >= 1:
        raise ValueError("need delta > 0 and p0 + delta < 1")


def _means(cv, rel):
    if _num(cv) <= 0 or _num(rel) <= 0:
        raise ValueError("cv and rel_delta must be > 0")


def _n(n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n_canary must be an int >= 1")


def _za(alpha):
    return ND.inv_cdf(1 - alpha)


def _zb(power):
    return ND.inv_cdf(power)


def _sds(p0, delta, k):
    p1 = p0 + delta
    pbar = (p1 + k * p0) / (1 + k)
    s0 = math.sqrt(pbar * (1 - pbar) * (1 + 1 / k))
    s1 = math.sqrt(p1 * (1 - p1) + p0 * (1 - p0) / k)
    return s0, s1


def _finish(x):
    return int(x)


def n_proportion(p0, delta, alpha, power, k=1.0, deff=1.0):
    _rates(p0, delta); _common(alpha, k, deff); _pw(power)
    s0, s1 = _sds(p0, delta, k)
    n = (_za(alpha) * s0 + _zb(power) * s1) ** 2 / delta ** 2
    return _finish(deff * n)


def n_mean(cv, rel_delta, alpha, power, k=1.0, deff=1.0):
    _means(cv, rel_delta); _common(alpha, k, deff); _pw(power)
    n = (_za(alpha) + _zb(power)) ** 2 * cv ** 2 * (1 + 1 / k) / rel_delta ** 2
    return _finish(deff * n)


def power_proportion(n_canary, p0, delta, alpha, k=1.0, deff=1.0):
    _n(n_canary); _rates(p0, delta); _common(alpha, k, deff)
    s0, s1 = _sds(p0, delta, k)
    return ND.cdf((delta * math.sqrt(n_canary / deff) - _za(alpha) * s0) / s1)


def power_mean(n_canary, cv, rel_delta, alpha, k=1.0, deff=1.0):
    _n(n_canary); _means(cv, rel_delta); _common(alpha, k, deff)
    return ND.cdf(rel_delta * math.sqrt(n_canary / deff) / (cv * math.sqrt(1 + 1 / k)) - _za(alpha))


def design_effect(m, icc):
    if _num(m) < 1 or not 0 <= _num(icc) <= 1:
        raise ValueError("need m >= 1 and icc in [0, 1]")
    return 1 + (m - 1) * icc


def _stage_k(f, control):
    return 1.0 if control == "baseline" else (1 - f) / f


def rollout(stages, lam_rps, p0, delta, alpha, power, control="baseline"):
    if control not in ("baseline", "rest"):
        raise ValueError("control must be 'baseline' or 'rest'")
    if not isinstance(stages, (list, tuple)) or len(stages) == 0:
        raise ValueError("stages must be a non-empty list")
    hi = 0.5 if control == "baseline" else 1.0
    for f in stages:
        _num(f)
        if not 0 < f <= hi or f == 1.0:
            raise ValueError("stage fraction out of range")
    if _num(lam_rps) <= 0:
        raise ValueError("lam_rps must be > 0")
    out = []
    for f in stages:
        k = _stage_k(f, control)
        n = n_proportion(p0, delta, alpha, power, k)
        canary_rps = f * lam_rps
        out.append({"fraction": float(f), "k": k, "n_canary": n,
                    "minutes": n / canary_rps / 60, "extra_failures": n * delta})
    return out
