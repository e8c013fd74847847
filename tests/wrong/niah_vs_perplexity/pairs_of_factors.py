"""WRONG: saves calls by swapping two factors at once ([weights, kv_cache] versus [rope_scaling]) and, when
the pair reproduces the failure, blames its first member. Killed by every KV-cache specimen."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    groups = [["weights", "kv_cache"], ["rope_scaling"]]
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for grp in groups:
                if model.perplexity(grp, length) > (1 + tol) * p_ref:
                    return {"cause": grp[0], "evidence": [["perplexity", [], length], ["perplexity", grp, length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for grp in groups:
                    if not model.niah(grp, length, depth):
                        return {"cause": grp[0], "evidence": [["niah", grp, length, depth]]}
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], model.lengths[0]]]}
