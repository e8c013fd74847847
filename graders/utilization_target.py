"""Hidden cases for utilization-target.

Core: the p-quantile on a grid of loads (below, at and above rho = 1 - p), prefill times, cs2
(0, squares that differ from their roots, > 1) and quantile levels; the utilization target across
T/S ratios, with T == S (answer 1 - p), T < S (answer 0.0), T barely above S, huge T/S, and
salted random cases; the prefill moments with and without a fixed part; the mechanism map in
salted orders and subsets. Then the input checks (infinite prefill, cs2 and variance, a prefill
given as a string, mechanisms given as a dict).
"""

from __future__ import annotations

import math
import random

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail

RTOL = 1e-9


def _util(out, exp, name="max_utilization") -> None:
    expect_close(out, exp, name=name, rtol=RTOL, atol=1e-12)


def _moments(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != {"mean_s", "cs2"}:
        fail("expected a dict with exactly the keys ['cs2', 'mean_s']")
    expect_close(out["mean_s"], exp["mean_s"], name="['mean_s']", rtol=RTOL)
    expect_close(out["cs2"], exp["cs2"], name="['cs2']", rtol=RTOL, atol=1e-15)


def _mapping(out, exp) -> None:
    if not isinstance(out, dict):
        fail(f"expected a dict mechanism -> assumption, got {type(out).__name__}")
    if set(out) != set(exp):
        fail(f"keys: expected exactly the given mechanisms {sorted(exp)}, got {sorted(map(str, out))}")
    for m in exp:
        if out[m] != exp[m]:
            fail(f"[{m!r}]: {out[m]!r} is not the assumption this mechanism breaks")


def grade(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(f"utilization-target:{g.salt}")

    # 1. ttft_quantile: loads around the threshold 1 - p, several S, cs2 and p.
    grid = []
    for p in (0.99, 0.95, 0.999, 0.9):
        q = 1.0 - p
        for rho in (0.0, q / 2, q, 0.3, 0.5, 0.7, 0.9, 0.99):
            for S, cs2 in ((0.25, 0.0), (0.013, 0.25), (1.7, 2.0)):
                grid.append((rho, S, cs2, p))
    for rho, S, cs2, p in grid:
        with g.case(f"ttft-rho{rho:.4g}-S{S}-cs2{cs2}-p{p}"):
            expect_close(g.call("ttft_quantile", rho, S, cs2, p), ref.ttft_quantile(rho, S, cs2, p),
                         name="ttft_quantile", rtol=RTOL)
    with g.case("ttft-default-p-is-p99"):
        expect_close(g.call("ttft_quantile", 0.6, 0.2, 0.64), ref.ttft_quantile(0.6, 0.2, 0.64),
                     name="ttft_quantile", rtol=RTOL)
    with g.case("ttft-integer-inputs"):
        expect_close(g.call("ttft_quantile", 0, 2, 1), 2.0, name="ttft_quantile", rtol=RTOL)

    # 2. max_utilization over T/S, cs2 and p.
    for ratio in (1.5, 3.0, 8.0, 10.0, 20.0, 100.0, 1000.0):
        for cs2 in (0.0, 0.25, 0.81, 1.0, 4.0):
            S = 0.25 if cs2 != 0.25 else 0.0375
            for p in ((0.99,) if ratio not in (3.0, 10.0) else (0.99, 0.95, 0.999)):
                with g.case(f"target-ratio{ratio:g}-cs2{cs2}-p{p}"):
                    _util(g.call("max_utilization", S, cs2, S * ratio, p),
                          ref.max_utilization(S, cs2, S * ratio, p))
    with g.case("target-default-p-is-p99"):
        _util(g.call("max_utilization", 0.4, 0.3, 2.5), ref.max_utilization(0.4, 0.3, 2.5))
    # T == S: the flat part of TTFT_p ends at rho = 1 - p, which meets the target exactly.
    for S, p in ((0.25, 0.99), (0.5, 0.95), (2.0, 0.9)):
        with g.case(f"target-equals-prefill-S{S}-p{p}"):
            _util(g.call("max_utilization", S, 1.0, S, p), ref.max_utilization(S, 1.0, S, p))
    for S, T in ((0.25, 0.2), (1.0, 0.999999)):
        with g.case(f"target-below-prefill-S{S}-T{T}"):
            _util(g.call("max_utilization", S, 0.5, T), 0.0)
    with g.case("target-barely-above-prefill"):
        _util(g.call("max_utilization", 0.25, 0.81, 0.2500001), ref.max_utilization(0.25, 0.81, 0.2500001))
    with g.case("target-huge-ratio"):            # a = 2(T/S - 1)/(1 + cs2) far above 709
        _util(g.call("max_utilization", 0.001, 0.0, 5.0), ref.max_utilization(0.001, 0.0, 5.0))
    with g.case("target-integer-inputs"):
        _util(g.call("max_utilization", 1, 0, 8), ref.max_utilization(1, 0, 8))
    for i in range(8):
        S = rnd.uniform(0.01, 2.0)
        cs2 = rnd.choice([0.0, rnd.uniform(0.05, 3.0)])
        T = S * rnd.uniform(1.2, 40.0)
        p = rnd.choice([0.9, 0.95, 0.99, 0.995, 0.999])
        with g.case(f"target-random-{i}"):
            _util(g.call("max_utilization", S, cs2, T, p), ref.max_utilization(S, cs2, T, p))

    # 3. prefill_moments.
    for name, args in (("exponential-10pct-fixed", (0.025, 5e-5, 4500, 4500.0**2)),
                       ("no-fixed-part", (0.0, 4e-5, 2000, 3 * 2000.0**2)),
                       ("large-fixed-part", (0.5, 1e-4, 1000, 1000.0**2)),
                       ("constant-length", (0.01, 3e-5, 8192, 0)),
                       ("lognormal-sigma1", (0.04, 2e-5, 6000, (math.e - 1) * 6000.0**2)),
                       ("fixed-only", (0.3, 0.0, 100, 50.0))):
        with g.case(f"moments-{name}"):
            _moments(g.call("prefill_moments", *args), ref.prefill_moments(*args))

    # 4. engine_violations: all mechanisms in a salted order, salted subsets, the empty list.
    names = list(ref.MECHANISMS)
    rnd.shuffle(names)
    with g.case("mechanisms-all"):
        _mapping(g.call("engine_violations", names), ref.engine_violations(names))
    for i in range(4):
        sub = rnd.sample(names, rnd.randint(1, 4))
        with g.case(f"mechanisms-subset-{i}"):
            _mapping(g.call("engine_violations", sub), ref.engine_violations(sub))
    with g.case("mechanisms-tuple"):
        t = tuple(names[:3])
        _mapping(g.call("engine_violations", t), ref.engine_violations(t))
    with g.case("mechanisms-empty"):
        _mapping(g.call("engine_violations", []), {})

    # 5. Input checks.
    checks = [
        ("ttft-rho-one", "ttft_quantile", (1.0, 0.25, 0.0)),
        ("ttft-rho-percent", "ttft_quantile", (69.7, 0.25, 0.0)),
        ("ttft-rho-negative", "ttft_quantile", (-0.1, 0.25, 0.0)),
        ("ttft-rho-nan", "ttft_quantile", (math.nan, 0.25, 0.0)),
        ("ttft-zero-prefill", "ttft_quantile", (0.5, 0.0, 0.0)),
        ("ttft-negative-cs2", "ttft_quantile", (0.5, 0.25, -0.5)),
        ("ttft-infinite-prefill", "ttft_quantile", (0.5, math.inf, 0.0)),
        ("ttft-infinite-cs2", "ttft_quantile", (0.5, 0.25, math.inf)),
        ("ttft-p-one", "ttft_quantile", (0.5, 0.25, 0.0, 1.0)),
        ("ttft-p-percent", "ttft_quantile", (0.5, 0.25, 0.0, 99)),
        ("target-zero-prefill", "max_utilization", (0.0, 0.0, 2.0)),
        ("target-nan-cs2", "max_utilization", (0.25, math.nan, 2.0)),
        ("target-string-prefill", "max_utilization", ("0.25", 0.0, 2.0)),
        ("target-zero-target", "max_utilization", (0.25, 0.0, 0.0)),
        ("target-infinite-target", "max_utilization", (0.25, 0.0, math.inf)),
        ("target-p-zero", "max_utilization", (0.25, 0.0, 2.0, 0.0)),
        ("moments-negative-fixed", "prefill_moments", (-0.01, 5e-5, 4500, 0)),
        ("moments-negative-variance", "prefill_moments", (0.01, 5e-5, 4500, -1.0)),
        ("moments-zero-mean-time", "prefill_moments", (0.0, 0.0, 4500, 10.0)),
        ("moments-nan-length", "prefill_moments", (0.01, 5e-5, math.nan, 10.0)),
        ("moments-infinite-variance", "prefill_moments", (0.01, 5e-5, 4500, math.inf)),
        ("mechanisms-unknown", "engine_violations", (["continuous_batching", "gc_pauses"],)),
        ("mechanisms-one-string", "engine_violations", ("continuous_batching",)),
        ("mechanisms-a-dict", "engine_violations", ({"continuous_batching": "one_in_service"},)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
