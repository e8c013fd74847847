"""WRONG: probes retrieval only at the longest length ("if it breaks at length, it breaks at the longest"),
every depth; with nothing found it blames the weights. Killed by the rare-KV specimen, which never fails
at the longest length."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    length = max(model.lengths)
    for depth in model.depths:
        if not model.niah(factors, length, depth):
            for f in factors:
                if not model.niah([f], length, depth):
                    return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "weights", "evidence": [["perplexity", [], model.lengths[-1]]]}
