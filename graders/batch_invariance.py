"""Hidden grader of batch-invariance.

Bit-identity is checked between the submission's own outputs (never against a batched matmul of
the reference: CPU BLAS is not batch invariant). Which rows are victims, their positions and the
companions come from the salt; the data itself from fixed seeds.
"""

from __future__ import annotations

import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, expect_tensor, fail

TOKEN_MODES = ("none", "int8_token", "fp8_token")
ALL_MODES = ("none", "int8_tensor", "int8_token", "fp8_tensor", "fp8_token")

NEAR_TIE_ROWS = torch.tensor([
    [0.5705678462982178, -0.23181463778018951, -0.6814927458763123, -0.9457157850265503,
     -1.0024889707565308, -1.083609938621521, -0.7882771492004395, 0.6596795916557312,
     -1.2129065990447998, -1.8147878646850586, 1.409348964691162, 1.1074491739273071,
     -0.2658800780773163, -0.2104817032814026, -0.529828667640686, -0.6066370010375977],
    [0.4849761128425598, 0.38191816210746765, 0.8743450045585632, -1.384888768196106,
     1.5897237062454224, 0.978670597076416, -0.8147883415222168, -0.7932584285736084,
     -1.2526825666427612, -1.9772908687591553, 0.6125054955482483, -0.7554544806480408,
     -0.6336368322372437, 1.23848557472229, 2.56270432472229, 0.2382979691028595],
    [-0.5451704859733582, -0.8096928000450134, 1.359233021736145, 1.1706748008728027,
     -0.7640345692634583, -0.5234197974205017, 1.3764368295669556, 0.22763913869857788,
     -0.07728581130504608, -0.631312906742096, 0.021653946489095688, -0.21040718257427216,
     0.6309552788734436, -0.7207582592964172, 1.667851209640503, -0.7440544366836548],
])


def acts(T, H, gen, massive=False, zero_row=None):
    """Activations with a per-row magnitude spread; optionally one massive activation (60) and an
    all-zero (padding) row."""
    x = torch.randn(T, H, generator=gen) * torch.exp(0.5 * torch.randn(T, 1, generator=gen))
    if massive:
        x[0, int(torch.randint(H, (1,), generator=gen))] = 60.0
    if zero_row is not None:
        x[zero_row] = 0.0
    return x


def _check_xhat(got, want, mode):
    """Exact, except floor(n / 10000) elements may be one code step off."""
    expect_tensor(got, want, name="x_hat", rtol=1.0, atol=1.0, dtype=torch.float32)  # type/shape/NaN
    a, e = got.detach().cpu(), want.detach().cpu()
    bad = a != e
    allowed = e.numel() // 10000
    if int(bad.sum()) > allowed:
        fail(f"x_hat ({mode}): {int(bad.sum())} of {e.numel()} values differ (at most {allowed} may be "
             f"one step off); first at index {tuple(bad.nonzero()[0].tolist())}")
    if bad.any():
        # one code step: INT8 one scale, FP8 one grid step (<= 1/8 of the value, or a subnormal step)
        diff = (a - e).abs()[bad].double()
        bound = e.abs()[bad].double() * 0.125 + e.abs().max().double() / 100.0
        if (diff > bound).any():
            fail(f"x_hat ({mode}): a value is more than one code step off")


def _expected_linear(ref, x, w, mode):
    xh = ref.quantize_activations(x.cpu(), mode).double()
    return (xh @ w.cpu().double().T)


def _check_linear(got, want, name="out"):
    m = float(want.abs().max()) if want.numel() else 0.0
    expect_tensor(got, want.float(), name=name, rtol=1e-5, atol=1e-5 * m, dtype=torch.float32)


_CE_KINDS = {"quant-": "quantize", "linear-values-": "linear", "invariance-": "invariance", "cross-talk-": "cross-talk"}


def _tie_rows(trial: Trial, T: int, H: int, mode: str) -> torch.Tensor:
    """(T, H) float32 activations made to sit on rounding decisions: each row holds its amax (a
    power of two times qmax, so the scale is exact), exact ties between two codes (half-way for
    INT8, a midpoint of the FP8 grid), values a few ulps off a tie under a scale that is not a
    power of two (x / s and x * (1 / s) round apart), ordinary values, and sometimes an all-zero row."""
    rng = trial.rng
    qmax = 448.0 if mode.startswith("fp8") else 127.0
    grid = torch.tensor([float(c) for c in range(-126, 127)]) if qmax == 127.0 else \
        torch.arange(256).to(torch.uint8).view(torch.float8_e4m3fn).float().unique()
    grid = grid[grid.isfinite() & (grid.abs() <= qmax)]
    mids = (grid[1:] + grid[:-1]) / 2
    x = torch.randn(T, H, generator=trial.generator())
    for r in range(T):
        if rng.random() < 0.5:                            # exact scale, exact ties
            s = 2.0 ** rng.randint(-6, 3)
            x[r, 0] = qmax * s * rng.choice([1, -1])
            for c in range(1, H):
                x[r, c] = float(mids[rng.randrange(len(mids))]) * s if rng.random() < 0.7 else x[r, c] * s * 8
        else:                                             # an inexact scale: near-ties that divide and reciprocal split
            amax = torch.tensor(rng.uniform(0.5, 8.0), dtype=torch.float32)
            s = amax / qmax
            near = (mids * s).view(torch.int32)[None] + torch.arange(-3, 4, dtype=torch.int32)[:, None]
            near = near.flatten().view(torch.float32)
            near = near[near.abs() < amax]
            split = near[torch.round(near / s) != torch.round(near * (1 / s))]
            pick = split if len(split) and rng.random() < 0.8 else near
            x[r, 0] = float(amax) * rng.choice([1, -1])
            for c in range(1, H):
                x[r, c] = float(pick[rng.randrange(len(pick))])
    if T > 1 and rng.random() < 0.3:
        x[rng.randrange(T)] = 0.0
    return x


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A tiny batch of the kind a failed case tests, in one of the modes the failed cases used:
    quantize rows built on rounding ties and near-ties, a small linear layer, a victim alone
    against the same row among a few companions, or cross_talk on a few rows."""
    kind = trial.pick(_CE_KINDS) or "quantize"
    modes = [m for m in ALL_MODES if any(m in name for name in trial.failed)] or list(ALL_MODES)
    if kind == "invariance":
        modes = [m for m in modes if m in TOKEN_MODES] or list(TOKEN_MODES)
    mode = modes[trial.number % len(modes)]
    rng, ref, dev = trial.rng, g.reference(), g.device
    T, H = trial.size + 1, rng.randint(4, 8)
    gen = trial.generator()
    if kind == "quantize":
        x = _tie_rows(trial, T, H, mode)
        g.show_input(x=x, mode=mode)
        _check_xhat(g.call("quantize_activations", x.to(dev), mode), ref.quantize_activations(x, mode).to(dev), mode)
    elif kind == "linear":
        x = _tie_rows(trial, T, H, mode)
        w = torch.randn(rng.randint(2, 5), H, generator=gen)
        g.show_input(x=x, w=w, mode=mode)
        _check_linear(g.call("quantized_linear", x.to(dev), w.to(dev), mode), _expected_linear(ref, x, w, mode))
    elif kind == "invariance":
        # a row's bits may depend on the batch only through the matmul's blocking, which small
        # feature counts may not show: the features stay at the hidden cases' width
        H = 256
        x = acts(8 * trial.size + 1, H, gen)
        w = torch.randn(rng.randint(8, 64), H, generator=gen) / H ** 0.5
        g.show_input(x=x, w=w, mode=mode, victim="row 0, alone and then first in the batch x")
        alone = g.call("quantized_linear", x[:1].to(dev), w.to(dev), mode)
        _check_linear(alone, _expected_linear(ref, x[:1], w, mode), name="alone")
        out = g.call("quantized_linear", x.to(dev), w.to(dev), mode)
        _check_linear(out, _expected_linear(ref, x, w, mode), name="batched")
        g.show_result(alone[0], out[0], name="row 0 alone vs in the batch")
        if not torch.equal(out[0].cpu(), alone[0].cpu()):
            fail(f"row 0 of a batch of {x.shape[0]} differs from the same row computed alone in "
                 f"{int((out[0].cpu() != alone[0].cpu()).sum())} of {w.shape[0]} outputs: not batch invariant")
    else:
        victims = _tie_rows(trial, trial.size, H, mode)
        comp = torch.randn(rng.randint(0, 3), H, generator=gen) * rng.choice([0.5, 2.0, 30.0])
        w = torch.randn(rng.randint(2, 5), H, generator=gen)
        g.show_input(victims=victims, companions=comp, w=w, mode=mode)
        got = g.call("cross_talk", victims.to(dev), comp.to(dev), w.to(dev), mode)
        want = ref.cross_talk(victims, comp, w, mode)
        if not isinstance(got, dict) or not {"max_rel_change", "flips"} <= set(got):
            fail("cross_talk must return a dict with keys 'max_rel_change' and 'flips'")
        expect_close(got["max_rel_change"], want["max_rel_change"], name="max_rel_change", rtol=1e-6, atol=1e-12)
        expect_equal(got["flips"], want["flips"], name="flips")
    return None


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device
    rnd = random.Random(f"batch-invariance:{g.salt}")

    # ---- quantization: ties, saturation, fp8 vs fnuz max, zero rows, per tensor vs per token
    ties_i8 = torch.tensor([[127.0, 2.5, -2.5, 0.5, 1.5, -0.5, 126.5, -127.0],
                            [3.5, 4.5, -5.5, 0.0, 6.5, 127.0, 100.5, -99.5]])
    ties_f8 = torch.tensor([[448.0, 1.0625, 1.1875, -1.0625, 2.0 ** -10, 3 * 2.0 ** -10, 300.0, 250.0],
                            [448.0, 17.0, 19.0, -9.5, 0.0, 2.0 ** -9, 440.0, 232.0]])
    for mode in ("int8_tensor", "int8_token"):
        with g.case(f"quant-ties-{mode}"):
            _check_xhat(g.call("quantize_activations", ties_i8.to(dev), mode),
                        ref.quantize_activations(ties_i8, mode).to(dev), mode)
    for mode in ("fp8_tensor", "fp8_token"):
        with g.case(f"quant-ties-{mode}"):
            _check_xhat(g.call("quantize_activations", ties_f8.to(dev), mode),
                        ref.quantize_activations(ties_f8, mode).to(dev), mode)
    with g.case("quant-divide-not-reciprocal"):
        # rows 6782, 15815, 79292 of torch.randn(100000, 16) after manual_seed(1): for one element
        # of each, x / scale and x * (1 / scale) fall on different sides of an INT8 rounding tie.
        # Per token only: there the scale is a tensor; on CUDA, PyTorch itself turns x / s with a
        # Python-float s (a per-tensor scale taken with .item()) into x * (1 / s).
        x = NEAR_TIE_ROWS
        _check_xhat(g.call("quantize_activations", x.to(dev), "int8_token"),
                    ref.quantize_activations(x, "int8_token").to(dev), "int8_token")
    for i, mode in enumerate(ALL_MODES):
        with g.case(f"quant-{mode}-rows-of-different-size"):
            x = acts(48, 512, g.rng(10 + i), massive=(i % 2 == 1), zero_row=7)
            _check_xhat(g.call("quantize_activations", x.to(dev), mode),
                        ref.quantize_activations(x, mode).to(dev), mode)
    for mode in ("int8_token", "fp8_tensor"):
        with g.case(f"quant-{mode}-large"):
            x = acts(96, 1024, g.rng(20), massive=True)
            _check_xhat(g.call("quantize_activations", x.to(dev), mode),
                        ref.quantize_activations(x, mode).to(dev), mode)
    with g.case("quant-all-zero-batch"):
        z = torch.zeros(3, 16)
        for mode in ALL_MODES:
            _check_xhat(g.call("quantize_activations", z.to(dev), mode), z.to(dev), mode)

    # ---- the linear layer: values, then bitwise invariance across batch compositions
    H, N = 256, 384
    w = (torch.randn(N, H, generator=g.rng(30)) / H ** 0.5)
    for i, mode in enumerate(ALL_MODES):
        with g.case(f"linear-values-{mode}"):
            x = acts(24, H, g.rng(40 + i), massive=(mode.endswith("tensor")), zero_row=5)
            _check_linear(g.call("quantized_linear", x.to(dev), w.to(dev), mode), _expected_linear(ref, x, w, mode))
    with g.case("linear-values-more-tokens-than-features"):      # T > H: one output row per token
        x = torch.tensor([[1.0, -2.0, 0.5, 0.25], [127.0, 3.0, -1.0, 2.5], [0.0, 0.0, 0.0, 0.0],
                          [-0.75, 1.5, 3.0, -6.0], [2.0, 2.0, -2.0, 0.125], [0.5, -0.5, 0.25, 1.0]])
        wx = torch.tensor([[1.0, 0.0, 0.0, 4.0], [0.0, -1.0, 2.0, 0.0]])
        _check_linear(g.call("quantized_linear", x.to(dev), wx.to(dev), "int8_token"),
                      _expected_linear(ref, x, wx, "int8_token"))
    pool = acts(160, H, g.rng(50), massive=True, zero_row=99)
    for mode in TOKEN_MODES:
        with g.case(f"invariance-{mode}"):
            victims = rnd.sample(range(160), 3)
            alone = [g.call("quantized_linear", pool[v:v + 1].to(dev), w.to(dev), mode) for v in victims]
            for t, out in enumerate(alone):
                _check_linear(out, _expected_linear(ref, pool[victims[t]:victims[t] + 1], w, mode), name="alone")
            for size in (2, 5, 17, 64, 128):
                others = [r for r in rnd.sample(range(160), size) if r not in victims][: size - len(victims)]
                rows = others + victims
                rnd.shuffle(rows)
                out = g.call("quantized_linear", pool[rows].to(dev), w.to(dev), mode)
                expect_tensor(out, torch.zeros(len(rows), N, device=dev), name=f"batch of {len(rows)}",
                              rtol=1e9, atol=1e9)  # type, shape, device only
                for t, v in enumerate(victims):
                    r = rows.index(v)
                    if not torch.equal(out[r].cpu(), alone[t][0].cpu()):
                        n_diff = int((out[r].cpu() != alone[t][0].cpu()).sum())
                        fail(f"row {r} of a batch of {len(rows)} differs from the same row computed alone "
                             f"in {n_diff} of {N} outputs: not batch invariant")

    # ---- cross-talk
    Hc, Nc = 256, 512
    wc = torch.randn(Nc, Hc, generator=g.rng(60)) / Hc ** 0.5
    victims = acts(16, Hc, g.rng(61))
    normal = acts(31, Hc, g.rng(62))
    massive = acts(31, Hc, g.rng(63), massive=True)
    padded = torch.cat([acts(7, Hc, g.rng(64)), torch.zeros(2, Hc)])
    # one companion with amax 2.5, inside the victims' range (1.06 .. 6.78): it moves only the
    # smaller victims' scales (quantizing all victims with the companions would move every one)
    small = acts(1, Hc, g.rng(65))
    small = small * (2.5 / small.abs().max())
    none = torch.zeros(0, Hc)
    specs = [(m, "normal-companions", normal) for m in ALL_MODES] + \
            [(m, "massive-activation-companion", massive) for m in ALL_MODES] + \
            [("fp8_tensor", "padding-companions", padded), ("int8_token", "no-companions", none),
             ("int8_tensor", "no-companions", none), ("fp8_tensor", "no-companions", none),
             ("int8_tensor", "one-small-companion", small), ("fp8_tensor", "one-small-companion", small)]
    rnd.shuffle(specs)
    for mode, name, comp in specs:
        with g.case(f"cross-talk-{mode}-{name}"):
            got = g.call("cross_talk", victims.to(dev), comp.to(dev), wc.to(dev), mode)
            want = ref.cross_talk(victims, comp, wc, mode)
            if not isinstance(got, dict):
                fail("cross_talk must return a dict")
            for key in ("max_rel_change", "flips"):
                if key not in got:
                    fail(f"missing key {key!r}")
            expect_close(got["max_rel_change"], want["max_rel_change"], name="max_rel_change",
                         rtol=1e-6, atol=1e-12)
            expect_equal(got["flips"], want["flips"], name="flips")

    with g.case("cross-talk-int8_tensor-one-victim"):          # V = 1 is allowed
        got = g.call("cross_talk", victims[:1].to(dev), massive.to(dev), wc.to(dev), "int8_tensor")
        want = ref.cross_talk(victims[:1], massive, wc, "int8_tensor")
        if not isinstance(got, dict) or "max_rel_change" not in got or "flips" not in got:
            fail("cross_talk must return a dict with keys 'max_rel_change' and 'flips'")
        expect_close(got["max_rel_change"], want["max_rel_change"], name="max_rel_change", rtol=1e-6, atol=1e-12)
        expect_equal(got["flips"], want["flips"], name="flips")

    # the statement's victim and companion, w / 8 (every |alone logit| below 1), and an all-zero
    # victim (nothing changes: it counts 0, never 0 / 0)
    ex_victims = torch.tensor([[1.0, -2.0, 0.5, 0.25], [0.0, 0.0, 0.0, 0.0]])
    ex_comp = torch.tensor([[127.0, 3.0, -1.0, 2.5]])
    ex_w = torch.tensor([[1.0, 0.0, 0.0, 4.0], [0.0, -1.0, 2.0, 0.0]]) / 8
    for mode in ("int8_tensor", "int8_token"):
        with g.case(f"cross-talk-{mode}-small-logits-and-a-zero-victim"):
            got = g.call("cross_talk", ex_victims.to(dev), ex_comp.to(dev), ex_w.to(dev), mode)
            want = ref.cross_talk(ex_victims, ex_comp, ex_w, mode)
            if not isinstance(got, dict) or "max_rel_change" not in got or "flips" not in got:
                fail("cross_talk must return a dict with keys 'max_rel_change' and 'flips'")
            expect_close(got["max_rel_change"], want["max_rel_change"], name="max_rel_change", rtol=1e-6, atol=1e-12)
            expect_equal(got["flips"], want["flips"], name="flips")

    # ---- input checks
    x = acts(4, 16, g.rng(70)).to(dev)
    w16 = torch.randn(8, 16, generator=g.rng(71)).to(dev)
    for name, fn, args in [
        ("unknown-mode", "quantize_activations", (x, "fp8")),
        ("one-dimensional", "quantize_activations", (x[0], "int8_token")),
        ("nan", "quantize_activations", (torch.where(x > 1, float("nan"), x), "int8_token")),
        ("float64", "quantize_activations", (x.double(), "int8_token")),
        ("feature-mismatch", "quantized_linear", (x, w16[:, :8].contiguous(), "none")),
        ("unknown-mode", "quantized_linear", (x, w16, "int4_token")),
        ("no-victims", "cross_talk", (x[:0], x, w16, "int8_tensor")),
        ("companion-mismatch", "cross_talk", (x, x[:, :8].contiguous(), w16, "int8_tensor")),
    ]:
        with g.case(f"{fn}-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
