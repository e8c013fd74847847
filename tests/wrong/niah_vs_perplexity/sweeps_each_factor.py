"""WRONG: sweeps each single-factor swap over the whole grid (perplexity at every length, NIAH at every cell)
and blames the factor with the most regressions: three times the NIAH budget. Killed by the first specimen
(budget)."""


def diagnose(model):
    tol = model.ppl_tol
    p_ref = {L: model.perplexity([], L) for L in model.lengths}
    best, best_n, best_ev = None, -1, None
    for f in model.factors:
        n, ev = 0, None
        for L in model.lengths:
            if model.perplexity([f], L) > (1 + tol) * p_ref[L]:
                n += 1
                ev = ev or [["perplexity", [], L], ["perplexity", [f], L]]
            for d in model.depths:
                if not model.niah([f], L, d):
                    n += 1
                    ev = ev or [["niah", [f], L, d]]
        if n > best_n:
            best, best_n, best_ev = f, n, ev
    return {"cause": best, "evidence": best_ev}
