"""WRONG (input checks): turn_interval_s is only checked for > 0; inf (and a bool) accepted. Killed by rejects-tier-interval-inf."""
from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel

_LINE_KEYS = ("capture", "network_rtt", "endpoint", "asr", "tts", "playout")
_ORDER = ("capture", "network_rtt", "endpoint", "asr", "llm", "tts", "playout")
_MODELS = {"asr", "llm", "tts"}
_TURN_KEYS = {"ctx": 0, "new_tokens": 1, "cached_tokens": 0, "clause_tokens": 1}
_TRAFFIC_KEYS = {"calls", "turn_interval_s", "tokens_per_turn", "rho"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v) -> bool:
    return _is_num(v) and math.isfinite(v)


def budget_lines(budget_ms: float, lines: dict) -> dict:
    if not _finite(budget_ms) or budget_ms <= 0:
        raise ValueError("budget_ms must be a finite number > 0")
    if not isinstance(lines, dict) or set(lines) != set(_LINE_KEYS):
        raise ValueError(f"lines must be a dict with exactly the keys {_LINE_KEYS}")
    for k, v in lines.items():
        if not _finite(v) or v < 0:
            raise ValueError(f"line {k} must be a finite number >= 0, got {v!r}")
    share = float(budget_ms - sum(lines[k] for k in _LINE_KEYS))
    vals = dict(lines)
    vals["llm"] = share
    best = None
    for k in _ORDER:
        if best is None or vals[k] > vals[best]:
            best = k
    return {"llm_share_ms": share, "largest_line": best, "largest_is_model": best in _MODELS}


def _check_turn(turn):
    if not isinstance(turn, dict) or set(turn) != set(_TURN_KEYS):
        raise ValueError("turn must be a dict with exactly ctx, new_tokens, cached_tokens, "
                         "clause_tokens")
    for k, lo in _TURN_KEYS.items():
        v = turn[k]
        if not _is_int(v) or v < lo:
            raise ValueError(f"turn[{k!r}] must be an int >= {lo}, got {v!r}")


def _ttft_tpot_s(sm: StepModel, b: int, turn: dict):
    ctx, q, c = turn["ctx"], turn["new_tokens"], turn["cached_tokens"]
    dec = sm.attention_s(1, ctx)
    ttft = (sm.t_fixed_s + sm.gemm_s((b - 1) + q, b)
            + ((b - 1) * dec + sm.attention_s(q, c)))
    tpot = sm.t_fixed_s + sm.gemm_s(b, b) + b * dec
    return ttft, tpot


def _fc(sm, b, turn):
    ttft, tpot = _ttft_tpot_s(sm, b, turn)
    return {"ttft_ms": 1000 * ttft, "tpot_ms": 1000 * tpot,
            "first_clause_ms": 1000 * (ttft + (turn["clause_tokens"] - 1) * tpot)}, tpot


def first_clause(step_model: StepModel, batch: int, turn: dict) -> dict:
    if not _is_int(batch) or batch < 1:
        raise ValueError("batch must be an int >= 1")
    _check_turn(turn)
    return _fc(step_model, batch, turn)[0]


def size_llm_tier(step_model: StepModel, share_ms: float, queue_reserve_ms: float, turn: dict,
                  max_num_seqs: int, traffic: dict) -> dict:
    sm = step_model
    if not _finite(share_ms):
        raise ValueError("share_ms must be finite")
    if not _finite(queue_reserve_ms) or queue_reserve_ms < 0:
        raise ValueError("queue_reserve_ms must be a finite number >= 0")
    _check_turn(turn)
    if not _is_int(max_num_seqs) or max_num_seqs < 1:
        raise ValueError("max_num_seqs must be an int >= 1")
    if not isinstance(traffic, dict) or set(traffic) != _TRAFFIC_KEYS:
        raise ValueError("traffic must be a dict with exactly calls, turn_interval_s, "
                         "tokens_per_turn, rho")
    calls, ti, tpt, rho = (traffic["calls"], traffic["turn_interval_s"],
                           traffic["tokens_per_turn"], traffic["rho"])
    if not _finite(calls) or calls < 0:
        raise ValueError("calls must be a finite number >= 0")
    if not isinstance(ti, (int, float)) or not ti > 0:
        raise ValueError("turn_interval_s must be > 0")
    if not _is_int(tpt) or tpt < 1:
        raise ValueError("tokens_per_turn must be an int >= 1")
    if not _is_num(rho) or not 0 < rho <= 1:
        raise ValueError("rho must be in (0, 1]")

    def fits(b):
        return _fc(sm, b, turn)[0]["first_clause_ms"] + queue_reserve_ms <= share_ms

    if not fits(1):
        b_max = 0
    else:
        lo, hi = 1, max_num_seqs
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        b_max = lo
    res, tpot_s = _fc(sm, max(b_max, 1), turn)
    concurrent = calls / ti * tpt * tpot_s
    if b_max == 0:
        replicas = gpus = None
    else:
        r = concurrent / (b_max * rho)
        n = round(r)
        if abs(r - n) <= 1e-9 * abs(n):
            replicas = int(n)
        else:
            replicas = int(math.ceil(r))
        gpus = replicas * sm.n_gpus
    return {"b_max": b_max, "tpot_ms": res["tpot_ms"], "first_clause_ms": res["first_clause_ms"],
            "concurrent_turns": float(concurrent), "replicas": replicas, "gpus": gpus}
