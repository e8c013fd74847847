"""WRONG: a cheat returning the worked story's figures whatever the trace. Killed by sim-story-0-fixed."""


def simulate(trace, policy, c, batch=1, knee_tokens=256, gmax=10):
    return {"cost": 100.0, "steps": 100, "drafted": 0, "accepted": 0}


def study(trace, c, batch=1, knee_tokens=256, gmax=10):
    return {"g_fixed": 3, "g_class": {"code": 8, "chat": 2}, "cost_off": 1.0, "cost_fixed": 1.0,
            "cost_class": 1.0, "cost_conf": 1.0, "speedup_fixed": 1.758, "gain_class": 0.07,
            "gain_conf": 0.178}
