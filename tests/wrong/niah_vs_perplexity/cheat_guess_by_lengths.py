"""WRONG (cheat): guesses from the attributes alone (a 2% tolerance: weights; the 16K original context of the
question: rope_scaling; otherwise kv_cache) and runs the one swap that would prove it. Killed by specimens
whose attributes do not match its guess (most of them)."""


def diagnose(model):
    if model.ppl_tol > 0.01:
        cause = "weights"
    elif model.original_context == 16384:
        cause = "rope_scaling"
    else:
        cause = "kv_cache"
    L, d = max(model.lengths), model.depths[0]
    model.niah([cause], L, d)
    return {"cause": cause, "evidence": [["niah", [cause], L, d]]}
