"""WRONG: isolates by reverting one factor at a time from the served stack (valid), but reports the evidence
as single-factor swaps it never ran. Killed by every specimen (each evidence experiment must be one this
call ran)."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) > (1 + tol) * p_ref:
            for f in factors:
                rest = [x for x in factors if x != f]
                if not model.perplexity(rest, length) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if model.niah([x for x in factors if x != f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "kv_cache", "evidence": [["perplexity", [], model.lengths[0]]]}
