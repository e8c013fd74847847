"""niah-vs-perplexity reference: find which served change (weights, KV cache, RoPE config) broke a
long-context model, with a handful of experiments.

Plan: (1) look for a regression of the whole served stack, perplexity first (two calls per length),
then needle-in-a-haystack cells from the longest length down; (2) at the first point that
regresses, swap in one served factor at a time. The factor whose swap alone reproduces the
regression is the cause (the model guarantees one harmful factor and no interactions), and that
swap plus its baseline is the evidence.
"""

from __future__ import annotations


def _regresses(ppl: float, ppl_ref: float, tol: float) -> bool:
    return ppl > (1 + tol) * ppl_ref


def diagnose(model) -> dict:
    """Return ``{"cause": factor, "evidence": [experiment, ...]}`` (see the statement)."""
    factors = list(model.factors)
    tol = model.ppl_tol

    # 1a. Perplexity of the reference and of the served stack at every length.
    for length in model.lengths:
        p_ref = model.perplexity([], length)
        if _regresses(model.perplexity(factors, length), p_ref, tol):
            for f in factors:
                if _regresses(model.perplexity([f], length), p_ref, tol):
                    return {"cause": f, "evidence": [["perplexity", [], length], ["perplexity", [f], length]]}
            raise RuntimeError(f"no single factor reproduces the perplexity regression at {length}")

    # 1b. Retrieval of the served stack, longest context first (where long-context bugs show).
    for length in sorted(model.lengths, reverse=True):
        for depth in model.depths:
            if not model.niah(factors, length, depth):
                # 2. Isolate at this cell: the reference passes every cell, so [f] failing here
                #    against the reference is a pair that differs by f alone.
                for f in factors:
                    if not model.niah([f], length, depth):
                        return {"cause": f, "evidence": [["niah", [f], length, depth]]}
                raise RuntimeError(f"no single factor reproduces the failure at ({length}, {depth})")
    raise RuntimeError("the served stack shows no regression on the grid")
