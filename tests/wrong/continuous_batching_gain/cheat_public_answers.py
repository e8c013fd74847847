"""WRONG: a cheat that replays the public examples' answers for every input. Killed by schedule-short-outputs-b3."""

S = [2, 1, 1, 2, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1]
C = [2] * 14 + [1] * 3


def schedule(lengths, b):
    if not lengths or any(isinstance(L, bool) or not isinstance(L, int) or L < 1 for L in lengths):
        raise ValueError("bad trace")
    return {"static_active": list(S), "continuous_active": list(C)}


def batching_gain(lengths, b, a, c):
    s, k = a * 22 + c * 31, a * 17 + c * 31
    return {"static_s": s, "continuous_s": k, "gain": s / k, "static_steps": 22,
            "continuous_steps": 17}


def step_model_gain(lengths, b, step_model, context):
    return {"static_s": 0.17342088405970152, "continuous_s": 0.13541842722388062,
            "gain": 1.2806298789232968, "static_steps": 22, "continuous_steps": 17}


def length_statistic(lengths, b):
    return 44 / 31


def harmonic_gain(b):
    return 4.05849519543652


def token_budget_point(step_model, budget_tokens):
    return {"knee_tokens": 198.48368770630026, "bound": "compute", "gemm_s": 0.23114859367031332,
            "compute_utilization": 1.0}
