"""WRONG: calls the budget infeasible when the interactive KV exactly fills the pool (>= instead of >). Killed by budget-pool-exactly-interactive."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_ctx_list(name: str, xs, allow_empty: bool) -> list[int]:
    if not isinstance(xs, (list, tuple)):
        raise ValueError(f"{name} must be a list of ints >= 0")
    if not xs and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    for c in xs:
        _check_int(f"a context in {name}", c, 0)
    return list(xs)


def _check_target(t) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise ValueError(f"tpot_target_s must be a finite number > 0, got {t!r}")


def _check_sm(sm) -> None:
    if not isinstance(sm, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")


def _decode_step_s(sm: StepModel, ctxs: list[int], n: int = 0, c: int = 0) -> float:
    """Step time of decode rows (1, x, 1) for x in ctxs plus n rows (1, c, 1)."""
    tokens = len(ctxs) + n
    if tokens == 0:
        return 0.0
    flops = (2 * sm.body_params + 2 * sm.head_params) * tokens      # one logit row per token
    gemm = max(sm.weight_bytes / sm.bytes_per_s, flops / sm.flops_per_s)
    attention = sum(sm.attention_s(1, x) for x in ctxs) + n * sm.attention_s(1, c)
    return sm.t_fixed_s + gemm + attention


def kv_cost_per_token_s(step_model: StepModel) -> float:
    """Seconds one held KV token adds to every decode step: max(kvb / BW, A / F)."""
    _check_sm(step_model)
    sm = step_model
    return max(sm.kv_bytes_per_token / sm.bytes_per_s, sm.attn_flops_per_key / sm.flops_per_s)


def batch_kv_budget(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
                    batch_ctx: int, pool_tokens: int) -> dict:
    """The most batch sequences at context ``batch_ctx`` that keep the decode step within
    ``tpot_target_s`` next to ``interactive_ctx`` and fit the KV pool of ``pool_tokens``."""
    _check_sm(step_model)
    _check_target(tpot_target_s)
    inter = _check_ctx_list("interactive_ctx", interactive_ctx, allow_empty=False)
    _check_int("batch_ctx", batch_ctx, 0)
    _check_int("pool_tokens", pool_tokens, 1)
    sm, c = step_model, batch_ctx
    base = _decode_step_s(sm, inter)
    inter_kv = sum(x + 1 for x in inter)
    if base > tpot_target_s or inter_kv >= pool_tokens:
        return {"base_tpot_s": base, "max_batch_seqs": 0, "kv_tokens": 0, "kv_bytes": 0.0,
                "tpot_at_budget_s": base, "binding": "infeasible"}

    def fits_tpot(n: int) -> bool:
        return _decode_step_s(sm, inter, n, c) <= tpot_target_s

    n_pool = (pool_tokens - inter_kv) // (c + 1)
    hi = 1                                  # grow until TPOT or pool fails, then bisect
    while hi <= n_pool and fits_tpot(hi):
        hi *= 2
    lo, hi = hi // 2, min(hi, n_pool + 1)   # lo fits both (or is 0); hi fails one
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits_tpot(mid) else (lo, mid)
    n = lo
    binding = "tpot" if not fits_tpot(n + 1) else "pool"     # TPOT first when both bind
    return {"base_tpot_s": base, "max_batch_seqs": n, "kv_tokens": n * (c + 1),
            "kv_bytes": float(n * (c + 1) * sm.kv_bytes_per_token),
            "tpot_at_budget_s": _decode_step_s(sm, inter, n, c), "binding": binding}


def admit_batch_request(kv_budget_tokens: int, running: list, prompt_tokens: int,
                        max_tokens: int) -> bool:
    """Admit a batch request only if every admitted batch sequence's *final* KV still fits."""
    _check_int("kv_budget_tokens", kv_budget_tokens, 0)
    _check_int("prompt_tokens", prompt_tokens, 1)
    _check_int("max_tokens", max_tokens, 1)
    if not isinstance(running, (list, tuple)):
        raise ValueError("running must be a list of (prompt_tokens, generated_tokens, max_tokens)")
    reserved = 0
    for r in running:
        if not isinstance(r, (list, tuple)) or len(r) != 3:
            raise ValueError(f"a running entry is (prompt_tokens, generated_tokens, max_tokens), got {r!r}")
        p, done, mx = r
        _check_int("prompt_tokens", p, 1)
        _check_int("max_tokens", mx, 1)
        _check_int("generated_tokens", done, 0)
        if done > mx:
            raise ValueError(f"generated_tokens={done} exceeds max_tokens={mx}")
        reserved += p + mx
    return reserved + prompt_tokens + max_tokens <= kv_budget_tokens


def tpot_guard(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
               batch_ctx: list[int], free_kv_tokens: int) -> dict:
    """What vLLM V1's priority policy preempts this step (memory only) versus what an
    interactive TPOT target needs preempted."""
    _check_sm(step_model)
    _check_target(tpot_target_s)
    inter = _check_ctx_list("interactive_ctx", interactive_ctx, allow_empty=False)
    batch = _check_ctx_list("batch_ctx", batch_ctx, allow_empty=True)
    _check_int("free_kv_tokens", free_kv_tokens, 0)
    sm = step_model
    if free_kv_tokens < len(inter):
        raise ValueError("free_kv_tokens cannot hold one new token per interactive sequence")

    def step(kept: list[int]) -> float:
        return _decode_step_s(sm, inter + [batch[i] for i in kept])

    # The engine: preempt only while the step's new slots do not fit; victim = max(priority,
    # arrival) = the latest-arrived batch sequence still running.
    kept = list(range(len(batch)))
    free, need = free_kv_tokens, len(inter) + len(batch)
    engine = []
    while free < need:
        i = kept.pop()
        engine.append(i)
        free += batch[i]
        need -= 1
    tpot_engine = step(kept)

    # The policy: fewest preemptions meeting TPOT and memory: largest context first, ties latest.
    order = sorted(range(len(batch)), key=lambda i: (-batch[i], -i))
    kept_p = set(range(len(batch)))
    free, need = free_kv_tokens, len(inter) + len(batch)
    policy = []
    for i in order:
        if free >= need and step(sorted(kept_p)) <= tpot_target_s:
            break
        kept_p.discard(i)
        policy.append(i)
        free += batch[i]
        need -= 1
    tpot_policy = step(sorted(kept_p))
    return {"tpot_before_s": step(list(range(len(batch)))),
            "engine_preempted": sorted(engine), "tpot_after_engine_s": tpot_engine,
            "policy_preempted": sorted(policy), "tpot_after_policy_s": tpot_policy,
            "meets_target": tpot_policy <= tpot_target_s}
