"""WRONG: bypasses the ring with shared memory and hides it: the ranks (threads of one process)
publish their inputs in a module-level dict, compute from all of them the exact partial sums the
ring carries at every step and send those, then return the direct sum. Every message matched the
ring's schedule, so it passed while all ranks ran together in one process; it fails when a rank
runs alone and its partners are played by the grader (the dict then holds no current inputs)."""

import math
import threading

import torch

_LOCK = threading.Lock()
_POOL: dict = {}


def _chunks(x, p):
    return list(torch.tensor_split(x, p))


def _ring_message(xs, r, s, p):
    """What rank r sends in reduce-scatter step s: chunk (r - s - 1) of x_{r-s} + ... + x_r."""
    c = (r - s - 1) % p
    total = _chunks(xs[r], p)[c].clone()
    for i in range(1, s + 1):
        total = _chunks(xs[(r - i) % p], p)[c] + total
    return total


def _reduce_scatter(x, comm, key):
    p, r = comm.world_size, comm.rank
    with _LOCK:
        _POOL.setdefault(key, {})[r] = x.clone()
    if p == 1:
        return x.clone()
    comm.send_recv(_chunks(x, p)[(r - 1) % p].clone())   # step 0 needs only x; the barrier syncs the pool
    with _LOCK:
        xs = dict(_POOL[key])
    for s in range(1, p - 1):
        comm.send_recv(_ring_message(xs, r, s, p))
    total = xs[0].clone()
    for k in range(1, p):
        total = total + xs[k]
    return _chunks(total, p)[r].clone()


def ring_reduce_scatter(x, comm):
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    return _reduce_scatter(x, comm, ("rs", comm.world_size, x.numel(), x.dtype))


def ring_all_gather(chunk, comm, n):
    if not isinstance(chunk, torch.Tensor) or chunk.dim() != 1:
        raise ValueError("chunk must be a 1-D tensor")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("n must be an int >= 0")
    p, r = comm.world_size, comm.rank
    if chunk.numel() != n // p + (1 if r < n % p else 0):
        raise ValueError("chunk has the wrong size")
    key = ("ag", p, n, chunk.dtype)
    with _LOCK:
        _POOL.setdefault(key, {})[r] = chunk.clone()
    if p == 1:
        return chunk.clone()
    comm.send_recv(chunk.clone())
    with _LOCK:
        cs = dict(_POOL[key])
    for s in range(1, p - 1):
        comm.send_recv(cs[(r - s) % p].clone())
    return torch.cat([cs[k] for k in range(p)])


def ring_all_reduce(x, comm):
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    p = comm.world_size
    mine = _reduce_scatter(x, comm, ("ar", p, x.numel(), x.dtype))
    return ring_all_gather(mine, comm, x.numel())


def _check(p, alpha, bw, n=0.0):
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError("p must be an int >= 1")
    for v in (n, alpha, bw):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError("n, alpha and bw must be finite numbers")
    if n < 0 or alpha < 0 or bw <= 0:
        raise ValueError("need n >= 0, alpha >= 0 and bw > 0")


def ring_allreduce_time(n, p, alpha, bw):
    _check(p, alpha, bw, n)
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bw


def tree_allreduce_time(n, p, alpha, bw):
    _check(p, alpha, bw, n)
    if p == 1:
        return 0.0
    return 2 * math.log2(p) * alpha + 2 * n / bw


def crossover_bytes(p, alpha, bw):
    _check(p, alpha, bw)
    return p * bw * alpha * (p - 1 - math.log2(p))
