"""WRONG: the engine keeps preempting while slots needed >= free slots (a tie counts as a shortfall). Killed by guard-engine-slot-tie."""
from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_target(t):
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise ValueError(f"tpot_target_s must be a finite number > 0, got {t!r}")


def _check_ctx_list(name, xs, allow_empty):
    if not isinstance(xs, (list, tuple)):
        raise ValueError(f"{name} must be a list")
    if not xs and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    for c in xs:
        if not _is_int(c) or c < 0:
            raise ValueError(f"{name}: context {c!r} is not an int >= 0")


def _row_att(sm: StepModel, c: int) -> float:
    return max(sm.kv_bytes_per_token * (c + 1) / sm.bytes_per_s,
               sm.attn_flops_per_key * (c + 1) / sm.flops_per_s)


def _step(sm: StepModel, counts: dict) -> float:
    """counts: {ctx: n}. Step of all those decode rows."""
    n = sum(counts.values())
    if n == 0:
        return 0.0
    gemm = max(sm.weight_bytes / sm.bytes_per_s,
               (2 * sm.body_params + 2 * sm.head_params) * n / sm.flops_per_s)
    att = 0.0
    for c, k in counts.items():
        if k:
            att += k * _row_att(sm, c)
    return sm.t_fixed_s + gemm + att


def _counts(ctxs) -> dict:
    d: dict = {}
    for c in ctxs:
        d[c] = d.get(c, 0) + 1
    return d


def kv_cost_per_token_s(step_model: StepModel) -> float:
    sm = step_model
    return max(sm.kv_bytes_per_token / sm.bytes_per_s, sm.attn_flops_per_key / sm.flops_per_s)


def batch_kv_budget(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
                    batch_ctx: int, pool_tokens: int) -> dict:
    sm = step_model
    _check_target(tpot_target_s)
    _check_ctx_list("interactive_ctx", interactive_ctx, allow_empty=False)
    if not _is_int(batch_ctx) or batch_ctx < 0:
        raise ValueError("batch_ctx must be an int >= 0")
    if not _is_int(pool_tokens) or pool_tokens < 1:
        raise ValueError("pool_tokens must be an int >= 1")
    base_counts = _counts(interactive_ctx)
    base = _step(sm, base_counts)
    int_tokens = sum(c + 1 for c in interactive_ctx)
    if base > tpot_target_s or int_tokens > pool_tokens:
        return {"base_tpot_s": base, "max_batch_seqs": 0, "kv_tokens": 0, "kv_bytes": 0.0,
                "tpot_at_budget_s": base, "binding": "infeasible"}

    def step_n(n):
        d = dict(base_counts)
        d[batch_ctx] = d.get(batch_ctx, 0) + n
        return _step(sm, d)

    n_pool = (pool_tokens - int_tokens) // (batch_ctx + 1)
    # largest n in [0, n_pool] with step_n(n) <= target (step_n(0) == base fits)
    lo, hi = 0, n_pool
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if step_n(mid) <= tpot_target_s:
            lo = mid
        else:
            hi = mid - 1
    n = lo
    binding = "tpot" if step_n(n + 1) > tpot_target_s else "pool"
    kv_tokens = n * (batch_ctx + 1)
    return {"base_tpot_s": base, "max_batch_seqs": n, "kv_tokens": kv_tokens,
            "kv_bytes": float(kv_tokens * sm.kv_bytes_per_token),
            "tpot_at_budget_s": step_n(n), "binding": binding}


def admit_batch_request(kv_budget_tokens: int, running: list, prompt_tokens: int,
                        max_tokens: int) -> bool:
    if not _is_int(kv_budget_tokens) or kv_budget_tokens < 0:
        raise ValueError("kv_budget_tokens must be an int >= 0")
    for name, v in (("prompt_tokens", prompt_tokens), ("max_tokens", max_tokens)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1")
    if not isinstance(running, (list, tuple)):
        raise ValueError("running must be a list")
    total = 0
    for e in running:
        if not isinstance(e, (list, tuple)) or len(e) != 3:
            raise ValueError(f"running entry {e!r} is not (prompt, generated, max_tokens)")
        p, g, m = e
        if not _is_int(p) or p < 1 or not _is_int(m) or m < 1:
            raise ValueError(f"running entry {e!r}: prompt/max_tokens must be ints >= 1")
        if not _is_int(g) or g < 0 or g > m:
            raise ValueError(f"running entry {e!r}: generated must be an int in [0, max_tokens]")
        total += p + m
    return total + prompt_tokens + max_tokens <= kv_budget_tokens


def tpot_guard(step_model: StepModel, tpot_target_s: float, interactive_ctx: list[int],
               batch_ctx: list[int], free_kv_tokens: int) -> dict:
    sm = step_model
    _check_target(tpot_target_s)
    _check_ctx_list("interactive_ctx", interactive_ctx, allow_empty=False)
    _check_ctx_list("batch_ctx", batch_ctx, allow_empty=True)
    if not _is_int(free_kv_tokens) or free_kv_tokens < 0:
        raise ValueError("free_kv_tokens must be an int >= 0")
    if free_kv_tokens < len(interactive_ctx):
        raise ValueError("free_kv_tokens smaller than the interactive sequences")
    nb = len(batch_ctx)
    int_counts = _counts(interactive_ctx)

    def step_without(removed: set) -> float:
        d = dict(int_counts)
        for i, c in enumerate(batch_ctx):
            if i not in removed:
                d[c] = d.get(c, 0) + 1
        return _step(sm, d)

    before = step_without(set())

    # engine: preempt latest arrival while slots needed exceed free
    needed = len(interactive_ctx) + nb
    free = free_kv_tokens
    eng = []
    i = nb - 1
    while needed >= free and i >= 0:
        eng.append(i)
        free += batch_ctx[i]
        needed -= 1
        i -= 1
    eng.sort()
    after_eng = step_without(set(eng))

    # policy: remove largest ctx first, ties latest arrival first; fewest k meeting both
    order = sorted(range(nb), key=lambda j: (-batch_ctx[j], -j))
    prefix_freed = [0]
    for j in order:
        prefix_freed.append(prefix_freed[-1] + batch_ctx[j])
    base_needed = len(interactive_ctx) + nb

    def ok(k):
        if base_needed - k > free_kv_tokens + prefix_freed[k]:
            return False
        return step_without(set(order[:k])) <= tpot_target_s

    if ok(nb):
        lo, hi = 0, nb
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        k = lo
    else:
        k = nb
    pol = sorted(order[:k])
    after_pol = step_without(set(pol))
    return {"tpot_before_s": before, "engine_preempted": eng, "tpot_after_engine_s": after_eng,
            "policy_preempted": pol, "tpot_after_policy_s": after_pol,
            "meets_target": after_pol <= tpot_target_s}
