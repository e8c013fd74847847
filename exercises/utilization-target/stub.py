"""utilization-target: the highest utilization whose p99 TTFT meets a target (M/G/1 queue).

Times in seconds; utilizations and quantile levels are fractions. Formulas in the statement.
"""

from __future__ import annotations


def ttft_quantile(rho: float, prefill_s: float, cs2: float, p: float = 0.99) -> float:
    """p-quantile of TTFT (seconds) at utilization ``rho``: own prefill S + W_p.

    W_p = tau * ln(rho / (1 - p)) if rho > 1 - p else 0, with tau = S (1 + cs2) / (2 (1 - rho)).

    Raises:
        ValueError: rho outside [0, 1); prefill_s not finite > 0; cs2 negative or not finite;
            p outside (0, 1).
    """
    raise NotImplementedError


def max_utilization(prefill_s: float, cs2: float, ttft_target_s: float, p: float = 0.99) -> float:
    """Largest rho in [0, 1) with ttft_quantile(rho, prefill_s, cs2, p) <= ttft_target_s.

    0.0 when ttft_target_s < prefill_s (no load meets it); 1 - p when they are equal.

    Raises:
        ValueError: as ttft_quantile; ttft_target_s not a finite number > 0.
    """
    raise NotImplementedError


def prefill_moments(fixed_s: float, per_token_s: float, mean_len: float, var_len: float) -> dict:
    """Mean and cs2 of the prefill time fixed_s + per_token_s * L, L with the given mean/variance.

    Returns ``{"mean_s": float, "cs2": float}``.

    Raises:
        ValueError: an argument negative or not finite; a zero mean prefill time.
    """
    raise NotImplementedError


def engine_violations(mechanisms: list[str]) -> dict[str, str]:
    """Map each mechanism name (statement's table) to the assumption it breaks.

    Assumptions: "poisson_arrivals", "one_in_service", "iid_service", "work_conserving",
    "run_to_completion", "none".

    Raises:
        ValueError: not a list/tuple, or an unknown mechanism name.
    """
    raise NotImplementedError
