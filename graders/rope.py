"""Hidden grader for rope.

The truth is computed here in float64 from the integer positions (independently of the
reference). Angle tolerance grows with the position: float32 angles are good to about 1e-7
relative, so |err| <= 1e-5 + 2.5e-7 * p, which at p = 100000 is 0.025 rad; a bf16 position
(100000 -> 99840) or a bf16 inv_freq misses by hundreds of radians there and by 1 rad already
at p = 257.

Cases: cos/sin over positions up to 131071 for several head_dims and bases (1e4, 5e5, 1e6);
apply_rope in both pairings with per-row positions (a ragged batch), bf16/float64 inputs
(float64 inputs at a float64 tolerance, 1e-10 + 1e-12 p, that any float32 step misses); the
DOMAIN-NOTES examples (x = [1,2,3,4] and x = [1,0,0,0] at position 1); the relative-position
property (q.k after rotation depends only on the position difference) and the layout
equivalence (half-split of a permuted vector = permuted interleaved), both layouts; position
ids from left-padded masks (and the end-to-end check that a padded row rotates its real tokens
exactly like the same prompt alone), float 0.0/1.0 masks accepted and 0.5/NaN rejected; head_dim
that is a float or bool rejected; bases 1 and 0.5 (any base > 0 is allowed); an integer x rejected; packed positions for chunked prefill in a varlen batch.
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_tensor, fail
from inferprep.grading.perf_stats import PerfWork


def truth_cos_sin(positions, d, base):
    k = torch.arange(0, d, 2, dtype=torch.float64, device=positions.device)
    ang = positions.to(torch.float64)[..., None] * (1.0 / base ** (k / d))
    return torch.cos(ang), torch.sin(ang)


def truth_rope(x, positions, base, interleaved):
    d = x.shape[-1]
    cos, sin = truth_cos_sin(positions, d, base)
    cos, sin = cos[:, None], sin[:, None]
    xf = x.to(torch.float64)
    if interleaved:
        x1, x2 = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).flatten(-2)
    x1, x2 = xf[..., : d // 2], xf[..., d // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)


def angle_tol(positions):
    return 1e-5 + 2.5e-7 * positions.to(torch.float64)


def angle_tol_float64(positions):
    """A float64 computation (any order: base ** (-2k/d), 1 / base ** (2k/d), exp(-2k/d * log(base)),
    complex polar) is off by a few 1e-16 relative in inv_freq, so by <= ~2e-15 p rad in the angle and
    ~1e-15 |x| in the rotation: 1e-10 + 1e-12 p leaves a margin of several hundred. Any float32 step
    (x, cos/sin, inv_freq or the products) costs at least 2**-24 relative, ~6e-8 |x|: a miss by 300x at
    small positions, and by 1e4x or more at large ones (float32 inv_freq: ~6e-8 p rad)."""
    return 1e-10 + 1e-12 * positions.to(torch.float64)


def check_close(name, got, want, tol, positions_for_msg=None):
    """|got - want| <= tol elementwise (tol broadcast); the message names the worst position."""
    err = (got.detach().double().cpu() - want.double().cpu()).abs()
    bad = err > tol.cpu()
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        where = ""
        if positions_for_msg is not None:
            where = f" (position {int(positions_for_msg[idx])})"
        fail(f"{name}: {int(bad.sum())} of {err.numel()} values out of tolerance; first at index {idx}{where}, "
             f"error {float(err[idx]):.3g} > allowed {float(tol.expand_as(err)[idx]):.3g}")


def _call_cos_sin(g: Grading, positions, d, base):
    out = g.call("rope_cos_sin", positions, d, base=base)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail("rope_cos_sin must return (cos, sin)")
    shape = tuple(positions.shape) + (d // 2,)
    for nm, t in zip(("cos", "sin"), out):
        expect_tensor(t, torch.zeros(shape, device=g.device), name=nm, rtol=math.inf, atol=math.inf)
    return out


def _check_cos_sin(g: Grading, positions, d, base) -> None:
    cos, sin = _call_cos_sin(g, positions, d, base)
    wc, ws = truth_cos_sin(positions, d, base)
    tol = angle_tol(positions)[..., None].cpu()
    pm = positions[..., None].expand(wc.shape).cpu()
    check_close("cos", cos, wc, tol, pm)
    check_close("sin", sin, ws, tol, pm)


def _check_apply(g: Grading, x, positions, base, interleaved, name="output"):
    _verify_apply(g.call("apply_rope", x, positions, base=base, interleaved=interleaved), x, positions, base,
                  interleaved, name)


def _verify_apply(out, x, positions, base, interleaved, name="output"):
    want = truth_rope(x, positions, base, interleaved)
    expect_tensor(out, want.to(x.dtype), name=name, rtol=math.inf, atol=math.inf)
    m = 2.0 * float(x.double().abs().max())
    if x.dtype == torch.float64:   # float64 angles and rotation: float32 anywhere misses by >= 1e-8 |x|
        tol = angle_tol_float64(positions)[:, None, :, None].cpu() * m
    else:
        tol = angle_tol(positions)[:, None, :, None].cpu() * m
    if x.dtype in (torch.bfloat16, torch.float16):
        tol = tol + 8e-3 * want.abs().cpu() + 1e-6
    check_close(name, out, want, tol, positions[:, None, :, None].expand(want.shape).cpu())


def _expect_ids(g: Grading, mask, want):
    got = g.call("position_ids_from_mask", mask)
    expect_tensor(got, want.to(g.device), name="position_ids")


def _positions(trial: Trial, shape) -> torch.Tensor:
    """Positions anywhere up to 131071, or all below 512 (where bf16 arithmetic shows first)."""
    hi = trial.rng.choice([512, 131072])
    return torch.randint(0, hi, shape, generator=trial.generator())


def _ce_cos_sin(g: Grading, trial: Trial) -> None:
    d, base = 2 * trial.rng.randint(1, 8), trial.rng.choice([10000.0, 500000.0, 1000000.0])
    positions = _positions(trial, (trial.size,)).to(g.device)
    g.show_input(positions=positions, head_dim=d, base=base)
    _check_cos_sin(g, positions, d, base)


def _ce_apply(g: Grading, trial: Trial) -> None:
    rng = trial.rng
    B, L, d = rng.randint(1, 2), trial.size, 2 * rng.randint(1, 4)
    dtype = rng.choice([torch.float32, torch.float32, torch.float64, torch.bfloat16])
    base, inter = rng.choice([10000.0, 500000.0]), rng.random() < 0.5
    x = torch.randn(B, 1, L, d, generator=trial.generator(), dtype=torch.float64).to(dtype).to(g.device)
    positions = _positions(trial, (B, L)).to(g.device)
    g.show_input(x=x, positions=positions, base=base, interleaved=inter)
    _check_apply(g, x, positions, base, inter)


def _ce_ids(g: Grading, trial: Trial) -> None:
    rng, B, L = trial.rng, trial.rng.randint(1, 3), trial.size + 1
    lens = [rng.randint(0, L) for _ in range(B)]
    left = rng.random() < 0.7
    mask = torch.tensor([[int((i >= L - n) if left else (i < n)) for i in range(L)] for n in lens])
    want = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    mask = mask.to(rng.choice([torch.int64, torch.int32, torch.bool, torch.float32, torch.float16])).to(g.device)
    g.show_input(attention_mask=mask)
    _expect_ids(g, mask, want)


def _ce_packed(g: Grading, trial: Trial) -> None:
    rng = trial.rng
    comp = [rng.choice([0, rng.randint(0, 20), rng.randint(0, 131072)]) for _ in range(rng.randint(0, trial.size))]
    sched = [rng.randint(0, 4) for _ in comp]
    g.show_input(num_computed=comp, num_scheduled=sched)
    got = g.call("packed_positions", comp, sched, device=str(g.device))
    want = torch.cat([torch.arange(a, a + n) for a, n in zip(comp, sched)]) if comp else torch.zeros(0, dtype=torch.int64)
    expect_tensor(got, want.to(torch.int64).to(g.device), name="positions")


_CE_KINDS = {"cos-sin-": _ce_cos_sin, "apply-": _ce_apply, "x-1-": _ce_apply, "relative-position": _ce_apply,
             "layout-equivalence": _ce_apply, "left-padded": _ce_apply, "position-ids-": _ce_ids,
             "packed-positions-": _ce_packed}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of a failed case's kind: a few positions (all below 512, or up to
    131071) for cos/sin or a rotation of 1-2 rows in any dtype and layout, a padded mask, or a
    short packed schedule; checked against the float64 truth at the grader's tolerances."""
    _CE_KINDS[trial.pick({prefix: prefix for prefix in _CE_KINDS}) or "apply-"](g, trial)


def grade(g: Grading) -> None:
    dev = g.device

    # -- cos / sin ------------------------------------------------------------------------------
    special = torch.tensor([0, 1, 2, 255, 256, 257, 4097, 15962, 65505, 99999, 100000, 131071])
    cs_cases = [(128, 10000.0), (64, 500000.0), (8, 1000000.0), (2, 10000.0), (96, 10000.0)]
    for c, (d, base) in enumerate(cs_cases):
        with g.case(f"cos-sin-d{d}-base{base:g}"):
            rand = torch.randint(0, 131072, (3, 40), generator=g.rng(10 + c))
            for positions in (special.to(dev), rand.to(dev)):
                _check_cos_sin(g, positions, d, base)
    with g.case("cos-sin-base-1-and-0.5"):   # any base > 0 is allowed: 1 gives angle = p in every pair
        _check_cos_sin(g, special.to(dev), 4, 1.0)
        _check_cos_sin(g, torch.randint(0, 65, (2, 9), generator=g.rng(16)).to(dev), 8, 0.5)
    with g.case("cos-sin-256-vs-257-differ"):   # DOMAIN-NOTES I12: bf16 makes these identical
        cos, sin = _call_cos_sin(g, torch.tensor([256, 257], device=dev), 4, 10000.0)
        if float((cos[0] - cos[1]).abs().max()) < 0.1:
            fail("positions 256 and 257 got the same angles (are positions rounded to bfloat16?)")
    # -- apply_rope -----------------------------------------------------------------------------
    with g.case("x-1-2-3-4-pos-1-both-layouts"):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=dev).view(1, 1, 1, 4)
        p = torch.ones(1, 1, dtype=torch.int64, device=dev)
        _check_apply(g, x, p, 10000.0, False, "half-split")
        _check_apply(g, x, p, 10000.0, True, "interleaved")
    with g.case("x-1-0-0-0-interleaved-flag-honoured"):   # DOMAIN-NOTES I11
        x = torch.tensor([1.0, 0.0, 0.0, 0.0], device=dev).view(1, 1, 1, 4)
        p = torch.ones(1, 1, dtype=torch.int64, device=dev)
        _check_apply(g, x, p, 10000.0, True, "interleaved")
        _check_apply(g, x, p, 10000.0, False, "half-split")
    ragged = [  # (B, H, L, D, base, offsets per row)
        (3, 2, 7, 16, 10000.0, [0, 5, 130]),
        (2, 4, 5, 64, 500000.0, [99995, 0]),
        (4, 1, 3, 8, 10000.0, [256, 15960, 65500, 131000]),
    ]
    for c, (b, h, l, d, base, offs) in enumerate(ragged):
        for inter in (False, True):
            with g.case(f"apply-ragged-B{b}-D{d}-{'interleaved' if inter else 'half-split'}"):
                x = torch.randn(b, h, l, d, generator=g.rng(100 + c), dtype=torch.float64).float().to(dev)
                pos = (torch.tensor(offs)[:, None] + torch.arange(l)[None, :]).to(dev)
                _check_apply(g, x, pos, base, inter)
    for c, dt in enumerate((torch.bfloat16, torch.float64)):
        for inter in (False, True):
            with g.case(f"apply-{str(dt).split('.')[-1]}-{'interleaved' if inter else 'half-split'}"):
                x = torch.randn(2, 2, 6, 32, generator=g.rng(200 + c), dtype=torch.float64).to(dt).to(dev)
                pos = torch.randint(0, 120000, (2, 6), generator=g.rng(210 + c)).to(dev)
                _check_apply(g, x, pos, 10000.0, inter)

    for c, (b, l, d, base, hi) in enumerate([(3, 9, 16, 10000.0, 64), (2, 5, 128, 500000.0, 131072)]):
        for inter in (False, True):   # float64 inputs: float64 angles, cos/sin and rotation
            with g.case(f"apply-float64-precision-D{d}-{'interleaved' if inter else 'half-split'}"):
                x = torch.randn(b, 2, l, d, generator=g.rng(230 + c), dtype=torch.float64).to(dev)
                pos = torch.randint(0, hi, (b, l), generator=g.rng(240 + c)).to(dev)
                _check_apply(g, x, pos, base, inter)

    for inter in (False, True):   # small positions: the angle tolerance is tight, bf16 arithmetic shows
        with g.case(f"apply-bfloat16-small-positions-{'interleaved' if inter else 'half-split'}"):
            x = torch.randn(4, 2, 16, 64, generator=g.rng(220), dtype=torch.float64).to(torch.bfloat16).to(dev)
            pos = torch.randint(0, 64, (4, 16), generator=g.rng(221)).to(dev)
            _check_apply(g, x, pos, 10000.0, inter)

    # properties
    for inter in (False, True):
        with g.case(f"relative-position-property-{'interleaved' if inter else 'half-split'}"):
            d = 32
            q = torch.randn(1, 1, 1, d, generator=g.rng(300), dtype=torch.float64).float().to(dev)
            k = torch.randn(1, 1, 1, d, generator=g.rng(301), dtype=torch.float64).float().to(dev)
            dots = []
            for m, n in [(7, 3), (1007, 1003), (50004, 50000), (4, 0)]:
                rq = g.call("apply_rope", q, torch.tensor([[m]], device=dev), interleaved=inter)
                rk = g.call("apply_rope", k, torch.tensor([[n]], device=dev), interleaved=inter)
                expect_tensor(rq, q, name="rotated q", rtol=math.inf, atol=math.inf)
                expect_tensor(rk, k, name="rotated k", rtol=math.inf, atol=math.inf)
                dots.append(float((rq.double() * rk.double()).sum()))
            spread = max(dots) - min(dots)
            if spread > 0.05:
                fail(f"q.k after rotation should depend only on m - n = 4, but over (m, n) = (7, 3), (1007, 1003), "
                     f"(50004, 50000), (4, 0) it varies by {spread:.3g} (pairs not rotated as 2-D rotations "
                     "of one angle each?)")
    with g.case("layout-equivalence"):
        d = 16
        perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])   # interleaved -> half-split order
        x = torch.randn(1, 2, 5, d, generator=g.rng(310), dtype=torch.float64).float().to(dev)
        pos = torch.tensor([[3, 4, 5, 6, 700]], device=dev)
        a = g.call("apply_rope", x[..., perm], pos, interleaved=False)
        b = g.call("apply_rope", x, pos, interleaved=True)
        expect_tensor(a, x, name="half-split", rtol=math.inf, atol=math.inf)
        expect_tensor(b, x, name="interleaved", rtol=math.inf, atol=math.inf)
        expect_tensor(a, b[..., perm], name="half-split(x[perm]) vs interleaved(x)[perm]", rtol=1e-5, atol=1e-5)
    # -- position ids from a padded mask ----------------------------------------------------------
    with g.case("position-ids-domain-notes"):
        _expect_ids(g, torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], device=dev),
                   torch.tensor([[1, 1, 0, 1, 2], [0, 1, 2, 3, 4]]))
        _expect_ids(g, torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]], device=dev), torch.tensor([[1, 1, 0, 1], [0, 1, 2, 3]]))
    with g.case("position-ids-random-left-padding"):
        lens = torch.randint(0, 13, (6,), generator=g.rng(400))
        mask = (torch.arange(12)[None, :] >= 12 - lens[:, None]).long()
        want = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        _expect_ids(g, mask.to(dev), want)
    with g.case("position-ids-right-padding-and-bool"):
        mask = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]], device=dev)
        _expect_ids(g, mask, torch.tensor([[0, 1, 2, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 1]]))
        _expect_ids(g, mask.bool(), torch.tensor([[0, 1, 2, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 1]]))
    with g.case("position-ids-float-mask"):   # floating masks of exact 0.0 / 1.0 are accepted
        mask = torch.tensor([[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]], device=dev)
        _expect_ids(g, mask, torch.tensor([[1, 1, 0, 1], [0, 1, 2, 1]]))
        _expect_ids(g, mask.half(), torch.tensor([[1, 1, 0, 1], [0, 1, 2, 1]]))
    with g.case("left-padded-batch-equals-each-prompt-alone"):   # DOMAIN-NOTES I10
        lens, L, d = [2, 4, 7], 7, 16
        mask = torch.stack([(torch.arange(L) >= L - n).long() for n in lens]).to(dev)
        pos = g.call("position_ids_from_mask", mask)
        expect_tensor(pos, (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1), name="position_ids")
        x = torch.randn(3, 2, L, d, generator=g.rng(410), dtype=torch.float64).float().to(dev)
        for inter in (False, True):
            batched = g.call("apply_rope", x, pos, interleaved=inter)
            for r, n in enumerate(lens):
                alone = truth_rope(x[r:r + 1, :, L - n:], torch.arange(n, device=dev)[None], 10000.0, inter)
                check_close(f"row {r} (prompt of {n} tokens, left-padded to {L}) real tokens, "
                            f"{'interleaved' if inter else 'half-split'}",
                            batched[r:r + 1, :, L - n:], alone, torch.tensor(1e-5))

    # -- packed (varlen) positions -------------------------------------------------------------------
    pk_cases = [([0, 0, 0], [3, 1, 4]), ([5, 0, 17], [1, 3, 2]), ([100000], [3]), ([3, 9], [0, 2]), ([], []),
                ([7, 7, 7, 7], [1, 1, 1, 1])]
    for c, (comp, sched) in enumerate(pk_cases):
        with g.case(f"packed-positions-{c}"):
            got = g.call("packed_positions", comp, sched, device=str(dev))
            want = torch.cat([torch.arange(a, a + n) for a, n in zip(comp, sched)]) if comp else torch.zeros(0, dtype=torch.int64)
            expect_tensor(got, want.to(torch.int64).to(dev), name="positions")
    # -- input checks (scored beside the verdict; run last) ----------------------------------------
    pos2 = torch.tensor([1, 2], device=dev)
    x = torch.zeros(1, 1, 3, 4, device=dev)
    x2 = torch.zeros(2, 1, 3, 4, device=dev)
    p3 = torch.zeros(1, 3, dtype=torch.int64, device=dev)
    checks = [
        ("cos-sin-rejects-odd-head-dim", "rope_cos_sin", (pos2, 7), {}),
        ("cos-sin-rejects-float-positions", "rope_cos_sin", (pos2.float(), 8), {}),
        ("cos-sin-rejects-bool-positions", "rope_cos_sin", (torch.tensor([True, False], device=dev), 8), {}),
        ("cos-sin-rejects-negative-positions", "rope_cos_sin", (torch.tensor([-1, 2], device=dev), 8), {}),
        ("cos-sin-rejects-base-0", "rope_cos_sin", (pos2, 8), {"base": 0.0}),
        ("cos-sin-rejects-head-dim-true", "rope_cos_sin", (pos2, True), {}),
        ("cos-sin-rejects-head-dim-8.0", "rope_cos_sin", (pos2, 8.0), {}),
        ("apply-rejects-positions-of-another-length", "apply_rope", (x, torch.zeros(1, 4, dtype=torch.int64, device=dev)), {}),
        ("apply-rejects-1d-positions", "apply_rope", (x2, torch.arange(3, device=dev)), {}),
        ("apply-rejects-1d-positions-batch-1", "apply_rope", (x, torch.arange(3, device=dev)), {}),
        ("apply-rejects-odd-head-dim", "apply_rope", (torch.zeros(1, 1, 3, 5, device=dev), p3), {}),
        ("apply-rejects-float-positions", "apply_rope", (x, p3.float()), {}),
        ("apply-rejects-bool-positions", "apply_rope", (x, p3.bool()), {}),
        ("apply-rejects-negative-positions", "apply_rope", (x, p3 - 1), {}),
        ("apply-rejects-3d-x", "apply_rope", (x[0], p3), {}),
        ("apply-rejects-integer-x", "apply_rope", (torch.zeros(1, 1, 3, 4, dtype=torch.int64, device=dev), p3), {}),
        ("position-ids-rejects-value-2", "position_ids_from_mask", (torch.tensor([[0, 2, 1]], device=dev),), {}),
        ("position-ids-rejects-1d-mask", "position_ids_from_mask", (torch.tensor([1, 1, 1], device=dev),), {}),
        ("position-ids-rejects-0.5", "position_ids_from_mask", (torch.tensor([[0.0, 0.5, 1.0]], device=dev),), {}),
        ("position-ids-rejects-nan", "position_ids_from_mask", (torch.tensor([[1.0, float("nan")]], device=dev),), {}),
        ("packed-positions-rejects-lengths-that-differ", "packed_positions", ([0, 1], [2]), {}),
        ("packed-positions-rejects-negative-scheduled", "packed_positions", ([0], [-1]), {}),
        ("packed-positions-rejects-negative-computed", "packed_positions", ([-2], [1]), {}),
    ]
    for name, fn, args, kwargs in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kwargs)


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's call: apply_rope (half-split) to fresh float32 activations (B, H, L, D) =
    (4, 32, 1024, 128) on CUDA, (2, 8, 256, 64) on CPU, each row's positions starting at a random
    offset below 100000. Bandwidth-bound: x read and the output written once, positions read."""
    b, h, l, d = (4, 32, 1024, 128) if g.device.type == "cuda" else (2, 8, 256, 64)
    x = torch.randn(b, h, l, d, generator=rng).to(g.device)
    start = torch.randint(0, 100_000, (b, 1), generator=rng)
    positions = (start + torch.arange(l)).to(g.device)
    out = side.timed_call("apply_rope", x, positions, base=10000.0, interleaved=False)
    _verify_apply(out, x, positions, 10000.0, False)
    return PerfWork(bytes_moved=2 * 4 * x.numel() + 8 * positions.numel())
