"""WRONG: the tree model charges 2n/bw for one rank: tree_allreduce_time(n, 1, ...) = 2n/bw although a
single rank exchanges nothing (the ring formula gives 0). It passed while the statement gave the tree
formula for every p; that formula is not physical at p = 1."""

from __future__ import annotations

import math

import torch


def _split(x: torch.Tensor, p: int) -> list[torch.Tensor]:
    # tensor_split, not chunk: sizes ceil(N/p) for the first N mod p chunks, floor(N/p) after
    # (torch.chunk makes every chunk ceil(N/p) and may return fewer than p chunks).
    return [c.clone() for c in torch.tensor_split(x, p)]


def ring_reduce_scatter(x: torch.Tensor, comm) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    p, r = comm.world_size, comm.rank
    chunks = _split(x, p)
    for s in range(p - 1):
        got = comm.send_recv(chunks[(r - s - 1) % p])
        recv = (r - s - 2) % p
        chunks[recv] = chunks[recv] + got.to(x.device)
    return chunks[r]


def ring_all_gather(chunk: torch.Tensor, comm, n: int) -> torch.Tensor:
    p, r = comm.world_size, comm.rank
    if not isinstance(chunk, torch.Tensor) or chunk.dim() != 1:
        raise ValueError("chunk must be a 1-D tensor")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("n must be an int >= 0")
    want = n // p + (1 if r < n % p else 0)
    if chunk.numel() != want:
        raise ValueError(f"rank {r} holds {chunk.numel()} element(s); chunk {r} of torch.tensor_split "
                         f"over n={n}, p={p} has {want}")
    chunks: list[torch.Tensor | None] = [None] * p
    chunks[r] = chunk
    for s in range(p - 1):
        chunks[(r - s - 1) % p] = comm.send_recv(chunks[(r - s) % p]).to(chunk.device)
    return torch.cat(chunks)


def ring_all_reduce(x: torch.Tensor, comm) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    return ring_all_gather(ring_reduce_scatter(x, comm), comm, x.numel())


# -- cost model ---------------------------------------------------------------------------------
def _check(p, alpha, bw, n=0.0) -> None:
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError("p must be an int >= 1")
    for name, v in (("n", n), ("alpha", alpha), ("bw", bw)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number")
    if n < 0 or alpha < 0 or bw <= 0:
        raise ValueError("need n >= 0, alpha >= 0 and bw > 0")


def ring_allreduce_time(n: float, p: int, alpha: float, bw: float) -> float:
    """Seconds for a ring all-reduce of n bytes over p ranks: 2(p-1) steps of n/p bytes each."""
    _check(p, alpha, bw, n)
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bw


def tree_allreduce_time(n: float, p: int, alpha: float, bw: float) -> float:
    """Seconds for a (pipelined) tree all-reduce: reduce up and broadcast down a binary tree of
    depth log2(p), each rank moving the whole buffer twice. One rank has nothing to exchange: 0."""
    _check(p, alpha, bw, n)
    return 2 * math.log2(p) * alpha + 2 * n / bw


def crossover_bytes(p: int, alpha: float, bw: float) -> float:
    """The message size above which the ring is faster: setting the two times equal gives
    n = p * bw * alpha * (p - 1 - log2 p) (0 for p = 1 and p = 2, where the ring never loses)."""
    _check(p, alpha, bw)
    return p * bw * alpha * (p - 1 - math.log2(p))
