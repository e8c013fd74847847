"""canary-sizing: requests per canary verdict (one-sided two-sample z-test) and the rollout.

Canary arm n requests, control k*n; z_a = Phi^-1(1 - alpha), z_b = Phi^-1(power)
(statistics.NormalDist). Formulas in the statement.
"""

from __future__ import annotations


def n_proportion(p0: float, delta: float, alpha: float, power: float, k: float = 1.0,
                 deff: float = 1.0) -> int:
    """Canary requests to detect a rate rising from p0 to p0 + delta: ceil(deff * n*).

    Raises:
        ValueError: p0 not in (0, 1); delta <= 0 or p0 + delta >= 1; alpha not in (0, 0.5);
            power not in (0.5, 1); k <= 0; deff < 1.
    """
    raise NotImplementedError


def n_mean(cv: float, rel_delta: float, alpha: float, power: float, k: float = 1.0,
           deff: float = 1.0) -> int:
    """Canary requests to detect a per-request mean rising by the fraction rel_delta.

    Raises:
        ValueError: cv <= 0; rel_delta <= 0; alpha, power, k, deff as n_proportion.
    """
    raise NotImplementedError


def power_proportion(n_canary: int, p0: float, delta: float, alpha: float, k: float = 1.0,
                     deff: float = 1.0) -> float:
    """Power of the rate test with n_canary canary requests (and k * n_canary control).

    Raises:
        ValueError: n_canary not an int >= 1; the others as n_proportion.
    """
    raise NotImplementedError


def power_mean(n_canary: int, cv: float, rel_delta: float, alpha: float, k: float = 1.0,
               deff: float = 1.0) -> float:
    """Power of the mean test with n_canary canary requests.

    Raises:
        ValueError: n_canary not an int >= 1; the others as n_mean.
    """
    raise NotImplementedError


def design_effect(m: float, icc: float) -> float:
    """1 + (m - 1) * icc for sessions of m requests with intra-session correlation icc.

    Raises:
        ValueError: m < 1; icc outside [0, 1].
    """
    raise NotImplementedError


def rollout(stages: list[float], lam_rps: float, p0: float, delta: float, alpha: float,
            power: float, control: str = "baseline") -> list[dict]:
    """Per stage: {"fraction", "k", "n_canary", "minutes", "extra_failures"}.

    control="baseline": k = 1, fractions in (0, 0.5]; control="rest": k = (1 - f)/f,
    fractions in (0, 1).

    Raises:
        ValueError: bad control, empty stages, a fraction out of range, lam_rps <= 0, and the
            errors of n_proportion.
    """
    raise NotImplementedError
