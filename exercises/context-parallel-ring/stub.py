"""context-parallel-ring: ring attention passing K/V over a simulated ring, zigzag sharding,
causal work per rank, KV traffic and the overlap threshold. Definitions in the statement."""

from __future__ import annotations

import torch

from inferprep.specs import DType, GPU, ModelConfig


def shard_positions(n_total: int, p: int, rank: int, scheme: str) -> torch.Tensor:
    """Absolute positions rank ``rank`` holds (int64, CPU, ascending); scheme "contiguous" or "zigzag".

    Raises:
        ValueError: n_total not a multiple of p (contiguous) or 2p (zigzag), rank not in [0, p), unknown scheme.
    """
    raise NotImplementedError


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, comm, n_total: int, scheme: str) -> torch.Tensor:
    """Run on every rank (SPMD). q: (H_q, n, d), k and v: (H_kv, n, d): this rank's tokens, at
    ``shard_positions(n_total, comm.world_size, comm.rank, scheme)``. ``comm.send_recv(t)`` is one
    ring step. Returns causal attention of this rank's queries over the whole sequence, (H_q, n, d),
    q's dtype and device.

    Raises:
        ValueError: before any communication, on the inputs the statement lists.
    """
    raise NotImplementedError


def causal_work(n_total: int, p: int, scheme: str) -> dict:
    """{"work": [[int] * p] * p (rank, step), "per_rank": [int] * p, "makespan": int, "efficiency": float}."""
    raise NotImplementedError


def cp_traffic(model: ModelConfig, n_tokens: int, p: int, dtype: DType) -> dict:
    """{"kv_bytes_per_step", "cp_bytes_per_layer", "cp_bytes", "tp_bytes_per_layer", "tp_bytes", "tp_over_cp"}: floats."""
    raise NotImplementedError


def overlap_threshold(model: ModelConfig, gpu: GPU, dtype: DType, link: str, attention_efficiency: float,
                      scheme: str) -> float:
    """Tokens per rank (N/p) from which one ring step's K/V transfer hides behind its attention."""
    raise NotImplementedError
