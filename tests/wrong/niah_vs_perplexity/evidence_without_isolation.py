"""WRONG: finds the right cause but returns as evidence only the served stack's failing experiment and the
baseline, not the swap that isolates the cause. Killed by every specimen (the evidence check)."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", factors, length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", factors, length, depth]]}
    return {"cause": "kv_cache", "evidence": [["perplexity", [], model.lengths[0]]]}
