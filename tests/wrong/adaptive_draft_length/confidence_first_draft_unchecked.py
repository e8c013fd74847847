"""WRONG: the confidence rule always drafts the first token and checks P * qbar >= c only before the later ones (a do-while loop). Killed by sim-confidence-class-all-zero."""

from __future__ import annotations

import math


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_common(trace, c, batch, knee_tokens, gmax):
    if not isinstance(trace, (list, tuple)) or len(trace) == 0:
        raise ValueError("trace must be a non-empty list")
    for r in trace:
        if not isinstance(r, dict) or set(r.keys()) != {"cls", "q", "m"}:
            raise ValueError("request must be a dict with keys cls, q, m")
        if not isinstance(r["cls"], str) or not r["cls"]:
            raise ValueError("cls must be a non-empty str")
        q, m = r["q"], r["m"]
        if not isinstance(q, list) or not isinstance(m, list) or len(q) != len(m) or len(q) < 1:
            raise ValueError("q and m must be lists of the same length >= 1")
        for x in q:
            if not _is_num(x) or not math.isfinite(x) or not 0 <= x <= 1:
                raise ValueError(f"bad q entry {x!r}")
        for x in m:
            if not _is_int(x) or x not in (0, 1):
                raise ValueError(f"bad m entry {x!r}")
    if not _is_num(c) or not math.isfinite(c) or c < 0:
        raise ValueError("c must be a finite number >= 0")
    if not _is_int(batch) or batch < 1:
        raise ValueError("batch must be an int >= 1")
    if not _is_num(knee_tokens) or not math.isfinite(knee_tokens) or knee_tokens <= 0:
        raise ValueError("knee_tokens must be a finite number > 0")
    if not _is_int(gmax) or gmax < 0:
        raise ValueError("gmax must be an int >= 0")


def _check_g(G, gmax):
    if not _is_int(G) or not 0 <= G <= gmax:
        raise ValueError(f"G must be an int in [0, {gmax}], got {G!r}")


def _check_policy(trace, policy, gmax):
    if not isinstance(policy, dict) or "kind" not in policy:
        raise ValueError("policy must be a dict with a kind")
    kind = policy["kind"]
    if kind == "fixed":
        if set(policy) != {"kind", "g"}:
            raise ValueError("fixed policy: keys kind, g")
        _check_g(policy["g"], gmax)
    elif kind == "per_class":
        if set(policy) != {"kind", "g"} or not isinstance(policy["g"], dict):
            raise ValueError("per_class policy: keys kind, g (a dict)")
        for r in trace:
            if r["cls"] not in policy["g"]:
                raise ValueError(f"per_class policy misses class {r['cls']!r}")
        for v in policy["g"].values():
            _check_g(v, gmax)
    elif kind == "confidence":
        if set(policy) != {"kind"}:
            raise ValueError("confidence policy: key kind only")
    else:
        raise ValueError(f"unknown policy kind {kind!r}")


def _qbar(trace):
    sums, counts = {}, {}
    for r in trace:
        s = sums.get(r["cls"], 0.0)
        for x in r["q"]:
            s += float(x)
        sums[r["cls"]] = s
        counts[r["cls"]] = counts.get(r["cls"], 0) + len(r["q"])
    return {k: sums[k] / counts[k] for k in sums}


def _run(trace, policy, c, batch, knee_tokens, gmax):
    kind = policy["kind"]
    qbar = _qbar(trace) if kind == "confidence" else None
    c = float(c)

    def want(req, t):
        L = len(req["q"])
        cap = L - t - 1
        if kind == "fixed":
            return min(policy["g"], cap)
        if kind == "per_class":
            return min(policy["g"][req["cls"]], cap)
        P, g = 1.0, 0
        qb = qbar[req["cls"]]
        lim = min(gmax, cap)
        while g < lim and (g == 0 or P * qb >= c):
            P = P * float(req["q"][t + g])
            g += 1
        return g

    slots = [None] * batch  # [req, t]
    nxt = 0
    for i in range(batch):
        if nxt < len(trace):
            slots[i] = [trace[nxt], 0]
            nxt += 1
    cost = 0.0
    steps = drafted = accepted = 0
    while any(s is not None for s in slots):
        gs = []
        for s in slots:
            if s is None:
                continue
            gs.append((s, want(s[0], s[1])))
        tok = sum(g + 1 for _, g in gs)
        gm = max(g for _, g in gs)
        cost += max(1.0, tok / knee_tokens) + c * gm
        steps += 1
        for s, g in gs:
            req, t = s
            a = 0
            while a < g and req["m"][t + a] == 1:
                a += 1
            drafted += g
            accepted += a
            s[1] = t + a + 1
        for i in range(batch):
            s = slots[i]
            if s is not None and s[1] >= len(s[0]["q"]):
                slots[i] = None
                if nxt < len(trace):
                    slots[i] = [trace[nxt], 0]
                    nxt += 1
    return {"cost": cost, "steps": steps, "drafted": drafted, "accepted": accepted}


def simulate(trace, policy, c, batch=1, knee_tokens=256, gmax=10) -> dict:
    _check_common(trace, c, batch, knee_tokens, gmax)
    _check_policy(trace, policy, gmax)
    return _run(list(trace), policy, c, batch, knee_tokens, gmax)


def _sweep(trace, c, batch, knee_tokens, gmax):
    best_g, best = None, None
    for G in range(gmax + 1):
        cost = _run(trace, {"kind": "fixed", "g": G}, c, batch, knee_tokens, gmax)["cost"]
        if best is None or cost < best:
            best_g, best = G, cost
    return best_g, best


def study(trace, c, batch=1, knee_tokens=256, gmax=10) -> dict:
    _check_common(trace, c, batch, knee_tokens, gmax)
    trace = list(trace)
    cost_off = _run(trace, {"kind": "fixed", "g": 0}, c, batch, knee_tokens, gmax)["cost"]
    g_fixed, cost_fixed = _sweep(trace, c, batch, knee_tokens, gmax)
    g_class = {}
    for r in trace:
        cls = r["cls"]
        if cls in g_class:
            continue
        sub = [x for x in trace if x["cls"] == cls]
        g_class[cls] = _sweep(sub, c, batch, knee_tokens, gmax)[0]
    cost_class = _run(trace, {"kind": "per_class", "g": g_class}, c, batch, knee_tokens, gmax)["cost"]
    cost_conf = _run(trace, {"kind": "confidence"}, c, batch, knee_tokens, gmax)["cost"]
    return {"g_fixed": g_fixed, "g_class": g_class, "cost_off": cost_off, "cost_fixed": cost_fixed,
            "cost_class": cost_class, "cost_conf": cost_conf,
            "speedup_fixed": cost_off / cost_fixed, "gain_class": cost_fixed / cost_class - 1,
            "gain_conf": cost_fixed / cost_conf - 1}
