"""WRONG: tests only lengths up to original_context ("the model was trained there, longer is extrapolation"),
so a dropped rope_scaling, which is harmless inside the original context, is never seen; with nothing found
it blames the KV cache. Killed by every RoPE specimen."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    lengths = [L for L in model.lengths if L <= model.original_context]
    for length in lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "kv_cache", "evidence": [["perplexity", [], lengths[-1]]]}
