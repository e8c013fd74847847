"""Hidden grader of bf16-running-sum.

The toy model lives here, in the trusted parent; the submission gets a proxy with one method,
``error(context_len, upcast)``, and the attributes ``names`` and ``max_len``. The parent counts
the calls, so a linear scan over the states (or over the lengths) is caught by its budget.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_equal, fail
from inferprep.sim.running_sum_model import RunningSumModel, StateSpec

SUMS = ("position", "softmax_denominator", "softmax_numerator", "sum_sq")
BOUNDED = ("ema", "last_token", "running_max")
TOL = 0.05


def _host(g: Grading, model: RunningSumModel):
    return g.host(model, ["error"], {"names": list(model.names), "max_len": model.max_len})


def make_variant(seed: int, n_layers: int, culprit_kind: str, culprit_dtype: str, where: str,
                 max_len: int = 4096) -> tuple[RunningSumModel, str]:
    """A model with exactly one running sum in ``culprit_dtype``; bounded states partly in bf16."""
    rng = random.Random(seed)
    layers = []
    for _ in range(n_layers):
        kinds = rng.sample(SUMS, rng.randint(1, 3)) + rng.sample(BOUNDED, rng.randint(1, 2))
        rng.shuffle(kinds)
        layers.append(kinds)
    # Put the culprit's kind where asked: first state of layer 0, last state of the last layer,
    # or a random slot in a middle layer.
    if where == "first":
        layer, pos = 0, 0
    elif where == "last":
        layer, pos = n_layers - 1, len(layers[-1])
    else:
        layer, pos = n_layers // 2, rng.randint(0, len(layers[n_layers // 2]))
    if culprit_kind in layers[layer]:
        layers[layer].remove(culprit_kind)
        pos = min(pos, len(layers[layer]))
    layers[layer].insert(pos, culprit_kind)
    culprit = f"layers.{layer}.{culprit_kind}"
    specs = []
    for i, kinds in enumerate(layers):
        for k in kinds:
            name = f"layers.{i}.{k}"
            if name == culprit:
                dtype = culprit_dtype
            elif k in BOUNDED:
                dtype = "bf16" if rng.random() < 0.7 else "fp32"
            else:
                dtype = "fp32"
            scale = 8.0 if (k == "sum_sq" and name == culprit and culprit_dtype == "fp16") else 1.0
            specs.append(StateSpec(name, k, dtype, scale))
    return RunningSumModel(specs, seed=seed, max_len=max_len), culprit


def _check_variant(model: RunningSumModel, culprit: str, context_len: int) -> None:
    """The statement's promise: upcasting a set fixes it iff the set holds the culprit."""
    others = [n for n in model.names if n != culprit]
    assert model.error(context_len, [culprit]) <= TOL, culprit
    assert model.error(context_len, others) > TOL, culprit
    model.calls = 0


def _expect_exact(got, want: float, what: str) -> None:
    """Exact float equality; inf must be inf (expect_close lets a finite value through when the
    expected value is inf and rtol is 0, so this checks it directly)."""
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        fail(f"{what}: expected a float, got {type(got).__name__}")
    got = float(got)
    if math.isnan(got):
        fail(f"{what}: got NaN")
    if math.isinf(want) != math.isinf(got):
        fail(f"{what}: got {got!r}; " + ("the sum overflows before it stalls" if math.isinf(want)
                                          else "the sum stalls at a finite value"))
    if got != want:
        fail(f"{what}: got {got!r}, which is not where the sum stops")


def _budget_states(n: int) -> int:
    return math.ceil(math.log2(n)) + 1 if n > 1 else 1


def _budget_lengths(max_len: int) -> int:
    return math.ceil(math.log2(max_len)) + 2


STALLS = [
    ("bf16-plus-1", 1.0, torch.bfloat16),
    ("fp16-plus-1", 1.0, torch.float16),
    ("fp32-plus-1", 1.0, torch.float32),
    ("bf16-plus-0.01", 0.01, torch.bfloat16),
    ("fp16-plus-0.01", 0.01, torch.float16),
    ("fp32-plus-0.01", 0.01, torch.float32),
    ("bf16-tie-0.75", 0.75, torch.bfloat16),
    ("bf16-just-above-half-ulp", 1.0 + 2.0 ** -8, torch.bfloat16),
    ("fp16-just-above-half-ulp", 1.0 + 2.0 ** -11, torch.float16),
    ("bf16-plus-3", 3.0, torch.bfloat16),
    ("bf16-plus-1.5", 1.5, torch.bfloat16),
    ("fp16-overflow-1000", 1000.0, torch.float16),
    ("fp16-overflow-first-step", 70000.0, torch.float16),
    ("bf16-tiny-increment", 1e-45, torch.bfloat16),
    ("fp16-subnormal-increment", 1e-7, torch.float16),
    ("fp32-plus-0.1", 0.1, torch.float32),
    # x + increment rounded to float64 first (a tie there) and then to the format stalls one
    # binade early: the exact sum is just above the half-ulp and must round up.
    ("bf16-one-plus-2^-52", 1.0 + 2.0 ** -52, torch.bfloat16),
    ("fp16-one-plus-2^-52", 1.0 + 2.0 ** -52, torch.float16),
    ("fp32-one-plus-2^-52", 1.0 + 2.0 ** -52, torch.float32),
    ("fp32-one-plus-2^-30", 1.0 + 2.0 ** -30, torch.float32),
    # just above a power of two: math.log2 rounds to the integer, so a closed form built on
    # ceil(log2(increment)) lands one binade low
    ("bf16-sixteen-plus-ulp", 16.0 * (1.0 + 2.0 ** -52), torch.bfloat16),
    ("fp16-sixteen-plus-ulp-overflows", 16.0 * (1.0 + 2.0 ** -52), torch.float16),
    ("fp32-1024-plus-ulp", 1024.0 * (1.0 + 2.0 ** -52), torch.float32),
    # the ends of each range: the smallest BF16 subnormal (steps of one subnormal ulp), half of it
    # (a tie at 0: the first step rounds to 0), a sum that stalls in FP16's top binade (32768,
    # below 65504), and one that fills FP32's top binade and overflows
    ("bf16-smallest-subnormal", 2.0 ** -133, torch.bfloat16),
    ("bf16-half-the-smallest-subnormal", 2.0 ** -134, torch.bfloat16),
    ("fp16-stalls-in-the-top-binade", 16.0, torch.float16),
    ("fp32-overflows-from-the-top-binade", 2.0 ** 104, torch.float32),
    # the same ends for the other formats: each table row's smallest normal exponent (the
    # subnormal spacing: the smallest subnormal steps, half of it rounds to 0) and largest
    # exponent (half the top binade's spacing stalls at 2**127; the whole spacing overflows)
    ("fp16-smallest-subnormal", 2.0 ** -24, torch.float16),
    ("fp16-half-the-smallest-subnormal", 2.0 ** -25, torch.float16),
    ("fp32-smallest-subnormal", 2.0 ** -149, torch.float32),
    ("fp32-half-the-smallest-subnormal", 2.0 ** -150, torch.float32),
    ("bf16-stalls-in-the-top-binade", 2.0 ** 119, torch.bfloat16),
    ("bf16-overflows-from-the-top-binade", 2.0 ** 120, torch.bfloat16),
    ("fp32-stalls-in-the-top-binade", 2.0 ** 103, torch.float32),
]


_CE_KINDS = {"stall-": "stall", "culprit-": "culprit", "first-bad-length-": "first-bad-length"}
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
_MANTISSA = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23}


def _ce_increment(trial: Trial, dt: torch.dtype) -> float:
    """A fresh increment of one of the kinds the stall cases test: a power of two times a small
    odd multiple (exact ties), just above a half-ulp, one float64 ulp above a power of two, a
    random magnitude, or a subnormal one."""
    rng = trial.rng
    p = 2.0 ** rng.randint(-8, 6)
    return rng.choice([
        lambda: p * rng.choice([1.0, 0.75, 1.5, 3.0, 1.25]),
        lambda: p * (1.0 + 2.0 ** -(_MANTISSA[dt] + 1)),
        lambda: p * (1.0 + 2.0 ** -52),
        lambda: 10 ** rng.uniform(-3, 3.5),
        lambda: float(torch.finfo(dt).smallest_normal) * rng.choice([0.5, 2.0 ** -5, 1.0]),
    ])()


def _ce_variant(trial: Trial) -> tuple[RunningSumModel, str] | None:
    """A small fresh variant (size + 1 layers, up to 1024 tokens in bf16, 4096 in fp16, which
    stalls later) that keeps the statement's promise, or None."""
    rng = trial.rng
    dtype = rng.choice(["bf16", "bf16", "bf16", "fp16"])
    max_len = 1024 if dtype == "bf16" else 4096
    for _ in range(4):
        model, culprit = make_variant(rng.randrange(1 << 30), trial.size + 1, rng.choice(SUMS[:3]), dtype,
                                      rng.choice(["first", "middle", "last"]), max_len)
        try:
            _check_variant(model, culprit, max_len)
        except AssertionError:
            continue
        return model, culprit
    return None


def _upcasts_only_help(model: RunningSumModel, culprit: str, ctx: int) -> bool:
    """Whether upcasting any state other than the culprit never raises its term's error over the
    first ``ctx`` tokens (then every set holding the culprit has at most the culprit's error)."""
    for spec in model.states:
        up = model.term(spec.name, "fp32") - model.term(spec.name, "fp64")
        own = model.term(spec.name, spec.dtype) - model.term(spec.name, "fp64")
        if spec.name != culprit and max(abs(up[:ctx])) > max(abs(own[:ctx])):
            return False
    return True


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A fresh input of the kind a failed case tests: stall_value on an increment near a rounding
    decision in the failed case's format, find_culprit on a variant of a few layers, or
    first_bad_length on one (tol at or near an error the model reaches, or after the fix)."""
    kind = trial.pick(_CE_KINDS) or "stall"
    rng, ref = trial.rng, g.reference()
    if kind == "stall":
        named = [dt for key, dt in _DTYPES.items() if any(n.startswith(f"stall-{key}") for n in trial.failed)]
        dt = rng.choice(named or list(_DTYPES.values()))
        inc = _ce_increment(trial, dt)
        g.show_input(increment=inc, dtype=dt)
        _expect_exact(g.call("stall_value", inc, dt), ref.stall_value(inc, dt), f"stall_value({inc!r}, {dt})")
        return None
    made = _ce_variant(trial)
    if made is None:
        return None
    model, culprit = made
    g.show_input(states=", ".join(f"{s.name}: {s.dtype}" for s in model.states), max_len=model.max_len)
    if kind == "culprit":
        ctx, tol = model.max_len, TOL
        if rng.random() < 0.5 and _upcasts_only_help(model, culprit, ctx):
            tol = model.error(ctx, [culprit])      # exactly the fixed error: error <= tol means fixed
            model.calls = 0
        g.show_input(tol=tol)
        got = g.call("find_culprit", _host(g, model), ctx, tol)
        g.show_result(culprit, got, name="find_culprit")
        if got != culprit:
            fail(f"find_culprit returned {str(got)[:60]!r}, but the state whose dtype breaks the model is {culprit!r}")
        if model.calls > _budget_states(len(model.names)):
            fail(f"found it, but with {model.calls} calls to model.error for {len(model.names)} states; "
                 f"bisection needs at most {_budget_states(len(model.names))}")
        return None
    curve = model.error_curve()
    up, tol = [], TOL
    form = rng.choice(["plain", "onset-at-max_len", "tol-on-the-curve", "tiny-tol", "after-the-fix"])
    if form == "onset-at-max_len":
        model = RunningSumModel(model.states, seed=model.seed, max_len=int((curve > TOL).nonzero()[0][0]) + 1)
    elif form == "tol-on-the-curve":     # an error the model reaches: that length is not bad yet
        tol = float(curve[rng.randrange(len(curve))])
    elif form == "tiny-tol":
        tol = 1e-9
    elif form == "after-the-fix":
        up = [culprit]
    g.show_input(tol=tol, upcast=up)
    want = ref.first_bad_length(model, tol, up)
    model.calls = 0
    got = g.call("first_bad_length", _host(g, model), tol, up)
    g.show_result(want, got, name="first_bad_length")
    if got != want or isinstance(got, bool):
        fail(f"first_bad_length returned {got!r}, expected {want!r} (the smallest length whose error exceeds tol)")
    if model.calls > _budget_lengths(model.max_len):
        fail(f"{model.calls} calls to model.error for max_len={model.max_len}; bisection needs at most "
             f"{_budget_lengths(model.max_len)}")
    return None


def grade(g: Grading) -> None:
    ref = g.reference()

    rng = g.rng(303)
    stalls = list(STALLS)
    for i in range(6):
        dt = (torch.bfloat16, torch.float16, torch.float32)[i % 3]
        inc = float(10 ** (torch.rand(1, generator=rng).item() * 5 - 3))
        stalls.append((f"random-{i}", inc, dt))
    for name, inc, dt in stalls:
        with g.case(f"stall-{name}"):
            _expect_exact(g.call("stall_value", inc, dt), ref.stall_value(inc, dt), f"stall_value({inc!r}, {dt})")

    variants = [
        ("bf16-position-last", 5, "position", "bf16", "last", 4096),
        ("bf16-denominator-first", 4, "softmax_denominator", "bf16", "first", 1024),
        ("bf16-numerator-middle", 6, "softmax_numerator", "bf16", "middle", 2048),
        ("bf16-sum_sq-last", 6, "sum_sq", "bf16", "last", 2048),
        ("fp16-position-last", 5, "position", "fp16", "last", 4096),
        ("fp16-sum_sq-overflow-first", 6, "sum_sq", "fp16", "first", 4096),
        ("fp16-denominator-middle", 3, "softmax_denominator", "fp16", "middle", 4096),
    ]
    for i, (name, n_layers, kind, dtype, where, ctx) in enumerate(variants):
        with g.case(f"culprit-{name}"):
            model, culprit = make_variant(8000 + i, n_layers, kind, dtype, where, max_len=max(ctx, 4096))
            _check_variant(model, culprit, ctx)
            got = g.call("find_culprit", _host(g, model), ctx, TOL)
            if not isinstance(got, str):
                fail(f"find_culprit must return a state name (str), got {type(got).__name__}")
            if got not in model.names:
                fail(f"find_culprit returned {got[:60]!r}, which is not one of model.names")
            budget = _budget_states(len(model.names))
            if got != culprit:
                fail(f"{got!r} is not the state whose dtype breaks the model "
                     f"(with it upcast alone, the error at {ctx} tokens is still above tol)")
            if model.calls > budget:
                fail(f"found it, but with {model.calls} calls to model.error for {len(model.names)} "
                     f"states; bisection needs at most {budget}")
            if model.error(model.max_len, [got]) > TOL:
                fail("upcasting the returned state does not fix the model")  # unreachable by construction

    # tol equal to the error with the culprit upcast (the same float64, so equality is exact):
    # that set is fixed ("error <= tol"). The culprit comes first, so every half bisection tries
    # holds it, down to [culprit] alone, whose error is exactly tol.
    with g.case("culprit-tol-equals-fixed-error"):
        model, culprit = make_variant(8100, 5, "softmax_denominator", "bf16", "first", max_len=2048)
        ctx = 2048
        tol = model.error(ctx, [culprit])
        assert _upcasts_only_help(model, culprit, ctx)   # so every set with the culprit has error <= tol
        assert model.names[0] == culprit and model.error(ctx, model.names[1:]) > tol
        model.calls = 0
        got = g.call("find_culprit", _host(g, model), ctx, tol)
        if got != culprit:
            fail(f"find_culprit returned {str(got)[:60]!r}; with {culprit!r} upcast the error at {ctx} tokens "
                 f"equals tol exactly ({tol!r}), and error <= tol means fixed")
        if model.calls > _budget_states(len(model.names)):
            fail(f"found it, but with {model.calls} calls to model.error for {len(model.names)} states")

    with g.case("culprit-single-state"):
        model = RunningSumModel([StateSpec("layers.0.position", "position", "bf16")], seed=5, max_len=1024)
        got = g.call("find_culprit", _host(g, model), 1024, TOL)
        expect_equal(got, "layers.0.position", name="find_culprit")

    # first_bad_length on a variant: plain, after the fix (None), onset exactly at max_len, onset at 1.
    base, culprit = make_variant(9100, 4, "softmax_denominator", "bf16", "middle", max_len=4096)
    curve = base.error_curve()
    onset = int((curve > TOL).nonzero()[0][0]) + 1
    at_end = RunningSumModel(base.states, seed=base.seed, max_len=onset)
    fbl = [
        ("plain", base, TOL, []),
        ("after-the-fix-is-None", base, TOL, [culprit]),
        ("onset-at-max_len", at_end, TOL, []),
        ("onset-at-1", base, 1e-9, []),
        ("fp16-position", make_variant(9200, 3, "position", "fp16", "first", 8192)[0], 0.2, []),
        # tol equal to an error the model reaches: that length is not bad yet (strictly greater)
        ("tol-equals-error-at-onset", base, float(curve[onset - 1]), []),
        ("tol-equals-error-at-1000", base, float(curve[999]), []),
        # tol equal to the error at max_len: no length exceeds it, so None
        ("tol-equals-error-at-max_len", base, float(curve[base.max_len - 1]), []),
    ]
    for name, model, tol, up in fbl:
        with g.case(f"first-bad-length-{name}"):
            want = ref.first_bad_length(model, tol, up)
            model.calls = 0
            got = g.call("first_bad_length", _host(g, model), tol, up)
            if want is None:
                if got is not None:
                    fail(f"expected None (the error never exceeds tol up to max_len={model.max_len}), got {got!r}")
            else:
                if isinstance(got, bool) or not isinstance(got, int):
                    fail(f"expected an int length (or None), got {type(got).__name__}")
                if got != want:
                    fail(f"got {got}, which is not the smallest length whose error exceeds tol")
            budget = _budget_lengths(model.max_len)
            if model.calls > budget:
                fail(f"{model.calls} calls to model.error for max_len={model.max_len}; bisection needs at most {budget}")

    for name, fn, args in [
        ("increment-0", "stall_value", (0.0, torch.bfloat16)),
        ("increment-negative", "stall_value", (-1.0, torch.bfloat16)),
        ("increment-nan", "stall_value", (float("nan"), torch.float16)),
        ("increment-inf", "stall_value", (float("inf"), torch.float32)),
        ("dtype-float64", "stall_value", (1.0, torch.float64)),
        ("dtype-int32", "stall_value", (1.0, torch.int32)),
    ]:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
