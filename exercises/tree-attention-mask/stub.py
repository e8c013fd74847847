"""tree-attention-mask: one target pass over a draft tree (Medusa's conventions).

Nodes 0..N: node 0 is the root (the token sampled last step, not yet in the KV cache), nodes
1..N are drafts in topological order. ``parents[0] == -1`` and ``0 <= parents[i] < i``.
Definitions, formulas and errors are in the statement.
"""

from __future__ import annotations

import torch

from inferprep.sim.step_model import StepModel


def tree_attention_mask(parents: list[int], prefix_len: int) -> torch.Tensor:
    """Attention mask of the tree's N+1 query tokens over the prefix and the tree.

    Returns a ``torch.bool`` tensor of shape ``(N+1, prefix_len + N + 1)``: row i is tree node i,
    columns ``0..prefix_len-1`` are the cached tokens, column ``prefix_len + j`` is tree node j.
    True where node i may attend: every cached token, node i itself and its ancestors.

    Raises:
        ValueError: malformed ``parents``; ``prefix_len`` not an int >= 0.
    """
    raise NotImplementedError


def tree_position_ids(parents: list[int], prefix_len: int) -> torch.Tensor:
    """``torch.int64`` tensor ``(N+1,)``: ``prefix_len + depth(i)`` (the root has depth 0).

    Raises:
        ValueError: as ``tree_attention_mask``.
    """
    raise NotImplementedError


def accept_tree(parents: list[int], tokens: list[int], target_next: list[int]) -> dict:
    """Greedy verification of the tree.

    ``tokens[i]``: token of node i (``tokens[0]``, the root's, is never compared);
    ``target_next[i]``: the target's argmax after node i's path.
    Returns ``{"path": list[int], "emitted": list[int]}``: the accepted draft nodes from the root
    down (root excluded, may be empty) and the tokens this step emits (the accepted drafts'
    tokens, then ``target_next`` of the last accepted node, or of the root).

    Raises:
        ValueError: malformed ``parents``; ``tokens`` or ``target_next`` not ``N+1`` ints.
    """
    raise NotImplementedError


def tree_vs_chain(step_model: StepModel, parents: list[int], ranks: list[int],
                  rank_probs: list[float], chain_len: int, context_len: int, batch: int) -> dict:
    """One verify step of ``batch`` requests, each with this tree, against a chain of ``chain_len``
    drafts (every chain node rank 1).

    Returns ``{"tree_accepted", "chain_accepted", "tree_step_s", "chain_step_s",
    "throughput_ratio"}`` (floats; the ratio is tree tokens/s over chain tokens/s).

    Raises:
        ValueError: malformed ``parents``/``ranks``/``rank_probs`` (see the statement);
            ``chain_len`` or ``context_len`` < 0; ``batch`` < 1.
    """
    raise NotImplementedError


def crossover_batch(step_model: StepModel, parents: list[int], ranks: list[int],
                    rank_probs: list[float], chain_len: int, context_len: int,
                    max_batch: int) -> int | None:
    """Smallest batch in ``[1, max_batch]`` at which the tree's throughput is <= the chain's;
    ``None`` if the tree wins at every batch up to ``max_batch``.

    Raises:
        ValueError: as ``tree_vs_chain``; ``max_batch`` < 1.
    """
    raise NotImplementedError
