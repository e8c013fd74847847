"""WRONG: snaps the replica ratio to an integer within a relative 1e-3, not the stated 1e-9 (one replica short just above an integer). Killed by tier-s-8b-ceiling-just-above-12-by-relative-1e-08."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel

LINES = ("capture", "network_rtt", "endpoint", "asr", "tts", "playout")
ORDER = ("capture", "network_rtt", "endpoint", "asr", "llm", "tts", "playout")  # ties: first
MODELS = {"asr", "llm", "tts"}
TURN_KEYS = ("ctx", "new_tokens", "cached_tokens", "clause_tokens")
TRAFFIC_KEYS = ("calls", "turn_interval_s", "tokens_per_turn", "rho")


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_num(name: str, v, lo: float, strict: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if v < lo or (strict and v == lo):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {lo}, got {v!r}")


def _check_sm(sm) -> None:
    if not isinstance(sm, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")


def _check_keys(name: str, d, keys) -> None:
    if not isinstance(d, dict) or set(d) != set(keys):
        raise ValueError(f"{name} must be a dict with exactly the keys {list(keys)}")


def budget_lines(budget_ms: float, lines: dict) -> dict:
    """The LLM's share of the budget and the largest line of the whole budget."""
    _check_num("budget_ms", budget_ms, 0, strict=True)
    _check_keys("lines", lines, LINES)
    for k in LINES:
        _check_num(f"lines[{k!r}]", lines[k], 0)
    share = float(budget_ms - sum(lines[k] for k in LINES))
    items = dict(lines, llm=share)
    largest = max(ORDER, key=lambda k: (items[k], -ORDER.index(k)))
    return {"llm_share_ms": share, "largest_line": largest, "largest_is_model": largest in MODELS}


def _turn(turn) -> tuple[int, int, int, int]:
    _check_keys("turn", turn, TURN_KEYS)
    _check_int("turn['ctx']", turn["ctx"], 0)
    _check_int("turn['new_tokens']", turn["new_tokens"], 1)
    _check_int("turn['cached_tokens']", turn["cached_tokens"], 0)
    _check_int("turn['clause_tokens']", turn["clause_tokens"], 1)
    return turn["ctx"], turn["new_tokens"], turn["cached_tokens"], turn["clause_tokens"]


def _clause(sm: StepModel, batch: int, ctx: int, new: int, cached: int, k: int) -> dict:
    ttft = sm.step_s([(1, ctx, 1)] * (batch - 1) + [(new, cached, 1)])
    tpot = sm.step_s([(1, ctx, 1)] * batch)
    return {"ttft_ms": 1e3 * ttft, "tpot_ms": 1e3 * tpot,
            "first_clause_ms": 1e3 * (ttft + (k - 1) * tpot), "tpot_s": tpot}


def first_clause(step_model: StepModel, batch: int, turn: dict) -> dict:
    """TTFT, TPOT and the time to a whole first clause for a replica decoding ``batch`` turns."""
    _check_sm(step_model)
    _check_int("batch", batch, 1)
    ctx, new, cached, k = _turn(turn)
    r = _clause(step_model, batch, ctx, new, cached, k)
    return {key: r[key] for key in ("ttft_ms", "tpot_ms", "first_clause_ms")}


def size_llm_tier(step_model: StepModel, share_ms: float, queue_reserve_ms: float, turn: dict,
                  max_num_seqs: int, traffic: dict) -> dict:
    """The largest batch whose first clause fits the share, and the replicas a call volume needs."""
    _check_sm(step_model)
    _check_num("share_ms", share_ms, -math.inf)
    _check_num("queue_reserve_ms", queue_reserve_ms, 0)
    ctx, new, cached, k = _turn(turn)
    _check_int("max_num_seqs", max_num_seqs, 1)
    _check_keys("traffic", traffic, TRAFFIC_KEYS)
    _check_num("traffic['calls']", traffic["calls"], 0)
    _check_num("traffic['turn_interval_s']", traffic["turn_interval_s"], 0, strict=True)
    _check_int("traffic['tokens_per_turn']", traffic["tokens_per_turn"], 1)
    _check_num("traffic['rho']", traffic["rho"], 0, strict=True)
    if traffic["rho"] > 1:
        raise ValueError(f"traffic['rho'] must be in (0, 1], got {traffic['rho']!r}")

    def fits(b: int) -> bool:
        return _clause(step_model, b, ctx, new, cached, k)["first_clause_ms"] + queue_reserve_ms <= share_ms

    lo, hi = 0, 1                      # the first clause grows with the batch: double, then bisect
    while hi <= max_num_seqs and fits(hi):
        lo, hi = hi, 2 * hi
    hi = min(hi, max_num_seqs + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    b_max = lo
    at = _clause(step_model, max(b_max, 1), ctx, new, cached, k)
    turns_per_s = traffic["calls"] / traffic["turn_interval_s"]
    concurrent = turns_per_s * traffic["tokens_per_turn"] * at["tpot_s"]     # Little's law
    if b_max == 0:
        replicas = gpus = None
    else:
        x = concurrent / (b_max * traffic["rho"])
        replicas = round(x) if abs(x - round(x)) <= 1e-3 * x else math.ceil(x)
        gpus = replicas * step_model.n_gpus
    return {"b_max": b_max, "tpot_ms": at["tpot_ms"], "first_clause_ms": at["first_clause_ms"],
            "concurrent_turns": concurrent, "replicas": replicas, "gpus": gpus}
