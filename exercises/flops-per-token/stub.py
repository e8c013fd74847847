"""flops-per-token: parameters and forward FLOPs per token from a model config.

Inputs are ``inferprep.specs.ModelConfig`` values (the public tables, e.g. ``LLAMA_3_1_8B``, or
made-up configs). Counting rules are in the statement: 1 multiply-add = 2 FLOPs, only matmuls
count, the embedding lookup is free, the LM head always multiplies.
"""

from __future__ import annotations

from inferprep.specs import ModelConfig


def param_counts(model: ModelConfig) -> dict[str, int]:
    """Parameter counts of ``model`` by kind (exact ints).

    Returns a dict with exactly the keys ``"embedding"``, ``"lm_head"``, ``"attention"``,
    ``"mlp"``, ``"norm"``, ``"total"``, ``"active_matmul"`` (definitions in the statement).

    Raises:
        ValueError: an inconsistent config (see the statement's list).
    """
    raise NotImplementedError


def flops_per_token(model: ModelConfig, context_len: int) -> dict[str, int]:
    """Forward FLOPs of one token that attends to ``context_len`` keys (its own included).

    Returns ``{"weights": ..., "attention": ..., "total": ...}`` in FLOPs.

    Raises:
        ValueError: ``context_len`` not an int >= 1, or an inconsistent config.
    """
    raise NotImplementedError


def attention_crossover_context(model: ModelConfig) -> int:
    """Smallest context length (tokens, >= 1) at which a token's attention FLOPs are at least
    its weight FLOPs.

    Raises:
        ValueError: an inconsistent config.
    """
    raise NotImplementedError
