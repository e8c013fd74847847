"""WRONG: scores each length by its pass rate over all depths and calls a length broken only when at most
half of the depths pass, then isolates at that length's first failing depth; isolated failures never count,
and with nothing found it blames the RoPE config. Killed by the rare-KV specimen (one or two failing cells)."""


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
        results = {d: model.niah(factors, length, d) for d in model.depths}
        if sum(results.values()) <= len(results) / 2:
            depth = next(d for d, ok in results.items() if not ok)
            for f in factors:
                if not model.niah([f], length, depth):
                    return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], model.lengths[-1]]]}
