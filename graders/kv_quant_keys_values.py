"""Hidden grader of kv-quant-keys-values.

Inputs are float32 (some float16) keys with a few large outlier channels and values whose scale
varies per token (the shapes KIVI and KVQuant report). Every case is fixed by its seed; the salt
only shuffles which outlier channels and which steps a case uses, so nothing can be memorized.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, expect_tensor, fail


def make_k(shape, gen, n_outliers=3, dtype=torch.float32, chans=None):
    """Keys: N(0, 1) with a few channels offset and stretched (fixed across tokens)."""
    k = torch.randn(*shape, generator=gen, dtype=torch.float64)
    D = shape[-1]
    chans = chans if chans is not None else torch.randperm(D, generator=gen)[:n_outliers].tolist()
    for c in chans:
        k[..., c] = k[..., c] * 3.0 + 12.0
    return k.to(dtype)


def make_v(shape, gen, dtype=torch.float32):
    """Values: N(0, 1) times a log-normal magnitude per token."""
    v = torch.randn(*shape, generator=gen, dtype=torch.float64)
    mag = torch.exp(0.6 * torch.randn(*shape[:-1], 1, generator=gen, dtype=torch.float64))
    return (v * mag).to(dtype)


def _close(got, want, name):
    """Elementwise within 1e-6 * (|want| + max|want|)."""
    scale = float(want.abs().max()) if want.numel() else 0.0
    expect_tensor(got, want, name=name, rtol=1e-6, atol=1e-6 * scale, dtype=torch.float64)


def _check_quant(g, ref, x, bits, group, layout):
    got = g.call("quantize_groups", x, bits, group, layout)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        fail("quantize_groups must return a tuple (codes, scale, zero)")
    codes, scale, zero = ref.quantize_groups(x, bits, group, layout)
    expect_tensor(got[0], codes, name="codes")
    expect_tensor(got[1], scale, name="scale", rtol=1e-12, dtype=torch.float64)
    expect_tensor(got[2], zero, name="zero", rtol=1e-12, dtype=torch.float64)
    return codes, scale, zero


def _check_kivi(g, ref, args):
    got = g.call("kivi_decode", *args)
    want = ref.kivi_decode(*args)
    if not isinstance(got, dict):
        fail("kivi_decode must return a dict")
    for key in ("counts", "nbytes", "outputs", "k_hat", "v_hat"):
        if key not in got:
            fail(f"missing key {key!r}")
    expect_equal(got["counts"], want["counts"], name="counts")
    nb = got["nbytes"]
    if not isinstance(nb, (list, tuple)) or len(nb) != len(want["nbytes"]):
        fail(f"nbytes: expected a list of {len(want['nbytes'])} numbers")
    for i, (a, e) in enumerate(zip(nb, want["nbytes"])):
        expect_close(a, e, name=f"nbytes[{i}]", rtol=1e-12)
    _close(got["k_hat"], want["k_hat"], "k_hat")
    _close(got["v_hat"], want["v_hat"], "v_hat")
    _close(got["outputs"], want["outputs"], "outputs")


def _kivi_args(gen, dev, H, L0, S, D, bits_k, bits_v, group, R, dtype=torch.float32, chans=None):
    kp = make_k((H, L0, D), gen, dtype=dtype, chans=chans).to(dev)
    vp = make_v((H, L0, D), gen, dtype=dtype).to(dev)
    qs = torch.randn(S, H, D, generator=gen).to(dtype).to(dev)
    ks = make_k((S, H, D), gen, dtype=dtype, chans=chans).to(dev)
    vs = make_v((S, H, D), gen, dtype=dtype).to(dev)
    return (kp, vp, qs, ks, vs, bits_k, bits_v, group, R)


def _grid_input(trial: Trial, shape, bits: int, group: int, layout: str) -> torch.Tensor:
    """Values on a half-step grid, every group spanning exactly 2^bits - 1 steps of a power of two
    from the same min: the group's scale is that step and every odd half-step is a rounding tie."""
    scale = 2.0 ** trial.rng.randint(-2, 2)
    lo = trial.rng.randint(-4, 4) * scale
    top = 2 * (2 ** bits - 1)
    steps = torch.randint(0, top + 1, shape, generator=trial.generator(), dtype=torch.int64)
    if layout == "per_token":       # groups run along the channels
        steps[..., ::group], steps[..., 1::group] = 0, top
    else:                           # groups run along the tokens
        steps[::group], steps[1::group] = 0, top
    return (lo + steps.to(torch.float64) * (scale / 2)).to(torch.float32)


def _ce_quant(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    bits, group, layout = rng.randint(1, 8), rng.choice([2, 3, 4]), rng.choice(["per_token", "per_channel"])
    n = trial.size
    shape = (n, group * rng.randint(1, 2)) if layout == "per_token" else (group * rng.randint(1, 2), n)
    mode = rng.choice(["grid", "grid", "decimals", "constant", "random"])
    if mode == "grid":
        x = _grid_input(trial, shape, bits, group, layout)
    elif mode == "decimals":     # float32 multiples of 0.05: x * (1 / scale) misses some of x / scale's ties
        x = torch.randint(0, 7, shape, generator=trial.generator()).to(torch.float32) * 0.05
    elif mode == "constant":     # some groups hold one value
        x = torch.full(shape, rng.choice([0.0, 1.25, -3.0]), dtype=torch.float32)
        x.view(-1)[: x.numel() // 2] = torch.randn(x.numel() // 2, generator=trial.generator())
    else:
        x = make_k(shape, trial.generator(), n_outliers=min(3, shape[-1])) if layout == "per_channel" else \
            make_v(shape, trial.generator())
    x = x.to(g.device)
    g.show_input(x=x, bits=bits, group=group, layout=layout)
    c, s, z = _check_quant(g, ref, x, bits, group, layout)
    got = g.call("dequantize_groups", c.to(g.device), s.to(g.device), z.to(g.device), group, layout)
    _close(got, ref.dequantize_groups(c, s, z, group, layout), "dequantized")


def _ce_kivi(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    group = rng.choice([2, 4])
    R = group * rng.randint(1, 3)
    D = group * rng.randint(1, 2)
    L0 = rng.randint(1, 2 * R + 1)
    S = rng.randint(0, trial.size * group + 1)
    bk, bv = rng.randint(1, 4), rng.randint(1, 4)
    dtype = rng.choice([torch.float32, torch.float32, torch.float16])
    args = _kivi_args(trial.generator(), g.device, rng.randint(1, 2), L0, S, D, bk, bv, group, R, dtype,
                      rng.sample(range(D), 1))
    g.show_input(**dict(zip(("k_prefill", "v_prefill", "q_steps", "k_steps", "v_steps", "bits_k", "bits_v",
                             "group", "residual"), args)))
    _check_kivi(g, ref, args)


def _ce_roads(g: Grading, ref, trial: Trial) -> None:
    rng, gen = trial.rng, trial.generator()
    L, D, bits, mult = 4 * trial.size, 8, rng.choice([2, 4, 8]), rng.choice([0.25, 1.0, 4.0, 16.0])
    k, v = make_k((L, D), gen, n_outliers=1), make_v((L, D), gen)
    q = torch.randn(rng.randint(1, 3), D, generator=gen)
    k_hat = ref.dequantize_groups(*ref.quantize_groups(k, bits, 4, "per_channel"), 4, "per_channel")
    v_hat = ref.dequantize_groups(*ref.quantize_groups(v, bits, 4, "per_token"), 4, "per_token")
    args = (q.to(g.device), k.to(g.device), v.to(g.device), k_hat.to(g.device), v_hat.to(g.device),
            mult / math.sqrt(D))
    g.show_input(**dict(zip(("q", "k", "v", "k_hat", "v_hat", "sm_scale"), args)))
    got = g.call("error_roads", *args)
    want = ref.error_roads(*args)
    if not isinstance(got, dict):
        fail("error_roads must return a dict")
    for key in ("k_only", "v_only", "k_linear", "v_linear", "entropy"):
        if key not in got:
            fail(f"missing key {key!r}")
        expect_close(got[key], want[key], name=key, rtol=1e-6)


_CE_KINDS = {"quant-": "quant", "kivi-": "kivi", "roads-": "roads"}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of the failed case's kind: a quantizer call (tie grids, float32
    decimals, constant groups, outlier keys), a KIVI cache run (tiny heads, groups and residual),
    or the error roads on a few tokens."""
    kind = trial.pick(_CE_KINDS) or "quant"
    {"quant": _ce_quant, "kivi": _ce_kivi, "roads": _ce_roads}[kind](g, g.reference(), trial)


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device
    rnd = random.Random(f"kv-quant-keys-values:{g.salt}")

    # ---- the quantizer: ties, a constant group, layouts, bits, groups, dtypes
    with g.case("quant-ties-round-half-even"):
        # scale 1 (0..3 at 2 bits) and scale 2 (0..14 at 3 bits): every .5 is a tie
        x = torch.tensor([[0.0, 0.5, 1.5, 3.0, 2.5, 1.0, 0.5, 2.5],
                          [14.0, 1.0, 3.0, 5.0, 0.0, 7.0, 9.0, 11.0]], device=dev)
        _check_quant(g, ref, x, 2, 4, "per_token")
        _check_quant(g, ref, x[1:].repeat(1, 1) * 1.0, 3, 8, "per_token")
    with g.case("quant-ties-per-channel"):
        x = torch.tensor([[0.0, 14.0], [0.5, 1.0], [1.5, 3.0], [3.0, 5.0],
                          [2.5, 0.0], [1.0, 7.0], [0.5, 9.0], [2.5, 11.0]], device=dev)
        _check_quant(g, ref, x, 2, 4, "per_channel")
    with g.case("quant-divide-not-reciprocal"):
        # float32 0.15 and 0.3 in float64: (x - mn) / scale lands on 1.5 exactly (a tie, code 2),
        # x * (1 / scale) lands one ulp below (code 1)
        x = torch.tensor([[0.0, 0.15, 0.3]], device=dev)
        _check_quant(g, ref, x, 2, 3, "per_token")
        _check_quant(g, ref, x.T.contiguous(), 2, 3, "per_channel")
    with g.case("quant-constant-group"):
        x = torch.tensor([[1.25, 1.25, 1.25, 1.25, -2.0, 0.0, 2.0, 4.0],
                          [0.0, 0.0, 0.0, 0.0, 7.0, 7.0, 7.0, 7.0]], device=dev)
        c, s, z = _check_quant(g, ref, x, 4, 4, "per_token")
        got = g.call("dequantize_groups", c.to(dev), s.to(dev), z.to(dev), 4, "per_token")
        _close(got, ref.dequantize_groups(c, s, z, 4, "per_token"), "dequantized")
    with g.case("quant-group-1-single-element-axis"):
        # group 1 is allowed (every group constant: codes 0, exact), even on a grouped axis of 1
        for shape, bits, layout in [((3, 1), 2, "per_token"), ((1, 4), 3, "per_channel"),
                                    ((2, 3), 1, "per_token")]:
            x = torch.randn(*shape, generator=g.rng(90)).to(dev)
            c, s, z = _check_quant(g, ref, x, bits, 1, layout)
            got = g.call("dequantize_groups", c.to(dev), s.to(dev), z.to(dev), 1, layout)
            _close(got, ref.dequantize_groups(c, s, z, 1, layout), "dequantized")
    with g.case("dequantize-float64-params"):
        # scale and zero are float64 inputs: values below float32's range must survive
        gd = g.rng(91)
        for layout, shape, pshape in [("per_token", (4, 8), (4, 2)), ("per_channel", (8, 4), (2, 4))]:
            c = torch.randint(0, 16, shape, generator=gd, dtype=torch.uint8)
            s = torch.rand(*pshape, generator=gd, dtype=torch.float64) * 1e-50
            z = torch.randn(*pshape, generator=gd, dtype=torch.float64) * 1e-50
            got = g.call("dequantize_groups", c.to(dev), s.to(dev), z.to(dev), 4, layout)
            _close(got, ref.dequantize_groups(c, s, z, 4, layout), "dequantized")
    combos = [(2, 32, "per_channel"), (2, 32, "per_token"), (4, 16, "per_channel"),
              (3, 8, "per_token"), (8, 64, "per_channel"), (1, 16, "per_token"),
              (4, 128, "per_token"), (5, 16, "per_channel")]
    for i, (bits, group, layout) in enumerate(combos):
        with g.case(f"quant-{bits}bit-group{group}-{layout}"):
            gen = g.rng(100 + i)
            dtype = torch.float16 if i == 3 else torch.float32
            shape = (2, 3, 64, 128) if i % 2 == 0 else (64, 128)
            x = (make_k if layout == "per_channel" else make_v)(shape, gen, dtype=dtype).to(dev)
            c, s, z = _check_quant(g, ref, x, bits, group, layout)
            got = g.call("dequantize_groups", c.to(dev), s.to(dev), z.to(dev), group, layout)
            _close(got, ref.dequantize_groups(c, s, z, group, layout), "dequantized")

    # ---- the KIVI cache: prefill below / equal to / a multiple of / not a multiple of R;
    # flushes crossed; group < R and group == R; bits_k != bits_v
    # group 1, residual 1, head_dim 1 (and a fractional byte count), bits 1 and 8 on both sides
    tiny = [("group-1-residual-1", 2, 3, 5, 1, 8, 1, 1, 1), ("bits-1-and-8", 1, 6, 7, 4, 1, 8, 2, 4)]
    for i, (name, H, L0, S, D, bk, bv, group, R) in enumerate(tiny):
        with g.case(f"kivi-{name}"):
            _check_kivi(g, ref, _kivi_args(g.rng(250 + i), dev, H, L0, S, D, bk, bv, group, R, chans=[0]))
    scen = [
        # name, H, L0, S, D, bits_k, bits_v, group, R
        ("prefill-below-R", 2, 20, 30, 32, 2, 2, 8, 32),
        ("prefill-equal-R", 2, 32, 40, 32, 2, 4, 8, 32),
        ("prefill-2R", 1, 64, 33, 32, 4, 2, 16, 32),
        ("prefill-mR-plus-r", 2, 75, 70, 32, 2, 2, 8, 32),
        ("prefill-R-minus-1-then-1", 2, 31, 1, 16, 3, 3, 8, 32),
        ("group-equals-R", 2, 45, 50, 32, 2, 2, 16, 16),
        ("group-below-R-many-flushes", 1, 100, 130, 64, 4, 4, 16, 48),
        ("prefill-1", 1, 1, 40, 32, 2, 8, 32, 32),
        ("no-steps", 2, 70, 0, 32, 2, 2, 8, 32),
        ("float16-inputs", 2, 50, 40, 32, 2, 2, 8, 16),
    ]
    rnd.shuffle(scen)
    for i, (name, H, L0, S, D, bk, bv, group, R) in enumerate(scen):
        with g.case(f"kivi-{name}"):
            gen = g.rng(200 + i)
            chans = rnd.sample(range(D), 3)
            dtype = torch.float16 if name == "float16-inputs" else torch.float32
            _check_kivi(g, ref, _kivi_args(gen, dev, H, L0, S, D, bk, bv, group, R, dtype, chans))

    # ---- the error roads: bits and attention sharpness
    D = 64
    for i, (bits, mult) in enumerate([(2, 1.0), (4, 0.25), (4, 4.0), (8, 1.0), (4, 16.0)]):
        with g.case(f"roads-{bits}bit-logits-x{mult:g}"):
            gen = g.rng(300 + i)
            L = 256
            k = make_k((L, D), gen)
            v = make_v((L, D), gen)
            q = torch.randn(16, D, generator=gen)
            k_hat = ref.dequantize_groups(*ref.quantize_groups(k, bits, 32, "per_channel"), 32, "per_channel")
            v_hat = ref.dequantize_groups(*ref.quantize_groups(v, bits, 32, "per_token"), 32, "per_token")
            args = (q.to(dev), k.to(dev), v.to(dev), k_hat.to(dev), v_hat.to(dev), mult / math.sqrt(D))
            got = g.call("error_roads", *args)
            want = ref.error_roads(*args)
            if not isinstance(got, dict):
                fail("error_roads must return a dict")
            for key in ("k_only", "v_only", "k_linear", "v_linear", "entropy"):
                if key not in got:
                    fail(f"missing key {key!r}")
                expect_close(got[key], want[key], name=key, rtol=1e-6)

    with g.case("roads-one-key-unit-output"):
        # one key: every weight is 1, O = v exactly, with norm exactly 1; the key road vanishes
        gq = g.rng(350)
        q, k = torch.randn(1, 4, generator=gq, dtype=torch.float64), torch.randn(1, 4, generator=gq, dtype=torch.float64)
        v = torch.full((1, 4), 0.5, dtype=torch.float64)
        args = (q.to(dev), k.to(dev), v.to(dev), (k + 0.25).to(dev),
                (v + torch.tensor([[0.25, -0.25, 0.0, 0.125]], dtype=torch.float64)).to(dev), 0.5)
        got = g.call("error_roads", *args)
        want = ref.error_roads(*args)
        if not isinstance(got, dict):
            fail("error_roads must return a dict")
        for key in ("k_only", "v_only", "k_linear", "v_linear", "entropy"):
            if key not in got:
                fail(f"missing key {key!r}")
            expect_close(got[key], want[key], name=key, rtol=1e-6, atol=1e-12)

    # ---- input checks
    x = make_v((16, 32), g.rng(400)).to(dev)
    bad_q = [
        ("group-not-dividing-channels", (x, 2, 12, "per_token")),
        ("group-not-dividing-tokens", (x[:12], 2, 8, "per_channel")),
        ("one-dimensional", (x[0], 2, 8, "per_token")),
        ("group-zero", (x, 2, 0, "per_token")),
        ("bits-zero", (x, 0, 8, "per_token")),
        ("bits-nine", (x, 9, 8, "per_token")),
        ("unknown-layout", (x, 2, 8, "per_tensor")),
        ("nan-input", (torch.where(x > 2, float("nan"), x), 2, 8, "per_token")),
        ("integer-tensor", (torch.ones(16, 32, dtype=torch.int32, device=dev), 2, 8, "per_token")),
    ]
    for name, args in bad_q:
        with g.case(f"quantize-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "quantize_groups", *args)
    base = _kivi_args(g.rng(401), dev, 1, 10, 3, 32, 2, 2, 8, 16)
    bad_k = [
        ("residual-not-multiple-of-group", base[:8] + (20,)),
        ("head-dim-not-multiple-of-group", base[:7] + (12, 24)),
        ("empty-prefill", (base[0][:, :0], base[1][:, :0]) + base[2:]),
        ("value-prefill-shape-mismatch", (base[0], base[1][:, :9]) + base[2:]),
        ("bits-k-zero", base[:5] + (0,) + base[6:]),
        ("bits-k-nine", base[:5] + (9,) + base[6:]),
        ("bits-v-zero", base[:6] + (0,) + base[7:]),
        ("bits-v-nine", base[:6] + (9,) + base[7:]),
        ("group-zero", base[:7] + (0, 16)),
        ("residual-zero", base[:8] + (0,)),
        ("step-shape-mismatch", base[:2] + (base[2][:, :, :16],) + base[3:]),
        ("nan-in-prefill", (base[0] * float("nan"),) + base[1:]),
    ]
    for name, args in bad_k:
        with g.case(f"kivi-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "kivi_decode", *args)
    gq = g.rng(402)
    q, k = torch.randn(4, 32, generator=gq).to(dev), torch.randn(8, 32, generator=gq).to(dev)
    for name, args in [("shape-mismatch", (q, k, k, k[:7], k, 0.2)),
                       ("nonpositive-sm-scale", (q, k, k, k, k, 0.0)),
                       ("three-dimensional-q", (q.unsqueeze(-1), k, k, k, k, 0.2))]:
        with g.case(f"roads-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "error_roads", *args)
