"""WRONG (input checks): ring_all_gather converts n with int(n) instead of requiring a Python int, so
n = 10.0 and n = True are accepted instead of raising ValueError."""

import math
import torch


def _sizes(n, p):
    return [n // p + (1 if i < n % p else 0) for i in range(p)]


def ring_reduce_scatter(x, comm):
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    p, r = comm.world_size, comm.rank
    buf = [c.clone() for c in torch.tensor_split(x, p)]
    for s in range(p - 1):
        si = (r - s - 1) % p
        ri = (r - s - 2) % p
        got = comm.send_recv(buf[si].contiguous())
        buf[ri] = buf[ri] + got
    return buf[r]


def ring_all_gather(chunk, comm, n):
    if not isinstance(chunk, torch.Tensor) or chunk.dim() != 1:
        raise ValueError("chunk must be a 1-D tensor")
    n = int(n)
    if n < 0:
        raise ValueError("n must be an int >= 0")
    p, r = comm.world_size, comm.rank
    sizes = _sizes(n, p)
    if chunk.numel() != sizes[r]:
        raise ValueError("chunk has the wrong size")
    buf = [None] * p
    buf[r] = chunk.clone()
    for s in range(p - 1):
        si = (r - s) % p
        ri = (r - s - 1) % p
        buf[ri] = comm.send_recv(buf[si].contiguous())
    return torch.cat(buf)


def ring_all_reduce(x, comm):
    if not isinstance(x, torch.Tensor) or x.dim() != 1:
        raise ValueError("x must be a 1-D tensor")
    c = ring_reduce_scatter(x, comm)
    return ring_all_gather(c, comm, x.numel())


def _check(p, alpha, bw, n=0.0):
    if not isinstance(p, int) or isinstance(p, bool) or p < 1:
        raise ValueError("p must be an int >= 1")
    for v in (n, alpha, bw):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError("arguments must be finite numbers")
    if n < 0 or alpha < 0 or bw <= 0:
        raise ValueError("n >= 0, alpha >= 0, bw > 0")


def ring_allreduce_time(n, p, alpha, bw):
    _check(p, alpha, bw, n)
    return float(2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bw)


def tree_allreduce_time(n, p, alpha, bw):
    _check(p, alpha, bw, n)
    if p == 1:
        return 0.0
    return float(2 * math.log2(p) * alpha + 2 * n / bw)


def crossover_bytes(p, alpha, bw):
    _check(p, alpha, bw)
    v = p * alpha * bw * (p - 1 - math.log2(p))
    return float(max(0.0, v))
