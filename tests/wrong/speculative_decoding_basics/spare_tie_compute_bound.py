"""WRONG: counts the exact tie as compute-bound (< instead of <=). Killed by spare-tie-toy-g0."""

import math
from fractions import Fraction


def _g(g):
    if isinstance(g, bool) or not isinstance(g, int) or g < 0:
        raise ValueError("g must be an int >= 0")


def expected_tokens(alpha, g):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError("alpha must be in [0, 1]")
    _g(g)
    if alpha == 1:
        return float(g + 1)
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def _parse(xs):
    if not isinstance(xs, (list, tuple)) or not xs:
        raise ValueError("empty")
    out = []
    for x in xs:
        if not isinstance(x, str):
            raise ValueError("not a string")
        try:
            f = Fraction(x)
        except (ValueError, ZeroDivisionError):
            raise ValueError("bad fraction")
        if f < 0:
            raise ValueError("negative")
        out.append(f)
    if sum(out) != 1:
        raise ValueError("sum")
    return out


def emitted_distribution(p, q):
    P, Q = _parse(p), _parse(q)
    if len(P) != len(Q):
        raise ValueError("lengths")
    acc = [min(a, b) for a, b in zip(P, Q)]
    alpha = sum(acc)
    res = [max(Fraction(0), a - b) for a, b in zip(P, Q)]
    z = sum(res)
    rs = [(1 - alpha) * r / z if z else Fraction(0) for r in res]
    em = [a + r for a, r in zip(acc, rs)]
    return {"alpha": str(alpha), "accepted": [str(x) for x in acc],
            "resampled": [str(x) for x in rs], "emitted": [str(x) for x in em]}


def spare_compute_batch(step_model, g):
    _g(g)
    sm = step_model
    m = sm.model
    d, H, K, hd = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    body = m.n_layers * (d * H * hd + 2 * d * K * hd + H * hd * d + 3 * d * m.ffn_size)
    head = m.vocab_size * d
    W = sm.dtype.bytes_per_element * (body + head)
    F = sm.n_gpus * sm.gpu.dense_flops(sm.dtype) * sm.mfu
    BW = sm.n_gpus * sm.gpu.hbm_bytes_per_s * sm.mbu
    knee = W / BW * F / (2 * (body + head))
    b = 0
    while 2 * (body + head) * (b + 1) * (g + 1) / F < W / BW:
        b += 1
    return {"knee_tokens": knee, "max_batch": b}
