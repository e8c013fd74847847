"""Hidden cases for adaptive-draft-length: recorded traces (explicit confidences and match flags,
never seeds) with two or three classes, ragged lengths down to one token, cheap and expensive
drafters, batch 1 and small batches with a low GEMM knee (so the max(1, .) floor, the lockstep
max g and the refill order all matter), gmax 0..10; crafted traces where the fixed-g sweep ties
(dyadic c, so the tie is exact) and where the confidence rule sits exactly on P * qbar = c; then
the input checks."""

from __future__ import annotations

import math
import random

import numpy as np

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail

RTOL = 1e-9
SIM_KEYS = ("cost", "steps", "drafted", "accepted")
STUDY_KEYS = ("g_fixed", "g_class", "cost_off", "cost_fixed", "cost_class", "cost_conf",
              "speedup_fixed", "gain_class", "gain_conf")

# Two classes as in the worked story (code: confident drafter, chat: a U-shaped mix), and a
# made-up third class so that nothing keyed on "code"/"chat" survives.
STORY = {"code": (0.90, 0.5), "chat": (0.55, 0.5)}
THREE = {"sql": (0.85, 1.0), "prose": (0.45, 0.6), "math": (0.70, 2.0)}

# Exact ties of the fixed-g sweep (step costs are sums of multiples of 1/4 or 1/2, so exact):
# TIE_A at c = 0.25, batch 1: g = 2 and g = 5 cost 11.5 each; TIE_B at c = 0.5, batch 2: g = 1
# and g = 2 cost 7.0 each. Confidences are flat 0.5 (irrelevant to the sweep).
TIE_A = [("chat", [1, 1, 0, 1, 1, 0]), ("code", [1, 1, 1, 1, 1, 0, 1]),
         ("chat", [0, 1, 1, 1, 1, 1, 1])]
TIE_B = [("chat", [1, 1, 1, 1, 1, 0, 0, 0]), ("code", [1, 1, 0, 0, 1, 0, 1])]


def _tie_trace(spec):
    return [{"cls": k, "q": [0.5] * len(m), "m": list(m)} for k, m in spec]


def _trace(rng: random.Random, n: int, lens: tuple[int, int], classes: dict) -> list:
    names = sorted(classes)
    first = names[:]
    rng.shuffle(first)                     # every class appears (when n allows)
    out = []
    for i in range(n):
        k = first[i] if i < len(first) else names[rng.randrange(len(names))]
        mean, conc = classes[k]
        L = rng.randint(*lens)
        q = [rng.betavariate(mean * conc, (1 - mean) * conc) for _ in range(L)]
        m = [1 if rng.random() < x else 0 for x in q]
        out.append({"cls": k, "q": q, "m": m})
    return out


def _boundary_trace() -> list:
    """Class mean confidence exactly 0.5 (as many 0.25 as 0.75, plus 0.5s), so that with
    c = 0.25 a step after a drafted 0.5 sits exactly on P * qbar = c."""
    qa = [0.5, 0.75, 0.25, 0.5, 0.5, 0.25, 0.75, 0.75, 0.5, 0.25, 0.5, 1.0, 0.0, 0.5]
    ma = [1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1]
    qb = [0.75, 0.5, 0.5, 0.25, 0.5, 0.75, 0.25, 0.5]
    mb = [1, 1, 1, 0, 1, 1, 0, 1]
    return [{"cls": "chat", "q": qa, "m": ma}, {"cls": "chat", "q": qb, "m": mb},
            {"cls": "code", "q": [1.0, 0.5, 1.0, 0.5, 1.0, 1.0], "m": [1, 1, 1, 0, 1, 1]}]


def _num(out, exp, key):
    if isinstance(exp, int):
        expect_equal(out, exp, name=f"[{key!r}]")
    else:
        expect_close(out, exp, name=f"[{key!r}]", rtol=RTOL)


def _check_sim(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(SIM_KEYS):
        fail(f"expected a dict with exactly the keys {list(SIM_KEYS)}")
    for k in ("steps", "drafted", "accepted", "cost"):
        _num(out[k], exp[k], k)


def _check_study(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(STUDY_KEYS):
        fail(f"expected a dict with exactly the keys {list(STUDY_KEYS)}")
    expect_equal(out["g_fixed"], exp["g_fixed"], name="['g_fixed']")
    gc = out["g_class"]
    if not isinstance(gc, dict) or set(gc) != set(exp["g_class"]):
        fail(f"['g_class'] must be a dict with one entry per class of the trace: "
             f"{sorted(exp['g_class'])}")
    for k in sorted(exp["g_class"]):
        expect_equal(gc[k], exp["g_class"][k], name=f"['g_class'][{k!r}]")
    for k in ("cost_off", "cost_fixed", "cost_class", "cost_conf", "speedup_fixed"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
    for k in ("gain_class", "gain_conf"):          # a gain can be exactly 0: compare 1 + gain
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=0, atol=RTOL * (1 + abs(exp[k])))


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"adaptive-draft-length:{g.salt}")

    # -- simulate: every policy kind, batch 1 and small batches, knees that bind -------------
    example = [{"cls": "code", "q": [0.75, 0.75, 0.75, 0.25, 0.75, 0.75, 0.75, 0.75],
                "m": [1, 1, 1, 0, 1, 1, 1, 1]},
               {"cls": "chat", "q": [0.75, 0.25, 0.25, 0.5, 0.5, 0.25], "m": [1, 0, 0, 1, 1, 0]}]
    sims = [("sim-example-fixed-3", example, {"kind": "fixed", "g": 3}, 0.25, 1, 256, 10),
            ("sim-example-fixed-3-batch-2", example, {"kind": "fixed", "g": 3}, 0.25, 2, 4, 10),
            ("sim-example-confidence", example, {"kind": "confidence"}, 0.25, 1, 256, 10),
            # a knee below one token (any finite number > 0 is allowed): every step is past it
            ("sim-example-knee-below-one", example, {"kind": "fixed", "g": 2}, 0.25, 2, 0.5, 10)]
    # qbar is a float64 sum in trace order: here that sum rounds up (0.65000000000000013) while
    # summing the requests, or each request's q, in reverse rounds to 0.65; c sits exactly on the
    # trace-order mean, so only the stated order drafts at P = 1.
    sq = [{"cls": "chat", "q": [0.8, 0.65, 0.35], "m": [1, 1, 0]}, {"cls": "chat", "q": [0.8], "m": [1]},
          {"cls": "code", "q": [0.5, 0.5, 0.5], "m": [1, 1, 1]}]
    c_sq = 0.0
    for x in [0.8, 0.65, 0.35, 0.8]:
        c_sq += x
    sims.append(("sim-confidence-mean-in-trace-order", sq, {"kind": "confidence"}, c_sq / 4, 1, 256, 10))
    for i in range(4):
        tr = _trace(rng, rng.randint(4, 9), (1, 40), STORY)
        sims.append((f"sim-story-{i}-fixed", tr, {"kind": "fixed", "g": rng.randint(1, 10)},
                     0.15, 1, 256, 10))
        sims.append((f"sim-story-{i}-confidence", tr, {"kind": "confidence"},
                     [0.01, 0.15, 0.3, 0.05][i], 1, 256, 10))
        sims.append((f"sim-story-{i}-per-class", tr,
                     {"kind": "per_class", "g": {"code": rng.randint(4, 9), "chat": rng.randint(0, 3)}},
                     0.15, 1, 256, 10))
    for i, (B, K) in enumerate([(3, 8), (4, 8), (8, 16), (5, 2.5), (8, 256)]):
        tr = _trace(rng, rng.randint(B + 3, 3 * B), (1, 30), THREE)
        gpc = {k: rng.randint(0, 8) for k in THREE}
        c = [0.125, 0.15, 0.01, 0.3, 0.2][i]
        sims.append((f"sim-batch{B}-knee{K}-fixed", tr, {"kind": "fixed", "g": 1 + i}, c, B, K, 10))
        sims.append((f"sim-batch{B}-knee{K}-per-class", tr, {"kind": "per_class", "g": gpc}, c, B, K, 10))
        sims.append((f"sim-batch{B}-knee{K}-confidence", tr, {"kind": "confidence"}, c, B, K, 10))
    tr = _trace(rng, 6, (1, 3), STORY)
    sims.append(("sim-short-requests-g-capped", tr, {"kind": "fixed", "g": 10}, 0.1, 1, 256, 10))
    sims.append(("sim-short-requests-confidence", tr, {"kind": "confidence"}, 0.001, 2, 256, 10))
    tr = _trace(rng, 3, (5, 20), STORY)
    sims.append(("sim-batch-larger-than-trace", tr, {"kind": "per_class", "g": {"code": 6, "chat": 2}},
                 0.15, 8, 4, 10))
    sims.append(("sim-gmax-3-confidence", _trace(rng, 5, (10, 30), STORY), {"kind": "confidence"},
                 0.02, 1, 256, 3))
    sims.append(("sim-free-drafter-confidence", _trace(rng, 4, (10, 30), THREE), {"kind": "confidence"},
                 0, 2, 256, 6))
    bt = _boundary_trace()
    sims.append(("sim-confidence-on-the-threshold", bt, {"kind": "confidence"}, 0.25, 1, 256, 10))
    sims.append(("sim-confidence-on-the-threshold-batch", bt, {"kind": "confidence"}, 0.25, 2, 4, 10))
    # A class whose confidences are all 0.0 (qbar = 0): P * qbar = 0, so it never drafts when
    # c > 0 and drafts up to the cap when c = 0 (equality drafts); P >= c / qbar divides by zero.
    zq = [{"cls": "chat", "q": [0.0] * 5, "m": [1, 1, 0, 1, 1]},
          {"cls": "code", "q": [0.75, 0.5, 1.0, 0.75, 0.5, 0.75], "m": [1, 1, 1, 0, 1, 1]},
          {"cls": "chat", "q": [0.0] * 3, "m": [1, 0, 1]}]
    sims.append(("sim-confidence-class-all-zero", zq, {"kind": "confidence"}, 0.1, 1, 256, 10))
    sims.append(("sim-confidence-class-all-zero-free-drafter", zq, {"kind": "confidence"}, 0, 2, 256, 4))
    for name, tr, pol, c, B, K, gmax in sims:
        with g.case(name):
            _check_sim(g.call("simulate", tr, pol, c, batch=B, knee_tokens=K, gmax=gmax),
                       ref.simulate(tr, pol, c, batch=B, knee_tokens=K, gmax=gmax))

    # -- study: best fixed g, per-class sweep (each class alone), confidence ------------------
    studies = []
    tr = _trace(rng, 14, (20, 60), STORY)
    studies += [("study-story-cheap", tr, 0.01, 1, 256, 10), ("study-story-expensive", tr, 0.15, 1, 256, 10)]
    tr = _trace(rng, 12, (10, 50), THREE)
    studies += [("study-three-classes", tr, 0.1, 1, 256, 10), ("study-three-classes-gmax-4", tr, 0.05, 1, 256, 4)]
    tr = _trace(rng, 16, (10, 40), STORY)
    studies += [("study-batch-4-knee-8", tr, 0.15, 4, 8, 10), ("study-batch-6-knee-12", tr, 0.01, 6, 12, 8),
                ("study-batch-8-knee-256", tr, 0.15, 8, 256, 10)]
    studies += [("study-gmax-0", _trace(rng, 4, (1, 20), STORY), 0.1, 1, 256, 0)]
    studies += [("study-fixed-tie-a", _tie_trace(TIE_A), 0.25, 1, 256, 6),
                ("study-fixed-tie-b", _tie_trace(TIE_B), 0.5, 2, 256, 6),
                ("study-free-drafter-ties", _trace(rng, 5, (5, 20), STORY), 0, 1, 256, 10)]
    # a knee that is not an int (and below one token): knee_tokens is any finite number > 0
    studies += [("study-knee-not-an-int", _trace(rng, 5, (3, 12), STORY), 0.125, 3, 0.75, 4)]
    for name, tr, c, B, K, gmax in studies:
        with g.case(name):
            _check_study(g.call("study", tr, c, batch=B, knee_tokens=K, gmax=gmax),
                         ref.study(tr, c, batch=B, knee_tokens=K, gmax=gmax))

    # -- the signature's defaults (batch=1, knee_tokens=256, gmax=10) -------------------------
    # batch 32 of long requests drafting 10 puts up to 352 tokens in a step: the knee binds
    tr = _trace(rng, 40, (30, 60), STORY)
    with g.case("sim-defaults"):
        _check_sim(g.call("simulate", tr[:6], {"kind": "fixed", "g": 10}, 0.1),
                   ref.simulate(tr[:6], {"kind": "fixed", "g": 10}, 0.1))
    with g.case("sim-default-knee-batch-32"):
        _check_sim(g.call("simulate", tr, {"kind": "fixed", "g": 10}, 0.01, batch=32),
                   ref.simulate(tr, {"kind": "fixed", "g": 10}, 0.01, batch=32))
    tr = _trace(rng, 5, (3, 15), THREE)
    with g.case("study-defaults"):
        _check_study(g.call("study", tr, 0.1), ref.study(tr, 0.1))
    tr = _trace(rng, 60, (40, 80), STORY)       # 48 slots: the confidence policy's steps bind
    with g.case("study-default-knee-batch-48"):
        _check_study(g.call("study", tr, 0.001, batch=48), ref.study(tr, 0.001, batch=48))

    # -- input checks ---------------------------------------------------------------------
    ok = [{"cls": "code", "q": [0.5, 0.9], "m": [1, 0]}]
    fixed = {"kind": "fixed", "g": 2}
    bad_traces = [
        ("empty-trace", []),
        ("length-mismatch", [{"cls": "code", "q": [0.5, 0.9], "m": [1]}]),
        ("zero-length-request", [{"cls": "code", "q": [], "m": []}]),
        ("confidence-above-one", [{"cls": "code", "q": [0.5, 1.5], "m": [1, 0]}]),
        ("confidence-nan", [{"cls": "code", "q": [math.nan, 0.5], "m": [1, 0]}]),
        ("match-flag-two", [{"cls": "code", "q": [0.5, 0.9], "m": [1, 2]}]),
        ("missing-class", [{"q": [0.5], "m": [1]}]),
        ("empty-class-name", [{"cls": "", "q": [0.5, 0.9], "m": [1, 0]}]),
        ("match-flag-float", [{"cls": "code", "q": [0.5, 0.9], "m": [1.0, 0]}]),
        ("confidences-not-a-list", [{"cls": "code", "q": np.array([0.5, 0.9]), "m": [1, 0]}]),
    ]
    checks = [(f"simulate-{n}", "simulate", (t, fixed, 0.1), {}) for n, t in bad_traces]
    checks += [(f"study-{n}", "study", (t, 0.1), {}) for n, t in bad_traces[:2]]
    checks += [
        ("simulate-negative-c", "simulate", (ok, fixed, -0.1), {}),
        ("simulate-nan-c", "simulate", (ok, fixed, math.nan), {}),
        ("simulate-batch-0", "simulate", (ok, fixed, 0.1), {"batch": 0}),
        ("simulate-knee-0", "simulate", (ok, fixed, 0.1), {"knee_tokens": 0}),
        ("simulate-negative-gmax", "simulate", (ok, fixed, 0.1), {"gmax": -1}),
        ("simulate-confidence-negative-gmax", "simulate", (ok, {"kind": "confidence"}, 0.1), {"gmax": -1}),
        ("simulate-unknown-policy", "simulate", (ok, {"kind": "adaptive"}, 0.1), {}),
        ("simulate-unknown-policy-with-g", "simulate", (ok, {"kind": "adaptive", "g": 2}, 0.1), {}),
        ("simulate-confidence-policy-with-g", "simulate", (ok, {"kind": "confidence", "g": 2}, 0.1), {}),
        ("simulate-fixed-policy-extra-key", "simulate", (ok, {"kind": "fixed", "g": 2, "gmax": 4}, 0.1), {}),
        ("simulate-fixed-g-above-gmax", "simulate", (ok, {"kind": "fixed", "g": 11}, 0.1), {}),
        ("simulate-fixed-g-negative", "simulate", (ok, {"kind": "fixed", "g": -1}, 0.1), {}),
        ("simulate-per-class-missing-class", "simulate",
         (ok + [{"cls": "chat", "q": [0.5], "m": [0]}], {"kind": "per_class", "g": {"code": 3}}, 0.1), {}),
        ("simulate-per-class-g-not-a-dict", "simulate", (ok, {"kind": "per_class", "g": 3}, 0.1), {}),
        ("study-negative-c", "study", (ok, -0.5), {}),
        ("study-batch-0", "study", (ok, 0.1), {"batch": 0}),
    ]
    for name, fn, args, kw in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kw)
