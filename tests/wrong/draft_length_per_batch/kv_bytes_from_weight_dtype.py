"""WRONG: attention KV bytes per token counted with the weights' dtype, not kv_dtype. Killed by step-story-fp8-kv-b64-c8192-g4."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_models(target, drafter) -> None:
    for name, sm in (("target", target), ("drafter", drafter)):
        if not isinstance(sm, StepModel):
            raise ValueError(f"{name} must be an inferprep.sim.step_model.StepModel")


def _check_alpha(alpha) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")


def expected_tokens(alpha: float, g: int) -> float:
    """Tokens one request emits per step: accepted drafts plus the bonus/correction token."""
    if alpha == 1:
        return float(g + 1)
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def _rows_s(sm: StepModel, batch: int, q: int, c: int) -> float:
    """StepModel time of `batch` identical rows (q new tokens, c cached, q logit rows)."""
    return sm.t_fixed_s + sm.gemm_s(batch * q, batch * q) + batch * _attn(sm, q, c)


def _attn(sm, q, c):
    # WRONG: KV bytes per token with the weights' dtype (s_w) instead of kv_dtype (s_kv)
    m = sm.model
    kvb = m.n_layers * 2 * m.n_kv_heads * m.head_dim * sm.dtype.bytes_per_element
    flops = sm.attn_flops_per_key * (q * c + q * (q + 1) // 2)
    return max(kvb * (c + q) / sm.bytes_per_s, flops / sm.flops_per_s)


def _step_s(target: StepModel, drafter: StepModel, batch: int, c: int, g: int) -> float:
    verify = _rows_s(target, batch, g + 1, c)
    return verify + g * _rows_s(drafter, batch, 1, c) if g else verify


def spec_step_time(target: StepModel, drafter: StepModel, batch: int, context_len: int,
                   g: int) -> float:
    """Seconds of one speculative step: g drafter forwards plus one verify forward."""
    _check_models(target, drafter)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 0)
    _check_int("g", g, 0)
    return _step_s(target, drafter, batch, context_len, g)


def _throughput(target, drafter, batch, c, g, alpha) -> float:
    return batch * expected_tokens(alpha, g) / _step_s(target, drafter, batch, c, g)


def spec_speedup(target: StepModel, drafter: StepModel, batch: int, context_len: int, g: int,
                 alpha: float) -> float:
    """Throughput with draft length g over throughput without speculation (g = 0)."""
    _check_models(target, drafter)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 0)
    _check_int("g", g, 0)
    _check_alpha(alpha)
    return (_throughput(target, drafter, batch, context_len, g, alpha)
            / _throughput(target, drafter, batch, context_len, 0, alpha))


def _best_g(target, drafter, batch, c, alpha, g_max) -> int:
    tps = [_throughput(target, drafter, batch, c, g, alpha) for g in range(g_max + 1)]
    return tps.index(max(tps))                  # index() returns the first, i.e. smaller, g


def best_draft_length(target: StepModel, drafter: StepModel, batch: int, context_len: int,
                      alpha: float, g_max: int) -> int:
    """The g in 0..g_max with the highest throughput; ties go to the smaller g."""
    _check_models(target, drafter)
    _check_int("batch", batch, 1)
    _check_int("context_len", context_len, 0)
    _check_alpha(alpha)
    _check_int("g_max", g_max, 0)
    return _best_g(target, drafter, batch, context_len, alpha, g_max)


def max_batch(context_len: int, g_max: int, max_num_seqs: int, kv_capacity_tokens: int) -> int:
    """Largest batch the engine can hold: sequence slots, and KV for c + g_max + 1 tokens each."""
    return min(max_num_seqs, kv_capacity_tokens // (context_len + g_max + 1))


def draft_table(target: StepModel, drafter: StepModel, context_len: int, alpha: float,
                g_max: int, max_num_seqs: int, kv_capacity_tokens: int) -> list[list[int]]:
    """[[start_bs, end_bs, K], ...]: maximal runs of equal best g over b = 1..b_max."""
    _check_models(target, drafter)
    _check_int("context_len", context_len, 0)
    _check_alpha(alpha)
    _check_int("g_max", g_max, 0)
    _check_int("max_num_seqs", max_num_seqs, 1)
    _check_int("kv_capacity_tokens", kv_capacity_tokens, 0)
    b_max = max_batch(context_len, g_max, max_num_seqs, kv_capacity_tokens)
    if b_max < 1:
        raise ValueError(f"not one request fits: {kv_capacity_tokens} KV tokens < "
                         f"context_len + g_max + 1 = {context_len + g_max + 1}")
    rows: list[list[int]] = []
    for b in range(1, b_max + 1):
        g = _best_g(target, drafter, b, context_len, alpha, g_max)
        if rows and rows[-1][2] == g:
            rows[-1][1] = b
        else:
            rows.append([b, b, g])
    return rows


# -- the story's constants (not graded) ---------------------------------------------------------

def eagle_head(target: StepModel, t_fixed_s: float) -> StepModel:
    """An EAGLE-style drafter: one decoder layer of the target's shape plus its LM head, on the
    target's GPUs and efficiencies, with its own fixed cost per forward."""
    import dataclasses
    head = dataclasses.replace(target.model, n_layers=1, name=target.model.name + " EAGLE head")
    return dataclasses.replace(target, model=head, t_fixed_s=t_fixed_s)


def story_kv_capacity_tokens(target: StepModel, util: float = 0.9, activations_gb: float = 4.0) -> int:
    """KV pool of the story: n_gpus x (util x HBM - weights/n_gpus - activations) / KV bytes/token."""
    per_gpu = util * target.gpu.hbm_bytes - target.weight_bytes / target.n_gpus - activations_gb * 1e9
    return int(target.n_gpus * per_gpu // target.kv_bytes_per_token)


def compute_bound_limit(alpha: float, g: int) -> float:
    """Throughput ratio when every verify token costs as much as a decode token: E / (g + 1)."""
    return expected_tokens(alpha, g) / (g + 1) if not math.isnan(alpha) else math.nan
