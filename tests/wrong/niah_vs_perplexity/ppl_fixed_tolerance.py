"""WRONG: hard-codes a 1% perplexity tolerance instead of reading model.ppl_tol. Killed by the factor-2 RoPE
specimen (tolerance 2%, harmless weight change +1.2 to +1.8%), whose weights then look guilty."""


def diagnose(model):
    factors = list(model.factors)
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > 1.01 * p_ref:
            for f in factors:
                if model.perplexity([f], length) > 1.01 * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "kv_cache", "evidence": [["perplexity", [], model.lengths[0]]]}
