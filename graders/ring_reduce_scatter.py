"""Hidden grader of ring-reduce-scatter.

Core cases, in order:

- Collectives run SPMD (``g.call_spmd``), one hosted ``RankComm`` per rank over one
  ``inferprep.sim.ring.RingNetwork`` per case. Checked in this process: the result of every rank
  (exact for integers, 1e-5 of the summed magnitudes for floats), then every message the ring
  carried: p - 1 steps per phase, each message exactly the chunk the ring algorithm sends at that
  step (size, dtype and contents). A barrier timeout is reported as a deadlock, naming the stuck
  ranks; after one deadlock the remaining collective cases are not run (each would wait for the
  timeout).
- Ranks run alone (``SoloRank``): each rank of a ring is called on its own, in an order drawn
  from the salt, on inputs no earlier call carried, while the grader plays its partners. The SPMD
  ranks are threads of one process, and a solver's ranks once pooled their inputs in a
  module-level dict and sent the ring's exact messages computed from all of them: every message
  check passed. Alone, a rank has only its input and what ``send_recv`` returns, so only the ring
  algorithm passes (``tests/wrong/ring_reduce_scatter/shared_memory_bypass.py``).
- The cost-model functions, compared with the reference on seeded random parameters.

Input checks (every ValueError the statement promises) run last.
"""

from __future__ import annotations

import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, SubmissionRaised, Trial, expect_close, expect_tensor, fail
from inferprep.sim.ring import (RingNetwork, SoloRank, all_gather_messages, all_reduce_messages,
                                reduce_scatter_messages)

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
    Grading.show_result(want.to(dtype), got, name=name)
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
    _check_messages(net, *all_reduce_messages(xs, RTOL))


def _collectives(g: Grading, state: _State) -> None:
    i64, i32, f32, f64 = torch.int64, torch.int32, torch.float32, torch.float64
    rs_cases = [(1, 5, i64), (2, 7, i64), (3, 10, i64), (4, 10, i64), (4, 3, i64), (5, 0, i64),
                (8, 37, f32), (4, 1000, f32), (3, 11, i32), (6, 6, f64), (7, 100, i64)]
    for k, (p, n, dt) in enumerate(rs_cases):
        case = f"reduce-scatter p={p} N={n} {_dt(dt)}"
        with g.case(case):
            _reduce_scatter(g, state, case, 10 + k, p, n, dt)
    ag_cases = [(1, 4, i64), (2, 5, i64), (3, 10, f32), (4, 2, i64), (5, 13, f64), (8, 8, i32), (3, 0, i64)]
    for k, (p, n, dt) in enumerate(ag_cases):
        case = f"all-gather p={p} N={n} {_dt(dt)}"
        with g.case(case):
            _all_gather(g, state, case, 40 + k, p, n, dt)
    ar_cases = [(1, 3, f32), (2, 1, i64), (3, 10, i64), (4, 10, f32), (5, 3, i64), (8, 13, i64), (6, 257, f32)]
    for k, (p, n, dt) in enumerate(ar_cases):
        case = f"all-reduce p={p} N={n} {_dt(dt)}"
        with g.case(case):
            _all_reduce(g, state, case, 70 + k, p, n, dt)


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


# -- one rank at a time -------------------------------------------------------------------------
def _solo(g: Grading, fn: str, p: int, xs: list[torch.Tensor], extra: tuple,
          expected_out: list[torch.Tensor], out_tol, sent, sent_tol, incoming) -> None:
    """Run each rank alone, in an order drawn from the salt; the grader plays its partners
    (``incoming[r]`` is what rank r - 1 of a correct ring sends rank r, step by step). No
    barrier here, so an earlier deadlock does not stop these cases."""
    order = list(range(p))
    random.Random(f"ring-reduce-scatter:solo:{g.salt}:{fn}:{p}:{xs[0].numel()}").shuffle(order)
    g.show_input(world_size=f"{p}, each rank run alone, its partners played by the grader",
                 **{f"rank {r}": xs[r] for r in range(p)})
    for r in order:
        solo = SoloRank(p, r, incoming[r])
        comm = g.host(solo, ["send_recv"], {"rank": r, "world_size": p})
        try:
            out = g.call(fn, xs[r], comm, *extra)
        except SubmissionRaised as e:
            if solo.extra_steps:
                fail(f"rank {r}, run alone: called send_recv {len(solo.messages)} times; the ring has "
                     f"{len(incoming[r])} step(s) (its partners never answer an extra step)")
            raise
        if solo.extra_steps:            # the submission swallowed the TimeoutError
            fail(f"rank {r}, run alone: called send_recv {len(solo.messages)} times; the ring has "
                 f"{len(incoming[r])} step(s)")
        where = f"rank {r} (run alone, its partners played by the grader)"
        _expect_value(out, expected_out[r], out_tol[r], xs[r].dtype, where)
        problems = solo.check_messages(sent[r], None if sent_tol is None else sent_tol[r])
        if problems:
            fail(f"{where}: " + "; ".join(problems[:3]))


def _solo_reduce_scatter(g: Grading, seed: int, p: int, n: int, dt: torch.dtype) -> None:
    xs = _inputs(g, seed, p, n, dt)
    total, tol = _sum(xs)
    sent, sent_tol = reduce_scatter_messages(xs, RTOL)
    out = list(torch.tensor_split(total, p))
    out_tol = list(torch.tensor_split(tol, p)) if dt.is_floating_point else [tol] * p
    _solo(g, "ring_reduce_scatter", p, xs, (), out, out_tol, sent,
          sent_tol if dt.is_floating_point else None, [sent[(r - 1) % p] for r in range(p)])


def _solo_all_gather(g: Grading, seed: int, p: int, n: int, dt: torch.dtype) -> None:
    x = _inputs(g, seed, 1, n, dt)[0]
    chunks = [c.clone() for c in torch.tensor_split(x, p)]
    sent = all_gather_messages(chunks)
    zero = torch.zeros(())
    _solo(g, "ring_all_gather", p, chunks, (n,), [x] * p, [zero] * p, sent, None,
          [sent[(r - 1) % p] for r in range(p)])


def _solo_all_reduce(g: Grading, seed: int, p: int, n: int, dt: torch.dtype) -> None:
    xs = _inputs(g, seed, p, n, dt)
    total, tol = _sum(xs)
    sent, sent_tol = all_reduce_messages(xs, RTOL)
    _solo(g, "ring_all_reduce", p, xs, (), [total] * p, [tol] * p, sent, sent_tol,
          [sent[(r - 1) % p] for r in range(p)])


def _solo_cases(g: Grading) -> None:
    i64, f32, f64 = torch.int64, torch.float32, torch.float64
    for k, (p, n, dt) in enumerate([(4, 10, i64), (5, 13, f32), (3, 2, i64)]):
        with g.case(f"reduce-scatter p={p} N={n} {_dt(dt)}, each rank alone"):
            _solo_reduce_scatter(g, 200 + k, p, n, dt)
    for k, (p, n, dt) in enumerate([(4, 10, i64), (3, 7, f64)]):
        with g.case(f"all-gather p={p} N={n} {_dt(dt)}, each rank alone"):
            _solo_all_gather(g, 220 + k, p, n, dt)
    for k, (p, n, dt) in enumerate([(4, 10, i64), (6, 23, f32)]):
        with g.case(f"all-reduce p={p} N={n} {_dt(dt)}, each rank alone"):
            _solo_all_reduce(g, 240 + k, p, n, dt)


def _collective_input_checks(g: Grading, state: _State) -> None:
    i64, f32 = torch.int64, torch.float32
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
           # n = 3 over 3 ranks: a 0-D chunk made 1-D would be exactly the right size
           ("all-gather raises ValueError on a 0-D chunk", "ring_all_gather",
            [(torch.tensor(r + 1, dtype=i64), 3) for r in range(p)]),
           ("reduce-scatter raises ValueError on a 2-D x", "ring_reduce_scatter",
            [(torch.ones(2, 5, dtype=i64),)] * p),
           ("reduce-scatter raises ValueError on a 0-D x", "ring_reduce_scatter",
            [(torch.tensor(2, dtype=i64),)] * p),
           ("all-reduce raises ValueError on a 0-D x", "ring_all_reduce",
            [(torch.tensor(1.0),)] * p),
           ("all-reduce raises ValueError on a 2-D x", "ring_all_reduce",
            [(torch.ones(5, 2, dtype=f32),)] * p)]
    for case, fn, args in bad:
        with g.case(case, group=INPUT_CHECKS):
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
    with g.case("boundaries: alpha = 0, n = 0 and bw < 1 are valid"):
        ref = g.reference()
        for fn, args in (("ring_allreduce_time", (1e6, 8, 0.0, 1e9)), ("tree_allreduce_time", (1e6, 8, 0.0, 1e9)),
                         ("ring_allreduce_time", (0.0, 8, 1e-6, 1e9)), ("tree_allreduce_time", (0, 8, 1e-6, 1e9)),
                         ("crossover_bytes", (8, 0.0, 1e9)),
                         # any bw > 0 is valid, below 1 byte/s too
                         ("ring_allreduce_time", (1e3, 4, 1e-6, 0.5)), ("tree_allreduce_time", (1e3, 4, 1e-6, 0.5)),
                         ("crossover_bytes", (4, 1e-6, 0.5))):
            expect_close(g.call(fn, *args), getattr(ref, fn)(*args), rtol=1e-9, atol=0.0, name=f"{fn}{args}")
    with g.case("one rank exchanges nothing: both models give 0 s at p=1"):
        for fn in ("ring_allreduce_time", "tree_allreduce_time"):
            expect_close(g.call(fn, 1e9, 1, 5e-6, 100e9), 0.0, rtol=0.0, atol=0.0, name=f"{fn}(1e9, p=1)")


# (what is wrong, p, n, alpha, bw): every function that takes the argument must raise ValueError
_BAD_COST = [("p = 0", 0, 1e6, 1e-6, 1e9), ("p = -2", -2, 1e6, 1e-6, 1e9),
             ("p = 8.0 (a float)", 8.0, 1e6, 1e-6, 1e9), ("p = 2.5", 2.5, 1e6, 1e-6, 1e9),
             ("p = True (a bool)", True, 1e6, 1e-6, 1e9),
             ("n < 0", 4, -1.0, 1e-6, 1e9), ("n = NaN", 4, float("nan"), 1e-6, 1e9),
             ("n = inf", 8, float("inf"), 1e-6, 1e9),
             ("alpha < 0", 8, 1e6, -1e-6, 1e9), ("alpha = NaN", 8, 1e6, float("nan"), 1e9),
             ("alpha = inf", 8, 1e6, float("inf"), 1e9),
             ("bw = 0", 4, 1e6, 1e-6, 0.0), ("bw < 0", 4, 1e6, 1e-6, -1e9),
             ("bw = NaN", 8, 1e6, 1e-6, float("nan")), ("bw = inf", 8, 1e6, 1e-6, float("inf")),
             ("bw = -inf", 8, 1e6, 1e-6, float("-inf"))]


def _cost_input_checks(g: Grading) -> None:
    for why, p, n, alpha, bw in _BAD_COST:
        with g.case(f"cost model raises ValueError: {why}", group=INPUT_CHECKS):
            g.raises("ValueError", "ring_allreduce_time", n, p, alpha, bw)
            g.raises("ValueError", "tree_allreduce_time", n, p, alpha, bw)
            if not why.startswith("n "):
                g.raises("ValueError", "crossover_bytes", p, alpha, bw)


_CE_KINDS = {"reduce-scatter": "reduce-scatter", "all-gather": "all-gather", "all-reduce": "all-reduce",
             "cost model": "cost", "crossover": "cost", "boundaries": "cost", "one rank exchanges": "cost"}
_SPMD = {"reduce-scatter": _reduce_scatter, "all-gather": _all_gather, "all-reduce": _all_reduce}
_ALONE = {"reduce-scatter": _solo_reduce_scatter, "all-gather": _solo_all_gather, "all-reduce": _solo_all_reduce}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of the kind a failed case tests: a collective on up to trial.size + 1
    ranks (run SPMD, or each rank alone where an "alone" case failed), or the cost model on random
    parameters."""
    kind = trial.pick(_CE_KINDS)
    if kind is None:
        return False
    r = trial.rng
    if kind == "cost":
        p, alpha, bw = r.randint(1, 4 * trial.size), 10 ** r.uniform(-6.5, -4), 10 ** r.uniform(9, 12)
        ref, n = g.reference(), r.choice([0.0, 10 ** r.uniform(0, 10)])
        for fn, args in (("ring_allreduce_time", (n, p, alpha, bw)), ("tree_allreduce_time", (n, p, alpha, bw)),
                         ("crossover_bytes", (p, alpha, bw))):
            expect_close(g.call(fn, *args), getattr(ref, fn)(*args), rtol=1e-9, atol=1e-18 if fn != "crossover_bytes" else 1e-6,
                         name=fn)
        return None
    failed = [name for name in trial.failed if name.startswith(kind)]
    alone = [name.endswith("alone") for name in failed]
    solo = alone[trial.number % len(alone)] if alone else False
    p, n = r.randint(2 if solo else 1, trial.size + 1), r.randint(0, 3 * trial.size)  # a rank alone has partners
    dt = r.choice([torch.int64, torch.int32, torch.float32, torch.float64])
    if solo:
        _ALONE[kind](g, r.randrange(1 << 30), p, n, dt)
    else:
        _SPMD[kind](g, _State(), f"counterexample {trial.number}", r.randrange(1 << 30), p, n, dt)
    return None


def grade(g: Grading) -> None:
    state = _State()
    _collectives(g, state)
    _solo_cases(g)
    _cost_model(g)
    _collective_input_checks(g, state)
    _cost_input_checks(g)
