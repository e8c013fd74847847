"""WRONG: bisects losing_batch over 1..max_batch, assuming losing is monotone in b (it is not: the speedup can dip below 1 and recover). Killed by losing-peak-eagle-c2048-g4-alpha0.7-dips-and-recovers."""
from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}")


def schedule_running(token_budget, draft_lens):
    _int("token_budget", token_budget, 0)
    if not isinstance(draft_lens, (list, tuple)):
        raise ValueError("draft_lens must be a list")
    for d in draft_lens:
        _int("draft_len", d, 0)
    left = token_budget
    toks, drafts = [], []
    for d in draft_lens:
        k = min(1 + d, left)
        left -= k
        toks.append(k)
        drafts.append(max(0, k - 1))
    return {"scheduled_tokens": toks, "scheduled_drafts": drafts,
            "tokens_used": sum(toks), "budget_left": left}


def rollback_trace(num_computed_tokens, blocks_held, block_size, lookahead,
                   kv_bytes_per_token, steps):
    _int("num_computed_tokens", num_computed_tokens, 1)
    _int("block_size", block_size, 1)
    _int("blocks_held", blocks_held, 0)
    _int("lookahead", lookahead, 0)
    if blocks_held * block_size < num_computed_tokens:
        raise ValueError("too few blocks held")
    kb = kv_bytes_per_token
    if isinstance(kb, bool) or not isinstance(kb, (int, float)) or not math.isfinite(kb) or kb <= 0:
        raise ValueError("kv_bytes_per_token must be a finite number > 0")
    if not isinstance(steps, (list, tuple)):
        raise ValueError("steps must be a list")
    for st in steps:
        if not isinstance(st, (list, tuple)) or len(st) != 2:
            raise ValueError("a step is a pair (g, a)")
        g, a = st
        _int("g", g, 0)
        _int("a", a, 0)
        if a > g:
            raise ValueError("accepted > drafts")
    c = num_computed_tokens
    held = blocks_held
    hw = c
    out = []
    for g, a in steps:
        hw = max(hw, c + g + 1)
        held = max(held, -(-(c + 1 + g + lookahead) // block_size))
        r = g - a
        c = c + a + 1
        out.append({"num_computed_tokens": c, "tokens_emitted": a + 1, "num_rejected": r,
                    "blocks_held": held, "stale_slots": hw - c,
                    "wasted_kv_bytes": float(r * kb)})
    return out


def _E(alpha, g):
    if alpha == 1:
        return float(g + 1)
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or math.isnan(alpha) \
            or not 0 <= alpha <= 1:
        raise ValueError("alpha must be in [0, 1]")


def _step(sm, b, q, c):
    """b identical rows (q, c, q); returns (time, bound)."""
    flops = 2 * sm.body_params * b * q + 2 * sm.head_params * b * q
    mem = sm.weight_bytes / sm.bytes_per_s
    comp = flops / sm.flops_per_s
    t = float(sm.t_fixed_s) + max(mem, comp) + b * sm.attention_s(q, c)
    return t, ("compute" if comp > mem else "memory")


def _times(step_model, draft_model, b, c, g):
    plain, pb = _step(step_model, b, 1, c)
    verify, vb = _step(step_model, b, g + 1, c)
    draft = g * _step(draft_model, b, 1, c)[0] if g > 0 else 0.0
    return plain, verify, draft, pb, vb


def spec_step(step_model, draft_model, b, c, g, alpha):
    _int("b", b, 1)
    _int("c", c, 0)
    _int("g", g, 0)
    _check_alpha(alpha)
    plain, verify, draft, pb, vb = _times(step_model, draft_model, b, c, g)
    spec = verify + draft
    E = _E(alpha, g)
    speedup = 1.0 if g == 0 else (b * E / spec) / (b / plain)
    return {"plain_s": plain, "verify_s": verify, "draft_s": draft, "spec_s": spec,
            "speedup": speedup, "plain_gemm_bound": pb, "verify_gemm_bound": vb}


def losing_batch(step_model, draft_model, c, g, alpha, kv_pool_tokens):
    _int("c", c, 0)
    _int("g", g, 0)
    _check_alpha(alpha)
    _int("kv_pool_tokens", kv_pool_tokens, 0)
    max_b = kv_pool_tokens // (c + g + 1)
    E = _E(alpha, g)
    found = None
    if g > 0:
        def loses(b):
            plain, verify, draft, _, _ = _times(step_model, draft_model, b, c, g)
            return b * E / (verify + draft) < b / plain
        lo, hi = 1, max_b
        if max_b >= 1 and loses(max_b):
            while lo < hi:
                mid = (lo + hi) // 2
                if loses(mid):
                    hi = mid
                else:
                    lo = mid + 1
            found = lo
    return {"max_batch": max_b, "losing_batch": found}
