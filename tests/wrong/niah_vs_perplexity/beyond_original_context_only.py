"""WRONG: tests only the lengths above original_context ("long-context bugs show past the trained range"),
NIAH first, then perplexity there; with nothing found it blames the RoPE config. Killed by the KV-cache
specimen whose rare failures all sit at lengths below original_context (its "specimen k" position is
drawn from the salt)."""


def diagnose(model):
    F = list(model.factors)
    Ls = [L for L in model.lengths if L > model.original_context] or [model.lengths[-1]]
    for L in reversed(Ls):
        for d in model.depths:
            if not model.niah(F, L, d):
                for f in F:
                    if not model.niah([f], L, d):
                        return {"cause": f, "evidence": [["niah", [f], L, d]]}
    for L in reversed(Ls):
        ref = model.perplexity([], L)
        if model.perplexity(F, L) > (1 + model.ppl_tol) * ref:
            for f in F:
                if model.perplexity([f], L) > (1 + model.ppl_tol) * ref:
                    return {"cause": f, "evidence": [["perplexity", [], L], ["perplexity", [f], L]]}
    L = Ls[-1]; model.perplexity([], L)
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], L]]}
