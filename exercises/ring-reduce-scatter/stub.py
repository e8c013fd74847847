"""ring-reduce-scatter: SPMD collectives over a lock-step ring, and the alpha-beta cost model.

Every collective runs once per rank (SPMD). ``comm`` has ``comm.rank``, ``comm.world_size`` (p)
and ``comm.send_recv(t) -> tensor``: one ring step, sending a copy of the 1-D tensor t to rank
(rank + 1) % p and returning what rank (rank - 1) % p sent in the same step. The grader runs the
ranks together (one thread each) and also one at a time, playing the other ranks itself: a rank
may use only its own input and what send_recv returns. Chunks are ``torch.tensor_split(x, p)``.
See the statement (`inferprep show ring-reduce-scatter`) for the exact rules.
"""

import torch


def ring_reduce_scatter(x: torch.Tensor, comm) -> torch.Tensor:
    """Reduce-scatter (sum) in exactly p - 1 steps, each message exactly one chunk.

    Args:
        x: (N,) this rank's contribution, any integer or floating dtype.
        comm: this rank's ring handle.

    Returns:
        (len(chunk r),) the sum over all ranks of chunk r (r = comm.rank), dtype of x.

    Raises:
        ValueError: x is not a 1-D tensor (0-D and 2-D raise).
    """
    raise NotImplementedError


def ring_all_gather(chunk: torch.Tensor, comm, n: int) -> torch.Tensor:
    """All-gather in exactly p - 1 steps, each message exactly one chunk.

    Args:
        chunk: this rank's chunk r of a length-n vector (its torch.tensor_split size).
        comm: this rank's ring handle.
        n: the full length N.

    Returns:
        (N,) the concatenation of every rank's chunk, in rank order.

    Raises:
        ValueError: chunk not 1-D (0-D and 2-D raise); n not a Python int >= 0 (bool and 10.0
            raise); len(chunk) differs from the size of chunk r of torch.tensor_split over length n.
    """
    raise NotImplementedError


def ring_all_reduce(x: torch.Tensor, comm) -> torch.Tensor:
    """All-reduce (sum): reduce-scatter, then all-gather (2(p - 1) steps). Returns (N,).

    Raises:
        ValueError: x is not a 1-D tensor (0-D and 2-D raise).
    """
    raise NotImplementedError


def ring_allreduce_time(n: float, p: int, alpha: float, bw: float) -> float:
    """Seconds: 2(p-1)*alpha + 2(p-1)/p * n/bw. n bytes, alpha seconds per step, bw bytes/s.

    Raises:
        ValueError: p not a Python int >= 1 (bool and 8.0 raise); n < 0; alpha < 0; bw <= 0;
            n, alpha or bw not finite (NaN, inf).
    """
    raise NotImplementedError


def tree_allreduce_time(n: float, p: int, alpha: float, bw: float) -> float:
    """Seconds: 2*log2(p)*alpha + 2*n/bw for p >= 2; 0.0 for p = 1 (one rank exchanges nothing).
    Same units and errors as ring_allreduce_time."""
    raise NotImplementedError


def crossover_bytes(p: int, alpha: float, bw: float) -> float:
    """Bytes: the size n above which ring_allreduce_time < tree_allreduce_time.

    Raises:
        ValueError: p not a Python int >= 1 (bool and 8.0 raise); alpha < 0; bw <= 0;
            alpha or bw not finite (NaN, inf).
    """
    raise NotImplementedError
