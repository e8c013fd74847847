"""WRONG: a cheat whose ranks pool their Q/K/V in a module-level dict (they are threads of one process) and compute full attention directly, still sending the pinned messages. Killed by "ring attention p=4 N=64 float64 zigzag, each rank alone"."""

from __future__ import annotations

import math
import threading
import time

import torch

_POOL: dict = {}
_LOCK = threading.Lock()


def shard_positions(n_total, p, rank, scheme):
    if scheme not in ("contiguous", "zigzag") or p < 1 or not 0 <= rank < p:
        raise ValueError("bad arguments")
    if scheme == "contiguous":
        if n_total % p:
            raise ValueError("N must be a multiple of p")
        n = n_total // p
        return torch.arange(rank * n, (rank + 1) * n)
    if n_total % (2 * p):
        raise ValueError("N must be a multiple of 2p")
    c = n_total // (2 * p)
    return torch.cat([torch.arange(rank * c, (rank + 1) * c), torch.arange((2 * p - 1 - rank) * c, (2 * p - rank) * c)])


def ring_attention(q, k, v, comm, n_total, scheme):
    r, p = comm.rank, comm.world_size
    pos = shard_positions(n_total, p, r, scheme)
    key = (n_total, p, scheme, tuple(q.shape), str(q.dtype))
    with _LOCK:
        _POOL.setdefault(key, {})[r] = (q, k, v)
    held = torch.cat([k.reshape(-1), v.reshape(-1)])
    for _ in range(p - 1):
        held = comm.send_recv(held)
    deadline = time.time() + 1.0
    while len(_POOL[key]) < p and time.time() < deadline:
        time.sleep(0.01)
    hq, n, d = q.shape
    Q = torch.zeros(hq, n_total, d, dtype=torch.float64)
    K = torch.zeros(k.shape[0], n_total, d, dtype=torch.float64)
    V = torch.zeros_like(K)
    for j, (qj, kj, vj) in list(_POOL[key].items()):
        pj = shard_positions(n_total, p, j, scheme)
        Q[:, pj], K[:, pj], V[:, pj] = qj.double().cpu(), kj.double().cpu(), vj.double().cpu()
    g = hq // k.shape[0]
    K, V = K.repeat_interleave(g, 0), V.repeat_interleave(g, 0)
    s = (Q @ K.transpose(1, 2)) / math.sqrt(d)
    s = s.masked_fill(torch.triu(torch.ones(n_total, n_total, dtype=torch.bool), 1), float("-inf"))
    return (torch.softmax(s, -1) @ V)[:, pos].to(q.dtype).to(q.device)


def causal_work(n_total, p, scheme):
    raise NotImplementedError


def cp_traffic(model, n_tokens, p, dtype):
    raise NotImplementedError


def overlap_threshold(model, gpu, dtype, link, attention_efficiency, scheme):
    raise NotImplementedError
