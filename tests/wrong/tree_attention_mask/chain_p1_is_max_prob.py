"""WRONG: the chain's rank-1 probability is max(rank_probs) instead of rank_probs[0]. Killed by cost-rank-1-not-likeliest-8b-medusa-b16 and crossover-rank-1-not-likeliest-story-tree."""

from __future__ import annotations

import math

import torch

from inferprep.sim.step_model import StepModel


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_parents(parents) -> int:
    if not isinstance(parents, (list, tuple)) or len(parents) == 0:
        raise ValueError("parents must be a non-empty list or tuple of ints")
    for p in parents:
        if not _is_int(p):
            raise ValueError("parents must hold ints")
    if parents[0] != -1:
        raise ValueError("parents[0] must be -1")
    for i in range(1, len(parents)):
        if not 0 <= parents[i] < i:
            raise ValueError(f"parents[{i}]={parents[i]} must be in [0, {i})")
    return len(parents) - 1


def _check_nonneg_int(name, v, lo=0):
    if not _is_int(v) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")


def _depths(parents) -> list[int]:
    d = [0] * len(parents)
    for i in range(1, len(parents)):
        d[i] = d[parents[i]] + 1
    return d


def tree_attention_mask(parents, prefix_len):
    n = _check_parents(parents)
    _check_nonneg_int("prefix_len", prefix_len)
    S = prefix_len
    mask = torch.zeros((n + 1, S + n + 1), dtype=torch.bool)
    mask[:, :S] = True
    for i in range(n + 1):
        j = i
        while j != -1:
            mask[i, S + j] = True
            j = parents[j]
    return mask


def tree_position_ids(parents, prefix_len):
    _check_parents(parents)
    _check_nonneg_int("prefix_len", prefix_len)
    return torch.tensor([prefix_len + d for d in _depths(parents)], dtype=torch.int64)


def _check_int_list(name, v, n):
    if not isinstance(v, (list, tuple)) or len(v) != n or not all(_is_int(x) for x in v):
        raise ValueError(f"{name} must be a list of {n} ints")


def accept_tree(parents, tokens, target_next):
    n = _check_parents(parents)
    _check_int_list("tokens", tokens, n + 1)
    _check_int_list("target_next", target_next, n + 1)
    depth = _depths(parents)
    acc = [True] + [False] * n
    best = 0
    for v in range(1, n + 1):
        acc[v] = acc[parents[v]] and tokens[v] == target_next[parents[v]]
        if acc[v] and depth[v] > depth[best]:
            best = v
    path = []
    j = best
    while j != 0:
        path.append(j)
        j = parents[j]
    path.reverse()
    emitted = [tokens[v] for v in path] + [target_next[best]]
    return {"path": path, "emitted": emitted}


def _check_probs(parents, ranks, rank_probs) -> float:
    n = _check_parents(parents)
    if not isinstance(rank_probs, (list, tuple)) or len(rank_probs) == 0:
        raise ValueError("rank_probs must be a non-empty list")
    for p in rank_probs:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p) or not 0 <= p <= 1:
            raise ValueError(f"rank_probs entry {p!r} outside [0, 1]")
    if sum(rank_probs) > 1 + 1e-9:
        raise ValueError("rank_probs sum above 1")
    if not isinstance(ranks, (list, tuple)) or len(ranks) != n + 1:
        raise ValueError("ranks must have N+1 entries")
    seen = set()
    for i in range(1, n + 1):
        r = ranks[i]
        if not _is_int(r) or not 1 <= r <= len(rank_probs):
            raise ValueError(f"ranks[{i}]={r!r} not in [1, {len(rank_probs)}]")
        key = (parents[i], r)
        if key in seen:
            raise ValueError(f"two children of node {parents[i]} have rank {r}")
        seen.add(key)
    P = [1.0] * (n + 1)
    E = 0.0
    for v in range(1, n + 1):
        P[v] = P[parents[v]] * rank_probs[ranks[v] - 1]
        E += P[v]
    return E


def _check_common(step_model, chain_len, context_len):
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be a StepModel")
    _check_nonneg_int("chain_len", chain_len)
    _check_nonneg_int("context_len", context_len)


def _chain_E(p1, g):
    P = 1.0
    E = 0.0
    for _ in range(g):
        P = P * p1
        E += P
    return E


def _step(sm, b, q, c):
    return sm.t_fixed_s + sm.gemm_s(b * q, b * q) + b * sm.attention_s(q, c)


def tree_vs_chain(step_model, parents, ranks, rank_probs, chain_len, context_len, batch):
    _check_common(step_model, chain_len, context_len)
    Et = _check_probs(parents, ranks, rank_probs)
    _check_nonneg_int("batch", batch, 1)
    n = len(parents) - 1
    Ec = _chain_E(max(rank_probs), chain_len)
    tt = _step(step_model, batch, n + 1, context_len)
    tc = _step(step_model, batch, chain_len + 1, context_len)
    thr_t = batch * (1 + Et) / tt
    thr_c = batch * (1 + Ec) / tc
    return {"tree_accepted": Et, "chain_accepted": Ec, "tree_step_s": tt, "chain_step_s": tc,
            "throughput_ratio": thr_t / thr_c}


def crossover_batch(step_model, parents, ranks, rank_probs, chain_len, context_len, max_batch):
    _check_common(step_model, chain_len, context_len)
    Et = _check_probs(parents, ranks, rank_probs)
    _check_nonneg_int("max_batch", max_batch, 1)
    n = len(parents) - 1
    Ec = _chain_E(max(rank_probs), chain_len)
    for b in range(1, max_batch + 1):
        tt = _step(step_model, b, n + 1, context_len)
        tc = _step(step_model, b, chain_len + 1, context_len)
        if b * (1 + Et) / tt <= b * (1 + Ec) / tc:
            return b
    return None
