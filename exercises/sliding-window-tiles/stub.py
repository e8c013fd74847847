"""Tile counts of a sliding-window causal attention kernel (see statement.md).

Mask: query i sees key j iff ``i - window < j <= i`` (``window`` keys including its own; HF
Mistral ``sliding_window``; FlashAttention ``window_size=(window - 1, 0)``). ``window=None`` is
plain causal ``j <= i``. Tiles are ``block_q`` query rows by ``block_k`` key columns; the last
blocks may be short and are classified by their in-range rows and columns only.
"""

from __future__ import annotations


def tile_counts(seq_len: int, window: int | None, block_q: int, block_k: int) -> dict[str, int]:
    """Classify every tile of the ``seq_len x seq_len`` score matrix.

    Args:
        seq_len: N, tokens in the prefill (queries = keys), >= 1.
        window: W, keys each query sees (its own included), >= 1; ``None`` for plain causal.
        block_q: query rows per tile, >= 1.
        block_k: key columns per tile, >= 1.

    Returns:
        ``{"full": F, "partial": P, "skipped": S}`` (Python ints), F + P + S =
        ceil(N / block_q) * ceil(N / block_k).

    Raises:
        ValueError: a non-positive (or non-int, or bool) seq_len, block_q, block_k or window.
    """
    raise NotImplementedError


def attended_pairs(seq_len: int, window: int | None) -> int:
    """Number of allowed (query, key) pairs under the mask (an int).

    Raises:
        ValueError: a non-positive (or non-int, or bool) seq_len or window.
    """
    raise NotImplementedError


def predicted_speedup(seq_len: int, window: int | None, block_q: int, block_k: int,
                      partial_cost: float = 1.0, q_block_cost: float = 0.0) -> float:
    """cost(None) / cost(window) with cost(w) = F + partial_cost * P + q_block_cost * ceil(N / block_q).

    Args:
        partial_cost: cost of a masked tile in full-tile units, >= 1.
        q_block_cost: fixed cost per query block in full-tile units, >= 0.

    Raises:
        ValueError: bad sizes as in ``tile_counts``; partial_cost < 1; q_block_cost < 0; NaN/inf.
    """
    raise NotImplementedError
