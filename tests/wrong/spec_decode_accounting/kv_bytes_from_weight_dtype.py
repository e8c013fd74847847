"""WRONG: attention KV bytes per token counted with the weights' dtype, not kv_dtype. Killed by step-s-spec-fp8-kv-b64-c8192-g4."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_alpha(alpha) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")


# -- 1. draft tokens in the token budget -------------------------------------------------------

def schedule_running(token_budget: int, draft_lens: list[int]) -> dict:
    """Tokens each running decode request gets this step, vLLM V1 style, in queue order."""
    _check_int("token_budget", token_budget, 0)
    if not isinstance(draft_lens, (list, tuple)):
        raise ValueError("draft_lens must be a list of ints >= 0")
    for d in draft_lens:
        _check_int("draft length", d, 0)
    left = token_budget
    tokens, drafts = [], []
    for d in draft_lens:
        k = min(1 + d, left)               # 0 once the budget is spent
        tokens.append(k)
        drafts.append(max(0, k - 1))       # the drafts that fit; the rest are dropped
        left -= k
    return {"scheduled_tokens": tokens, "scheduled_drafts": drafts,
            "tokens_used": token_budget - left, "budget_left": left}


# -- 2. rollback --------------------------------------------------------------------------------

def rollback_trace(num_computed_tokens: int, blocks_held: int, block_size: int, lookahead: int,
                   kv_bytes_per_token: float, steps: list) -> list[dict]:
    """Replay verification steps of one request; one dict per step (see the statement)."""
    _check_int("num_computed_tokens", num_computed_tokens, 1)
    _check_int("block_size", block_size, 1)
    _check_int("blocks_held", blocks_held, 0)
    _check_int("lookahead", lookahead, 0)
    if blocks_held * block_size < num_computed_tokens:
        raise ValueError("blocks_held cannot hold the computed tokens")
    if isinstance(kv_bytes_per_token, bool) or not isinstance(kv_bytes_per_token, (int, float)) \
            or not math.isfinite(kv_bytes_per_token) or kv_bytes_per_token <= 0:
        raise ValueError("kv_bytes_per_token must be a finite number > 0")
    if not isinstance(steps, (list, tuple)):
        raise ValueError("steps must be a list of (drafts, accepted) pairs")
    c, held, written = num_computed_tokens, blocks_held, num_computed_tokens
    out = []
    for st in steps:
        if not isinstance(st, (list, tuple)) or len(st) != 2:
            raise ValueError(f"a step is (drafts, accepted), got {st!r}")
        g, a = st
        _check_int("drafts", g, 0)
        _check_int("accepted", a, 0)
        if a > g:
            raise ValueError(f"accepted={a} exceeds drafts={g}")
        scheduled = 1 + g                                   # positions c .. c + g
        held = max(held, math.ceil((c + scheduled + lookahead) / block_size))
        written = max(written, c + scheduled)
        rejected = g - a
        c = c + scheduled - rejected                        # = c + a + 1
        out.append({"num_computed_tokens": c, "tokens_emitted": a + 1, "num_rejected": rejected,
                    "blocks_held": held, "stale_slots": written - c,
                    "wasted_kv_bytes": float(rejected * kv_bytes_per_token)})
    return out


# -- 3. step times and where speculation loses --------------------------------------------------

def expected_tokens(alpha: float, g: int) -> float:
    """(1 - alpha^(g+1)) / (1 - alpha); g + 1 at alpha = 1."""
    if alpha == 1:
        return float(g + 1)
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def _rows_s(sm: StepModel, b: int, q: int, c: int, r: int) -> tuple[float, bool]:
    """Step time of b identical rows (q, c, r) and whether its GEMMs are compute-bound; O(1)."""
    memory_s = sm.weight_bytes / sm.bytes_per_s
    compute_s = (2 * sm.body_params * b * q + 2 * sm.head_params * b * r) / sm.flops_per_s
    return sm.t_fixed_s + max(memory_s, compute_s) + b * _attn(sm, q, c), compute_s > memory_s


def _times(sm: StepModel, dm: StepModel, b: int, c: int, g: int):
    plain, plain_cb = _rows_s(sm, b, 1, c, 1)
    verify, verify_cb = _rows_s(sm, b, g + 1, c, g + 1)
    draft = g * _rows_s(dm, b, 1, c, 1)[0] if g else 0.0
    return plain, verify, draft, plain_cb, verify_cb


def _check_models(sm, dm) -> None:
    for name, m in (("step_model", sm), ("draft_model", dm)):
        if not isinstance(m, StepModel):
            raise ValueError(f"{name} must be an inferprep.sim.step_model.StepModel")


def spec_step(step_model: StepModel, draft_model: StepModel, b: int, c: int, g: int,
              alpha: float) -> dict:
    """One plain and one speculative step for b identical requests at context c."""
    _check_models(step_model, draft_model)
    _check_int("b", b, 1)
    _check_int("c", c, 0)
    _check_int("g", g, 0)
    _check_alpha(alpha)
    plain, verify, draft, plain_cb, verify_cb = _times(step_model, draft_model, b, c, g)
    spec = verify + draft
    e = expected_tokens(alpha, g)
    return {"plain_s": plain, "verify_s": verify, "draft_s": draft, "spec_s": spec,
            "plain_gemm_bound": "compute" if plain_cb else "memory",
            "verify_gemm_bound": "compute" if verify_cb else "memory",
            "speedup": (b * e / spec) / (b / plain)}


def losing_batch(step_model: StepModel, draft_model: StepModel, c: int, g: int, alpha: float,
                 kv_pool_tokens: int) -> dict:
    """Smallest batch, among those whose KV fits, where speculation delivers fewer tokens/s."""
    _check_models(step_model, draft_model)
    _check_int("c", c, 0)
    _check_int("g", g, 0)
    _check_alpha(alpha)
    _check_int("kv_pool_tokens", kv_pool_tokens, 0)
    max_batch = kv_pool_tokens // (c + g + 1)
    e = expected_tokens(alpha, g)
    for b in range(1, max_batch + 1):
        plain, verify, draft, _, _ = _times(step_model, draft_model, b, c, g)
        if b * e / (verify + draft) < b / plain:
            return {"max_batch": max_batch, "losing_batch": b}
    return {"max_batch": max_batch, "losing_batch": None}


def _attn(sm, q, c):
    # WRONG: KV bytes per token with the weights' dtype (s_w) instead of kv_dtype (s_kv)
    m = sm.model
    kvb = m.n_layers * 2 * m.n_kv_heads * m.head_dim * sm.dtype.bytes_per_element
    flops = sm.attn_flops_per_key * (q * c + q * (q + 1) // 2)
    return max(kvb * (c + q) / sm.bytes_per_s, flops / sm.flops_per_s)
