"""Hidden grader for flash-attention-backward.

The truth is torch.autograd through naive attention in float64 on the same (already rounded)
inputs; O and lse handed to the submission come from that float64 forward, rounded to the
input dtype (O) and to float32 (lse; float64 for float64 inputs), as a real forward kernel
would have saved them. Cases: lengths no block divides, causal and not, one-row blocks,
scores around -150 (lse far from 0, so an unscaled or shifted exponent is visible), an explicit
scale != 1/sqrt(d) (so an unscaled logsumexp cannot hide), bf16/fp16/float64, and a long causal
case (N = 12288, float32) where an N x N float32 matrix alone exceeds the memory limit, once
with 256 x 256 tiles and once with block_q = N, block_k = 64 (a B_q x N row block is N x N
again); and a bf16 case with a large D = rowsum(dO * O), where D rounded to bf16 is visible; and a bf16
case where most products dO * O round upwards in bf16, so D from bf16 products is visible.
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_tensor, fail

TOL = {  # (rtol, atol as a fraction of max |want| of that gradient) per input dtype
    torch.float64: (1e-9, 1e-10),
    torch.float32: (2e-4, 5e-4),
    torch.bfloat16: (1e-2, 8e-3),
    torch.float16: (2e-3, 1e-3),
}
FLOOR = 4.0
"""Each element may also be off by FLOOR * d * u * mag, u the unit roundoff of the computation
(2^-24 in float32, 2^-53 in float64) and mag the same gradient computed from absolute values
(|dO| |V|^T + rowsum |dO o O| in place of dP - D). That bounds what rounding dP and D to the
working precision can leave where they cancel; without it, a gradient that is exactly 0 (one key
per row, scale 0, values equal across keys) gets a zero tolerance, and a solution that sums D
in float64 fails where the float32 reference happens to round both sides alike."""


def unit_roundoff(dtype):
    return 2.0 ** -53 if dtype == torch.float64 else 2.0 ** -24


def magnitudes(p, q, k, v, o, do, scale):
    """(mag_dq, mag_dk, mag_dv) in float64: the gradients with every term replaced by its absolute
    value; p is the probability matrix (rows = queries of q/do/o, columns = keys of k/v)."""
    a = do.abs() @ v.abs().transpose(-1, -2) + (do * o).abs().sum(-1, keepdim=True)
    pa = p * a
    return (abs(scale) * pa @ k.abs(), abs(scale) * pa.transpose(-1, -2) @ q.abs(),
            p.transpose(-1, -2) @ do.abs())


def expect_grad(name, got, want, mag, dtype, rtol, atol_frac, acc_dtype):
    """|got - want| <= rtol |want| + atol_frac max|want| + FLOOR d u mag, elementwise."""
    expect_tensor(got, want.to(dtype), name=name, rtol=math.inf, atol=math.inf)   # type, shape, dtype, NaN/inf
    d = want.shape[-1]
    w = want.double().cpu()
    tol = rtol * w.abs() + atol_frac * float(w.abs().max()) + FLOOR * d * unit_roundoff(acc_dtype) * mag.double().cpu()
    err = (got.detach().double().cpu() - w).abs()
    bad = err > tol
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        fail(f"{name}: {int(bad.sum())} of {err.numel()} values out of tolerance (rtol={rtol:g}, atol={atol_frac:g} "
             f"of max|{name}|, plus the rounding floor); first at index {idx}, error {float(err[idx]):.3g} > "
             f"allowed {float(tol[idx]):.3g}; largest abs error {float(err.max()):.3g}")


def naive(q, k, v, causal, scale):
    n = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def truth(q, k, v, do, causal, scale):
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    o, lse = naive(q64, k64, v64, causal, scale)
    o.backward(do.double())
    return o.detach(), lse.detach(), (q64.grad, k64.grad, v64.grad)


def unpack(out):
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        fail("flash_attention_backward must return a triple (dq, dk, dv)")
    return out


def check_backward(g, q, k, v, do, causal, block_q, block_k, scale=None, pass_scale=False):
    d, n = q.shape[-1], q.shape[-2]
    sc = 1.0 / math.sqrt(d) if scale is None else scale
    o, lse, grads = truth(q, k, v, do, causal, sc)
    lse_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    kwargs = {"causal": causal, "block_q": block_q, "block_k": block_k}
    if scale is not None or pass_scale:
        kwargs["scale"] = scale
    o_given = o.to(q.dtype)
    out = unpack(g.call("flash_attention_backward", q, k, v, o_given, lse.to(lse_dtype), do, **kwargs))
    s = (q.double() @ k.double().transpose(-1, -2)) * sc
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    mags = magnitudes(torch.softmax(s, -1), q.double(), k.double(), v.double(), o_given.double(), do.double(), sc)
    rtol, atol = TOL[q.dtype]
    for name, got, want, mag in zip(("dq", "dk", "dv"), out, grads, mags):
        expect_grad(name, got, want, mag, q.dtype, rtol, atol, lse_dtype)


_CE_KINDS = {"backward-": "random", "backward-float64": "float64", "backward-bfloat16-": "bfloat16",
             "backward-float16-": "float16", "backward-explicit-scale": "scale", "scale-zero": "scale",
             "backward-scale-None-explicit": "scale-None", "very-negative-rows-": "very-negative",
             "single-key-tile-covers-all": "random", "many-key-tiles": "random", "one-key-per-row-": "random",
             "values-equal-across-keys": "equal-values", "backward-bfloat16-N512-d128-large-D": "large-D",
             "backward-bfloat16-N256-d128-products-round-up": "products-round-up"}
_CE_DTYPES = {"float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A tiny backward of the kind a failed case tests: a few rows with block sizes that need not
    divide N (causal or not, the failed case's dtype, an explicit, zero or explicit-None scale,
    rows of scores near -150, values equal across keys), or a few bf16 rows of width 128 where D
    is large or its products round upwards. The long cases test memory: no small input shows them."""
    kind = trial.pick(_CE_KINDS)
    if kind is None:
        return False
    rng, dev = trial.rng, g.device
    gen = trial.generator()
    n, d = rng.randint(1, trial.size + 4), rng.randint(1, 4)
    bq, bk = rng.randint(1, n + 2), rng.randint(1, n + 2)
    causal = rng.random() < 0.6
    scale = {"scale": rng.choice([0.0, 0.05]), "random": rng.choice([None, None, round(rng.uniform(0.05, 2.0), 3), 0.0])}.get(kind)
    q, k, v, do = (torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64) for _ in range(4))
    dt = _CE_DTYPES.get(kind, torch.float32)
    if kind == "very-negative":          # lse near -150: an exponent not taken against lse shows
        k = 1.0 + 0.05 * k
        q[..., ::2, :] = -150.0 / math.sqrt(d)
    elif kind == "equal-values":
        v = v[..., :1, :].expand(1, 1, n, d).contiguous()
    elif kind == "large-D":              # D = rowsum(dO * O) ~ 128: bf16 spacing 0.5 there
        d, dt = 128, torch.bfloat16
        q, k = (torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64) for _ in range(2))
        v, do = (1.0 + torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64) for _ in range(2))
    elif kind == "products-round-up":    # each dO * O rounds upwards in bf16: D from bf16 products is too large
        d, dt = 128, torch.bfloat16
        q, k = (torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64) for _ in range(2))
        v, do = _rounds_up_products(gen, n, d, 112)
    q, k, v, do = (x.to(dt).to(dev) for x in (q, k, v, do))
    g.show_input(q=q, k=k, v=v, do=do, causal=causal, block_q=bq, block_k=bk, scale=scale)
    check_backward(g, q, k, v, do, causal, bq, bk, scale=scale, pass_scale=kind == "scale-None")
    return None


def grade(g: Grading) -> None:
    dev = g.device

    def rnd(seed, *shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g.rng(seed), dtype=torch.float64).to(dtype).to(dev)

    shapes = [  # (B, H, N, d, block_q, block_k, causal)
        (1, 1, 64, 16, 16, 16, False),
        (2, 3, 100, 16, 32, 24, False),
        (2, 3, 100, 16, 32, 24, True),
        (1, 2, 77, 8, 16, 64, True),
        (1, 2, 77, 8, 64, 16, True),
        (1, 1, 5, 4, 64, 64, True),
        (1, 1, 37, 8, 1, 1, True),
        (1, 1, 130, 32, 7, 13, False),
        (3, 1, 1, 8, 16, 16, True),
    ]
    for c, (b, h, n, d, bq, bk, causal) in enumerate(shapes):
        with g.case(f"backward-N{n}-d{d}-bq{bq}-bk{bk}-{'causal' if causal else 'full'}"):
            q, k, v, do = (rnd(100 * c + t, b, h, n, d) for t in range(4))
            check_backward(g, q, k, v, do, causal, bq, bk)

    with g.case("backward-float64"):
        q, k, v, do = (rnd(900 + t, 2, 2, 45, 8, dtype=torch.float64) for t in range(4))
        check_backward(g, q, k, v, do, True, 16, 8)
    for dt in (torch.bfloat16, torch.float16):
        with g.case(f"backward-{str(dt).split('.')[-1]}-N300"):
            q, k, v, do = (rnd(950 + t, 1, 2, 300, 32, dtype=dt) for t in range(4))
            check_backward(g, q, k, v, do, True, 64, 48)
    for dt in (torch.bfloat16, torch.float16):   # 64 x 64 tiles: partial sums must be float32
        with g.case(f"backward-{str(dt).split('.')[-1]}-N1024-blocks-16"):
            q, k, v, do = (rnd(960 + t, 1, 1, 1024, 32, dtype=dt) for t in range(4))
            check_backward(g, q, k, v, do, False, 16, 16)
    with g.case("backward-explicit-scale-0.05"):
        q, k, v, do = (rnd(970 + t, 1, 2, 50, 8) for t in range(4))
        check_backward(g, q, k, v, do, True, 16, 16, scale=0.05)
    with g.case("backward-scale-None-explicit"):
        q, k, v, do = (rnd(975 + t, 1, 1, 40, 16) for t in range(4))
        check_backward(g, q, k, v, do, False, 16, 16, pass_scale=True)
    for causal in (False, True):
        with g.case(f"very-negative-rows-{'causal' if causal else 'full'}"):
            n, d = 70, 16
            k = (1.0 + 0.05 * torch.randn(1, 1, n, d, generator=g.rng(980), dtype=torch.float64)).float().to(dev)
            q = rnd(981, 1, 1, n, d)
            q[..., ::3, :] = -150.0 / math.sqrt(d)
            v, do = rnd(982, 1, 1, n, d), rnd(983, 1, 1, n, d)
            check_backward(g, q, k, v, do, causal, 16, 32)
    with g.case("single-key-tile-covers-all"):   # one K tile: per-tile shortcuts look right here ...
        q, k, v, do = (rnd(990 + t, 1, 1, 24, 8) for t in range(4))
        check_backward(g, q, k, v, do, False, 8, 64)
    with g.case("many-key-tiles"):               # ... and wrong here
        q, k, v, do = (rnd(995 + t, 1, 1, 24, 8) for t in range(4))
        check_backward(g, q, k, v, do, False, 24, 5)

    # exact zeros: one key per row (dS = P (dP - D) = 0), scale 0 (dQ = dK = 0 whatever dS), and values
    # equal across keys (dP_ij = dO_i . v = D_i, so dS cancels to rounding). A float32 solution
    # leaves rounding noise of about u * |D| there; the tolerance's floor allows it, and more
    # precision (D summed in float64) can only shrink it.
    with g.case("one-key-per-row-gradients-exactly-0"):
        q, k, v, do = (rnd(1020 + t, 2, 3, 1, 64) for t in range(4))
        check_backward(g, q, k, v, do, True, 16, 16)
    with g.case("scale-zero"):   # scale = 0.0 is a scale, not "use the default"
        q, k, v, do = (rnd(1030 + t, 1, 2, 40, 8) for t in range(4))
        check_backward(g, q, k, v, do, True, 16, 8, scale=0.0)
    with g.case("values-equal-across-keys"):
        q, k, do = (rnd(1040 + t, 1, 2, 48, 16) for t in range(3))
        v = rnd(1043, 1, 2, 1, 16).expand(1, 2, 48, 16).contiguous()
        check_backward(g, q, k, v, do, True, 16, 8)

    with g.case("long-causal-N12288-no-NxN"):
        _long_case(g, rnd, 12288, 32, 256, 256, 3000, 160)

    # one query tile: a B_q x N row block (the whole query tile against every key, torch.softmax,
    # lse never read) is N x N again, 576 MiB; a real B_q x B_k tile is 3 MiB
    with g.case("long-causal-N12288-bq12288-bk64-no-rowblock"):
        _long_case(g, rnd, 12288, 8, 12288, 64, 3100, 96)

    # V and dO share a positive offset, so D = rowsum(dO * O) is large (~ d) while dP - D is O(1):
    # D rounded to bf16 (spacing 0.5 near 128) shifts every dS by far more than the tolerance.
    with g.case("backward-bfloat16-N512-d128-large-D"):
        n, d = 512, 128
        q, k = rnd(1010, 1, 1, n, d, dtype=torch.bfloat16), rnd(1011, 1, 1, n, d, dtype=torch.bfloat16)
        v = (1.0 + torch.randn(1, 1, n, d, generator=g.rng(1012), dtype=torch.float64)).to(torch.bfloat16).to(dev)
        do = (1.0 + torch.randn(1, 1, n, d, generator=g.rng(1013), dtype=torch.float64)).to(torch.bfloat16).to(dev)
        check_backward(g, q, k, v, do, True, 64, 64)

    # D's products taken in bf16 (dO * O rounded per element, then summed in float32): rounding
    # errors of random products cancel in the sum, so here 112 of the 128 columns of V are equal
    # across keys (O there is exactly that value, whatever P) and dO is chosen so that each of
    # those products rounds upwards in bf16 by 0.35 to 0.5 of a spacing: D in float32 is exact,
    # D from bf16 products is about 0.6 too large, several times the tolerance.
    with g.case("backward-bfloat16-N256-d128-products-round-up"):
        n, d = 256, 128
        q, k = rnd(1050, 1, 1, n, d, dtype=torch.bfloat16), rnd(1051, 1, 1, n, d, dtype=torch.bfloat16)
        v, do = _rounds_up_products(g.rng(1052), n, d, 112)
        check_backward(g, q, k, v.to(dev), do.to(dev), True, 64, 64)


    # -- input checks (scored beside the verdict; run last) ----------------------------------------
    q = rnd(999, 1, 1, 8, 4)
    lse = torch.zeros(1, 1, 8, device=dev)
    checks = [
        ("rejects-do-of-another-shape", (q, q, q, q, lse, q[..., :7, :]), {}),
        ("rejects-lse-of-another-shape", (q, q, q, q, lse[..., :7], q), {}),
        ("rejects-3d-input", (q[0], q[0], q[0], q[0], lse[0], q[0]), {}),
        ("rejects-dtypes-that-differ", (q, q, q.double(), q, lse, q), {}),
        ("rejects-integer-dtype", (q.long(), q.long(), q.long(), q.long(), lse, q.long()), {}),
        ("rejects-block_k-0", (q, q, q, q, lse, q), {"block_k": 0}),
        ("rejects-block_q-0-causal", (q, q, q, q, lse, q), {"block_q": 0, "causal": True}),
        ("rejects-negative-block_q", (q, q, q, q, lse, q), {"block_q": -1}),
        ("rejects-negative-block_k", (q, q, q, q, lse, q), {"block_k": -16}),
    ]
    for name, args, kwargs in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", "flash_attention_backward", *args, **kwargs)

def _rounds_up_products(gen, n, d, m):
    """v, do of shape (1, 1, n, d) in bf16: v's first m columns hold one value per column for every
    key (bf16 mantissa with its last bit set), and do in those columns is picked, per element, among
    the 128 bf16 values in [1, 2) whose exact product with that value rounds upwards in bf16 by
    0.35 to 0.5 of a spacing; the remaining columns of both are 1 + N(0, 1)."""
    bf = torch.bfloat16
    w = 1.0 + (2 * torch.randint(0, 63, (m,), generator=gen).double() + 1) / 128   # 1 + 127/128 never rounds up
    cand = 1.0 + torch.arange(128, dtype=torch.float64) / 128
    prod = cand[None, :] * w[:, None]                                             # (m, 128), exact in float64
    spacing = torch.ldexp(torch.ones_like(prod), torch.frexp(prod).exponent - 8)
    up = (prod.to(bf).double() - prod) / spacing
    ok = ((up >= 0.35) & (up <= 0.5)).double()                                    # every row has some
    pick = (ok * (1.0 + torch.rand(n, m, 128, generator=gen, dtype=torch.float64))).argmax(-1)   # (n, m)
    v = 1.0 + torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64)
    do = 1.0 + torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64)
    v[..., :m] = w
    do[..., :m] = cand[pick]
    return v.to(bf), do.to(bf)


def _long_case(g, rnd, n, d, bq, bk, seed, samples):
    """Causal float32 backward at length n; float64 truth on sampled query rows (dq) and key rows (dk, dv)."""
    dev = g.device
    q, k, v, do = (rnd(seed + t, 1, 1, n, d) for t in range(4))
    o, lse = _forward(q, k, v)
    out = unpack(g.call("flash_attention_backward", q, k, v, o, lse, do, causal=True, block_q=bq, block_k=bk))
    for name, got in zip(("dq", "dk", "dv"), out):
        expect_tensor(got, q, name=name, rtol=math.inf, atol=math.inf)   # type, shape, dtype, NaN
    q64, k64, v64, do64 = (t[0, 0].double() for t in (q, k, v, do))
    L, D = lse[0, 0].double(), (do64 * o[0, 0].double()).sum(-1)
    sc = 1.0 / math.sqrt(d)
    idx = torch.arange(n, device=dev)
    rows = torch.randperm(n, generator=g.rng(seed + 10))[:samples].sort().values.to(dev)
    p = torch.exp((q64[rows] @ k64.T * sc).masked_fill(idx[None, :] > rows[:, None], -math.inf) - L[rows, None])
    ds = p * (do64[rows] @ v64.T - D[rows, None])
    dq_want = sc * ds @ k64
    cols = torch.randperm(n, generator=g.rng(seed + 11))[:samples].sort().values.to(dev)
    p = torch.exp((q64 @ k64[cols].T * sc).masked_fill(cols[None, :] > idx[:, None], -math.inf) - L[:, None])
    dv_want = p.T @ do64
    ds = p * (do64 @ v64[cols].T - D[:, None])
    dk_want = sc * ds.T @ q64
    mag_q = magnitudes(torch.exp((q64[rows] @ k64.T * sc).masked_fill(idx[None, :] > rows[:, None], -math.inf)
                                 - L[rows, None]), q64[rows], k64, v64, o[0, 0, rows].double(), do64[rows], sc)[0]
    mag_k, mag_v = magnitudes(p, q64, k64[cols], v64[cols], o[0, 0].double(), do64, sc)[1:]
    for name, got, sel, w, mag in (("dq", out[0], rows, dq_want, mag_q), ("dk", out[1], cols, dk_want, mag_k),
                                   ("dv", out[2], cols, dv_want, mag_v)):
        expect_grad(f"{name} ({samples} sampled rows)", got[0, 0, sel], w, mag, torch.float32, 2e-4, 5e-4,
                    torch.float32)


def _forward(q, k, v):
    """O and lse of a causal float32 forward, 2048 query rows at a time (the parent avoids N x N too)."""
    n, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d)
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    step = 2048
    for i0 in range(0, n, step):
        i1 = min(i0 + step, n)
        s = (q[..., i0:i1, :] @ k[..., :i1, :].transpose(-1, -2)) * scale
        rows = torch.arange(i0, i1, device=q.device)[:, None]
        s = s.masked_fill(torch.arange(i1, device=q.device)[None, :] > rows, -math.inf)
        o[..., i0:i1, :] = torch.softmax(s, -1) @ v[..., :i1, :]
        lse[..., i0:i1] = torch.logsumexp(s, -1)
    return o, lse
