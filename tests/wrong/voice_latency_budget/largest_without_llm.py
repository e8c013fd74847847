"""WRONG: the LLM's share is not a line of the budget when looking for the largest. Killed by lines-llm-share-largest."""
import math

KEYS = ["capture", "network_rtt", "endpoint", "asr", "tts", "playout"]
ORDER = ["capture", "network_rtt", "endpoint", "asr", "llm", "tts", "playout"]


def _num(x, lo, strict=False):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    if x < lo or (strict and x == lo):
        raise ValueError(f"out of range: {x!r}")


def _int(x, lo):
    if isinstance(x, bool) or not isinstance(x, int) or x < lo:
        raise ValueError(f"expected an int >= {lo}: {x!r}")


def _keys(d, keys):
    if not isinstance(d, dict) or sorted(d) != sorted(keys):
        raise ValueError(f"expected keys {keys}")


def budget_lines(budget_ms, lines):
    _num(budget_ms, 0, strict=True)
    _keys(lines, KEYS)
    for k in KEYS:
        _num(lines[k], 0)
    share = float(budget_ms - sum(lines[k] for k in KEYS))
    val = dict(lines)
    val["llm"] = share
    best = ORDER[0]
    for k in ORDER[1:]:
        if k != "llm" and val[k] > val[best]:
            best = k
    return {"llm_share_ms": share, "largest_line": best, "largest_is_model": best in ("asr", "llm", "tts")}


def _turn(turn):
    _keys(turn, ["ctx", "new_tokens", "cached_tokens", "clause_tokens"])
    _int(turn["ctx"], 0)
    _int(turn["new_tokens"], 1)
    _int(turn["cached_tokens"], 0)
    _int(turn["clause_tokens"], 1)


def _times(sm, b, turn):
    ctx = turn["ctx"]
    ttft = sm.step_s([(1, ctx, 1)] * (b - 1) + [(turn["new_tokens"], turn["cached_tokens"], 1)])
    tpot = sm.step_s([(1, ctx, 1)] * b)
    clause = ttft + (turn["clause_tokens"] - 1) * tpot
    return ttft, tpot, clause


def first_clause(step_model, batch, turn):
    _int(batch, 1)
    _turn(turn)
    ttft, tpot, clause = _times(step_model, batch, turn)
    return {"ttft_ms": ttft * 1e3, "tpot_ms": tpot * 1e3, "first_clause_ms": clause * 1e3}


def size_llm_tier(step_model, share_ms, queue_reserve_ms, turn, max_num_seqs, traffic):
    _num(share_ms, -math.inf)
    _num(queue_reserve_ms, 0)
    _turn(turn)
    _int(max_num_seqs, 1)
    _keys(traffic, ["calls", "turn_interval_s", "tokens_per_turn", "rho"])
    _num(traffic["calls"], 0)
    _num(traffic["turn_interval_s"], 0, strict=True)
    _int(traffic["tokens_per_turn"], 1)
    _num(traffic["rho"], 0, strict=True)
    if traffic["rho"] > 1:
        raise ValueError("rho > 1")
    ok = lambda b: _times(step_model, b, turn)[2] * 1e3 + queue_reserve_ms <= share_ms
    b = 0
    while b < max_num_seqs and ok(b + 1):
        b += 1
    _, tpot, clause = _times(step_model, max(b, 1), turn)
    conc = traffic["calls"] / traffic["turn_interval_s"] * traffic["tokens_per_turn"] * tpot
    if b == 0:
        reps = gpus = None
    else:
        x = conc / (b * traffic["rho"])
        reps = round(x) if abs(x - round(x)) <= 1e-9 * x else math.ceil(x)
        gpus = reps * step_model.n_gpus
    return {"b_max": b, "tpot_ms": tpot * 1e3, "first_clause_ms": clause * 1e3,
            "concurrent_turns": conc, "replicas": reps, "gpus": gpus}
