"""WRONG (input checks): validates with isinstance(x, int) only, so True/False pass as 1/0 (bool is an int
subclass); the statement says bool is not an int here. True then counts as seq_len/window/block 1."""

import math

def _pos(x, name):
    if not isinstance(x, int) or x <= 0:
        raise ValueError(f"{name} must be a positive int, got {x!r}")

def _check(n, w, bq=1, bk=1):
    _pos(n, "seq_len"); _pos(bq, "block_q"); _pos(bk, "block_k")
    if w is not None:
        _pos(w, "window")

def tile_counts(seq_len, window, block_q, block_k):
    _check(seq_len, window, block_q, block_k)
    N, Bq, Bk = seq_len, block_q, block_k
    W = N if window is None else min(window, N)
    nq, nk = -(-N // Bq), -(-N // Bk)
    full = part = 0
    for r in range(nq):
        r0 = r * Bq; r1 = min(r0 + Bq, N)  # rows r0..r1-1
        lo_key = max(0, r0 - W + 1)
        hi_key = r1 - 1
        any_cnt = hi_key // Bk - lo_key // Bk + 1
        # full: c0 >= max(0, r1 - W), c1 - 1 <= r0
        flo = -(-max(0, r1 - W) // Bk)
        fhi = nk - 1 if r0 >= N - 1 else (r0 + 1) // Bk - 1
        f = max(0, fhi - flo + 1)
        full += f
        part += any_cnt - f
    return {"full": full, "partial": part, "skipped": nq * nk - full - part}

def attended_pairs(seq_len, window):
    _check(seq_len, window)
    N = seq_len
    W = N if window is None else min(window, N)
    return W * (W + 1) // 2 + (N - W) * W

def predicted_speedup(seq_len, window, block_q, block_k, partial_cost=1.0, q_block_cost=0.0):
    _check(seq_len, window, block_q, block_k)
    for v, nm in ((partial_cost, "partial_cost"), (q_block_cost, "q_block_cost")):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{nm} must be finite")
    if partial_cost < 1: raise ValueError("partial_cost < 1")
    if q_block_cost < 0: raise ValueError("q_block_cost < 0")
    nq = -(-seq_len // block_q)
    def cost(w):
        t = tile_counts(seq_len, w, block_q, block_k)
        return t["full"] + partial_cost * t["partial"] + q_block_cost * nq
    return cost(None) / cost(window)
