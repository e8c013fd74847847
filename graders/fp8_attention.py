"""Hidden grader for fp8-attention.

1. ``fp8_quantize``: the three modes, blocks that do not divide N, an all-zero column and block
   (scale 1), float32/bf16 inputs, power-of-two scales that put values on e4m3 ties, blocks of
   one row (exact).
2. ``fp8_attention_forward``: P scaled by 2^0, 2^8 and 448; l from the unrounded or the FP8 P;
   long rows dominated by a sink with V of mean 1 (where unscaled P loses its tail) and of mean 0;
   block / channel scales, K smoothing, a Hadamard rotation, both; block_k from 1 to larger than
   N; d_v != d (rtol 1e-9 against the float64 reference simulation).
3. ``logit_errors``: std and p-weighted error on offset channels, high-variance channels, sparse
   spikes and a sink, each with the fixes.
4. ``lowprec_dot``: exact (bitwise) results for K not divisible by chunk or promote, chunk 1/4/32,
   promotion 32/128, mantissa 10/13/23/52, signed sums (truncation toward zero).
5. ``fix_gains``: the gain table on salted inputs of each type, and on operands exact in e4m3
   (a fix with no error left: 1.0).
Then the input checks.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_tensor, fail

GAIN_KEYS = ("channel_k_scale", "block_scales", "smooth_k", "hadamard", "hadamard_std", "scale_p")


def hadamard(d: int, seed: int) -> torch.Tensor:
    """Random-sign Sylvester Hadamard matrix, orthonormal (d a power of two)."""
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (d,), generator=g).double() * 2 - 1
    return signs[:, None] * h / math.sqrt(d)


def inputs(kind: str, seed: int, n: int = 384, d: int = 64, n_k: int | None = None):
    """(q, k, v) float64 of one of the hidden input types."""
    g = torch.Generator().manual_seed(seed)
    n_k = n if n_k is None else n_k

    def r(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64)

    q, k, v = r(n, d), r(n_k, d), r(n_k, d)
    if kind == "offset":            # a few key channels with a large common offset
        ch = torch.randperm(d, generator=g)[:3]
        k[:, ch] = k[:, ch] * 4 + 40.0
    elif kind == "highvar":         # a few key channels with a large spread
        ch = torch.randperm(d, generator=g)[:3]
        k[:, ch] *= 20.0
    elif kind == "spikes":          # FA3's stress input: N(0,1) + N(0,100) * Bernoulli(0.001)
        def sp(m):
            return r(m, d) + r(m, d) * 10 * (torch.rand(m, d, generator=g) < 0.001)
        q, k, v = sp(n), sp(n_k), sp(n_k)
    elif kind in ("sink", "sink-zero-mean"):   # token 0's logit ~8 above the rest for every query
        k = k * 0.3
        if kind == "sink":
            v = v + 1.0
        u = q.mean(0) / q.mean(0).norm()
        k[0] = u * 8 * math.sqrt(d) / (q @ u).mean()
    return q, k, v


def fp8_operands(gen: torch.Generator, shape, signed=False):
    """(a, b) float64 on the e4m3 grid: a P-like (>= 0, times 2^-8), b V-like (times 2^-6)."""
    a = torch.rand(*shape, generator=gen) * 448
    a = a.clamp(max=448).to(torch.float8_e4m3fn).double() * 2.0 ** -8          # P-like, >= 0
    b = torch.randn(*shape, generator=gen) * 64 + (0 if signed else 64)
    b = b.clamp(-448, 448).to(torch.float8_e4m3fn).double() * 2.0 ** -6         # V-like
    return a, b


def channel_exact(gen: torch.Generator, n: int = 64, d: int = 16):
    """(q, k) float64 whose per-channel FP8 logits are exact but whose per-tensor ones are not: q on
    the e4m3 grid / 8 with a 1.75 in every column (scale 2^-8 either way), k on the e4m3 grid with a
    448 in every column, column j times 2^-s_j (channel scale 2^-s_j: exact; tensor scale 1: the
    small columns fall below e4m3's subnormals and round). The baseline p-weighted error is ~1e-4."""
    grid = torch.arange(256).to(torch.uint8).view(torch.float8_e4m3fn).double()
    grid = grid[grid.isfinite() & (grid.abs() <= 8)]
    q = grid[torch.randint(len(grid), (n, d), generator=gen)] / 8
    q[torch.randint(n, (d,), generator=gen), torch.arange(d)] = 1.75
    k = grid[torch.randint(len(grid), (n, d), generator=gen)]
    k[torch.randint(n, (d,), generator=gen), torch.arange(d)] = 448.0
    s = torch.randint(0, 14, (d,), generator=gen).double()
    s[0] = 0
    return q, k * 2.0 ** -s


def _exact(out, want, name):
    expect_tensor(out, want, name=name, rtol=0.0, atol=0.0, dtype=torch.float64)


_CE_KINDS = {"quantize-": "quantize", "forward-": "forward", "forward-hadamard-": "hadamard",
             "forward-smooth-": "smooth", "logit-errors-": "logit-errors", "lowprec-dot-": "lowprec-dot",
             "fix-gains-": "fix-gains"}
_INPUT_KINDS = ("gauss", "offset", "highvar", "spikes", "sink", "sink-zero-mean")


def _check_fix_gains(g: Grading, ref, q, k, v, h) -> None:
    """fix_gains returns a dict with exactly GAIN_KEYS, each within rtol 1e-6 of the reference."""
    out = g.call("fix_gains", q, k, v, h)
    want = ref.fix_gains(q, k, v, h)
    if not isinstance(out, dict) or set(out) != set(GAIN_KEYS):
        fail(f"expected a dict with exactly the keys {list(GAIN_KEYS)}")
    for key in GAIN_KEYS:
        expect_close(out[key], want[key], name=f"[{key!r}]", rtol=1e-6)


def counterexample(g: Grading, trial: Trial) -> None:
    """A tiny input of the kind a failed case tests, with the failed case's mode or input type
    where its name gives one: fp8_quantize on a few rows (zero groups, e4m3 ties under a
    power-of-two scale, float32 or bf16 input), fp8_attention_forward on a few rows with random
    knobs, logit_errors, lowprec_dot on short sums, or fix_gains."""
    kind = trial.pick(_CE_KINDS) or "forward"
    rng, dev, ref = trial.rng, g.device, g.reference()
    gen = trial.generator()
    named = [m for m in _INPUT_KINDS if any(f"-{m}" in name for name in trial.failed)]
    n, d = rng.randint(1, trial.size + 4), rng.choice([4, 8])
    if kind == "quantize":
        modes = [m for m in ("tensor", "block", "channel") if any(m in name for name in trial.failed)] or ["tensor", "block", "channel"]
        mode, block = rng.choice(modes), rng.randint(1, n + 1)
        x = torch.randn(n, rng.randint(1, 5), generator=gen, dtype=torch.float64) * 3
        if rng.random() < 0.4:          # e4m3 midpoints under a power-of-two scale: exact ties
            grid = torch.arange(256).to(torch.uint8).view(torch.float8_e4m3fn).double().unique()
            grid = grid[grid.isfinite()]
            mids = (grid[1:] + grid[:-1]) / 2
            scale = 2.0 ** rng.randint(-3, 3)
            x[:, 0] = 448.0 * scale
            x[:, 1:] = mids[torch.randint(len(mids), x[:, 1:].shape, generator=gen)] * scale
        if rng.random() < 0.3:
            x[rng.randrange(n)] = 0.0
        if rng.random() < 0.3:
            x[:, rng.randrange(x.shape[1])] = 0.0
        x = x.to(rng.choice([torch.float64, torch.float32, torch.bfloat16])).to(dev)
        g.show_input(x=x, mode=mode, block=block)
        _exact(g.call("fp8_quantize", x, mode, block), ref.fp8_quantize(x, mode, block), "dequantized")
        return
    if kind == "lowprec-dot":
        chunk = rng.choice([1, 2, 4, 8])
        kw = dict(chunk=chunk, mant_bits=rng.choice([10, 13, 23]),
                  promote=rng.choice([None, chunk * rng.randint(1, 4)]))
        a, b = fp8_operands(gen, (rng.randint(1, 3), rng.randint(1, 8 * trial.size + 8)), rng.random() < 0.5)
        a, b = a.to(dev), b.to(dev)
        g.show_input(a=a, b=b, **kw)
        _exact(g.call("lowprec_dot", a, b, **kw), ref.lowprec_dot(a, b, **kw), "sum")
        return
    in_kind = rng.choice(named or list(_INPUT_KINDS))
    q, k, v = inputs(in_kind, rng.randrange(1 << 30), n=n, d=d, n_k=rng.randint(1, trial.size + 8))
    h = hadamard(d, rng.randrange(1 << 30))
    if kind == "fix-gains":
        q, k, v, h = q.to(dev), k.to(dev), v.to(dev), h.to(dev)
        g.show_input(inputs=in_kind, q=q, k=k, v=v, hadamard=h)
        _check_fix_gains(g, ref, q, k, v, h)
        return
    if kind == "logit-errors":
        kw = rng.choice([{}, dict(qk_mode="channel"), dict(qk_mode="block", block=rng.randint(1, n + 1)),
                         dict(smooth_k=True), dict(hadamard=h.to(dev))])
        q, k = q.to(dev), k.to(dev)
        g.show_input(inputs=in_kind, q=q, k=k, **kw)
        out = g.call("logit_errors", q, k, **kw)
        want = ref.logit_errors(q, k, **kw)
        if not isinstance(out, dict) or set(out) != {"std", "p_weighted"}:
            fail("expected a dict with exactly the keys ['std', 'p_weighted']")
        for key in ("std", "p_weighted"):
            expect_close(out[key], want[key], name=f"[{key!r}]", rtol=1e-7)
        return
    kw = dict(block_k=rng.randint(1, k.shape[0] + 2), p_scale_log2=rng.choice([0.0, 8.0, math.log2(448)]),
              l_source=rng.choice(["fp32", "fp8"]), qk_mode=rng.choice(["tensor", "block", "channel"]),
              v_mode=rng.choice(["tensor", "block", "channel"]), smooth_k=kind == "smooth" or rng.random() < 0.2)
    if kind == "hadamard" or rng.random() < 0.2:
        kw["hadamard"] = h.to(dev)
    q, k, v = q.to(dev), k.to(dev), v.to(dev)
    g.show_input(inputs=in_kind, q=q, k=k, v=v, **kw)
    out = g.call("fp8_attention_forward", q, k, v, **kw)
    want = ref.fp8_attention_forward(q, k, v, **kw)
    expect_tensor(out, want, name="out", rtol=1e-9, atol=1e-9 * float(v.abs().max()), dtype=torch.float64)


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device
    rnd = random.Random(f"fp8-attention:{g.salt}")

    def seed(base):
        return base + rnd.randrange(10 ** 6)

    # 1. quantize -------------------------------------------------------------------------------
    x = torch.randn(300, 24, generator=g.rng(1), dtype=torch.float64) * 3
    x[:, 5] = 0.0
    x[128:256] = 0.0
    ties = torch.tensor([[448.0, 1.0625, 17.0, 2.0 ** -10, -1.1875, 3 * 2.0 ** -10, 464.0 / 2]],
                        dtype=torch.float64)
    qcases = [("tensor", x, 128), ("block-128-of-300", x, 128), ("block-7", x, 7), ("channel", x, 128),
              ("ties-pow2-scale", ties, 128), ("float32-input", x.float(), 128),
              ("bf16-input", x.to(torch.bfloat16), 64), ("block-1", x[:40], 1), ("one-column", x[:, :1], 128),
              ("block-default-of-300", x, None)]   # None: the signature's default block (128)
    for nm, xx, blk in qcases:
        mode = nm.split("-")[0] if nm.split("-")[0] in ("tensor", "block", "channel") else "tensor"
        with g.case(f"quantize-{nm}"):
            xx = xx.to(dev)
            got = g.call("fp8_quantize", xx, mode) if blk is None else g.call("fp8_quantize", xx, mode, blk)
            _exact(got, ref.fp8_quantize(xx, mode, 128 if blk is None else blk), "dequantized")

    # 2. forward --------------------------------------------------------------------------------
    h64 = hadamard(64, seed(0))
    # max|H H^T - I| is exactly 1e-9 (only (H H^T)[0, 1] = [1, 0] = 1e-9 * 1 differ; 1 + 1e-18 rounds to 1):
    # the statement's "<= 1e-9" accepts it
    h_tol = torch.eye(16, dtype=torch.float64)
    h_tol[0, 1] = 1e-9
    fcases = [  # name, kind, n_q, n_k, d, kwargs
        ("default-p-times-2^8", "gauss", 200, 200, 64, dict(block_k=64)),
        ("p-unscaled", "gauss", 200, 200, 64, dict(block_k=64, p_scale_log2=0.0)),
        ("p-times-448", "gauss", 100, 150, 64, dict(block_k=32, p_scale_log2=math.log2(448))),
        ("sink-v-mean-1-p-unscaled", "sink", 4, 3000, 64, dict(p_scale_log2=0.0)),
        ("sink-v-mean-1-p-scaled", "sink", 4, 3000, 64, dict(p_scale_log2=8.0)),
        ("sink-v-mean-1-l-from-fp8", "sink", 4, 3000, 64, dict(p_scale_log2=0.0, l_source="fp8")),
        ("sink-v-mean-0-l-from-fp8", "sink-zero-mean", 4, 3000, 64, dict(p_scale_log2=0.0, l_source="fp8")),
        ("sink-l-from-fp8-scaled", "sink", 4, 3000, 64, dict(p_scale_log2=8.0, l_source="fp8")),
        ("block-scales-ragged", "spikes", 130, 230, 64, dict(block_k=50, qk_mode="block", v_mode="block")),
        ("channel-scales", "highvar", 120, 160, 64, dict(qk_mode="channel")),
        ("smooth-k-offset-channels", "offset", 120, 200, 64, dict(smooth_k=True)),
        ("hadamard-spikes", "spikes", 150, 300, 64, dict(hadamard=h64)),
        ("smooth-and-hadamard", "offset", 100, 150, 64, dict(hadamard=h64, smooth_k=True, block_k=40)),
        ("block-k-1", "gauss", 5, 9, 64, dict(block_k=1)),
        ("block-k-larger-than-n", "gauss", 7, 20, 64, dict(block_k=64, v_mode="channel")),
        ("hadamard-on-the-tolerance", "gauss", 20, 30, 16, dict(hadamard=h_tol)),
    ]
    for i, (nm, kind, nq, nk, d, kw) in enumerate(fcases):
        with g.case(f"forward-{nm}"):
            q, k, v = inputs(kind, seed(100 * i), n=nq, d=d, n_k=nk)
            q, k, v = q.to(dev), k.to(dev), v.to(dev)
            kw = {a: (b.to(dev) if isinstance(b, torch.Tensor) else b) for a, b in kw.items()}
            out = g.call("fp8_attention_forward", q, k, v, **kw)
            want = ref.fp8_attention_forward(q, k, v, **kw)
            expect_tensor(out, want, name="out", rtol=1e-9, atol=1e-9 * float(v.abs().max()),
                          dtype=torch.float64)
    with g.case("forward-dv-differs-bf16-inputs"):
        q, k, _ = inputs("gauss", seed(7), n=33, d=32, n_k=70)
        v = torch.randn(70, 48, generator=g.rng(8), dtype=torch.float64)
        q, k, v = q.to(torch.bfloat16).to(dev), k.to(torch.bfloat16).to(dev), v.to(dev)
        out = g.call("fp8_attention_forward", q, k, v, block_k=16)
        expect_tensor(out, ref.fp8_attention_forward(q, k, v, block_k=16), name="out", rtol=1e-9,
                      atol=1e-9 * float(v.abs().max()), dtype=torch.float64)

    # 3. logit errors ---------------------------------------------------------------------------
    for i, kind in enumerate(("offset", "highvar", "spikes", "sink")):
        q, k, _ = inputs(kind, seed(1000 + i), n=256, d=64)
        q, k = q.to(dev), k.to(dev)
        for fix, kw in (("none", {}), ("channel", dict(qk_mode="channel")), ("block", dict(qk_mode="block", block=64)),
                        ("block-default", dict(qk_mode="block")),    # the signature's block=128 over 256 rows
                        ("smooth-k", dict(smooth_k=True)), ("hadamard", dict(hadamard=h64.to(dev)))):
            with g.case(f"logit-errors-{kind}-{fix}"):
                out = g.call("logit_errors", q, k, **kw)
                want = ref.logit_errors(q, k, **kw)
                if not isinstance(out, dict) or set(out) != {"std", "p_weighted"}:
                    fail("expected a dict with exactly the keys ['std', 'p_weighted']")
                for key in ("std", "p_weighted"):
                    expect_close(out[key], want[key], name=f"[{key!r}]", rtol=1e-7)

    with g.case("logit-errors-fewer-queries-than-keys"):    # N_q != N_k: the means are over queries
        q, k, _ = inputs("sink", seed(1010), n=40, d=64, n_k=300)
        q, k = q.to(dev), k.to(dev)
        out = g.call("logit_errors", q, k)
        want = ref.logit_errors(q, k)
        if not isinstance(out, dict) or set(out) != {"std", "p_weighted"}:
            fail("expected a dict with exactly the keys ['std', 'p_weighted']")
        for key in ("std", "p_weighted"):
            expect_close(out[key], want[key], name=f"[{key!r}]", rtol=1e-7)

    # 4. the accumulator model ------------------------------------------------------------------
    lcases = [  # name, shape, kwargs, signed
        ("k4096-chunk4", (64, 4096), dict(), False),
        ("k4096-chunk4-promote128", (64, 4096), dict(promote=128), False),
        ("k4100-chunk4-promote128", (64, 4100), dict(promote=128), False),
        ("k4100-chunk32-promote128", (32, 4100), dict(chunk=32, promote=128), False),
        ("k130-chunk1", (16, 130), dict(chunk=1), False),
        ("k5-chunk4", (8, 5), dict(), False),
        ("k1", (3, 1), dict(), False),
        ("k1000-chunk4-promote32", (16, 1000), dict(promote=32), False),
        ("mant10", (32, 2048), dict(mant_bits=10), False),
        ("mant23-chunk32", (32, 2048), dict(mant_bits=23, chunk=32), False),
        ("mant52", (8, 256), dict(mant_bits=52), False),
        ("signed-sums", (64, 3000), dict(), True),
        ("signed-promote", (64, 3000), dict(chunk=8, promote=64), True),
        ("one-dimensional", (4096,), dict(), False),
        ("k130-chunk1-promote1", (16, 130), dict(chunk=1, promote=1), False),
        ("three-dimensional", (2, 3, 300), dict(promote=8), False),
    ]
    for i, (nm, shape, kw, signed) in enumerate(lcases):
        with g.case(f"lowprec-dot-{nm}"):
            a, b = fp8_operands(torch.Generator().manual_seed(seed(5000 + i)), shape, signed)
            a, b = a.to(dev), b.to(dev)
            _exact(g.call("lowprec_dot", a, b, **kw), ref.lowprec_dot(a, b, **kw), "sum")

    # Operands off the FP8 grid (float64 products, positive so nothing cancels): with 52 bits kept,
    # only a product or a sum taken in float32 moves the result beyond float64's last bits.
    with g.case("lowprec-dot-float64-off-grid-mant52"):
        gen = torch.Generator().manual_seed(seed(5100))
        a, b = (torch.rand(8, 256, generator=gen, dtype=torch.float64) + 0.1 for _ in range(2))
        a, b = a.to(dev), b.to(dev)
        expect_tensor(g.call("lowprec_dot", a, b, mant_bits=52), ref.lowprec_dot(a, b, mant_bits=52), name="sum",
                      rtol=1e-12, atol=0.0, dtype=torch.float64)

    # 5. fix gains ------------------------------------------------------------------------------
    for i, kind in enumerate(("offset", "highvar", "spikes", "sink")):
        with g.case(f"fix-gains-{kind}"):
            n_k = 2048 if kind == "sink" else None
            n = 4 if kind == "sink" else 384
            q, k, v = inputs(kind, seed(9000 + i), n=n, d=64, n_k=n_k)
            h = hadamard(64, seed(9100 + i))
            q, k, v, h = q.to(dev), k.to(dev), v.to(dev), h.to(dev)
            _check_fix_gains(g, ref, q, k, v, h)

    # Operands exact in e4m3 under a scale of 1 (small integers and one 448): the baseline logit
    # error is 0, and so is the error with block scales (64 rows: one block), so that gain is 1.0.
    with g.case("fix-gains-exact-operands"):
        gen = torch.Generator().manual_seed(seed(9200))
        q, k = (torch.randint(-8, 9, (64, 16), generator=gen).double() for _ in range(2))
        q[0, 0] = k[0, 0] = 448.0
        v = torch.randn(64, 16, generator=gen, dtype=torch.float64)
        h = hadamard(16, seed(9300))
        q, k, v, h = q.to(dev), k.to(dev), v.to(dev), h.to(dev)
        _check_fix_gains(g, ref, q, k, v, h)

    # Per-channel scales make these logits exact while the baseline's error is ~1e-4 (below 1): the
    # channel gain is inf.
    with g.case("fix-gains-channel-scales-exact"):
        gen = torch.Generator().manual_seed(seed(9400))
        q, k = channel_exact(gen)
        v = torch.randn(64, 16, generator=gen, dtype=torch.float64)
        h = hadamard(16, seed(9500))
        q, k, v, h = q.to(dev), k.to(dev), v.to(dev), h.to(dev)
        _check_fix_gains(g, ref, q, k, v, h)

    # 6. input checks ---------------------------------------------------------------------------
    q, k, v = (t.to(dev) for t in inputs("gauss", 1, n=8, d=16))
    h16 = hadamard(16, 1).to(dev)
    checks = [
        ("quantize-bad-mode", "fp8_quantize", (q, "row"), {}),
        ("quantize-block-0", "fp8_quantize", (q, "block", 0), {}),
        ("quantize-1d", "fp8_quantize", (q[0], "tensor"), {}),
        ("quantize-nan", "fp8_quantize", (torch.full((2, 2), math.nan, device=dev), "tensor"), {}),
        ("quantize-no-rows", "fp8_quantize", (torch.zeros(0, 4, dtype=torch.float64, device=dev), "tensor"), {}),
        ("forward-kv-rows-differ", "fp8_attention_forward", (q, k, v[:5]), {}),
        ("forward-head-dim-differs", "fp8_attention_forward", (q, k[:, :8], v), {}),
        ("forward-bad-l-source", "fp8_attention_forward", (q, k, v), dict(l_source="bf16")),
        ("forward-p-scale-above-448", "fp8_attention_forward", (q, k, v), dict(p_scale_log2=9.0)),
        ("forward-p-scale-negative", "fp8_attention_forward", (q, k, v), dict(p_scale_log2=-1.0)),
        ("forward-hadamard-not-normalized", "fp8_attention_forward", (q, k, v), dict(hadamard=h16 * 4)),
        ("forward-hadamard-wrong-shape", "fp8_attention_forward", (q, k, v), dict(hadamard=h16[:8, :8])),
        ("forward-block-k-0", "fp8_attention_forward", (q, k, v), dict(block_k=0)),
        ("lowprec-promote-not-multiple", "lowprec_dot", (q, k), dict(chunk=4, promote=6)),
        ("lowprec-shapes-differ", "lowprec_dot", (q, k[:, :8]), {}),
        ("lowprec-chunk-0", "lowprec_dot", (q, k), dict(chunk=0)),
        ("lowprec-empty-last-axis", "lowprec_dot", (q[:, :0], k[:, :0]), {}),
        ("fix-gains-hadamard-not-normalized", "fix_gains", (q, k, v, h16 * 4), {}),
        ("forward-bad-qk-mode", "fp8_attention_forward", (q, k, v), dict(qk_mode="row")),
        ("forward-bad-v-mode", "fp8_attention_forward", (q, k, v), dict(v_mode="token")),
        ("forward-hadamard-nan", "fp8_attention_forward", (q, k, v), dict(hadamard=torch.full_like(h16, math.nan))),
        ("logit-errors-bad-mode", "logit_errors", (q, k), dict(qk_mode="row")),
        ("lowprec-mant-bits-53", "lowprec_dot", (q, k), dict(mant_bits=53)),
        ("lowprec-inf", "lowprec_dot", (q.masked_fill(q > 1, math.inf), k), {}),
        ("lowprec-integer-tensors", "lowprec_dot", (q.long(), k.long()), {}),
        ("lowprec-0-d", "lowprec_dot", (q[0, 0], k[0, 0]), {}),
        ("lowprec-promote-0", "lowprec_dot", (q, k), dict(chunk=4, promote=0)),
        ("fix-gains-kv-rows-differ", "fix_gains", (q, k, v[:5], h16), {}),
        ("quantize-no-columns", "fp8_quantize", (torch.zeros(4, 0, dtype=torch.float64, device=dev), "tensor"), {}),
        ("quantize-integer-tensor", "fp8_quantize", (q.long(), "tensor"), {}),
        ("quantize-block-0-tensor-mode", "fp8_quantize", (q, "tensor", 0), {}),
        ("quantize-block-negative", "fp8_quantize", (q, "block", -1), {}),
        ("forward-block-k-negative", "fp8_attention_forward", (q, k, v), dict(block_k=-1)),
        ("lowprec-mant-bits-0", "lowprec_dot", (q, k), dict(mant_bits=0)),
        ("lowprec-chunk-negative", "lowprec_dot", (q, k), dict(chunk=-1)),
    ]
    for nm, fn, args, kw in checks:
        with g.case(f"rejects-{nm}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kw)
