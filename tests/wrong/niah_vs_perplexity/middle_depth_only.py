"""WRONG: runs the needle test at the middle depth only (one needle per length, as a quick check does), so
rare failures at other depths are missed; with nothing found it blames the RoPE config. Killed by the
rare-KV specimen, which never fails at the middle depth."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    depth = model.depths[len(model.depths) // 2]
    for length in sorted(model.lengths, reverse=True):
        if not model.niah(factors, length, depth):
            for f in factors:
                if not model.niah([f], length, depth):
                    return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], model.lengths[-1]]]}
