"""Hidden grader for triton-flash-attention.

The truth is float64 attention (and its natural-log logsumexp) of the very inputs the kernel
reads, with the causal mask aligned to the bottom-right corner (query i sees key j iff
j <= i + S - T). Every tensor lives in a poisoned buffer with gaps between rows, so an unmasked
load past the sequence reads NaN and an unmasked store is seen. Cases: lengths not divisible by
the tiles (T, S in 1..70), causal with T < S (decode-like T = 1, chunked prefill), T = S, several
heads, scores near +-1000 (the max subtraction; m starts at -inf), scale 0 (uniform rows) and a
non-default scale, float16 inputs, the submission's tiles and the grader's (16/32/64), and
S - T = 33, where a query tile's last visible key starts a key tile (a loop end one short).
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import Grading, expect_block_sizes, expect_tensor, kernel_input, kernel_output
from inferprep.grading.perf_stats import PerfWork, perf_seed

TOL = {torch.float32: (1e-4, 2e-5), torch.float16: (5e-3, 5e-3)}


def truth(q, k, v, causal, scale):
    s = scale * q.double() @ k.double().transpose(-1, -2)
    if causal:
        t, n = q.shape[-2], k.shape[-2]
        keep = torch.arange(n)[None, :] <= torch.arange(t)[:, None] + (n - t)
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


def run(g: Grading, q, k, v, *, causal: bool, scale: float | None = None, tiles: dict | None = None,
        row_gap: int = 3) -> None:
    heads, t, d = q.shape
    n = k.shape[1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if tiles is None:
        tiles = expect_block_sizes(g.call("block_sizes", d, causal), ("BLOCK_M", "BLOCK_N"), 16, 128)
    dev = g.device
    qa, ka, va = (kernel_input(x.to(dev), name=nm, row_gap=row_gap) for x, nm in ((q, "q"), (k, "k"), (v, "v")))
    oa = kernel_output(q.shape, q.dtype, dev, name="o", row_gap=row_gap)
    la = kernel_output((heads, t), torch.float32, dev, name="lse", row_gap=row_gap)
    grid = (-(-t // tiles["BLOCK_M"]), heads)
    o, lse = g.launch("flash_attention_kernel", grid, qa, ka, va, oa, la,
                      qa.stride[0], qa.stride[1], ka.stride[0], ka.stride[1], va.stride[0], va.stride[1],
                      oa.stride[0], oa.stride[1], la.stride[0], t, n, scale,
                      HEAD_DIM=d, CAUSAL=causal, **tiles)
    want_o, want_lse = truth(q, k, v, causal, scale)
    rtol, atol = TOL[q.dtype]
    expect_tensor(o, want_o.to(q.dtype).to(dev), name="o", rtol=rtol, atol=atol)
    expect_tensor(lse, want_lse.float().to(dev), name="lse", rtol=1e-5, atol=1e-4)


def qkv(g: Grading, seed: int, heads: int, t: int, n: int, d: int, spread: float = 1.0, dtype=torch.float32):
    gen = g.rng(seed)
    return tuple((torch.randn(heads, m, d, generator=gen, dtype=torch.float64) * spread).to(dtype)
                 for m in (t, n, n))


def grade(g: Grading) -> None:
    shapes = [  # (heads, T, S, d, causal)
        (1, 16, 16, 16, False), (2, 37, 37, 16, False), (2, 37, 37, 16, True), (1, 1, 45, 32, True),
        (2, 20, 53, 16, True), (1, 53, 70, 32, False), (3, 5, 5, 16, True), (1, 33, 64, 16, True),
        # S - T = 33: the last key a query tile of 16 or 32 rows may see (48, 64) is the first key
        # of a key tile, so a loop end one short skips that whole tile
        (1, 36, 69, 16, True),
    ]
    for c, (h, t, n, d, causal) in enumerate(shapes):
        with g.case(f"{'causal' if causal else 'full'}-H{h}-T{t}-S{n}-d{d}"):
            run(g, *qkv(g, c, h, t, n, d), causal=causal)
    with g.case("contiguous-rows-causal"):
        run(g, *qkv(g, 20, 2, 24, 40, 16), causal=True, row_gap=0)
    with g.case("scores-near-plus-1000"):   # exp overflows without the running max
        q, k, v = qkv(g, 21, 1, 20, 40, 16)
        run(g, q * 0 + 10.0, k * 0.05 + 10.0, v, causal=False, scale=0.625)
    with g.case("scores-near-minus-1000-causal"):   # m starting at 0 underflows every exp to 0
        q, k, v = qkv(g, 22, 1, 20, 40, 16)
        run(g, q * 0 + 10.0, k * 0.05 - 10.0, v, causal=True, scale=0.625)
    with g.case("scale-0-causal"):   # every score 0: row i averages the values it may see
        run(g, *qkv(g, 23, 1, 10, 30, 16), causal=True, scale=0.0)
    with g.case("scale-0.3"):
        run(g, *qkv(g, 24, 2, 19, 19, 16), causal=False, scale=0.3)
    with g.case("float16-causal"):
        run(g, *qkv(g, 25, 2, 30, 45, 16, dtype=torch.float16), causal=True)
    for c, (bm, bn) in enumerate([(32, 16), (16, 64), (64, 32)]):
        with g.case(f"grader-tiles-{bm}x{bn}-causal"):
            run(g, *qkv(g, 30 + c, 1, 41, 57, 16), causal=True, tiles={"BLOCK_M": bm, "BLOCK_N": bn})
    with g.case("grader-tiles-16x16-causal-diagonal-at-a-tile-start"):   # query tile 0 sees keys 0..48
        run(g, *qkv(g, 33, 2, 36, 69, 16), causal=True, tiles={"BLOCK_M": 16, "BLOCK_N": 16})


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's launch: causal attention on fresh float32 q, k, v (8 heads x 1024 tokens x
    d = 64 on CUDA; 2 x 128 x 32 through the CPU interpreter). Least work: q, k, v read and o, lse
    written once; 4 d FLOPs (two matmuls) per kept score, N (N + 1) / 2 kept scores a head."""
    heads, t, d = (8, 1024, 64) if g.device.type == "cuda" else (2, 128, 32)
    run(side.grading(g), *qkv(g, perf_seed(rng), heads, t, t, d), causal=True)
    return PerfWork(bytes_moved=4 * (4 * heads * t * d + heads * t), flops=4 * d * heads * t * (t + 1) // 2)
