"""niah-vs-perplexity: which served change broke long-context retrieval?

``model`` is a proxy of a hosted toy long-context model. Attributes: ``factors`` (list[str]),
``lengths`` (list[int], ascending), ``depths`` (list[float]), ``original_context`` (int),
``ppl_tol`` (float), ``budget`` (dict: "perplexity" and "niah" call limits). Methods (each call
counted): ``perplexity(served, length) -> float`` and ``niah(served, length, depth) -> bool``,
where ``served`` lists the factors taken from the served stack (the others stay as in the
reference stack). Definitions and guarantees are in the statement.
"""

from __future__ import annotations


def diagnose(model) -> dict:
    """Find the harmful factor and prove it.

    Returns ``{"cause": "weights" | "kv_cache" | "rope_scaling",
    "evidence": [experiment, ...]}`` where an experiment is
    ``["perplexity", served, length]`` or ``["niah", served, length, depth]``, each one a call
    this function made.
    """
    raise NotImplementedError
