"""Hidden cases for canary-sizing.

Core: sample sizes for rates and means over baselines, regressions, alpha, power, allocation
ratios (k = 1, 19, 99, below 1, non-integer) and design effects, where two-sided z, an unpooled
H0 variance, an inverted or ignored ratio, both arms, floor, table z values and rounding before
the design effect all change the integer; achieved power at, below and above the required size;
design effects; rollouts with a baseline or the rest of traffic as control; salted random cases.
No case has an unrounded size within a relative 1e-7 of an integer. Then the input checks.
"""

from __future__ import annotations

import math
import random

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail

RTOL = 1e-9
STAGE_KEYS = {"fraction", "k", "n_canary", "minutes", "extra_failures"}


def _not_near_integer(x: float) -> bool:
    return abs(x - round(x)) > 1e-7 * max(1.0, x)


def _int(out, exp: int, name: str) -> None:
    if isinstance(out, bool) or not isinstance(out, int):
        fail(f"{name}: expected an int, got {type(out).__name__}")
    if out != exp:
        fail(f"{name}: got {out}: too {'large' if out > exp else 'small'}")


def _power(out, exp: float, name: str) -> None:
    expect_close(out, exp, name=name, rtol=0.0, atol=1e-9)


def _stages(out, exp: list[dict]) -> None:
    if not isinstance(out, list) or len(out) != len(exp):
        fail(f"expected a list of {len(exp)} stage dicts")
    for i, (o, e) in enumerate(zip(out, exp)):
        if not isinstance(o, dict) or set(o) != STAGE_KEYS:
            fail(f"[{i}]: expected a dict with exactly the keys {sorted(STAGE_KEYS)}")
        _int(o["n_canary"], e["n_canary"], f"[{i}]['n_canary']")
        for key in ("fraction", "k", "minutes", "extra_failures"):
            expect_close(o[key], e[key], name=f"[{i}][{key!r}]", rtol=RTOL)


PROPORTION = [  # p0, delta, alpha, power, k, deff
    (0.005, 0.0025, 0.05, 0.8, 1.0, 1.0), (0.005, 0.0025, 0.05, 0.8, 19.0, 1.0),
    (0.005, 0.0025, 0.01, 0.8, 1.0, 1.0), (0.01, 0.005, 0.05, 0.8, 1.0, 1.0),
    (0.01, 0.002, 0.05, 0.8, 1.0, 1.0), (0.02, 0.002, 0.05, 0.9, 19.0, 1.0),
    (0.1, 0.02, 0.1, 0.9, 3.7, 1.0), (0.3, 0.05, 0.05, 0.95, 0.5, 1.0),
    (0.01, 0.005, 0.05, 0.8, 99.0, 1.0), (0.001, 0.001, 0.025, 0.8, 4.0, 1.0),
    (0.005, 0.0025, 0.05, 0.8, 1.0, 1.45), (0.01, 0.003, 0.05, 0.8, 19.0, 2.3),
    (0.05, 0.01, 0.05, 0.8, 1.0, 1.45), (0.2, 0.03, 0.01, 0.9, 2.0, 1.9),
]
MEAN = [  # cv, rel_delta, alpha, power, k, deff
    (1.0, 0.05, 0.05, 0.8, 1.0, 1.0), (1.0, 0.05, 0.05, 0.8, 19.0, 1.0),
    (0.5, 0.05, 0.05, 0.8, 1.0, 1.0), (2.0, 0.05, 0.05, 0.8, 1.0, 1.0),
    (0.8, 0.03, 0.01, 0.9, 1.0, 1.0), (1.3, 0.1, 0.1, 0.95, 4.0, 1.0),
    (0.6, 0.02, 0.05, 0.8, 0.5, 1.0), (1.0, 0.05, 0.05, 0.8, 1.0, 1.45),
    (0.9, 0.04, 0.05, 0.9, 19.0, 3.1), (1.7, 0.07, 0.025, 0.85, 99.0, 1.0),
]


def grade(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(f"canary-sizing:{g.salt}")

    # 1. Sample sizes: fixed cases where each slip changes the integer, then salted ones.
    prop = list(PROPORTION)
    while len(prop) < len(PROPORTION) + 8:
        p0 = rnd.choice([0.002, 0.005, 0.01, 0.03, 0.1, 0.25])
        case = (p0, p0 * rnd.uniform(0.1, 1.0), rnd.choice([0.01, 0.05, 0.1]),
                rnd.choice([0.8, 0.9, 0.95]), rnd.choice([1.0, 3.0, 19.0, rnd.uniform(0.3, 50)]),
                rnd.choice([1.0, 1.0, rnd.uniform(1.0, 3.0)]))
        if _not_near_integer(ref.n_proportion_exact(*case)):
            prop.append(case)
    for i, (p0, d, a, pw, k, deff) in enumerate(prop):
        assert _not_near_integer(ref.n_proportion_exact(p0, d, a, pw, k, deff))
        tag = f"rate-{p0:g}+{d:.3g}-a{a}-pw{pw}-k{k:.3g}-deff{deff:.3g}" if i < len(PROPORTION) \
            else f"rate-random-{i - len(PROPORTION)}"
        with g.case(tag):
            _int(g.call("n_proportion", p0, d, a, pw, k=k, deff=deff),
                 ref.n_proportion(p0, d, a, pw, k=k, deff=deff), "n_proportion")
    mean = list(MEAN)
    while len(mean) < len(MEAN) + 6:
        case = (rnd.uniform(0.3, 2.5), rnd.uniform(0.01, 0.15), rnd.choice([0.01, 0.05, 0.1]),
                rnd.choice([0.8, 0.9, 0.95]), rnd.choice([1.0, 19.0, rnd.uniform(0.3, 50)]),
                rnd.choice([1.0, rnd.uniform(1.0, 3.0)]))
        if _not_near_integer(ref.n_mean_exact(*case)):
            mean.append(case)
    for i, (cv, r, a, pw, k, deff) in enumerate(mean):
        assert _not_near_integer(ref.n_mean_exact(cv, r, a, pw, k, deff))
        tag = f"mean-cv{cv:g}-r{r:g}-a{a}-pw{pw}-k{k:.3g}-deff{deff:.3g}" if i < len(MEAN) \
            else f"mean-random-{i - len(MEAN)}"
        with g.case(tag):
            _int(g.call("n_mean", cv, r, a, pw, k=k, deff=deff),
                 ref.n_mean(cv, r, a, pw, k=k, deff=deff), "n_mean")
    with g.case("defaults-k1-deff1"):
        _int(g.call("n_proportion", 0.02, 0.01, 0.05, 0.9), ref.n_proportion(0.02, 0.01, 0.05, 0.9),
             "n_proportion")
        _int(g.call("n_mean", 1.2, 0.06, 0.05, 0.9), ref.n_mean(1.2, 0.06, 0.05, 0.9), "n_mean")

    # 2. Achieved power: at the required n, one below, and elsewhere.
    for i, (p0, d, a, pw, k, deff) in enumerate(PROPORTION[:8] + PROPORTION[10:12]):
        n = ref.n_proportion(p0, d, a, pw, k=k, deff=deff)
        for label, m in (("at-n", n), ("n-minus-1", n - 1), ("half-n", max(1, n // 2))):
            with g.case(f"power-rate-{i}-{label}"):
                _power(g.call("power_proportion", m, p0, d, a, k=k, deff=deff),
                       ref.power_proportion(m, p0, d, a, k=k, deff=deff), "power_proportion")
    for i, (cv, r, a, pw, k, deff) in enumerate(MEAN):
        n = ref.n_mean(cv, r, a, pw, k=k, deff=deff)
        for label, m in (("at-n", n), ("n-minus-1", n - 1), ("double-n", 2 * n)):
            with g.case(f"power-mean-{i}-{label}"):
                _power(g.call("power_mean", m, cv, r, a, k=k, deff=deff),
                       ref.power_mean(m, cv, r, a, k=k, deff=deff), "power_mean")
    with g.case("power-tiny-canary"):
        _power(g.call("power_proportion", 1, 0.01, 0.005, 0.05), ref.power_proportion(1, 0.01, 0.005, 0.05),
               "power_proportion")
        _power(g.call("power_mean", 3, 1.0, 0.05, 0.05, k=19.0), ref.power_mean(3, 1.0, 0.05, 0.05, k=19.0),
               "power_mean")

    # 3. Design effect.
    for m, icc in ((10, 0.05), (1, 0.3), (25, 0.0), (4.5, 0.12), (100, 1.0)):
        with g.case(f"design-effect-m{m}-icc{icc}"):
            expect_close(g.call("design_effect", m, icc), ref.design_effect(m, icc),
                         name="design_effect", rtol=RTOL)

    # 4. Rollouts.
    plans = [
        ("baseline-three-stages", [0.01, 0.05, 0.25], 200.0, (0.005, 0.0025, 0.05, 0.8), "baseline"),
        ("rest-three-stages", [0.01, 0.05, 0.25], 200.0, (0.005, 0.0025, 0.05, 0.8), "rest"),
        ("rest-to-half", [0.02, 0.1, 0.5], 35.0, (0.01, 0.004, 0.01, 0.9), "rest"),
        ("baseline-half", [0.5], 1200.0, (0.02, 0.005, 0.05, 0.9), "baseline"),
        ("rest-tuple", (0.001, 0.3, 0.75), 5000.0, (0.003, 0.003, 0.05, 0.8), "rest"),
        ("rest-under-one-request-per-second", [0.05, 0.25], 0.5, (0.01, 0.005, 0.05, 0.8), "rest"),
    ]
    for name, stages, lam, (p0, d, a, pw), control in plans:
        with g.case(f"rollout-{name}"):
            _stages(g.call("rollout", stages, lam, p0, d, a, pw, control=control),
                    ref.rollout(stages, lam, p0, d, a, pw, control=control))
    with g.case("rollout-default-control-is-baseline"):
        _stages(g.call("rollout", [0.1], 80.0, 0.01, 0.005, 0.05, 0.8),
                ref.rollout([0.1], 80.0, 0.01, 0.005, 0.05, 0.8))
    stages = sorted(round(rnd.uniform(0.005, 0.45), 4) for _ in range(3))
    lam = rnd.uniform(10, 2000)
    for control in ("baseline", "rest"):
        with g.case(f"rollout-random-{control}"):
            _stages(g.call("rollout", stages, lam, 0.01, 0.004, 0.05, 0.8, control=control),
                    ref.rollout(stages, lam, 0.01, 0.004, 0.05, 0.8, control=control))

    # 5. Input checks.
    checks = [
        ("rate-p0-zero", "n_proportion", (0.0, 0.01, 0.05, 0.8), {}),
        ("rate-negative-delta", "n_proportion", (0.01, -0.005, 0.05, 0.8), {}),
        ("rate-p1-above-one", "n_proportion", (0.9, 0.2, 0.05, 0.8), {}),
        ("rate-alpha-percent", "n_proportion", (0.01, 0.005, 5.0, 0.8), {}),
        ("rate-alpha-half", "n_proportion", (0.01, 0.005, 0.5, 0.8), {}),
        ("rate-power-percent", "n_proportion", (0.01, 0.005, 0.05, 80.0), {}),
        ("rate-power-below-half", "n_proportion", (0.01, 0.005, 0.05, 0.2), {}),
        ("rate-power-one", "n_proportion", (0.01, 0.005, 0.05, 1.0), {}),
        ("rate-power-half", "n_proportion", (0.01, 0.005, 0.05, 0.5), {}),
        ("rate-delta-zero", "n_proportion", (0.01, 0.0, 0.05, 0.8), {}),
        ("mean-zero-regression", "n_mean", (1.0, 0.0, 0.05, 0.8), {}),
        ("rate-p1-exactly-one", "n_proportion", (0.25, 0.75, 0.05, 0.8), {}),
        ("rate-k-zero", "n_proportion", (0.01, 0.005, 0.05, 0.8), {"k": 0.0}),
        ("rate-deff-below-one", "n_proportion", (0.01, 0.005, 0.05, 0.8), {"deff": 0.5}),
        ("rate-nan-p0", "n_proportion", (math.nan, 0.005, 0.05, 0.8), {}),
        ("mean-zero-cv", "n_mean", (0.0, 0.05, 0.05, 0.8), {}),
        ("mean-negative-regression", "n_mean", (1.0, -0.05, 0.05, 0.8), {}),
        ("mean-inf-cv", "n_mean", (math.inf, 0.05, 0.05, 0.8), {}),
        ("power-zero-n", "power_proportion", (0, 0.01, 0.005, 0.05), {}),
        ("power-float-n", "power_mean", (100.5, 1.0, 0.05, 0.05), {}),
        ("power-bool-n", "power_mean", (True, 1.0, 0.05, 0.05), {}),
        ("deff-icc-above-one", "design_effect", (10, 1.5), {}),
        ("deff-m-zero", "design_effect", (0, 0.1), {}),
        ("rollout-bad-control", "rollout", ([0.05], 200.0, 0.01, 0.005, 0.05, 0.8), {"control": "production"}),
        ("rollout-empty", "rollout", ([], 200.0, 0.01, 0.005, 0.05, 0.8), {}),
        ("rollout-percent-stage", "rollout", ([1, 5, 25], 200.0, 0.01, 0.005, 0.05, 0.8), {"control": "rest"}),
        ("rollout-baseline-above-half", "rollout", ([0.6], 200.0, 0.01, 0.005, 0.05, 0.8), {}),
        ("rollout-baseline-zero-stage", "rollout", ([0.0, 0.05], 200.0, 0.01, 0.005, 0.05, 0.8), {}),
        ("rollout-rest-zero-stage", "rollout", ([0.0, 0.05], 200.0, 0.01, 0.005, 0.05, 0.8),
         {"control": "rest"}),
        ("rollout-rest-full-stage", "rollout", ([0.05, 1.0], 200.0, 0.01, 0.005, 0.05, 0.8),
         {"control": "rest"}),
        ("rollout-zero-rate", "rollout", ([0.05], 0.0, 0.01, 0.005, 0.05, 0.8), {}),
    ]
    for name, fn, args, kwargs in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kwargs)
