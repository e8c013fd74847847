"""WRONG: finds a length where the served stack fails, then runs the single-factor swaps at that length's
first depth (the farthest needle, "the hardest cell") instead of at the cell that failed; a rare failure
elsewhere is not reproduced there, and with no single factor failing it blames the RoPE config. Killed by
the rare-KV specimen, which never fails at the first depth."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                if model.perplexity([f], length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(model.lengths, reverse=True):
        if not all(model.niah(factors, length, d) for d in model.depths):
            depth = model.depths[0]
            for f in factors:
                if not model.niah([f], length, depth):
                    return {"cause": f, "evidence": [["niah", [f], length, depth]]}
            return {"cause": "rope_scaling", "evidence": [["niah", factors, length, depth]]}
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], model.lengths[-1]]]}
