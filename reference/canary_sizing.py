"""Reference: how many canary requests a verdict needs, and how long each rollout stage lasts.

A canary verdict is a one-sided two-sample z-test (we act only on regressions): canary arm n
requests, control arm k*n, significance alpha, power 1 - beta at the smallest regression worth
catching. z_a = Phi^-1(1 - alpha), z_b = Phi^-1(power). Requests that cluster (sessions) inflate
the variance by the design effect deff: an arm of n requests carries n/deff requests' worth of
information, so n is multiplied by deff before rounding up.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_N = NormalDist()


def _number(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)


def _check_test(alpha, k, deff) -> None:
    if not 0 < _number("alpha", alpha) < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5) (a one-sided significance level), got {alpha!r}")
    if not _number("k", k) > 0:
        raise ValueError(f"k (control requests per canary request) must be > 0, got {k!r}")
    if not _number("deff", deff) >= 1:
        raise ValueError(f"deff (design effect) must be >= 1, got {deff!r}")


def _check_power(power) -> None:
    if not 0.5 < _number("power", power) < 1:
        raise ValueError(f"power must be in (0.5, 1), got {power!r}")


def _check_rates(p0, delta) -> None:
    if not 0 < _number("p0", p0) < 1:
        raise ValueError(f"p0 (baseline rate) must be in (0, 1), got {p0!r}")
    if not 0 < _number("delta", delta) < 1 - p0:
        raise ValueError(f"delta must be > 0 with p0 + delta < 1, got {delta!r}")


def _check_mean(cv, rel_delta) -> None:
    if not _number("cv", cv) > 0:
        raise ValueError(f"cv must be > 0, got {cv!r}")
    if not _number("rel_delta", rel_delta) > 0:
        raise ValueError(f"rel_delta must be > 0 (a fraction: 0.05 for +5%), got {rel_delta!r}")


def _check_n(n) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n_canary must be an int >= 1, got {n!r}")


def _proportion_sds(p0: float, delta: float, k: float) -> tuple[float, float]:
    """Per-sqrt(request) standard deviations of (canary rate - control rate): under H0 (pooled)
    and under H1 (each arm its own rate)."""
    p1 = p0 + delta
    pbar = (p1 + k * p0) / (1 + k)                  # pooled rate, weighted by arm sizes
    sd0 = math.sqrt(pbar * (1 - pbar) * (1 + 1 / k))
    sd1 = math.sqrt(p1 * (1 - p1) + p0 * (1 - p0) / k)
    return sd0, sd1


def n_proportion_exact(p0, delta, alpha, power, k=1.0, deff=1.0) -> float:
    """The unrounded canary-arm size for a rate p0 -> p0 + delta."""
    za, zb = _N.inv_cdf(1 - alpha), _N.inv_cdf(power)
    sd0, sd1 = _proportion_sds(p0, delta, k)
    return deff * (za * sd0 + zb * sd1) ** 2 / delta ** 2


def n_mean_exact(cv, rel_delta, alpha, power, k=1.0, deff=1.0) -> float:
    """The unrounded canary-arm size for a mean that grows by rel_delta (noise cv per request)."""
    za, zb = _N.inv_cdf(1 - alpha), _N.inv_cdf(power)
    return deff * (za + zb) ** 2 * cv ** 2 * (1 + 1 / k) / rel_delta ** 2


def n_proportion(p0: float, delta: float, alpha: float, power: float, k: float = 1.0,
                 deff: float = 1.0) -> int:
    """Canary requests to detect an error rate p0 -> p0 + delta (one-sided), rounded up."""
    _check_rates(p0, delta)
    _check_test(alpha, k, deff)
    _check_power(power)
    return math.ceil(n_proportion_exact(p0, delta, alpha, power, k, deff))


def n_mean(cv: float, rel_delta: float, alpha: float, power: float, k: float = 1.0,
           deff: float = 1.0) -> int:
    """Canary requests to detect a mean latency growing by rel_delta (one-sided), rounded up."""
    _check_mean(cv, rel_delta)
    _check_test(alpha, k, deff)
    _check_power(power)
    return math.ceil(n_mean_exact(cv, rel_delta, alpha, power, k, deff))


def power_proportion(n_canary: int, p0: float, delta: float, alpha: float, k: float = 1.0,
                     deff: float = 1.0) -> float:
    """Probability that n_canary canary requests (k*n_canary control) flag p0 -> p0 + delta."""
    _check_n(n_canary)
    _check_rates(p0, delta)
    _check_test(alpha, k, deff)
    za = _N.inv_cdf(1 - alpha)
    sd0, sd1 = _proportion_sds(p0, delta, k)
    return _N.cdf((delta * math.sqrt(n_canary / deff) - za * sd0) / sd1)


def power_mean(n_canary: int, cv: float, rel_delta: float, alpha: float, k: float = 1.0,
               deff: float = 1.0) -> float:
    """Probability that n_canary canary requests flag a mean growing by rel_delta."""
    _check_n(n_canary)
    _check_mean(cv, rel_delta)
    _check_test(alpha, k, deff)
    za = _N.inv_cdf(1 - alpha)
    return _N.cdf(rel_delta * math.sqrt(n_canary / deff) / (cv * math.sqrt(1 + 1 / k)) - za)


def design_effect(m: float, icc: float) -> float:
    """Variance inflation when requests come in clusters of m with intra-cluster correlation icc."""
    if not _number("m", m) >= 1:
        raise ValueError(f"m (requests per cluster) must be >= 1, got {m!r}")
    if not 0 <= _number("icc", icc) <= 1:
        raise ValueError(f"icc must be in [0, 1], got {icc!r}")
    return 1 + (m - 1) * icc


def rollout(stages: list[float], lam_rps: float, p0: float, delta: float, alpha: float,
            power: float, control: str = "baseline") -> list[dict]:
    """One dict per stage: the canary's share of traffic, the ratio k, requests per verdict,
    minutes to the verdict, expected extra failures if the regression is real.

    control="baseline": a separate baseline receives as much traffic as the canary (k = 1).
    control="rest": every request not sent to the canary is the control (k = (1 - f)/f).
    """
    if control not in ("baseline", "rest"):
        raise ValueError(f"control must be 'baseline' or 'rest', got {control!r}")
    if not isinstance(stages, (list, tuple)) or not stages:
        raise ValueError("stages must be a non-empty list of traffic fractions")
    for f in stages:                    # a baseline takes as much traffic as the canary
        _number("stage fraction", f)
        if not (0 < f <= 0.5 if control == "baseline" else 0 < f < 1):
            raise ValueError(f"stage fraction {f!r} out of range for control={control!r}")
    if not _number("lam_rps", lam_rps) > 0:
        raise ValueError(f"lam_rps must be > 0, got {lam_rps!r}")
    out = []
    for f in stages:
        k = 1.0 if control == "baseline" else (1 - f) / f
        n = n_proportion(p0, delta, alpha, power, k)
        out.append({"fraction": float(f), "k": k, "n_canary": n,
                    "minutes": n / (f * lam_rps) / 60, "extra_failures": n * delta})
    return out
