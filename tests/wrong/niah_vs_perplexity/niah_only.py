"""WRONG: runs only needle-in-a-haystack experiments ("the symptom is retrieval"), never perplexity; with no
failing cell it blames the weights with an experiment that does not regress. Killed by the weights
specimen whose bug raises perplexity and keeps every needle (its "specimen k" position is drawn from the
salt)."""


def diagnose(model):
    F = list(model.factors)
    for L in reversed(model.lengths):
        for d in model.depths:
            if not model.niah(F, L, d):
                for f in F:
                    if not model.niah([f], L, d):
                        return {"cause": f, "evidence": [["niah", [f], L, d]]}
    return {"cause": "weights", "evidence": [["niah", ["weights"], model.lengths[-1], model.depths[-1]]]}
