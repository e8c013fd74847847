"""WRONG: one drafter forward per step instead of g sequential ones. Killed by step-s-spec-b1-c512-g4."""

import math


def _int(v, lo):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError("bad int")


def _alpha(a):
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
        raise ValueError("alpha")


def schedule_running(token_budget, draft_lens):
    _int(token_budget, 0)
    if not isinstance(draft_lens, (list, tuple)):
        raise ValueError("list")
    for d in draft_lens:
        _int(d, 0)
    left = token_budget
    toks, drafts = [], []
    for d in draft_lens:
        k = min(1 + d, left)
        toks.append(k)
        drafts.append(max(0, k - 1))
        left -= k
    return {"scheduled_tokens": toks, "scheduled_drafts": drafts,
            "tokens_used": token_budget - left, "budget_left": left}


def rollback_trace(num_computed_tokens, blocks_held, block_size, lookahead, kv_bytes_per_token, steps):
    _int(num_computed_tokens, 1)
    _int(block_size, 1)
    _int(blocks_held, 0)
    _int(lookahead, 0)
    if blocks_held * block_size < num_computed_tokens:
        raise ValueError("blocks")
    if isinstance(kv_bytes_per_token, bool) or not isinstance(kv_bytes_per_token, (int, float)) \
            or not math.isfinite(kv_bytes_per_token) or kv_bytes_per_token <= 0:
        raise ValueError("kvb")
    c, held, hw = num_computed_tokens, blocks_held, num_computed_tokens
    out = []
    for g, a in steps:
        _int(g, 0)
        _int(a, 0)
        if a > g:
            raise ValueError("a > g")
        held = max(held, -(-(c + 1 + g + lookahead) // block_size))
        hw = max(hw, c + 1 + g)
        rej = g - a
        c = c + 1 + g - rej
        out.append({"num_computed_tokens": c, "tokens_emitted": a + 1, "num_rejected": rej,
                    "blocks_held": held, "stale_slots": hw - c,
                    "wasted_kv_bytes": rej * kv_bytes_per_token})
    return out


def _E(alpha, g):
    return float(g + 1) if alpha == 1 else (1 - alpha ** (g + 1)) / (1 - alpha)


def _t(sm, b, q, c, r):
    m = sm.model
    d, H, K, hd = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    body = m.n_layers * (d * H * hd + 2 * d * K * hd + H * hd * d + 3 * d * m.ffn_size)
    head = m.vocab_size * d
    W = sm.dtype.bytes_per_element * (body + head)
    F = sm.n_gpus * sm.gpu.dense_flops(sm.dtype) * sm.mfu
    BW = sm.n_gpus * sm.gpu.hbm_bytes_per_s * sm.mbu
    kvb = m.n_layers * 2 * K * hd * sm.kv_dtype.bytes_per_element
    A = m.n_layers * 4 * H * hd
    mem = W / BW
    comp = (2 * body * b * q + 2 * head * b * r) / F
    att = max(kvb * (c + q) / BW, A * (q * c + q * (q + 1) // 2) / F)
    return sm.t_fixed_s + max(mem, comp) + b * att, comp > mem


def _times(sm, dm, b, c, g):
    p, pcb = _t(sm, b, 1, c, 1)
    v, vcb = _t(sm, b, g + 1, c, g + 1)
    d = _t(dm, b, 1, c, 1)[0] if g else 0.0
    return p, v, d, pcb, vcb


def spec_step(step_model, draft_model, b, c, g, alpha):
    _int(b, 1)
    _int(c, 0)
    _int(g, 0)
    _alpha(alpha)
    p, v, d, pcb, vcb = _times(step_model, draft_model, b, c, g)
    e = _E(alpha, g)
    return {"plain_s": p, "verify_s": v, "draft_s": d, "spec_s": v + d,
            "plain_gemm_bound": "compute" if pcb else "memory",
            "verify_gemm_bound": "compute" if vcb else "memory",
            "speedup": e * p / (v + d)}


def losing_batch(step_model, draft_model, c, g, alpha, kv_pool_tokens):
    _int(c, 0)
    _int(g, 0)
    _alpha(alpha)
    _int(kv_pool_tokens, 0)
    mb = kv_pool_tokens // (c + g + 1)
    e = _E(alpha, g)
    for b in range(1, mb + 1):
        p, v, d, _, _ = _times(step_model, draft_model, b, c, g)
        if b * e / (v + d) < b / p:
            return {"max_batch": mb, "losing_batch": b}
    return {"max_batch": mb, "losing_batch": None}
