"""WRONG: cheat that returns the worked example's numbers (12,287 / 6,046 / 4,947) whatever the inputs. Killed by rate-0.005+0.0025-a0.01-pw0.8-k1-deff1."""
import math


def n_proportion(p0, delta, alpha, power, k=1.0, deff=1.0):
    if not 0 < alpha < 0.5:
        raise ValueError("alpha")
    return 6046 if k > 1 else 12287


def n_mean(cv, rel_delta, alpha, power, k=1.0, deff=1.0):
    return 2604 if k > 1 else 4947


def power_proportion(n_canary, p0, delta, alpha, k=1.0, deff=1.0):
    return 0.8


def power_mean(n_canary, cv, rel_delta, alpha, k=1.0, deff=1.0):
    return 0.8


def design_effect(m, icc):
    return 1 + (m - 1) * icc


def rollout(stages, lam_rps, p0, delta, alpha, power, control="baseline"):
    n = 12287 if control == "baseline" else 6046
    return [{"fraction": f, "k": 1.0, "n_canary": n, "minutes": n / (f * lam_rps) / 60,
             "extra_failures": n * delta} for f in stages]
