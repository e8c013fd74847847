"""Hidden grader for flash-attention-forward.

Three parts:
1. ``flash_attention_forward`` on plain tensors: float64 naive attention is the truth; shapes
   whose length no block size divides, causal and not, rows whose every score is about -1e4
   (m initialised to 0 turns them into 0/0), single-row blocks, bf16/fp16 inputs; and one long
   causal case (N = 12288, float32) where an N x N float32 score matrix alone is 576 MiB, more
   than the exercise's memory limit (enforced on CPU), while the tiled working set is kilobytes;
   and the same N with block_q = N, block_k = 64, where a B_q x N row block (score the whole query
   tile against every key, then torch.softmax) is 576 MiB again but a real tile is 3 MiB.
2. ``flash_attention_tiles`` against a hosted HBM model: the submission can only read one
   (block x d) tile per call. The parent records every call, checks the call sequence against
   the on-chip model of the statement (one Q tile at a time; each needed K/V tile read exactly
   once per Q tile; skipped causal tiles never read; O and lse stored once) and compares the
   element counts with the tiled formula and the naive one.
3. ``hbm_traffic``: the two IO formulas on hidden sizes.
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_equal, expect_tensor, fail
from inferprep.grading.perf_stats import PerfWork

TOL = {  # (rtol, atol) against float64 truth, per input dtype; lse is compared with atol only
    torch.float64: (1e-9, 1e-10),
    torch.float32: (1e-4, 2e-5),
    torch.bfloat16: (2e-2, 3e-2),
    torch.float16: (5e-3, 5e-3),
}
LSE_TOL = {torch.float64: (1e-12, 1e-10)}  # (rtol, atol); every other dtype: (1e-5, 1e-4) (fp32 math)


def naive(q, k, v, causal, scale=None, chunk=1024):
    """float64 attention and natural-log lse, 1024 query rows at a time (no N x N in the parent)."""
    d, n = q.shape[-1], q.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    k64, v64 = k.double(), v.double()
    outs, lses = [], []
    for i0 in range(0, n, chunk):
        i1 = min(i0 + chunk, n)
        s = (q[..., i0:i1, :].double() @ k64.transpose(-1, -2)) * scale
        if causal:
            rows = torch.arange(i0, i1, device=q.device)[:, None]
            s = s.masked_fill(torch.arange(n, device=q.device)[None, :] > rows, -math.inf)
        outs.append(torch.softmax(s, -1) @ v64)
        lses.append(torch.logsumexp(s, -1))
    return torch.cat(outs, -2), torch.cat(lses, -1)


def check_forward(g, q, k, v, causal, block_q, block_k, scale=None, call=None):
    call = call or g.call
    out = call("flash_attention_forward", q, k, v, causal=causal, block_q=block_q, block_k=block_k, scale=scale)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail("flash_attention_forward must return a pair (out, lse)")
    o, lse = out
    eo, el = naive(q, k, v, causal, scale)
    rtol, atol = TOL[q.dtype]
    lse_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    expect_tensor(o, eo.to(q.dtype), name="out", rtol=rtol, atol=atol)
    lrt, lat = LSE_TOL.get(q.dtype, (1e-5, 1e-4))
    expect_tensor(lse, el.to(lse_dtype), name="lse", rtol=lrt, atol=lat)


class HBM:
    """One head's Q, K, V in 'HBM'. Every read and write crosses the wire and is logged."""

    def __init__(self, q, k, v, block_q, block_k):
        self.q, self.k, self.v = q, k, v
        self.n, self.d = q.shape
        self.bq, self.bk = block_q, block_k
        self.log: list[tuple[str, int]] = []
        self.reads = 0
        self.writes = 0
        self.o = torch.full_like(q, float("nan"))
        self.lse = torch.full((self.n,), float("nan"), dtype=q.dtype, device=q.device)

    def _rows(self, t, idx, block, what):
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise TypeError(f"{what} tile index must be an int")
        tiles = -(-self.n // block)
        if not 0 <= idx < tiles:
            raise IndexError(f"{what} tile {idx} out of range: there are {tiles} tiles of {block} rows")
        return idx * block, min((idx + 1) * block, self.n)

    def _load(self, name, t, idx, block):
        a, b = self._rows(t, idx, block, name)
        self.log.append((name, idx))
        self.reads += (b - a) * self.d
        return t[a:b].clone()

    def load_q(self, i):
        return self._load("q", self.q, i, self.bq)

    def load_k(self, j):
        return self._load("k", self.k, j, self.bk)

    def load_v(self, j):
        return self._load("v", self.v, j, self.bk)

    def store_o(self, i, tile):
        a, b = self._rows(self.q, i, self.bq, "o")
        if not isinstance(tile, torch.Tensor) or tuple(tile.shape) != (b - a, self.d):
            raise ValueError(f"store_o({i}) needs a tensor of shape {(b - a, self.d)}")
        self.log.append(("o", i))
        self.writes += (b - a) * self.d
        self.o[a:b] = tile.detach().to(self.q.device, self.q.dtype)

    def store_lse(self, i, tile):
        a, b = self._rows(self.q, i, self.bq, "lse")
        if not isinstance(tile, torch.Tensor) or tuple(tile.shape) != (b - a,):
            raise ValueError(f"store_lse({i}) needs a tensor of shape {(b - a,)}")
        self.log.append(("lse", i))
        self.writes += b - a
        self.lse[a:b] = tile.detach().to(self.q.device, self.q.dtype)


def check_schedule(log, n, bq, bk, causal, needed):
    """The on-chip model: Q tiles one at a time, each opened by load_q(i), then every needed K and
    V tile exactly once (any order), then store_o(i) and store_lse(i); nothing else."""
    tq = -(-n // bq)
    seen_q = set()
    pos = 0
    while pos < len(log):
        name, i = log[pos]
        if name != "q":
            fail(f"call {pos}: {name} tile {i} is used outside a Q tile (no Q tile is on chip); "
                 "the model allows one Q tile at a time, opened by load_q")
        if i in seen_q:
            fail(f"Q tile {i} was loaded twice")
        seen_q.add(i)
        pos += 1
        ks, vs, stored = [], [], []
        while pos < len(log) and log[pos][0] != "q":
            nm, j = log[pos]
            if nm in ("o", "lse"):
                if j != i:
                    fail(f"while Q tile {i} is on chip, {nm} was stored for tile {j}")
                stored.append(nm)
            elif stored:
                fail(f"Q tile {i}: {nm} tile {j} loaded after the output was stored")
            else:
                (ks if nm == "k" else vs).append(j)
            pos += 1
        if not stored and pos < len(log):
            fail(f"load_q({log[pos][1]}) while Q tile {i} is still on chip (its output not stored yet): "
                 "the model holds one Q tile at a time")
        need = needed(i)
        for what, got in (("K", ks), ("V", vs)):
            if len(set(got)) != len(got):
                dup = sorted({j for j in got if got.count(j) > 1})
                fail(f"Q tile {i}: {what} tile(s) {dup} read more than once (a tile is kept on chip "
                     "only until the next one of its kind is loaded; read each needed tile once)")
            if sorted(got) != need:
                extra = sorted(set(got) - set(need))
                missing = sorted(set(need) - set(got))
                if extra and causal:
                    fail(f"Q tile {i}: read {what} tile(s) {extra} that lie entirely above the diagonal "
                         "(fully masked tiles must be skipped)")
                fail(f"Q tile {i}: {what} tiles read {sorted(got)}; expected every tile of {need}"
                     + (f" (missing {missing})" if missing else "") + (f" (extra {extra})" if extra else ""))
        if sorted(stored) != ["lse", "o"]:
            fail(f"Q tile {i}: expected one store_o and one store_lse, got {stored}")
    if len(seen_q) != tq:
        fail(f"{tq - len(seen_q)} of {tq} Q tiles were never processed (the last tile is partial "
             "when the block size does not divide N)" if seen_q else "no Q tile was processed")


_CE_KINDS = {"forward-": "forward", "forward-float64": "float64", "forward-bfloat16-": "bfloat16",
             "forward-float16-": "float16", "forward-explicit-scale": "scale", "forward-scale-zero": "scale",
             "very-negative-rows-": "very-negative", "scores-minus-1000": "very-negative",
             "very-positive-rows": "very-positive", "tiles-": "tiles", "hbm-traffic-": "hbm-traffic"}
_CE_DTYPES = {"float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def check_tiles(g: Grading, ref, q, k, v, bq: int, bk: int, causal: bool, scale: float) -> tuple[HBM, dict]:
    """One flash_attention_tiles call on an HBM model of (N, d) q, k, v: checks its schedule, the
    stored O and lse, and the traffic; returns the model and the reference's traffic."""
    n, d = q.shape
    hbm = HBM(q, k, v, bq, bk)
    handle = g.host(hbm, ["load_q", "load_k", "load_v", "store_o", "store_lse"],
                    {"seq_len": n, "head_dim": d, "block_q": bq, "block_k": bk, "scale": scale})
    g.call("flash_attention_tiles", handle, causal=causal)
    g.show_result(" ".join(f"{name}({i})" for name, i in hbm.log), "", name="the calls on HBM")
    check_schedule(hbm.log, n, bq, bk, causal, lambda i: ref.needed_kv_tiles(i, n, bq, bk, causal))
    eo, el = naive(q[None, None], k[None, None], v[None, None], causal, scale)
    expect_tensor(hbm.o, eo[0, 0].float(), name="stored O", rtol=1e-4, atol=2e-5)
    expect_tensor(hbm.lse, el[0, 0].float(), name="stored lse", rtol=1e-5, atol=1e-4)
    want = ref.hbm_traffic(n, d, bq, bk, causal)
    if hbm.reads != want["flash_reads"] or hbm.writes != want["flash_writes"]:
        fail(f"measured {hbm.reads} elements read and {hbm.writes} written; the tiled schedule "
             f"moves {want['flash_reads']} and {want['flash_writes']}")
    return hbm, want


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A tiny input of the kind a failed case tests: a forward on a few rows with block sizes that
    need not divide N (causal or not, an explicit or zero scale, the failed case's dtype, rows
    whose scores are all far below or above 0), a few tiles on the HBM model, or hbm_traffic on
    small sizes. The long cases test memory: no small input shows them."""
    kind = trial.pick(_CE_KINDS)
    if kind is None:
        return False
    rng, dev, ref = trial.rng, g.device, g.reference()
    gen = trial.generator()
    n, d = rng.randint(1, trial.size + 4), rng.randint(1, 4)
    bq, bk = rng.randint(1, n + 2), rng.randint(1, n + 2)
    causal = rng.random() < 0.6
    if kind == "hbm-traffic":
        args = (n, d, bq, bk)
        g.show_input(seq_len=n, head_dim=d, block_q=bq, block_k=bk, causal=causal)
        got = g.call("hbm_traffic", *args, causal=causal)
        want = ref.hbm_traffic(*args, causal)
        if not isinstance(got, dict):
            fail(f"hbm_traffic must return a dict, got {type(got).__name__}")
        expect_equal(got, want, name="hbm_traffic")
        return None
    scale = rng.choice([None, None, round(rng.uniform(0.05, 2.0), 3), 0.0]) if kind != "scale" else rng.choice([0.0, 0.05])
    q, k, v = (torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64) for _ in range(3))
    if kind == "very-negative":     # every score of some rows near -150 or -1000
        k = 1.0 + 0.05 * k
        q[..., ::2, :] = -rng.choice([150.0, 1000.0]) / d
        scale = 1.0
    elif kind == "very-positive":   # scores near +113: exp(s) overflows float32
        k, q, scale = 1.0 + 0.05 * k, torch.full_like(q, 40.0), None
    if kind == "tiles":
        q, k, v = (x[0, 0].float().to(dev) for x in (q, k, v))
        scale = 1.0 / math.sqrt(d) if scale is None else scale
        g.show_input(q=q, k=k, v=v, block_q=bq, block_k=bk, causal=causal, scale=scale)
        check_tiles(g, ref, q, k, v, bq, bk, causal, scale)
        return None
    dt = _CE_DTYPES.get(kind, torch.float32)
    q, k, v = (x.to(dt).to(dev) for x in (q, k, v))
    g.show_input(q=q, k=k, v=v, causal=causal, block_q=bq, block_k=bk, scale=scale)
    check_forward(g, q, k, v, causal, bq, bk, scale)
    return None


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device

    def rnd(seed, *shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g.rng(seed), dtype=torch.float64).to(dtype).to(dev)

    # -- 1. plain tensors ------------------------------------------------------------------------
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
        name = f"forward-N{n}-d{d}-bq{bq}-bk{bk}-{'causal' if causal else 'full'}"
        with g.case(name):
            q, k, v = (rnd(100 * c + t, b, h, n, d) for t in range(3))
            check_forward(g, q, k, v, causal, bq, bk)

    with g.case("forward-float64"):
        q, k, v = (rnd(900 + t, 2, 2, 45, 8, dtype=torch.float64) for t in range(3))
        check_forward(g, q, k, v, True, 16, 8)
    for dt in (torch.bfloat16, torch.float16):
        with g.case(f"forward-{str(dt).split('.')[-1]}-N700"):
            q, k, v = (rnd(950 + t, 1, 2, 700, 32, dtype=dt) for t in range(3))
            check_forward(g, q, k, v, False, 64, 96)
    with g.case("forward-explicit-scale"):
        q, k, v = (rnd(970 + t, 1, 1, 50, 8) for t in range(3))
        check_forward(g, q, k, v, True, 16, 16, scale=0.05)
    # scale = 0.0 is a scale, not "use the default": every score is 0 and each row averages the
    # values it may see (lse = ln(visible keys)); `scale or 1/sqrt(d)` turns it into the default
    with g.case("forward-scale-zero"):
        q, k, v = (rnd(975 + t, 1, 2, 40, 8) for t in range(3))
        check_forward(g, q, k, v, True, 16, 8, scale=0.0)
    # float16 over 8192 keys whose values share an offset of 16: the unnormalised output acc is
    # about l * 16 > 100,000, past float16's 65504, while the output itself is about 16; dividing
    # acc by l after rounding both to float16 gives inf
    with g.case("forward-float16-N8192-large-row-sums"):
        n, d = 8192, 16
        q = (0.05 * torch.randn(1, 1, n, d, generator=g.rng(960), dtype=torch.float64)).half().to(dev)
        k = rnd(961, 1, 1, n, d, dtype=torch.float16)
        v = (16.0 + torch.randn(1, 1, n, d, generator=g.rng(962), dtype=torch.float64)).half().to(dev)
        check_forward(g, q, k, v, False, 256, 512)

    # rows whose every score is about -150: exp(s - 0) underflows to 0 in float32 if m starts at 0
    for causal in (False, True):
        with g.case(f"very-negative-rows-{'causal' if causal else 'full'}"):
            n, d = 70, 16
            k = (1.0 + 0.05 * torch.randn(1, 1, n, d, generator=g.rng(980), dtype=torch.float64)).float().to(dev)
            q = rnd(981, 1, 1, n, d)
            q[..., ::3, :] = -150.0 / math.sqrt(d)
            v = rnd(982, 1, 1, n, d)
            check_forward(g, q, k, v, causal, 16, 32)
    with g.case("scores-minus-1000"):  # DOMAIN-NOTES 8: scores [-1000, -1000], V [1, 2] -> 1.5
        q = torch.full((1, 1, 2, 1), -1000.0, device=dev)
        k = torch.ones(1, 1, 2, 1, device=dev)
        v = torch.tensor([1.0, 2.0], device=dev).view(1, 1, 2, 1)
        check_forward(g, q, k, v, False, 1, 1, scale=1.0)
    with g.case("very-positive-rows"):
        n, d = 60, 8
        k = (1.0 + 0.05 * torch.randn(1, 1, n, d, generator=g.rng(983), dtype=torch.float64)).float().to(dev)
        q = torch.full((1, 1, n, d), 40.0, device=dev)       # scores ~ +113: exp(s) overflows float32
        v = rnd(984, 1, 1, n, d)
        check_forward(g, q, k, v, False, 16, 16)

    # -- 2. the HBM model --------------------------------------------------------------------------
    tile_cases = [  # (N, d, block_q, block_k, causal, scale): hbm.scale varies, 1/sqrt(d) is only one of them
        (64, 8, 16, 16, False, 1.0 / math.sqrt(8)),
        (64, 8, 16, 16, True, 0.3),
        (100, 16, 32, 24, True, 1.0 / math.sqrt(16)),
        (100, 16, 24, 32, False, 1.0),
        (45, 8, 8, 20, True, 0.05),
        (9, 4, 16, 16, True, 0.0),
        (16, 4, 8, 7, True, 2.0),   # K tile 1 starts on row 7, Q tile 0's last row: needed (skip off-by-one)
    ]
    for c, (n, d, bq, bk, causal, scale) in enumerate(tile_cases):
        with g.case(f"tiles-N{n}-bq{bq}-bk{bk}-{'causal' if causal else 'full'}-scale{scale:.3g}"):
            q, k, v = (rnd(2000 + 10 * c + t, n, d) for t in range(3))
            hbm, want = check_tiles(g, ref, q, k, v, bq, bk, causal, scale)
            if hbm.reads + hbm.writes >= want["naive_reads"] + want["naive_writes"]:
                fail("the tiled schedule moved no fewer elements than naive attention")

    # -- 3. the IO formulas ------------------------------------------------------------------------
    io_cases = [(1024, 64, 128, 128, False), (1024, 64, 128, 128, True), (1000, 128, 96, 80, True),
                (4096, 128, 64, 256, False), (1, 1, 1, 1, True), (300, 64, 512, 512, True),
                (8192, 128, 128, 64, True)]
    for (n, d, bq, bk, causal) in io_cases:
        with g.case(f"hbm-traffic-N{n}-d{d}-bq{bq}-bk{bk}-{'causal' if causal else 'full'}"):
            got = g.call("hbm_traffic", n, d, bq, bk, causal=causal)
            want = ref.hbm_traffic(n, d, bq, bk, causal)
            if not isinstance(got, dict):
                fail(f"hbm_traffic must return a dict, got {type(got).__name__}")
            expect_equal(sorted(got), sorted(want), name="keys")
            for key in sorted(want):
                expect_equal(got[key], want[key], name=key)

    # -- long: an N x N float32 matrix does not fit the memory limit -------------------------------
    with g.case("long-causal-N12288-no-NxN"):
        _long_case(g, rnd, 12288, 32, 256, 256, 3000, 192)

    # -- long, one query tile: a B_q x N row block of scores is N x N again -----------------------
    with g.case("long-causal-N12288-bq12288-bk64-no-rowblock"):
        _long_case(g, rnd, 12288, 8, 12288, 64, 3100, 128)

    # -- input checks (scored beside the verdict; run last) ----------------------------------------
    x = rnd(990, 1, 1, 8, 4)
    checks = [
        ("rejects-shapes-that-differ", (x, x[..., :7, :], x), {}),
        ("rejects-3d-input", (x[0], x[0], x[0]), {}),
        ("rejects-dtypes-that-differ", (x, x.double(), x), {}),
        ("rejects-integer-dtype", (x.long(), x.long(), x.long()), {}),
        ("rejects-block_q-0", (x, x, x), {"block_q": 0}),
        ("rejects-negative-block_q", (x, x, x), {"block_q": -1}),
        ("rejects-negative-block_k", (x, x, x), {"block_k": -64}),
    ]
    for name, args, kwargs in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", "flash_attention_forward", *args, **kwargs)
    for name, args in [("hbm-traffic-rejects-seq_len-0", (0, 64, 64, 64)),
                       ("hbm-traffic-rejects-negative-head_dim", (128, -64, 64, 64)),
                       ("hbm-traffic-rejects-negative-block_q", (128, 64, -64, 64)),
                       ("hbm-traffic-rejects-block_k-0", (128, 64, 64, 0))]:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", "hbm_traffic", *args)


def _long_case(g, rnd, n, d, bq, bk, seed, samples):
    """Causal float32 forward at length n; float64 truth on sampled query rows."""
    dev = g.device
    q, k, v = (rnd(seed + t, 1, 1, n, d) for t in range(3))
    out = g.call("flash_attention_forward", q, k, v, causal=True, block_q=bq, block_k=bk)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail("flash_attention_forward must return a pair (out, lse)")
    o, lse = out
    expect_tensor(o, q, name="out", rtol=float("inf"), atol=float("inf"))  # shape, dtype, NaN
    expect_tensor(lse, q[..., 0], name="lse", rtol=float("inf"), atol=float("inf"))
    rows = torch.randperm(n, generator=g.rng(seed + 10))[:samples].sort().values.to(dev)
    s = (q[0, 0, rows].double() @ k[0, 0].double().T) / math.sqrt(d)
    s = s.masked_fill(torch.arange(n, device=dev)[None, :] > rows[:, None], -math.inf)
    expect_tensor(o[0, 0, rows], (torch.softmax(s, -1) @ v[0, 0].double()).float(),
                  name=f"out ({samples} sampled rows)", rtol=1e-4, atol=2e-5)
    expect_tensor(lse[0, 0, rows], torch.logsumexp(s, -1).float(), name=f"lse ({samples} sampled rows)",
                  rtol=1e-5, atol=1e-4)


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's call: causal flash_attention_forward on fresh float32 (B, H, N, d) =
    (2, 16, 2048, 64) on CUDA, (1, 4, 512, 64) on CPU, 64 x 64 tiles. Least work: q, k, v read and
    out, lse written once; 4 d FLOPs per kept score, N (N + 1) / 2 kept scores a head."""
    b, h, n, d = (2, 16, 2048, 64) if g.device.type == "cuda" else (1, 4, 512, 64)
    q, k, v = (torch.randn(b, h, n, d, generator=rng).to(g.device) for _ in range(3))
    check_forward(g, q, k, v, True, 64, 64, call=side.timed_call)
    return PerfWork(bytes_moved=4 * (4 * b * h * n * d + b * h * n), flops=4 * d * b * h * n * (n + 1) // 2)
