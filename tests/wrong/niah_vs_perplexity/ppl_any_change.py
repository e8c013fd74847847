"""WRONG: calls any change in perplexity a regression (no tolerance), so a harmless re-quantization of the
weights that moves perplexity by a few tenths of a percent gets the blame. Killed by the specimens whose
harmless weight change moves perplexity (several "specimen k" cases, k drawn from the salt)."""


def diagnose(model):
    factors = list(model.factors)
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if model.perplexity(factors, length) != p_ref:
            for f in factors:
                if model.perplexity([f], length) != p_ref:
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
    return {"cause": "rope_scaling", "evidence": [["perplexity", [], model.lengths[0]]]}
