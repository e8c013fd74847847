"""WRONG: reads the cause off the served stack's signature instead of swapping factors (perplexity up at the
shortest length: weights; retrieval lost only past original_context, at needles no later than mid-context:
rope_scaling; anything else: kv_cache), then runs the blamed factor alone at a failing point for the
evidence. Killed by the retrieval-head weight-bug specimens (perplexity fine, failures at every length) and
by the KV specimen whose rare failures all sit past original_context in the first half of the context
(then rope_scaling)."""


def diagnose(model):
    factors = list(model.factors)
    tol = model.ppl_tol
    short = model.lengths[0]
    p_ref = model.perplexity([], short)
    if model.perplexity(factors, short) > (1 + tol) * p_ref:
        model.perplexity(["weights"], short)
        return {"cause": "weights", "evidence": [["perplexity", [], short], ["perplexity", ["weights"], short]]}
    failing = [(L, d) for L in model.lengths for d in model.depths if not model.niah(factors, L, d)]
    if failing and all(L > model.original_context and d <= 0.5 for L, d in failing):
        cause = "rope_scaling"
    else:
        cause = "kv_cache"
    if not failing:
        return {"cause": cause, "evidence": [["perplexity", [], short]]}
    L, d = failing[0]
    model.niah([cause], L, d)
    return {"cause": cause, "evidence": [["niah", [cause], L, d]]}
