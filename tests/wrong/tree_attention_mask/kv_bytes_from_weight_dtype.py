"""WRONG: attention KV bytes per token counted with the weights' dtype, not kv_dtype. Killed by cost-fp8-kv-story-b32-c16384."""

from __future__ import annotations

import math

import torch

from inferprep.sim.step_model import StepModel


# -- validation -------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_int(name: str, v, lo: int) -> None:
    if not _is_int(v):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_parents(parents) -> None:
    if not isinstance(parents, (list, tuple)) or len(parents) == 0:
        raise ValueError("parents must be a non-empty list: parents[0] = -1 (the root), "
                         "then the parent index of each draft")
    if not _is_int(parents[0]) or parents[0] != -1:
        raise ValueError("parents[0] must be -1: node 0 is the root")
    for i in range(1, len(parents)):
        p = parents[i]
        if not _is_int(p) or not 0 <= p < i:
            raise ValueError(f"parents[{i}] = {p!r}: a draft's parent must be an earlier node, "
                             f"an int in [0, {i - 1}]")


def _check_token_list(name: str, xs, n: int) -> None:
    if not isinstance(xs, (list, tuple)) or len(xs) != n:
        raise ValueError(f"{name} must be a list of {n} ints (one per tree node)")
    for x in xs:
        if not _is_int(x):
            raise ValueError(f"{name} must hold ints, got {type(x).__name__}")


def _check_ranks(parents, ranks, rank_probs) -> None:
    if not isinstance(rank_probs, (list, tuple)) or len(rank_probs) == 0:
        raise ValueError("rank_probs must be a non-empty list of probabilities")
    for p in rank_probs:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"rank_probs must be numbers in [0, 1], got {p!r}")
    if math.fsum(rank_probs) > 1 + 1e-9:
        raise ValueError("rank_probs must sum to at most 1 (the ranks are disjoint events)")
    if not isinstance(ranks, (list, tuple)) or len(ranks) != len(parents):
        raise ValueError(f"ranks must be a list of {len(parents)} ints (one per tree node)")
    seen = set()
    for i in range(1, len(parents)):
        r = ranks[i]
        if not _is_int(r) or not 1 <= r <= len(rank_probs):
            raise ValueError(f"ranks[{i}] = {r!r}: a rank is an int in [1, {len(rank_probs)}]")
        if (parents[i], r) in seen:
            raise ValueError(f"node {i} repeats rank {r} among the children of node {parents[i]}")
        seen.add((parents[i], r))


def _depths(parents) -> list[int]:
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return depth


# -- mask and positions -----------------------------------------------------------------------

def tree_attention_mask(parents: list[int], prefix_len: int) -> torch.Tensor:
    """(N+1, prefix_len + N + 1) bool: True where query node i may attend to the key."""
    _check_parents(parents)
    _check_int("prefix_len", prefix_len, 0)
    n = len(parents)
    tree = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        tree[i, i] = True
        if i > 0:
            tree[i] |= tree[parents[i]]          # a node sees what its parent sees, and itself
    prefix = torch.ones(n, prefix_len, dtype=torch.bool)
    return torch.cat([prefix, tree], dim=1)


def tree_position_ids(parents: list[int], prefix_len: int) -> torch.Tensor:
    """(N+1,) int64: prefix_len + depth of each node (the root has depth 0)."""
    _check_parents(parents)
    _check_int("prefix_len", prefix_len, 0)
    return torch.tensor([prefix_len + d for d in _depths(parents)], dtype=torch.int64)


# -- acceptance -------------------------------------------------------------------------------

def accept_tree(parents: list[int], tokens: list[int], target_next: list[int]) -> dict:
    """Longest accepted root->leaf path under greedy verification and the tokens it emits."""
    _check_parents(parents)
    _check_token_list("tokens", tokens, len(parents))
    _check_token_list("target_next", target_next, len(parents))
    # accepted[v]: every draft on the root->v path matches. Parents come first, so one pass.
    accepted = [True] + [False] * (len(parents) - 1)
    for v in range(1, len(parents)):
        p = parents[v]
        accepted[v] = accepted[p] and tokens[v] == target_next[p]
    depth = _depths(parents)
    # the deepest accepted node; among equally deep ones the smallest index (the root if none)
    last = min((v for v in range(len(parents)) if accepted[v]), key=lambda v: (-depth[v], v))
    path = []
    v = last
    while v != 0:
        path.append(v)
        v = parents[v]
    path.reverse()
    return {"path": path, "emitted": [tokens[v] for v in path] + [target_next[last]]}


# -- cost of a tree against a chain -----------------------------------------------------------

def expected_accepted(parents: list[int], ranks: list[int], rank_probs: list[float]) -> float:
    """Sum over drafts v of the product of p_rank(u) over the drafts u on the root->v path."""
    prob = [1.0] * len(parents)
    for v in range(1, len(parents)):
        prob[v] = prob[parents[v]] * rank_probs[ranks[v] - 1]
    return sum(prob[1:])


def _verify_step_s(sm: StepModel, batch: int, new_tokens: int, context_len: int) -> float:
    """StepModel time of `batch` identical verify rows (new_tokens, context_len, new_tokens)."""
    return (sm.t_fixed_s + sm.gemm_s(batch * new_tokens, batch * new_tokens)
            + batch * _attn(sm, new_tokens, context_len))


def _check_cost_inputs(step_model, parents, ranks, rank_probs, chain_len, context_len) -> None:
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    _check_parents(parents)
    _check_ranks(parents, ranks, rank_probs)
    _check_int("chain_len", chain_len, 0)
    _check_int("context_len", context_len, 0)


def _compare(sm, parents, ranks, rank_probs, chain_len, context_len, batch) -> dict:
    e_tree = expected_accepted(parents, ranks, rank_probs)
    chain = [-1] + list(range(chain_len))
    e_chain = expected_accepted(chain, [0] + [1] * chain_len, rank_probs)
    t_tree = _verify_step_s(sm, batch, len(parents), context_len)
    t_chain = _verify_step_s(sm, batch, chain_len + 1, context_len)
    tp_tree = batch * (1 + e_tree) / t_tree
    tp_chain = batch * (1 + e_chain) / t_chain
    return {"tree_accepted": e_tree, "chain_accepted": e_chain, "tree_step_s": t_tree,
            "chain_step_s": t_chain, "throughput_ratio": tp_tree / tp_chain,
            "_tree_wins": tp_tree > tp_chain}


def tree_vs_chain(step_model: StepModel, parents: list[int], ranks: list[int],
                  rank_probs: list[float], chain_len: int, context_len: int, batch: int) -> dict:
    """Expected accepted drafts, verify step times and the throughput ratio tree / chain."""
    _check_cost_inputs(step_model, parents, ranks, rank_probs, chain_len, context_len)
    _check_int("batch", batch, 1)
    out = _compare(step_model, parents, ranks, rank_probs, chain_len, context_len, batch)
    del out["_tree_wins"]
    return out


def crossover_batch(step_model: StepModel, parents: list[int], ranks: list[int],
                    rank_probs: list[float], chain_len: int, context_len: int,
                    max_batch: int) -> int | None:
    """Smallest batch in [1, max_batch] at which the tree no longer beats the chain, else None."""
    _check_cost_inputs(step_model, parents, ranks, rank_probs, chain_len, context_len)
    _check_int("max_batch", max_batch, 1)
    for b in range(1, max_batch + 1):
        if not _compare(step_model, parents, ranks, rank_probs, chain_len, context_len, b)["_tree_wins"]:
            return b
    return None


# -- the editorial's tree (not graded) ---------------------------------------------------------

def best_tree(n_drafts: int, rank_probs: list[float]) -> tuple[list[int], list[int]]:
    """Greedy best-first tree of n_drafts drafts: repeatedly add the candidate with the largest
    path probability (ties: smaller depth, then smaller rank, then earlier parent). A candidate
    is the next unused rank under an existing node. Returns (parents, ranks)."""
    parents, ranks, prob, depth = [-1], [0], [1.0], [0]
    while len(parents) <= n_drafts:
        cands = []
        for u in range(len(parents)):
            used = {ranks[v] for v in range(1, len(parents)) if parents[v] == u}
            r = 1
            while r in used:
                r += 1
            if r <= len(rank_probs):
                cands.append((-prob[u] * rank_probs[r - 1], depth[u] + 1, r, u))
        _, d, r, u = min(cands)
        parents.append(u)
        ranks.append(r)
        prob.append(prob[u] * rank_probs[r - 1])
        depth.append(d)
    return parents, ranks


def _attn(sm, q, c):
    # WRONG: KV bytes per token with the weights' dtype (s_w) instead of kv_dtype (s_kv)
    m = sm.model
    kvb = m.n_layers * 2 * m.n_kv_heads * m.head_dim * sm.dtype.bytes_per_element
    flops = sm.attn_flops_per_key * (q * c + q * (q + 1) // 2)
    return max(kvb * (c + q) / sm.bytes_per_s, flops / sm.flops_per_s)
