"""WRONG: sweeps every single-factor swap over the NIAH grid and catches the RuntimeError the budget raises,
answering from what it saw before. Often right, but it went over the budget. Killed by the first specimen
(a refused call still counts)."""


def diagnose(model):
    tol = model.ppl_tol
    for L in model.lengths:
        p_ref = model.perplexity([], L)
        if model.perplexity(list(model.factors), L) > (1 + tol) * p_ref:
            for f in model.factors:
                if model.perplexity([f], L) > (1 + tol) * p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], L], ["perplexity", [f], L]]}
    found = {}
    try:
        for f in model.factors:
            for L in sorted(model.lengths, reverse=True):
                for d in model.depths:
                    if not model.niah([f], L, d):
                        found.setdefault(f, [["niah", [f], L, d]])
    except RuntimeError:
        pass
    f = next(iter(found), "kv_cache")
    return {"cause": f, "evidence": found.get(f, [["perplexity", [], model.lengths[0]]])}
