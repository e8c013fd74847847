"""WRONG: cheat, hard-codes the S-spec preset's numbers (70B TP8 H100). Killed by kv-cost-8b-h100."""
COST = 1.528358208955224e-08


def kv_cost_per_token_s(step_model):
    return COST


def batch_kv_budget(step_model, tpot_target_s, interactive_ctx, batch_ctx, pool_tokens):
    if not interactive_ctx or tpot_target_s != tpot_target_s or tpot_target_s <= 0:
        raise ValueError("bad input")
    base = 0.003 + 0.0065 + sum(c + 1 for c in interactive_ctx) * COST
    n = max(0, int((tpot_target_s - base) / ((batch_ctx + 1) * COST)))
    return dict(base_tpot_s=base, max_batch_seqs=n, kv_tokens=n * (batch_ctx + 1),
                kv_bytes=float(n * (batch_ctx + 1) * 327680), tpot_at_budget_s=tpot_target_s,
                binding="tpot")


def admit_batch_request(kv_budget_tokens, running, prompt_tokens, max_tokens):
    return sum(p + m for p, _, m in running) + prompt_tokens + max_tokens <= kv_budget_tokens


def tpot_guard(step_model, tpot_target_s, interactive_ctx, batch_ctx, free_kv_tokens):
    return dict(tpot_before_s=0.0, engine_preempted=[], tpot_after_engine_s=0.0,
                policy_preempted=[], tpot_after_policy_s=0.0, meets_target=True)
