"""WRONG: the TPOT policy checks only the target, not that the step's new KV slots fit. Killed by guard-s-spec-kv-short-tpot-met."""
import math

from inferprep.sim.step_model import StepModel


def _int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{name}: expected an int >= {lo}, got {v!r}")


def _ctxs(name, xs, empty_ok):
    if not isinstance(xs, (list, tuple)) or (not xs and not empty_ok):
        raise ValueError(f"{name}: expected a non-empty list of ints")
    for c in xs:
        _int(name, c, 0)
    return list(xs)


def _target(t):
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise ValueError("tpot_target_s must be finite and > 0")


def _bw(sm):
    return sm.n_gpus * sm.gpu.hbm_bytes_per_s * sm.mbu


def _row(sm, c):
    return max(sm.kv_bytes_per_token * (c + 1) / _bw(sm), sm.attn_flops_per_key * (c + 1) / sm.flops_per_s)


def _step(sm, ctxs, n=0, c=0):
    N = len(ctxs) + n
    if N == 0:
        return 0.0
    gemm = max(sm.weight_bytes / _bw(sm), 2 * (sm.body_params + sm.head_params) * N / sm.flops_per_s)
    return sm.t_fixed_s + gemm + sum(_row(sm, x) for x in ctxs) + n * _row(sm, c)


def kv_cost_per_token_s(step_model):
    sm = step_model
    return max(sm.kv_bytes_per_token / _bw(sm), sm.attn_flops_per_key / sm.flops_per_s)


def batch_kv_budget(step_model, tpot_target_s, interactive_ctx, batch_ctx, pool_tokens):
    _target(tpot_target_s)
    inter = _ctxs("interactive_ctx", interactive_ctx, False)
    _int("batch_ctx", batch_ctx, 0)
    _int("pool_tokens", pool_tokens, 1)
    sm, c = step_model, batch_ctx
    base = _step(sm, inter)
    used = sum(x + 1 for x in inter)
    if base > tpot_target_s or used > pool_tokens:
        return dict(base_tpot_s=base, max_batch_seqs=0, kv_tokens=0, kv_bytes=0.0,
                    tpot_at_budget_s=base, binding="infeasible")
    n_pool = (pool_tokens - used) // (c + 1)
    ok = lambda n: _step(sm, inter, n, c) <= tpot_target_s
    lo, hi = 0, 1
    while hi <= n_pool and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, n_pool + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    n = lo
    binding = "tpot" if not ok(n + 1) else "pool"
    return dict(base_tpot_s=base, max_batch_seqs=n, kv_tokens=n * (c + 1),
                kv_bytes=float(n * (c + 1) * sm.kv_bytes_per_token),
                tpot_at_budget_s=_step(sm, inter, n, c), binding=binding)


def admit_batch_request(kv_budget_tokens, running, prompt_tokens, max_tokens):
    _int("kv_budget_tokens", kv_budget_tokens, 0)
    _int("prompt_tokens", prompt_tokens, 1)
    _int("max_tokens", max_tokens, 1)
    if not isinstance(running, (list, tuple)):
        raise ValueError("running must be a list")
    total = 0
    for e in running:
        if not isinstance(e, (list, tuple)) or len(e) != 3:
            raise ValueError("bad running entry")
        p, gen, mx = e
        _int("prompt", p, 1)
        _int("max_tokens", mx, 1)
        _int("generated", gen, 0)
        if gen > mx:
            raise ValueError("generated > max_tokens")
        total += p + mx
    return total + prompt_tokens + max_tokens <= kv_budget_tokens


def tpot_guard(step_model, tpot_target_s, interactive_ctx, batch_ctx, free_kv_tokens):
    _target(tpot_target_s)
    inter = _ctxs("interactive_ctx", interactive_ctx, False)
    batch = _ctxs("batch_ctx", batch_ctx, True)
    _int("free_kv_tokens", free_kv_tokens, 0)
    if free_kv_tokens < len(inter):
        raise ValueError("interactive sequences do not fit")
    sm = step_model
    step = lambda keep: _step(sm, inter + [batch[i] for i in sorted(keep)])
    everyone = set(range(len(batch)))
    # engine: memory only, latest arrival first
    keep = set(everyone)
    free, need, engine = free_kv_tokens, len(inter) + len(batch), []
    for i in reversed(range(len(batch))):
        if free >= need:
            break
        keep.discard(i)
        engine.append(i)
        free += batch[i]
        need -= 1
    after_engine = step(keep)
    # policy: largest first, ties latest
    keep_p = set(everyone)
    free, need, policy = free_kv_tokens, len(inter) + len(batch), []
    for i in sorted(everyone, key=lambda i: (batch[i], i), reverse=True):
        if step(keep_p) <= tpot_target_s:
            break
        keep_p.discard(i)
        policy.append(i)
        free += batch[i]
        need -= 1
    after = step(keep_p)
    return dict(tpot_before_s=step(everyone), engine_preempted=sorted(engine),
                tpot_after_engine_s=after_engine, policy_preempted=sorted(policy),
                tpot_after_policy_s=after, meets_target=after <= tpot_target_s)
