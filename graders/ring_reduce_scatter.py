"""Hidden grader of ring-reduce-scatter.

Collectives run SPMD (``g.call_spmd``), one hosted ``RankComm`` per rank over one
``inferprep.sim.ring.RingNetwork`` per case. Checked in this process: the result of every rank
(exact for integers, 1e-5 of the summed magnitudes for floats), then every message the ring
carried: p - 1 steps per phase, each message exactly the chunk the ring algorithm sends at that
step (size, dtype and contents), so a submission that computes the answer through shared memory
and sends dummies fails too. A barrier timeout is reported as a deadlock, naming the stuck ranks;
after one deadlock the remaining collective cases are not run (each would wait for the timeout).
The cost-model functions are compared with the reference on seeded random parameters.
"""

from __future__ import annotations

import random

import torch

from inferprep.grading import Grading, SubmissionRaised, expect_close, expect_tensor, fail
from inferprep.sim.ring import RingNetwork, all_gather_messages, reduce_scatter_messages

TIMEOUT_S = 2.0
RTOL = 1e-5


class _State:
    deadlocked_in: str | None = None


def _inputs(g: Grading, seed: int, p: int, n: int, dtype: torch.dtype) -> list[torch.Tensor]:
    gen = g.rng(seed)
    if dtype.is_floating_point:
        return [torch.randn(n, generator=gen, dtype=torch.float64).to(dtype) for _ in range(p)]
    return [torch.randint(-1000, 1000, (n,), generator=gen).to(dtype) for _ in range(p)]


def _sum(xs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Direct sum (in float64 for floats) and the elementwise tolerance for floating data."""
    if xs[0].is_floating_point():
        return sum(x.to(torch.float64) for x in xs), RTOL * sum(x.to(torch.float64).abs() for x in xs)
    return sum(xs[1:], xs[0].clone()), torch.zeros(())


def _run(g: Grading, state: _State, case: str, fn: str, p: int, per_rank_args) -> tuple[RingNetwork, list]:
    if state.deadlocked_in is not None:
        fail(f"not run: the submission deadlocked in case {state.deadlocked_in!r}")
    net = RingNetwork(p, timeout_s=TIMEOUT_S)
    comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True)
             for r in range(p)]
    calls = [((*args[:1], comms[r], *args[1:]), {}) for r, args in enumerate(per_rank_args)]
    try:
        out = g.call_spmd(fn, calls)
    except SubmissionRaised as e:
        others = [x for x in (e.per_rank or []) if x is not None and not x.is_a("TimeoutError")]
        if others:                      # a rank's own error, not the partners waiting for it
            raise others[0] from None
        if net.deadlock is not None:
            state.deadlocked_in = case
            fail(net.deadlock.describe())
        raise
    if net.deadlock is not None:        # the submission swallowed the TimeoutError
        state.deadlocked_in = case
        fail(net.deadlock.describe())
    return net, out


def _expect_value(got, want: torch.Tensor, tol: torch.Tensor, dtype: torch.dtype, name: str) -> None:
    if not isinstance(got, torch.Tensor):
        fail(f"{name}: expected a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(want.shape):
        fail(f"{name}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if got.dtype != dtype:
        fail(f"{name}: expected dtype {dtype}, got {got.dtype}")
    if dtype.is_floating_point:
        err = (got.to(torch.float64) - want).abs()
        bad = ~(err <= tol)
        if bad.any():
            fail(f"{name}: {int(bad.sum())} of {want.numel()} value(s) differ from the direct sum by more than "
                 f"{RTOL:g} of the summed magnitudes (first at index {int(bad.nonzero()[0])})")
    else:
        expect_tensor(got, want, name=name)


def _check_messages(net: RingNetwork, expected, tols) -> None:
    problems = net.check_messages(expected, tols)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        fail("; ".join(problems[:3]) + more)


def _reduce_scatter(g, state, case, seed, p, n, dtype):
    xs = _inputs(g, seed, p, n, dtype)
    net, out = _run(g, state, case, "ring_reduce_scatter", p, [(x,) for x in xs])
    total, tol = _sum(xs)
    for r in range(p):
        _expect_value(out[r], torch.tensor_split(total, p)[r],
                      torch.tensor_split(tol, p)[r] if dtype.is_floating_point else tol, dtype, f"rank {r}")
    _check_messages(net, *reduce_scatter_messages(xs, RTOL))


def _all_gather(g, state, case, seed, p, n, dtype):
    x = _inputs(g, seed, 1, n, dtype)[0]
    chunks = list(torch.tensor_split(x, p))
    net, out = _run(g, state, case, "ring_all_gather", p, [(c.clone(), n) for c in chunks])
    for r in range(p):
        expect_tensor(out[r], x, name=f"rank {r}")
    _check_messages(net, all_gather_messages(chunks), None)


def _all_reduce(g, state, case, seed, p, n, dtype):
    xs = _inputs(g, seed, p, n, dtype)
    net, out = _run(g, state, case, "ring_all_reduce", p, [(x,) for x in xs])
    total, tol = _sum(xs)
    for r in range(p):
        _expect_value(out[r], total.to(dtype) if not dtype.is_floating_point else total, tol, dtype, f"rank {r}")
    rs, rs_tol = reduce_scatter_messages(xs, RTOL)
    reduced = [c.to(dtype) for c in torch.tensor_split(total, p)]
    ag = all_gather_messages(reduced)
    tol_chunks = torch.tensor_split(tol, p) if dtype.is_floating_point else None
    ag_tol = [[tol_chunks[(r - s) % p] for s in range(p - 1)] for r in range(p)] if tol_chunks else None
    expected = [rs[r] + ag[r] for r in range(p)]
    tols = [rs_tol[r] + ag_tol[r] for r in range(p)] if ag_tol else None
    _check_messages(net, expected, tols)


def _collectives(g: Grading) -> None:
    state = _State()
    i64, i32, f32, f64 = torch.int64, torch.int32, torch.float32, torch.float64
    rs_cases = [(1, 5, i64), (2, 7, i64), (3, 10, i64), (4, 10, i64), (4, 3, i64), (5, 0, i64),
                (8, 37, f32), (4, 1000, f32), (3, 11, i32), (6, 6, f64), (7, 100, i64)]
    for k, (p, n, dt) in enumerate(rs_cases):
        case = f"reduce-scatter p={p} N={n} {str(dt).replace('torch.', '')}"
        with g.case(case):
            _reduce_scatter(g, state, case, 10 + k, p, n, dt)
    ag_cases = [(1, 4, i64), (2, 5, i64), (3, 10, f32), (4, 2, i64), (5, 13, f64), (8, 8, i32)]
    for k, (p, n, dt) in enumerate(ag_cases):
        case = f"all-gather p={p} N={n} {str(dt).replace('torch.', '')}"
        with g.case(case):
            _all_gather(g, state, case, 40 + k, p, n, dt)
    ar_cases = [(1, 3, f32), (2, 1, i64), (3, 10, i64), (4, 10, f32), (5, 3, i64), (8, 13, i64), (6, 257, f32)]
    for k, (p, n, dt) in enumerate(ar_cases):
        case = f"all-reduce p={p} N={n} {str(dt).replace('torch.', '')}"
        with g.case(case):
            _all_reduce(g, state, case, 70 + k, p, n, dt)
    p, n = 3, 10                                    # tensor_split sizes 4, 3, 3
    chunks = [torch.zeros(k, dtype=i64) for k in (4, 3, 3)]
    bad = [("all-gather raises ValueError on a chunk of the wrong size", "ring_all_gather",
            [(torch.zeros(5, dtype=i64), n)] * p),
           ("all-gather raises ValueError on n = 10.0 (a float)", "ring_all_gather",
            [(chunks[r], 10.0) for r in range(p)]),
           ("all-gather raises ValueError on n = True (a bool)", "ring_all_gather",
            [(torch.zeros(1 if r == 0 else 0, dtype=i64), True) for r in range(p)]),
           ("all-gather raises ValueError on a 2-D chunk", "ring_all_gather",
            [(chunks[r][None], n) for r in range(p)]),
           ("reduce-scatter raises ValueError on a 2-D x", "ring_reduce_scatter",
            [(torch.ones(2, 5, dtype=i64),)] * p),
           ("all-reduce raises ValueError on a 0-D x", "ring_all_reduce",
            [(torch.tensor(1.0),)] * p),
           ("all-reduce raises ValueError on a 2-D x", "ring_all_reduce",
            [(torch.ones(5, 2, dtype=f32),)] * p)]
    for case, fn, args in bad:
        with g.case(case):
            _expect_value_error(g, state, fn, p, args)


def _expect_value_error(g: Grading, state: _State, fn: str, p: int, per_rank_args) -> None:
    """Every rank must raise ValueError before sending anything."""
    if state.deadlocked_in is not None:
        fail(f"not run: the submission deadlocked in case {state.deadlocked_in!r}")
    net = RingNetwork(p, timeout_s=TIMEOUT_S)
    comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True) for r in range(p)]
    try:
        g.call_spmd(fn, [((args[0], comms[r], *args[1:]), {}) for r, args in enumerate(per_rank_args)])
    except SubmissionRaised as e:
        wrong = [r for r, x in enumerate(e.per_rank or [None] * p) if x is None or not x.is_a("ValueError")]
        if wrong:
            fail(f"rank(s) {wrong} did not raise ValueError")
    else:
        fail("expected ValueError on every rank, but the call returned")
    if any(net.steps(r) for r in range(p)):
        fail("a rank communicated before checking its arguments")


def _cost_model(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(4242)
    ps = [1, 2, 3, 4, 5, 8, 12, 16, 64, 100]
    for k, p in enumerate(ps):
        with g.case(f"cost model p={p}"):
            alpha = 10 ** rnd.uniform(-6.5, -4)
            bw = 10 ** rnd.uniform(9, 12)
            for n in (0.0, 1e3, 10 ** rnd.uniform(3, 10), 1e9):
                expect_close(g.call("ring_allreduce_time", n, p, alpha, bw), ref.ring_allreduce_time(n, p, alpha, bw),
                             rtol=1e-9, atol=1e-18, name=f"ring_allreduce_time(n={n:.4g})")
                expect_close(g.call("tree_allreduce_time", n, p, alpha, bw), ref.tree_allreduce_time(n, p, alpha, bw),
                             rtol=1e-9, atol=1e-18, name=f"tree_allreduce_time(n={n:.4g})")
            expect_close(g.call("crossover_bytes", p, alpha, bw), ref.crossover_bytes(p, alpha, bw),
                         rtol=1e-9, atol=1e-6, name="crossover_bytes")
    with g.case("crossover p=8, alpha=5 us, 100 GB/s"):
        expect_close(g.call("crossover_bytes", 8, 5e-6, 100e9), 16e6, rtol=1e-9, name="crossover_bytes")
    bad = [("ring_allreduce_time", "p = 0", (1e6, 0, 1e-6, 1e9)),
           ("ring_allreduce_time", "n < 0", (-1.0, 4, 1e-6, 1e9)),
           ("tree_allreduce_time", "alpha < 0", (1e6, 4, -1e-6, 1e9)),
           ("tree_allreduce_time", "bw = 0", (1e6, 4, 1e-6, 0.0)),
           ("crossover_bytes", "p = 0", (0, 1e-6, 1e9)),
           ("crossover_bytes", "p = 2.5", (2.5, 1e-6, 1e9)),
           ("crossover_bytes", "bw = NaN", (8, 1e-6, float("nan"))),
           ("crossover_bytes", "p = 8.0 (a float)", (8.0, 1e-6, 1e9)),
           ("ring_allreduce_time", "p = 8.0 (a float)", (1e6, 8.0, 1e-6, 1e9)),
           ("tree_allreduce_time", "p = True (a bool)", (1e6, True, 1e-6, 1e9)),
           ("crossover_bytes", "p = True (a bool)", (True, 1e-6, 1e9)),
           ("crossover_bytes", "alpha = inf", (8, float("inf"), 1e9)),
           ("ring_allreduce_time", "bw = inf", (1e6, 8, 1e-6, float("inf"))),
           ("tree_allreduce_time", "n = inf", (float("inf"), 8, 1e-6, 1e9))]
    for fn, why, args in bad:
        with g.case(f"{fn} raises ValueError: {why}"):
            g.raises("ValueError", fn, *args)


def grade(g: Grading) -> None:
    _collectives(g)
    _cost_model(g)
