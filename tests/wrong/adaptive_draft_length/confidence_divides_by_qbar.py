"""WRONG: the confidence test written as P >= c / qbar instead of P * qbar >= c (divides by zero on a class whose confidences are all 0). Killed by sim-confidence-class-all-zero."""

from __future__ import annotations

import math

KINDS = ("fixed", "per_class", "confidence")


# -- validation ----------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_trace(trace) -> None:
    if not isinstance(trace, (list, tuple)) or len(trace) == 0:
        raise ValueError("trace must be a non-empty list of requests")
    for i, r in enumerate(trace):
        if not isinstance(r, dict) or set(r) != {"cls", "q", "m"}:
            raise ValueError(f"request {i} must be a dict with keys cls, q, m")
        if not isinstance(r["cls"], str) or not r["cls"]:
            raise ValueError(f"request {i}: cls must be a non-empty str")
        q, m = r["q"], r["m"]
        if not isinstance(q, (list, tuple)) or not isinstance(m, (list, tuple)):
            raise ValueError(f"request {i}: q and m must be lists")
        if len(q) == 0 or len(q) != len(m):
            raise ValueError(f"request {i}: q and m must have the same length >= 1")
        if any(not _is_real(x) or not 0 <= x <= 1 for x in q):
            raise ValueError(f"request {i}: every q[t] must be a finite number in [0, 1]")
        if any(not _is_int(x) or x not in (0, 1) for x in m):
            raise ValueError(f"request {i}: every m[t] must be the int 0 or 1")


def _check_params(c, batch, knee_tokens, gmax) -> None:
    if not _is_real(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c!r}")
    if not _is_int(batch) or batch < 1:
        raise ValueError(f"batch must be an int >= 1, got {batch!r}")
    if not _is_real(knee_tokens) or knee_tokens <= 0:
        raise ValueError(f"knee_tokens must be a finite number > 0, got {knee_tokens!r}")
    if not _is_int(gmax) or gmax < 0:
        raise ValueError(f"gmax must be an int >= 0, got {gmax!r}")


def _check_policy(policy, trace, gmax) -> None:
    if not isinstance(policy, dict) or policy.get("kind") not in KINDS:
        raise ValueError(f"policy must be a dict whose kind is one of {KINDS}")
    kind = policy["kind"]
    if kind == "confidence":
        if set(policy) != {"kind"}:
            raise ValueError("a confidence policy has no other key")
        return
    if set(policy) != {"kind", "g"}:
        raise ValueError(f"a {kind} policy is {{'kind': {kind!r}, 'g': ...}}")
    gs = [policy["g"]] if kind == "fixed" else None
    if kind == "per_class":
        if not isinstance(policy["g"], dict):
            raise ValueError("per_class g must be a dict {class: int}")
        missing = sorted({r["cls"] for r in trace} - set(policy["g"]))
        if missing:
            raise ValueError(f"per_class g has no draft length for class(es) {missing}")
        gs = list(policy["g"].values())
    for g in gs:
        if not _is_int(g) or not 0 <= g <= gmax:
            raise ValueError(f"draft length must be an int in [0, gmax={gmax}], got {g!r}")


# -- the simulation ------------------------------------------------------------------------------

def class_mean_confidence(trace) -> dict:
    """qbar[cls]: the mean of every q[t] of every request of that class (trace order sum)."""
    tot, cnt = {}, {}
    for r in trace:
        k = r["cls"]
        for x in r["q"]:
            tot[k] = tot.get(k, 0.0) + x
        cnt[k] = cnt.get(k, 0) + len(r["q"])
    return {k: tot[k] / cnt[k] for k in tot}


def _draft_length(policy, req, t, c, gmax, qbar) -> int:
    """Drafts for the request at position t (t tokens emitted so far), capped at L - t - 1."""
    cap = min(gmax, len(req["m"]) - t - 1)
    kind = policy["kind"]
    if kind == "fixed":
        return min(policy["g"], cap)
    if kind == "per_class":
        return min(policy["g"][req["cls"]], cap)
    # confidence: draft one more token while P * qbar >= c; P only holds drafted tokens' q
    g, p = 0, 1.0
    while g < cap and p >= c / qbar[req["cls"]]:
        p *= req["q"][t + g]
        g += 1
    return g


def _leading_ones(m, t, g) -> int:
    a = 0
    while a < g and m[t + a] == 1:
        a += 1
    return a


def _run(trace, policy, c, batch, knee_tokens, gmax, log=None) -> dict:
    qbar = class_mean_confidence(trace)
    nxt = 0
    slots = []                            # [request index, tokens emitted] or None
    for _ in range(batch):
        slots.append([nxt, 0] if nxt < len(trace) else None)
        nxt += nxt < len(trace)
    cost, steps, drafted, accepted = 0.0, 0, 0, 0
    while any(s is not None for s in slots):
        live = [(i, s) for i, s in enumerate(slots) if s is not None]
        gs = [_draft_length(policy, trace[s[0]], s[1], c, gmax, qbar) for _, s in live]
        cost += max(1.0, sum(g + 1 for g in gs) / knee_tokens) + c * max(gs)
        steps += 1
        rows = []
        for (i, s), g in zip(live, gs):
            a = _leading_ones(trace[s[0]]["m"], s[1], g)
            rows.append((s[0], g, a))
            drafted += g
            accepted += a
            s[1] += a + 1                 # accepted drafts + the target's own token
        if log is not None:
            log.append(rows)
        for i, s in live:                 # refill in slot order, before the next step
            if s[1] == len(trace[s[0]]["m"]):
                if nxt < len(trace):
                    slots[i] = [nxt, 0]
                    nxt += 1
                else:
                    slots[i] = None
    return {"cost": cost, "steps": steps, "drafted": drafted, "accepted": accepted}


def simulate(trace, policy, c, batch=1, knee_tokens=256, gmax=10) -> dict:
    """Run ``trace`` under ``policy``; returns {"cost", "steps", "drafted", "accepted"}.

    Step cost (target-forward units): max(1, sum_i (g_i + 1) / knee_tokens) + c * max_i g_i.
    """
    _check_trace(trace)
    _check_params(c, batch, knee_tokens, gmax)
    _check_policy(policy, trace, gmax)
    return _run(trace, policy, c, batch, knee_tokens, gmax)


def _best_fixed(trace, c, batch, knee_tokens, gmax):
    costs = [_run(trace, {"kind": "fixed", "g": g}, c, batch, knee_tokens, gmax)["cost"]
             for g in range(gmax + 1)]
    best = min(range(gmax + 1), key=lambda g: (costs[g], g))     # ties: the smaller g
    return best, costs


def study(trace, c, batch=1, knee_tokens=256, gmax=10) -> dict:
    """The three policies against no speculation and the best fixed g, on one trace."""
    _check_trace(trace)
    _check_params(c, batch, knee_tokens, gmax)
    g_fixed, costs = _best_fixed(trace, c, batch, knee_tokens, gmax)
    g_class = {}
    for k in sorted({r["cls"] for r in trace}):
        g_class[k], _ = _best_fixed([r for r in trace if r["cls"] == k], c, batch, knee_tokens, gmax)
    cost_class = _run(trace, {"kind": "per_class", "g": g_class}, c, batch, knee_tokens, gmax)["cost"]
    cost_conf = _run(trace, {"kind": "confidence"}, c, batch, knee_tokens, gmax)["cost"]
    return {
        "g_fixed": g_fixed,
        "g_class": g_class,
        "cost_off": costs[0],
        "cost_fixed": costs[g_fixed],
        "cost_class": cost_class,
        "cost_conf": cost_conf,
        "speedup_fixed": costs[0] / costs[g_fixed],
        "gain_class": costs[g_fixed] / cost_class - 1,
        "gain_conf": costs[g_fixed] / cost_conf - 1,
    }
