"""WRONG: predicts the speedup as seq_len / window (the fraction of keys kept), ignoring that causal already skips half and the tile edges."""

from __future__ import annotations

import math


def _check(seq_len, window, block_q, block_k) -> None:
    for name, v in (("seq_len", seq_len), ("block_q", block_q), ("block_k", block_k)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"window must be a positive int or None, got {window!r}")


def _row_block(r0: int, r1: int, seq_len: int, window: int | None, block_k: int) -> tuple[int, int]:
    """(non-empty, full) key blocks for the query rows r0..r1 (inclusive)."""
    n_k = -(-seq_len // block_k)
    lo = r0 - window + 1 if window is not None else -seq_len  # first key row r0 may see
    # Some (i, j) allowed: c0 <= r1 and c1 >= r0 - window + 1.
    ne_hi = r1 // block_k
    ne_lo = max(0, lo // block_k)
    nonempty = ne_hi - ne_lo + 1
    # Every (i, j) allowed: c1 <= r0 and c0 >= r1 - window + 1.
    full_hi = (r0 + 1) // block_k - 1             # blocks ending at or before r0 ...
    if min(n_k * block_k, seq_len) - 1 <= r0:     # ... the short last block ends at seq_len - 1
        full_hi = n_k - 1
    full_lo = 0 if window is None else max(0, -(-(r1 - window + 1) // block_k))
    full = max(0, full_hi - full_lo + 1)
    return nonempty, full


def tile_counts(seq_len: int, window: int | None, block_q: int, block_k: int) -> dict[str, int]:
    _check(seq_len, window, block_q, block_k)
    n_q, n_k = -(-seq_len // block_q), -(-seq_len // block_k)
    full = partial = 0
    for rb in range(n_q):
        r0, r1 = rb * block_q, min((rb + 1) * block_q, seq_len) - 1
        ne, f = _row_block(r0, r1, seq_len, window, block_k)
        full += f
        partial += ne - f
    return {"full": full, "partial": partial, "skipped": n_q * n_k - full - partial}


def attended_pairs(seq_len: int, window: int | None) -> int:
    _check(seq_len, window, 1, 1)
    if window is None or window >= seq_len:
        return seq_len * (seq_len + 1) // 2
    return window * (window + 1) // 2 + (seq_len - window) * window


def predicted_speedup(seq_len: int, window: int | None, block_q: int, block_k: int,
                      partial_cost: float = 1.0, q_block_cost: float = 0.0) -> float:
    _check(seq_len, window, block_q, block_k)
    for name, v in (("partial_cost", partial_cost), ("q_block_cost", q_block_cost)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    if partial_cost < 1.0:
        raise ValueError(f"partial_cost must be >= 1 (a masked tile is never cheaper), got {partial_cost}")
    if q_block_cost < 0.0:
        raise ValueError(f"q_block_cost must be >= 0, got {q_block_cost}")
    n_q = -(-seq_len // block_q)

    def cost(w):
        c = tile_counts(seq_len, w, block_q, block_k)
        return c["full"] + partial_cost * c["partial"] + q_block_cost * n_q

    if window is None or window >= seq_len:
        return 1.0
    return seq_len / window
