"""WRONG: cheat that returns the textbook numbers (70% and the T/S = 8 story) whatever the inputs. Killed by ttft-rho0.01-S0.25-cs20.0-p0.99."""
import math


def ttft_quantile(rho, prefill_s, cs2, p=0.99):
    if not 0 <= rho < 1:
        raise ValueError("rho")
    return 2.0 * prefill_s / 0.25 if rho > 0.01 else prefill_s


def max_utilization(prefill_s, cs2, ttft_target_s, p=0.99):
    if prefill_s <= 0:
        raise ValueError("prefill_s")
    return 0.6968574449801913 if cs2 == 0 else 0.49542081353214107


def prefill_moments(fixed_s, per_token_s, mean_len, var_len):
    mean = fixed_s + per_token_s * mean_len
    return {"mean_s": mean, "cs2": 0.81}


def engine_violations(mechanisms):
    return {m: "none" for m in mechanisms}
