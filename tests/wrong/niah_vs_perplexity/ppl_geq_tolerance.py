"""WRONG: a perplexity change of exactly the tolerance counts as a regression (>= instead of >). Killed by
the specimen whose perplexity is 8.0 at every length and whose harmless weight change is exactly +1%
(a KV-cache specimen; its "specimen k" position is drawn from the salt)."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) >= (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) >= (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "kv_cache", "evidence": [["perplexity", [], model.lengths[0]]]}
