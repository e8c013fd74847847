"""Hidden grader for fp8-kv-cache.

1. ``fp8_encode``: every e4m3 and e5m2 tie midpoint (normal and subnormal) and values one float32
   step either side, at scale 1 and at power-of-two scales (exact codes; +0 and -0 are one code),
   saturation (just above max, 464 = the would-be tie with 480, 10x max, 1e30), the (240, 448]
   band, bf16/fp16 inputs, per-KV-head scale tensors, and non-power-of-two scales, where a code
   one grid step away is allowed on at most 1e-4 of the elements (x / s may sit on a midpoint).
2. ``fp8_decode``: every finite code of both formats, float and tensor scales.
3. ``fp8_decode_attention``: GQA/MHA/MQA shapes, L = 1, per-tensor and per-KV-head scales with
   k_scale != v_scale, explicit sm_scale, e5m2, bf16 queries, peaked logits, logits of several
   hundred (exp overflows float32 without the max subtracted); against float64 attention on the
   decoded cache.
4. ``audit_long_context`` on hosted KV streams generated here (salted spike positions and sizes):
   spikes after the calibration window, a spike inside it, the Gaussian bulk at div 448, a
   sink at token 0 left out of the calibration, per-head scales, spikes on both sides of the
   calibration window's edges, K-only vs V-only spikes; fixed boundary streams with elements one
   float32 step either side of 448 * amax / div (div 200 and 100, K and V: the test is exact, not
   float32) and float32 maxima at div 448 for which 448 * (amax / 448) < amax (a test against the
   rounded scale clips the calibration maximum itself); div 500/600, where tokens of the window
   clip; div 1; a 4097-token stream whose last (one-token) read clips and ends the window; a
   read budget (each token at most twice).
Then the input checks.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, expect_tensor, fail

FMT = {"e4m3": (torch.float8_e4m3fn, 448.0), "e5m2": (torch.float8_e5m2, 57344.0)}
MAX_READ = 4096


# -- helpers --------------------------------------------------------------------------------------

def _grid(fmt: str) -> torch.Tensor:
    """Sorted non-negative finite values of the format (float64)."""
    vals = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FMT[fmt][0]).double()
    vals = vals[torch.isfinite(vals) & (vals >= 0)]
    return vals.unique().sort().values


def _ordinal(c: torch.Tensor) -> torch.Tensor:
    """Signed position on the grid: +-magnitude code (0x80 and 0x00 both 0)."""
    c = c.to(torch.int32)
    mag = c & 0x7F
    return torch.where((c & 0x80) != 0, -mag, mag)


def _check_codes(out, want: torch.Tensor, *, allow_adjacent: bool, name: str = "codes") -> None:
    if not isinstance(out, torch.Tensor):
        fail(f"{name}: expected a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(want.shape):
        fail(f"{name}: expected shape {tuple(want.shape)}, got {tuple(out.shape)}")
    if out.dtype != torch.uint8:
        fail(f"{name}: expected dtype torch.uint8, got {out.dtype}")
    if out.device.type != want.device.type:
        fail(f"{name}: expected a tensor on {want.device.type}, got {out.device.type}")
    d = (_ordinal(out.cpu()) - _ordinal(want.cpu())).abs()
    bad = d != 0
    if not bad.any():
        return
    n = want.numel()
    if allow_adjacent and int((d > 1).sum()) == 0 and int(bad.sum()) <= max(1, n // 10_000):
        return
    idx = tuple(int(i) for i in bad.nonzero()[0])
    far = int((d > 1).sum())
    fail(f"{name}: {int(bad.sum())} of {n} codes differ ({far} by more than one grid step), first at "
         f"index {idx}")


class KVStream:
    """A long K/V stream in the parent; the submission reads it in chunks of at most 4096 tokens."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor):
        self.k, self.v = k.contiguous(), v.contiguous()
        self.length, self.num_kv_heads, self.head_dim = (int(s) for s in k.shape)
        self.tokens_read = 0
        self.calls = 0

    def read(self, start, end):
        for nm, x in (("start", start), ("end", end)):
            if isinstance(x, bool) or not isinstance(x, int):
                raise TypeError(f"read: {nm} must be an int")
        if not 0 <= start < end <= self.length:
            raise IndexError(f"read({start}, {end}): need 0 <= start < end <= length={self.length}")
        if end - start > MAX_READ:
            raise ValueError(f"read({start}, {end}): at most {MAX_READ} tokens per call")
        self.calls += 1
        self.tokens_read += end - start
        return self.k[start:end].clone(), self.v[start:end].clone()


def _host(g: Grading, s: KVStream):
    return g.host(s, ["read"], {"length": s.length, "num_kv_heads": s.num_kv_heads,
                                "head_dim": s.head_dim})


def make_stream(seed: int, length: int, heads: int, dim: int, *, k_std=None, v_std=None,
                spikes=(), sink: float = 0.0) -> KVStream:
    """Gaussian bulk (per-head std), plus ``spikes``: (position, 'k'|'v', head or None, factor)
    multiplying that token's vector(s), plus a sink key of norm ``sink`` at token 0."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(length, heads, dim, generator=g)
    v = torch.randn(length, heads, dim, generator=g)
    if k_std is not None:
        k *= torch.tensor(k_std, dtype=torch.float32)[None, :, None]
    if v_std is not None:
        v *= torch.tensor(v_std, dtype=torch.float32)[None, :, None]
    for pos, which, head, factor in spikes:
        t = k if which == "k" else v
        if head is None:
            t[pos] *= factor
        else:
            t[pos, head] *= factor
    if sink:
        d = torch.randn(heads, dim, generator=g)
        k[0] = d / d.norm(dim=1, keepdim=True) * sink
        v[0] *= 0.05
    return KVStream(k, v)


def _f32_neighbours(t: float):
    """(largest float32 < t, t if it is a float32 else None, smallest float32 > t)."""
    f = torch.tensor(t, dtype=torch.float64).float()
    up = torch.nextafter(f, torch.tensor(math.inf))
    dn = torch.nextafter(f, torch.tensor(0.0))
    if float(f) > t:
        return float(dn), None, float(f)
    if float(f) < t:
        return float(f), None, float(up)
    return float(dn), float(f), float(up)


def boundary_stream() -> KVStream:
    """64 tokens, 2 heads, calibration window [0, 16) with amax_K = 1.0 and amax_V = 1.5; after
    it, elements one float32 step below, on (if representable) and above 448 * amax / div for
    div 200 and 100. A float32 evaluation of |x| * div > 448 * amax misjudges the steps above."""
    g = torch.Generator().manual_seed(77)
    k = (torch.randn(64, 2, 8, generator=g) * 0.1).clamp(-0.3, 0.3)
    v = (torch.randn(64, 2, 8, generator=g) * 0.1).clamp(-0.3, 0.3)
    for t, amax, at, off in ((k, 1.0, (5, 1, 3), 0), (v, 1.5, (9, 0, 6), 1)):
        t[at] = -amax
        lo2, eq2, hi2 = _f32_neighbours(448.0 * amax / 200.0)
        lo1, eq1, hi1 = _f32_neighbours(448.0 * amax / 100.0)
        for pos, head, ch, x in ((18, 0, 1, lo2), (20, 1, 7, eq2), (26, 0, 4, hi2), (34, 1, 0, -lo1),
                                 (38, 0, 2, eq1), (44, 1, 5, hi1), (52, 0, 6, -hi2), (58, 1, 3, lo1)):
            if x is not None:
                t[pos + off, head, ch] = x
    return KVStream(k, v)


def div448_stream() -> KVStream:
    """32 tokens, 2 heads; window [0, 16) with K maxima 7.879498481750488 (head 0) and
    0.9741447567939758 (head 1), V maxima 3.857290744781494 (head 0) and 7.042807102203369
    (head 1). For each of these float32 amax, 448 * (amax / 448) < amax in float64, so a test
    against the rounded scale clips the calibration maximum itself at div 448. After the window:
    each maximum again (does not clip), then one float32 step above it (clips)."""
    g = torch.Generator().manual_seed(78)
    k = (torch.randn(32, 2, 8, generator=g) * 0.1).clamp(-0.3, 0.3)
    v = (torch.randn(32, 2, 8, generator=g) * 0.1).clamp(-0.3, 0.3)
    for t, maxima, off in ((k, (7.879498481750488, 0.9741447567939758), 0),
                           (v, (3.857290744781494, 7.042807102203369), 1)):
        for h, a in enumerate(maxima):
            up = float(torch.nextafter(torch.tensor(a, dtype=torch.float32), torch.tensor(math.inf)))
            t[3 + 4 * h + off, h, 2] = a
            t[18 + 2 * h + off, h, 5] = -a
            t[26 + 2 * h + off, h, 1] = up
    return KVStream(k, v)


AUDIT_KEYS = ("k_scale", "v_scale", "k_first_clipped", "v_first_clipped", "k_clipped_tokens",
              "v_clipped_tokens")


def _check_audit(out, exp: dict) -> None:
    if not isinstance(out, dict) or set(out) != set(AUDIT_KEYS):
        fail(f"expected a dict with exactly the keys {list(AUDIT_KEYS)}")
    for key in ("k_scale", "v_scale"):
        if isinstance(exp[key], list):
            if not isinstance(out[key], (list, tuple)) or len(out[key]) != len(exp[key]):
                fail(f"[{key!r}]: expected a list of {len(exp[key])} per-head scales")
            for i, (a, e) in enumerate(zip(out[key], exp[key])):
                expect_close(a, e, name=f"[{key!r}][{i}]", rtol=1e-6)
        else:
            expect_close(out[key], exp[key], name=f"[{key!r}]", rtol=1e-6)
    for key in ("k_first_clipped", "v_first_clipped"):
        if exp[key] is None:
            if out[key] is not None:
                fail(f"[{key!r}]: got {out[key]!r}, but these scales clip no token")
        else:
            if out[key] is None:
                fail(f"[{key!r}]: got None, but some token clips")
            expect_equal(out[key], exp[key], name=f"[{key!r}]")
    for key in ("k_clipped_tokens", "v_clipped_tokens"):
        expect_equal(out[key], exp[key], name=f"[{key!r}]")


def _attn_truth(ref, q, kc, vc, ks, vs, fmt, sm_scale):
    """float64 attention over the decoded cache."""
    h_kv = kc.shape[1]
    kd = ref.fp8_decode(kc, ref._head_scale(ks, h_kv, kc.device, "k")[:, None, None], fmt).double()
    vd = ref.fp8_decode(vc, ref._head_scale(vs, h_kv, vc.device, "v")[:, None, None], fmt).double()
    group = q.shape[1] // h_kv
    idx = torch.arange(q.shape[1], device=q.device) // group
    kd, vd = kd[:, idx], vd[:, idx]
    sm = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    logits = torch.einsum("bhd,bhld->bhl", q.double(), kd) * sm
    return torch.einsum("bhl,bhld->bhd", torch.softmax(logits, -1), vd), float(vd.abs().max())


# -- counterexamples ------------------------------------------------------------------------------

_CE_KINDS = {"encode-": "encode", "encode-e5m2-": "encode-e5m2", "encode-non-pow2-": "encode", "decode-": "decode",
             "attention-": "attention", "audit-": "audit", "audit-clip-boundary-": "audit-boundary",
             "audit-div-448-": "audit-boundary"}


def _ce_encode_values(trial: Trial, fmt: str, n: int) -> torch.Tensor:
    """n float64 values (at scale 1) on the format's rounding decisions: grid values, midpoints,
    one float32 step either side, subnormals, the band near the maximum and past it."""
    rng, grid = trial.rng, _grid(fmt)
    top = FMT[fmt][1]
    picks = []
    for _ in range(n):
        i = rng.randrange(1, len(grid))
        mid = float((grid[i] + grid[i - 1]) / 2)
        picks.append(rng.choice([
            lambda: mid, lambda: float(grid[i]),
            lambda: float(torch.nextafter(torch.tensor(mid, dtype=torch.float32), torch.tensor(rng.choice([0.0, math.inf])))),
            lambda: top * rng.uniform(0.5, 1.2), lambda: top * rng.choice([1.0 + 2.0 ** -4, 10.0, 1e6]),
            lambda: float(grid[rng.randrange(1, 8)]) * rng.choice([0.5, 1.0, 1.5]),
        ])() * rng.choice([1, -1]))
    return torch.tensor(picks, dtype=torch.float64)


def _ce_stream(trial: Trial, boundary: bool) -> tuple[KVStream, tuple, dict]:
    """A short fresh stream and the audit's arguments. ``boundary``: after a window with float32
    maxima, elements one float32 step below, on and above 448 * amax / div (div 448 among the
    divs: there the calibration maximum itself sits on the boundary)."""
    rng, gen = trial.rng, trial.generator()
    heads, dim = rng.randint(1, 2), rng.randint(2, 6)
    length = rng.randint(12, 24 + 16 * trial.size)
    k, v = (torch.randn(length, heads, dim, generator=gen) * 0.1 for _ in range(2))
    a, b = sorted(rng.sample(range(length + 1), 2))
    divs = (float(rng.choice([100, 200, 320, 448, 500, 600, 60])), float(rng.choice([100, 200, 448, 500, 60])))
    if boundary:
        divs = (rng.choice([200.0, 100.0, 448.0]), rng.choice([200.0, 100.0, 448.0]))
        for t, div in zip((k, v), divs):
            amax = float(torch.tensor(rng.uniform(0.5, 8.0), dtype=torch.float32))
            t[a + rng.randrange(b - a), rng.randrange(heads), rng.randrange(dim)] = amax * rng.choice([1, -1])
            outside = [i for i in range(length) if not a <= i < b]
            for x in _f32_neighbours(448.0 * amax / div):
                if x is not None and outside and rng.random() < 0.7:
                    t[rng.choice(outside), rng.randrange(heads), rng.randrange(dim)] = x * rng.choice([1, -1])
    else:
        for _ in range(rng.randint(0, 4)):
            t = rng.choice([k, v])
            t[rng.randrange(length), rng.randrange(heads) if rng.random() < 0.5 else slice(None)] *= rng.uniform(2, 40)
    kw = {"per_head": rng.random() < 0.5} if heads > 1 else {}
    return KVStream(k, v), (a, b) + divs, kw


def counterexample(g: Grading, trial: Trial) -> None:
    """A tiny input of the kind a failed case tests: fp8_encode on a few values at rounding
    decisions, saturation and subnormals (power-of-two scales, so every code is exact; the
    failed case's format), fp8_decode of a few codes, decode attention on a small cache, or an
    audit of a short fresh stream (boundary elements one float32 step around 448 * amax / div)."""
    kind = trial.pick(_CE_KINDS) or "encode"
    rng, dev, ref = trial.rng, g.device, g.reference()
    gen = trial.generator()
    fmt = "e5m2" if kind == "encode-e5m2" or (kind != "encode" and rng.random() < 0.3) else "e4m3"
    if kind in ("encode", "encode-e5m2"):
        s = 2.0 ** rng.randint(-6, 3)
        x = (_ce_encode_values(trial, fmt, trial.size + 2) * s).float()
        if rng.random() < 0.2:
            x = x.to(rng.choice([torch.bfloat16, torch.float16]))
        x = x.to(dev)
        g.show_input(x=x, scale=s, fmt=fmt)
        _check_codes(g.call("fp8_encode", x, s, fmt), ref.fp8_encode(x, s, fmt), allow_adjacent=False)
        return
    if kind == "decode":
        codes = torch.randint(0, 256, (trial.size + 2,), generator=gen, dtype=torch.int32).to(torch.uint8)
        codes = codes[torch.isfinite(codes.view(FMT[fmt][0]).float())].to(dev)
        s = rng.choice([1.0, 2.0 ** -7, round(rng.uniform(0.01, 4.0), 4)])
        g.show_input(codes=codes, scale=s, fmt=fmt)
        expect_tensor(g.call("fp8_decode", codes, s, fmt), ref.fp8_decode(codes, s, fmt), name="values", rtol=1e-6,
                      dtype=torch.float32)
        return
    if kind == "attention":
        hkv = rng.randint(1, 2)
        hq, L, D = hkv * rng.randint(1, 3), rng.randint(1, trial.size + 3), rng.randint(2, 4)
        k = torch.randn(1, hkv, L, D, generator=gen) * 2
        v = torch.randn(1, hkv, L, D, generator=gen) + 0.5
        q = (torch.randn(1, hq, D, generator=gen) * rng.choice([1.0, 6.0, 60.0])).to(
            rng.choice([torch.float32, torch.float32, torch.bfloat16])).to(dev)
        if rng.random() < 0.3:
            ks = torch.tensor([rng.uniform(0.01, 0.1) for _ in range(hkv)], device=dev)
            vs = torch.tensor([rng.uniform(0.01, 0.1) for _ in range(hkv)], device=dev)
            kdiv, vdiv = ks[:, None, None], vs[:, None, None]
        else:
            ks = kdiv = rng.uniform(0.01, 0.1)
            vs = vdiv = rng.uniform(0.01, 0.1)
        sm = rng.choice([None, round(rng.uniform(0.1, 1.0), 3)])
        kc, vc = ref.fp8_encode(k.to(dev), kdiv, fmt), ref.fp8_encode(v.to(dev), vdiv, fmt)
        g.show_input(q=q, k_codes=kc, v_codes=vc, k_scale=ks, v_scale=vs, fmt=fmt, sm_scale=sm)
        out = g.call("fp8_decode_attention", q, kc, vc, ks, vs, fmt, sm)
        truth, vmax = _attn_truth(ref, q, kc, vc, ks, vs, fmt, sm)
        expect_tensor(out, truth.float(), name="out", rtol=1e-4, atol=1e-5 * vmax, dtype=torch.float32)
        return
    stream, args, kw = _ce_stream(trial, kind == "audit-boundary")
    g.show_input(k=stream.k, v=stream.v, calib_start=args[0], calib_end=args[1], k_div=args[2], v_div=args[3], **kw)
    exp = ref.audit_long_context(stream, *args, **kw)
    stream.tokens_read = stream.calls = 0
    out = g.call("audit_long_context", _host(g, stream), *args, **kw)
    if stream.tokens_read > (args[1] - args[0]) + stream.length:
        fail(f"read {stream.tokens_read} tokens from the stream; the budget is {(args[1] - args[0]) + stream.length} "
             "(the calibration window once and the stream once)")
    _check_audit(out, exp)


# -- the grader -----------------------------------------------------------------------------------

def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device
    rnd = random.Random(f"fp8-kv-cache:{g.salt}")

    def encode_case(name, x, scale, fmt, exact=True):
        with g.case(name):
            out = g.call("fp8_encode", x, scale, fmt)
            _check_codes(out, ref.fp8_encode(x, scale, fmt), allow_adjacent=not exact)

    # 1. encode: ties, neighbours, subnormals, saturation --------------------------------------
    for fmt in ("e4m3", "e5m2"):
        grid = _grid(fmt)
        mids = (grid[1:] + grid[:-1]) / 2
        f32 = torch.cat([grid, mids]).float()
        lo = torch.nextafter(mids.float(), torch.tensor(0.0))
        hi = torch.nextafter(mids.float(), torch.tensor(math.inf))
        vals = torch.cat([f32, lo, hi])
        vals = torch.cat([vals, -vals])
        for s_log2 in (0, -4, 3) if fmt == "e4m3" else (0, -9):
            s = 2.0 ** s_log2
            x = (vals.double() * s).float().to(dev)
            encode_case(f"encode-{fmt}-every-tie-and-neighbour-scale-2^{s_log2}", x, s, fmt)
    # ties named in the statement, each alone (the case name says which rule)
    for nm, vals, s in (("round-half-even-1.0625", [1.0625, -1.0625, 1.1875], 1.0),
                        ("round-half-even-17", [17.0, 18.0, 19.0, 20.0], 1.0),
                        ("subnormal-tie-2^-10-to-zero", [2.0 ** -10, -(2.0 ** -10), 3 * 2.0 ** -10], 1.0),
                        ("subnormals-kept", [2.0 ** -9, 2.0 ** -7, 5 * 2.0 ** -9, 7 * 2.0 ** -9], 1.0),
                        ("subnormals-kept-scale-1/8", [2.0 ** -12, 3 * 2.0 ** -12, 2.0 ** -10], 0.125),
                        ("saturate-above-448", [449.0, 464.0, 480.0, 500.0, 4480.0, 1e30, -1e6], 1.0),
                        ("band-240-448", [240.0, 256.0, 288.0, 320.0, 416.0, 448.0, -300.0], 1.0),
                        ("band-240-448-scale-4", [1000.0, 1280.0, 1792.0, 1200.0], 4.0),
                        ("divide-by-scale-0.25", [100.0, -3.0, 0.5, 7.0], 0.25),
                        ("divide-by-scale-16", [100.0, -3.0, 5000.0, 7000.0], 16.0)):
        x = torch.tensor(vals, dtype=torch.float32, device=dev)
        encode_case(f"encode-e4m3-{nm}", x, s, "e4m3")
    for nm, vals, s in (("saturate-57344", [57344.0, 60000.0, 61440.0, 1e5, -1e10, 3.0e38], 1.0),
                        ("ties", [1.125, 1.375, 2.0 ** -16 / 2, 3 * 2.0 ** -17, 5.0e4], 1.0),
                        ("scale-2^-8", [1.0, 200.0, 255.0, 1e-9], 2.0 ** -8)):
        x = torch.tensor(vals, dtype=torch.float32, device=dev)
        encode_case(f"encode-e5m2-{nm}", x, s, "e5m2")
    # KV-shaped tensors, per-tensor and per-KV-head scales (powers of two: exact codes)
    gen = g.rng(11)
    kv = (torch.randn(2, 4, 33, 16, generator=gen) * torch.tensor([1.0, 3.0, 0.05, 40.0])[None, :, None, None])
    head_s = torch.tensor([2.0 ** -6, 2.0 ** -5, 2.0 ** -12, 2.0 ** -3]).reshape(4, 1, 1)
    encode_case("encode-kv-per-head-scale-pow2", kv.to(dev), head_s.to(dev), "e4m3")
    encode_case("encode-kv-per-tensor-scale-pow2", kv.to(dev), 2.0 ** -4, "e4m3")
    encode_case("encode-kv-bf16-input", kv.to(torch.bfloat16).to(dev), 2.0 ** -3, "e4m3")
    encode_case("encode-kv-fp16-input-e5m2", (kv * 0.5).to(torch.float16).to(dev), 2.0 ** -10, "e5m2")
    encode_case("encode-kv-0d-tensor-scale", kv.to(dev), torch.tensor(0.25, device=dev), "e4m3")
    # non-power-of-two scales: a code one step away is allowed on <= 1e-4 of elements
    s_odd = [rnd.uniform(0.01, 0.2) for _ in range(2)]
    big = torch.randn(64, 8, 128, generator=g.rng(12)) * 3
    encode_case("encode-non-pow2-scale-a", big.to(dev), s_odd[0], "e4m3", exact=False)
    encode_case("encode-non-pow2-scale-b", big.to(dev), s_odd[1], "e4m3", exact=False)
    odd_head = torch.tensor([rnd.uniform(0.003, 0.3) for _ in range(8)]).reshape(8, 1)
    encode_case("encode-non-pow2-per-head", big.to(dev), odd_head.to(dev), "e4m3", exact=False)
    encode_case("encode-non-pow2-e5m2", (big * 100).to(dev), s_odd[0], "e5m2", exact=False)
    encode_case("encode-dynamic-amax-is-not-the-scale", (big * 0.01).to(dev), 0.5, "e4m3")

    # 2. decode ---------------------------------------------------------------------------------
    for fmt in ("e4m3", "e5m2"):
        codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
        codes = codes[torch.isfinite(codes.view(FMT[fmt][0]).float())]
        for nm, s, rtol in (("scale-1", 1.0, 0.0), ("scale-2^-7", 2.0 ** -7, 0.0),
                            ("scale-0.037", 0.037, 1e-6), ("scale-3.3", 3.3, 1e-6)):
            with g.case(f"decode-{fmt}-every-code-{nm}"):
                c = codes.to(dev)
                out = g.call("fp8_decode", c, s, fmt)
                expect_tensor(out, ref.fp8_decode(c, s, fmt), name="values", rtol=rtol, dtype=torch.float32)
    with g.case("decode-per-head-tensor-scale"):
        c = ref.fp8_encode(kv.to(dev), head_s.to(dev), "e4m3")
        sc = (head_s * 1.37).to(dev)
        out = g.call("fp8_decode", c, sc, "e4m3")
        expect_tensor(out, ref.fp8_decode(c, sc, "e4m3"), name="values", rtol=1e-6, dtype=torch.float32)
    with g.case("decode-encode-round-trip-pow2"):
        c = ref.fp8_encode(kv.to(dev), 2.0 ** -5, "e4m3")
        out = g.call("fp8_decode", c, 2.0 ** -5, "e4m3")
        expect_tensor(out, ref.fp8_decode(c, 2.0 ** -5, "e4m3"), name="values", dtype=torch.float32)

    # 3. decode attention -----------------------------------------------------------------------
    attn_cases = [  # name, B, H_q, H_kv, L, D, k_scale, v_scale, fmt, sm_scale, q mult, q dtype
        ("gqa-8-over-2", 2, 8, 2, 37, 16, 0.05, 0.02, "e4m3", None, 1.0, torch.float32),
        ("mha", 2, 4, 4, 50, 8, 0.125, 0.5, "e4m3", None, 1.0, torch.float32),
        ("mqa", 1, 6, 1, 29, 16, 0.03, 0.07, "e4m3", None, 1.0, torch.float32),
        ("one-token", 3, 4, 2, 1, 8, 0.1, 0.2, "e4m3", None, 1.0, torch.float32),
        ("per-head-scales", 2, 8, 4, 40, 16, "heads", "heads", "e4m3", None, 1.0, torch.float32),
        ("0d-tensor-scales", 1, 4, 2, 20, 8, "0d", "0d", "e4m3", None, 1.0, torch.float32),
        ("sm-scale-given", 2, 4, 2, 31, 16, 0.05, 0.01, "e4m3", 0.37, 1.0, torch.float32),
        ("e5m2", 2, 8, 2, 45, 16, 0.001, 0.004, "e5m2", None, 1.0, torch.float32),
        ("bf16-query", 2, 8, 2, 33, 16, 0.05, 0.02, "e4m3", None, 1.0, torch.bfloat16),
        ("peaked-logits", 2, 8, 2, 64, 32, 0.08, 0.3, "e4m3", None, 6.0, torch.float32),
        ("long-cache", 1, 8, 2, 3000, 64, 0.02, 0.01, "e4m3", None, 2.0, torch.float32),
        # logits of several hundred: exp overflows float32 unless the row max is subtracted
        ("large-logits", 2, 8, 2, 48, 16, 0.05, 0.02, "e4m3", None, 60.0, torch.float32),
    ]
    for i, (nm, b, hq, hkv, L, D, ks, vs, fmt, sm, qm, qdt) in enumerate(attn_cases):
        with g.case(f"attention-{nm}"):
            gen = g.rng(100 + i)
            k = torch.randn(b, hkv, L, D, generator=gen) * 2
            v = torch.randn(b, hkv, L, D, generator=gen) + 0.5
            q = (torch.randn(b, hq, D, generator=gen) * qm).to(qdt)
            if ks == "heads":
                ks = torch.tensor([0.01 * (j + 1) for j in range(hkv)])
                vs = torch.tensor([0.05 / (j + 1) for j in range(hkv)])
            elif ks == "0d":
                ks, vs = torch.tensor(0.02), torch.tensor(0.06)
            if isinstance(ks, torch.Tensor):
                ks, vs = ks.to(dev), vs.to(dev)
            kdiv = ks[:, None, None] if isinstance(ks, torch.Tensor) and ks.dim() == 1 else ks
            vdiv = vs[:, None, None] if isinstance(vs, torch.Tensor) and vs.dim() == 1 else vs
            kc = ref.fp8_encode(k.to(dev), kdiv, fmt)
            vc = ref.fp8_encode(v.to(dev), vdiv, fmt)
            q = q.to(dev)
            out = g.call("fp8_decode_attention", q, kc, vc, ks, vs, fmt, sm)
            truth, vmax = _attn_truth(ref, q, kc, vc, ks, vs, fmt, sm)
            expect_tensor(out, truth.float(), name="out", rtol=1e-4, atol=1e-5 * vmax, dtype=torch.float32)

    # 4. the long-context audit -----------------------------------------------------------------
    def audit_case(name, stream, *args, **kw):
        with g.case(name):
            exp = ref.audit_long_context(stream, *args, **kw)
            stream.tokens_read = stream.calls = 0
            out = g.call("audit_long_context", _host(g, stream), *args, **kw)
            budget = (args[1] - args[0]) + stream.length
            if stream.tokens_read > budget:
                fail(f"read {stream.tokens_read} tokens from the stream; the budget is {budget} "
                     "(the calibration window once and the stream once)")
            _check_audit(out, exp)

    def positions(n, lo, hi):
        return sorted(rnd.sample(range(lo, hi), n))

    L = 65536
    sp = [(p, "v", None, rnd.uniform(8, 40)) for p in positions(7, 2048, L)]
    audit_case("audit-v-spikes-after-calibration", make_stream(1000 + rnd.randrange(10**6), L, 2, 32, spikes=sp),
               0, 2048, 200.0, 100.0)
    sp = [(p, "k", None, rnd.uniform(8, 40)) for p in positions(5, 2048, L)]
    audit_case("audit-k-spikes-after-calibration", make_stream(2000 + rnd.randrange(10**6), L, 2, 32, spikes=sp),
               0, 2048, 200.0, 100.0)
    sp = [(rnd.randrange(10, 2000), "v", None, 40.0)] + [(p, "v", None, rnd.uniform(8, 20))
                                                           for p in positions(6, 2048, L)]
    audit_case("audit-spike-inside-calibration", make_stream(3000 + rnd.randrange(10**6), L, 2, 32, spikes=sp),
               0, 2048, 200.0, 100.0)
    bulk = make_stream(4000 + rnd.randrange(10**6), 131072, 1, 32)
    audit_case("audit-gaussian-bulk-div-448", bulk, 0, 2048, 448.0, 448.0)
    audit_case("audit-gaussian-bulk-vllm-divs", bulk, 0, 2048, 200.0, 100.0)
    sink = make_stream(5000 + rnd.randrange(10**6), 16384, 2, 32, sink=400.0)
    audit_case("audit-sink-left-out-of-calibration", sink, 1, 2049, 200.0, 100.0)
    audit_case("audit-sink-inside-calibration", sink, 0, 2048, 200.0, 100.0)
    heads = make_stream(6000 + rnd.randrange(10**6), 32768, 4, 16, k_std=[1.0, 1.0, 8.0, 1.0],
                        v_std=[1.0, 6.0, 1.0, 1.0],
                        spikes=[(p, "k", 0, 6.0) for p in positions(4, 1024, 32768)]
                        + [(p, "v", 2, 9.0) for p in positions(3, 1024, 32768)])
    audit_case("audit-per-head-scales", heads, 0, 1024, 200.0, 100.0, per_head=True)
    audit_case("audit-per-tensor-scales-same-stream", heads, 0, 1024, 200.0, 100.0, per_head=False)
    a0 = 1000 + rnd.randrange(0, 3000)
    edges = make_stream(7000 + rnd.randrange(10**6), 20000, 1, 16,
                        spikes=[(a0 - 1, "v", None, 30.0), (a0 + 2048, "v", None, 30.0),
                                (a0, "v", None, 1.5), (a0 + 2047, "v", None, 1.5)])
    audit_case("audit-calibration-window-edges", edges, a0, a0 + 2048, 200.0, 100.0)
    short = make_stream(8000 + rnd.randrange(10**6), 5000, 2, 8,
                        spikes=[(4999, "k", None, 20.0), (4100, "v", 1, 20.0)])
    audit_case("audit-whole-stream-calibration", short, 0, 5000, 200.0, 100.0)
    audit_case("audit-short-stream-odd-divs", short, 0, 4097, 320.0, 448.0)
    audit_case("audit-k-div-not-v-div", short, 0, 100, 448.0, 60.0)
    # the clip test is exact: elements one float32 step either side of 448 * amax / div
    edge = boundary_stream()
    audit_case("audit-clip-boundary-k200-v100", edge, 0, 16, 200.0, 100.0)
    audit_case("audit-clip-boundary-k100-v200", edge, 0, 16, 100.0, 200.0)
    # div 448: the calibration maximum itself sits on the boundary and must not clip
    at448 = div448_stream()
    audit_case("audit-div-448-amax-does-not-clip", at448, 0, 16, 448.0, 448.0)
    audit_case("audit-div-448-amax-does-not-clip-per-head", at448, 0, 16, 448.0, 448.0, per_head=True)
    # div > 448: tokens of the calibration window itself clip
    wide = make_stream(10000 + rnd.randrange(10**6), 12000, 2, 16)
    w0 = 3000 + rnd.randrange(0, 2000)
    audit_case("audit-div-above-448-window-clips", wide, w0, w0 + 2048, 500.0, 600.0)
    # div 1 (scale = amax, 448x headroom): only a token 448x the calibration maximum clips
    sp = [(p, "k", None, rnd.uniform(2000, 3000)) for p in positions(2, 1000, 5000)]
    audit_case("audit-div-1-scale-is-amax", make_stream(11000 + rnd.randrange(10**6), 5000, 2, 8, spikes=sp),
               0, 1000, 1.0, 100.0)
    # 4097 tokens: the last read is one token (4096), and it clips / holds the window's maximum
    last = make_stream(12000 + rnd.randrange(10**6), 4097, 1, 8,
                       spikes=[(4096, "v", None, rnd.uniform(30, 60)), (4096, "k", None, rnd.uniform(30, 60))])
    audit_case("audit-last-token-clips", last, 0, 2048, 200.0, 100.0)
    audit_case("audit-window-ends-on-its-maximum", last, 0, 4097, 200.0, 100.0)

    # 5. input checks ---------------------------------------------------------------------------
    x = torch.randn(4, 8, generator=g.rng(5)).to(dev)
    checks = [
        ("encode-nan", "fp8_encode", (torch.tensor([1.0, math.nan], device=dev), 1.0, "e4m3")),
        ("encode-inf", "fp8_encode", (torch.tensor([1.0, math.inf], device=dev), 1.0, "e4m3")),
        ("encode-zero-scale", "fp8_encode", (x, 0.0, "e4m3")),
        ("encode-negative-scale", "fp8_encode", (x, -0.5, "e4m3")),
        ("encode-nan-scale", "fp8_encode", (x, math.nan, "e4m3")),
        ("encode-zero-in-scale-tensor", "fp8_encode", (x, torch.tensor([1.0, 0.0, 1.0, 1.0], device=dev)[:, None], "e4m3")),
        ("encode-scale-shape", "fp8_encode", (x, torch.ones(3, 1, device=dev), "e4m3")),
        ("encode-scale-a-string", "fp8_encode", (x, "0.5", "e4m3")),
        ("encode-fnuz-format", "fp8_encode", (x, 1.0, "e4m3fnuz")),
        ("encode-int-tensor", "fp8_encode", (torch.ones(3, dtype=torch.int64, device=dev), 1.0, "e4m3")),
        ("encode-integer-scale-tensor", "fp8_encode", (x, torch.tensor(2, device=dev), "e4m3")),
        ("decode-not-uint8", "fp8_decode", (torch.ones(3, dtype=torch.int32, device=dev), 1.0, "e4m3")),
        ("decode-nan-code-e4m3", "fp8_decode", (torch.tensor([0x7F], dtype=torch.uint8, device=dev), 1.0, "e4m3")),
        ("decode-inf-code-e5m2", "fp8_decode", (torch.tensor([0x7C], dtype=torch.uint8, device=dev), 1.0, "e5m2")),
        ("decode-nan-code-e5m2", "fp8_decode", (torch.tensor([0x3C, 0xFD], dtype=torch.uint8, device=dev), 1.0, "e5m2")),
        ("decode-zero-scale", "fp8_decode", (torch.ones(3, dtype=torch.uint8, device=dev), 0.0, "e4m3")),
    ]
    c = torch.zeros(1, 4, 5, 8, dtype=torch.uint8, device=dev)
    q = torch.zeros(1, 6, 8, device=dev)
    checks += [
        ("attention-heads-not-multiple", "fp8_decode_attention", (q, c, c, 1.0, 1.0)),
        ("attention-head-dim-mismatch", "fp8_decode_attention", (torch.zeros(1, 8, 4, device=dev), c, c, 1.0, 1.0)),
        ("attention-k-v-shapes-differ", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, device=dev), c, c[:, :, :3], 1.0, 1.0)),
        ("attention-codes-not-uint8", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, device=dev), c.float(), c, 1.0, 1.0)),
        ("attention-scale-wrong-length", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, device=dev), c, c, torch.ones(3, device=dev), 1.0)),
        ("attention-zero-v-scale", "fp8_decode_attention", (torch.zeros(1, 8, 8, device=dev), c, c, 1.0, 0.0)),
        ("attention-q-nan", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, device=dev).index_fill(2, torch.tensor([3], device=dev), math.nan), c, c, 1.0, 1.0)),
        ("attention-cache-a-list", "fp8_decode_attention", (torch.zeros(1, 8, 8, device=dev), c.tolist(), c, 1.0, 1.0)),
        ("attention-zero-kv-heads", "fp8_decode_attention", (torch.zeros(1, 8, 8, device=dev), c[:, :0], c[:, :0], 1.0, 1.0)),
        ("attention-q-integer", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, dtype=torch.int64, device=dev), c, c, 1.0, 1.0)),
        ("attention-sm-scale-zero", "fp8_decode_attention", (torch.zeros(1, 8, 8, device=dev), c, c, 1.0, 1.0, "e4m3", 0.0)),
        ("attention-empty-cache", "fp8_decode_attention", (torch.zeros(1, 8, 8, device=dev), c[:, :, :0], c[:, :, :0], 1.0, 1.0)),
        ("attention-nan-code-e5m2", "fp8_decode_attention",
         (torch.zeros(1, 8, 8, device=dev), c, torch.where(c == 0, 0x7E, c).to(torch.uint8), 1.0, 1.0, "e5m2")),
    ]
    for nm, fn, args in checks:
        with g.case(f"rejects-{nm}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
    small = make_stream(9000, 3000, 1, 8)
    zero_head = make_stream(9001, 3000, 1, 8)
    zero_head.k[:100] = 0
    for nm, s, args in (("audit-calib-end-past-length", small, (0, 3001, 200.0, 100.0)),
                        ("audit-empty-window", small, (50, 50, 200.0, 100.0)),
                        ("audit-float-calib-end", small, (0, 100.0, 200.0, 100.0)),
                        ("audit-negative-start", small, (-1, 100, 200.0, 100.0)),
                        ("audit-zero-div", small, (0, 100, 0.0, 100.0)),
                        ("audit-all-zero-calibration", zero_head, (0, 100, 200.0, 100.0))):
        with g.case(f"rejects-{nm}", group=INPUT_CHECKS):
            g.raises("ValueError", "audit_long_context", _host(g, s), *args)
