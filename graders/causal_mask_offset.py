"""Hidden grader for causal-mask-offset.

The truth is built here, independently of the reference: tril(ones(T, S), diagonal=S-T) (the
bottom-right mask), float64 softmax attention, rows with no visible key set to zero.
Cases: masks over (T, S) with T < S, T = S, T > S, T = 0 and S = 0; attention for decode
(T = 1), chunked prefill, T > S (fully masked rows) and S = 0; the DOMAIN-NOTES I9 example
(3 cached tokens, 2 new, all scores 0, V = 0..4 -> 1.5 and 2.0); and the cache invariant the
whole thing exists for: feeding a sequence chunk by chunk (hidden split points, including all
1-token decode steps) against the growing cache gives the full causal forward. Also: visible
scores of -1e4 and -2e4 (a finite -1e4 fill is not an exact exclusion), and bf16 with scores
near +64 (bf16 spacing 0.5 there: math in the input dtype moves the weights far past tolerance).
One key with scores of +200 and -200 (exp overflows / underflows float32 unless the row maximum
is subtracted), and an empty cache with B, H and T all different.
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_tensor, fail

TOL = {torch.float64: (1e-9, 1e-10), torch.float32: (1e-4, 2e-5), torch.bfloat16: (2e-2, 3e-2),
       torch.float16: (5e-3, 5e-3)}


def truth_mask(t, s, device):
    return torch.tril(torch.ones(t, s, dtype=torch.bool, device=device), diagonal=s - t)


def truth(q, k, v, scale=None):
    t, s, d = q.shape[2], k.shape[2], q.shape[3]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    sc = (q.double() @ k.double().transpose(-1, -2)) * scale
    allowed = truth_mask(t, s, q.device)
    sc = sc.masked_fill(~allowed, -math.inf)
    p = torch.softmax(sc, -1)
    p = torch.nan_to_num(p, nan=0.0)                     # rows with no visible key
    return p @ v.double()


def check_attention(g, q, k, v, scale=None, name="output"):
    kwargs = {} if scale is None else {"scale": scale}
    out = g.call("attention_with_cache", q, k, v, **kwargs)
    rtol, atol = TOL[q.dtype]
    expect_tensor(out, truth(q, k, v, scale).to(q.dtype), name=name, rtol=rtol, atol=atol)
    return out


_CE_KINDS = {"mask-": "mask", "past-": "attention", "attention-": "attention", "attention-scale-zero": "scale",
             "attention-explicit-scale": "scale", "visible-scores-": "far-scores", "attention-bfloat16-": "bf16",
             "attention-bfloat16-T8-S300-scores-near-64": "near-64", "attention-float16-": "fp16",
             "attention-float64-": "fp64", "cache-invariant-": "cache"}


def counterexample(g: Grading, trial: Trial) -> None:
    """A tiny mask or attention call of the kind a failed case tests (more queries than keys,
    empty caches, an explicit or zero scale, scores near -1e4 or near +64 in bf16, the input
    dtype), or a short sequence fed in random chunks against the growing cache."""
    kind = trial.pick(_CE_KINDS) or "attention"
    rng, dev, n = trial.rng, g.device, trial.size
    gen = trial.generator()
    t, s = rng.randint(0, n + 2), rng.randint(0, n + 2)
    if kind == "mask":
        g.show_input(t=t, s=s)
        got = g.call("causal_mask", t, s, device=str(dev))
        expect_tensor(got, truth_mask(t, s, dev), name="mask")
        return
    dt = {"bf16": torch.bfloat16, "near-64": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}.get(kind, torch.float32)
    d = rng.randint(1, 4)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    if kind == "cache":
        L = n + 2
        q, k, v = (rnd(1, 1, L, d).float().to(dev) for _ in range(3))
        cuts = sorted(rng.sample(range(1, L), rng.randint(1, L - 1)))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [L])]
        g.show_input(q=q, k=k, v=v, chunks=str(parts))
        outs, end = [], 0
        for part in parts:
            outs.append(check_attention(g, q[..., end:end + part, :], k[..., :end + part, :], v[..., :end + part, :],
                                        name=f"chunk at {end}"))
            end += part
        expect_tensor(torch.cat(outs, dim=2), truth(q, k, v).float(), name="the chunks together", rtol=1e-4, atol=2e-5)
        return
    scale = rng.choice([None, None, round(rng.uniform(0.1, 2.0), 3), 0.0]) if kind != "scale" else rng.choice([0.0, 0.3])
    q, k, v = rnd(1, 1, t, d), rnd(1, 1, s, d), rnd(1, 1, s, d)
    if kind == "far-scores":      # visible scores near -1e4 and below: a finite fill is no exclusion
        t, s = max(t, 1), max(s, 2)
        q = torch.full((1, 1, t, 1), -rng.choice([100.0, 150.0, 200.0]), dtype=torch.float64)
        k = torch.full((1, 1, s, 1), 100.0, dtype=torch.float64)
        v = torch.arange(float(s), dtype=torch.float64).view(1, 1, s, 1)
        scale = 1.0
    elif kind == "near-64":       # bf16 spacing 0.5 near 64: scores rounded to bf16 move the weights
        q, k = 4.0 + 0.5 * rnd(1, 1, max(t, 1), 16), 1.0 + 0.3 * rnd(1, 1, max(s, 2) * 4, 16)
        v = rnd(1, 1, k.shape[2], 16)
        scale = 1.0
    q, k, v = (x.to(dt).to(dev) for x in (q, k, v))
    g.show_input(q=q, k=k, v=v, scale=scale)
    check_attention(g, q, k, v, scale)


def grade(g: Grading) -> None:
    dev = g.device

    def rnd(seed, *shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g.rng(seed), dtype=torch.float64).to(dtype).to(dev)

    # -- the mask ---------------------------------------------------------------------------------
    for t, s in [(1, 1), (1, 8), (2, 5), (5, 2), (3, 3), (7, 19), (19, 7), (0, 4), (4, 0), (64, 1000),
                 (1000, 64), (1, 0)]:
        with g.case(f"mask-T{t}-S{s}"):
            got = g.call("causal_mask", t, s, device=str(dev))
            want = truth_mask(t, s, dev)
            if isinstance(got, torch.Tensor) and got.dtype == torch.bool and got.shape == want.shape:
                wrong = got.cpu() != want.cpu()
                if wrong.any():
                    i, j = (int(x) for x in wrong.nonzero()[0])
                    fail(f"{int(wrong.sum())} of {want.numel()} entries wrong; first at query {i}, key {j}: "
                         f"query {i} is at absolute position {s - t + i} and key {j} at {j}")
            expect_tensor(got, want, name="mask")

    # -- attention against the cache ---------------------------------------------------------------
    with g.case("past-3-new-2-uniform"):  # DOMAIN-NOTES I9
        q = torch.zeros(1, 1, 2, 4, device=dev)
        k = torch.zeros(1, 1, 5, 4, device=dev)
        v = torch.arange(5.0, device=dev).view(1, 1, 5, 1).expand(1, 1, 5, 4).contiguous()
        check_attention(g, q, k, v)
    shapes = [  # (B, H, T, S, d)
        (2, 3, 1, 37, 16),       # decode
        (1, 2, 1, 1, 8),         # decode at the first token
        (2, 2, 5, 64, 16),       # a chunk of prefill over a cache
        (1, 2, 33, 33, 8),       # plain causal prefill
        (1, 1, 7, 3, 8),         # more queries than keys: 4 fully masked rows
        (2, 1, 9, 1, 4),         # one key, 8 fully masked rows
        (1, 1, 3, 0, 4),         # empty cache: every row masked
        (2, 3, 4, 0, 4),         # empty cache with batch, heads and queries all different sizes
    ]
    for c, (b, h, t, s, d) in enumerate(shapes):
        with g.case(f"attention-B{b}-H{h}-T{t}-S{s}"):
            q = rnd(100 + c, b, h, t, d)
            k, v = rnd(200 + c, b, h, s, d), rnd(300 + c, b, h, s, d)
            check_attention(g, q, k, v)
    for c, dt in enumerate((torch.float64, torch.bfloat16, torch.float16)):
        with g.case(f"attention-{str(dt).split('.')[-1]}-T6-S40"):
            q, k, v = rnd(400 + c, 1, 2, 6, 16, dtype=dt), rnd(410 + c, 1, 2, 40, 16, dtype=dt), rnd(420 + c, 1, 2, 40, 16, dtype=dt)
            check_attention(g, q, k, v)
    with g.case("attention-explicit-scale"):
        q, k, v = rnd(430, 1, 1, 4, 8), rnd(431, 1, 1, 12, 8), rnd(432, 1, 1, 12, 8)
        check_attention(g, q, k, v, scale=0.3)
    with g.case("attention-scale-zero"):   # 0.0 is a scale: each query averages the values it may see
        q, k, v = rnd(435, 1, 2, 5, 8), rnd(436, 1, 2, 9, 8), rnd(437, 1, 2, 9, 8)
        check_attention(g, q, k, v, scale=0.0)
    # visible scores of -1e4 (head 0) and -2e4 (head 1): a finite fill such as -1e4 is no longer
    # "excluded exactly" (T=2, S=5, v_j = j: query 0 must give 1.5, a -1e4 fill gives 2.0 / 4.0)
    with g.case("visible-scores-minus-1e4-and-2e4"):
        q = torch.tensor([-100.0, -200.0], device=dev).view(1, 2, 1, 1).expand(1, 2, 2, 1).contiguous()
        k = torch.full((1, 2, 5, 1), 100.0, device=dev)
        v = torch.arange(5.0, device=dev).view(1, 1, 5, 1).expand(1, 2, 5, 1).contiguous()
        check_attention(g, q, k, v, scale=1.0)
    # one key with scores of +200 (head 0) and -200 (head 1): exp of either overflows or underflows
    # float32, so the row maximum must be subtracted even when a row sees a single key
    with g.case("one-key-scores-plus-and-minus-200"):
        q = torch.tensor([2.0, -2.0], device=dev).view(1, 2, 1, 1).expand(1, 2, 3, 1).contiguous()
        k = torch.full((1, 2, 1, 1), 100.0, device=dev)
        v = torch.tensor([3.0, -5.0], device=dev).view(1, 2, 1, 1)
        check_attention(g, q, k, v, scale=1.0)
    # bf16 with scores around +64 (a shared offset in q and k): bf16 spacing there is 0.5, so scores
    # rounded to bf16 before the softmax move the weights by up to ~28%; float32 math does not
    with g.case("attention-bfloat16-T8-S300-scores-near-64"):
        bf = torch.bfloat16
        q = (4.0 + 0.5 * torch.randn(1, 2, 8, 16, generator=g.rng(440), dtype=torch.float64)).to(bf).to(dev)
        k = (1.0 + 0.3 * torch.randn(1, 2, 300, 16, generator=g.rng(441), dtype=torch.float64)).to(bf).to(dev)
        v = rnd(442, 1, 2, 300, 16, dtype=bf)
        check_attention(g, q, k, v, scale=1.0)

    # -- the invariant: chunked prefill / decode against a growing cache == full causal forward -----
    splits = {"decode-steps-L20": (20, [1] * 20), "prefill-then-decode-L24": (24, [16, 1, 1, 1, 1, 1, 1, 1, 1]),
              "chunked-prefill-L50": (50, [1, 1, 7, 13, 28]), "chunks-17-16-17": (50, [17, 16, 17]),
              "one-chunk-L30": (30, [30])}
    for c, (name, (L, parts)) in enumerate(splits.items()):
        with g.case(f"cache-invariant-{name}"):
            q, k, v = rnd(500 + c, 1, 2, L, 8), rnd(510 + c, 1, 2, L, 8), rnd(520 + c, 1, 2, L, 8)
            outs, end = [], 0
            for n in parts:
                out = g.call("attention_with_cache", q[..., end:end + n, :], k[..., :end + n, :], v[..., :end + n, :])
                expect_tensor(out, q[..., end:end + n, :], name=f"chunk at {end}", rtol=math.inf, atol=math.inf)
                outs.append(out)
                end += n
            full = torch.cat(outs, dim=2)
            want = truth(q, k, v).float()
            bad = ((full.double().cpu() - want.double().cpu()).abs() > 2e-5 + 1e-4 * want.double().cpu().abs())
            if bad.any():
                pos = int(bad.nonzero()[0][2])
                fail(f"feeding the sequence in chunks {parts} differs from one causal forward over all {L} "
                     f"tokens; first differing query position {pos} (chunk starting at "
                     f"{max(e for e in [sum(parts[:i]) for i in range(len(parts))] if e <= pos)})")

    # -- input checks (scored beside the verdict; run last) ----------------------------------------
    with g.case("mask-rejects-negative-t", group=INPUT_CHECKS):
        g.raises("ValueError", "causal_mask", -1, 4)
    with g.case("mask-rejects-negative-s", group=INPUT_CHECKS):
        g.raises("ValueError", "causal_mask", 2, -3)
    q, k = rnd(600, 1, 2, 3, 4), rnd(601, 1, 2, 5, 4)
    checks = [
        ("attention-rejects-k-v-shapes-that-differ", (q, k, k[..., :4, :])),
        ("attention-rejects-heads-that-differ", (q, k[:, :1], k[:, :1])),
        ("attention-rejects-3d-input", (q[0], k[0], k[0])),
        ("attention-rejects-3d-input-whose-sizes-agree", (k[0], k[0], k[0])),
        ("attention-rejects-dtypes-that-differ", (q, k.double(), k.double())),
        ("attention-rejects-integer-dtype", (q.long(), k.long(), k.long())),
    ]
    for name, args in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", "attention_with_cache", *args)
