"""Hidden grader for triton-paged-decode.

The pool is laid out as vLLM's: k_cache, v_cache (num_blocks, PAGE_SIZE, kv_heads, HEAD_DIM); each
sequence's block table lists its physical blocks in position order. The grader builds ragged
batches itself: block tables in shuffled physical order (no sequence's blocks 0, 1, 2, ... or
consecutive ascending), a prefix block shared by two sequences
(as after a prefix-cache hit), lengths one below, at and one above a block boundary, a sequence
of one token. Every slot that no sequence owns (the tail of a partly filled block, free blocks)
and every table entry past a sequence's last block are poisoned: table entries point at a block
full of NaN, so reading a slot past seq_len, the wrong block or a block in physical order gives
NaN or a wrong value. Truth: float64 attention over the tokens each sequence owns. Every hidden
case's keys, values, queries and block order are drawn from the grading's salt.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import Grading, Trial, expect_tensor, kernel_input, kernel_output
from inferprep.grading.perf_stats import PerfWork, perf_seed

TOL = {torch.float32: (1e-4, 2e-5), torch.float16: (5e-3, 5e-3)}


def _in_physical_order(row: list[int]) -> bool:
    """Whether a sequence's blocks are 0, 1, 2, ... or, for two or more, consecutive ascending: a
    kernel that reads block j, or block table[b, 0] + j, instead of table[b, j] would pass on it."""
    return row == list(range(row[0], row[0] + len(row))) and (row[0] == 0 or len(row) > 1)


class Pool:
    """A KV pool and a batch's block tables: ``gen`` draws the keys and values, ``rnd`` the
    physical order of the blocks (redrawn until no sequence's blocks are in physical order)."""

    def __init__(self, gen: torch.Generator, rnd: random.Random, seq_lens: list[int], page: int, kv_heads: int,
                 d: int, share_prefix: bool = False, spread: float = 1.0, dtype=torch.float32):
        need = [-(-n // page) for n in seq_lens]
        shared = share_prefix and len(seq_lens) >= 2 and min(seq_lens[:2]) > page
        total = sum(need) - (1 if shared else 0) + 3          # 3 free blocks, one of them poison
        physical = list(range(total))
        while True:                                           # no table row in physical order
            rnd.shuffle(physical)
            free = physical.copy()
            poison = free.pop()
            rows: list[list[int]] = []
            for i, blocks in enumerate(need):
                row = [rows[0][0]] if shared and i == 1 else []   # sequence 1 reuses 0's first block
                while len(row) < blocks:
                    row.append(free.pop())
                rows.append(row)
            if not any(_in_physical_order(row) for row in rows):
                break
        self.poison = poison
        self.k = (torch.randn(total, page, kv_heads, d, generator=gen, dtype=torch.float64) * spread).to(dtype)
        self.v = torch.randn(total, page, kv_heads, d, generator=gen, dtype=torch.float64).to(dtype)
        owned = torch.zeros(total, page, dtype=torch.bool)
        width = max(need) + 2
        self.tables = torch.full((len(seq_lens), width), self.poison, dtype=torch.int32)
        self.keys, self.values = [], []
        for i, (n, row) in enumerate(zip(seq_lens, rows)):
            self.tables[i, :len(row)] = torch.tensor(row, dtype=torch.int32)
            pos = torch.arange(n)
            blk, slot = self.tables[i, pos // page].long(), pos % page
            owned[blk, slot] = True
            self.keys.append(self.k[blk, slot])       # (n, kv_heads, d), position order
            self.values.append(self.v[blk, slot])
        self.k[~owned] = float("nan")
        self.v[~owned] = float("nan")
        self.seq_lens = torch.tensor(seq_lens, dtype=torch.int32)
        self.page = page

    def truth(self, q: torch.Tensor, scale: float) -> torch.Tensor:
        b, h, d = q.shape
        group = h // self.k.shape[2]
        out = torch.empty(b, h, d, dtype=torch.float64)
        for i in range(b):
            k = self.keys[i].double().repeat_interleave(group, dim=1)     # (n, h, d)
            v = self.values[i].double().repeat_interleave(group, dim=1)
            s = torch.einsum("hd,nhd->hn", q[i].double(), k) * scale
            out[i] = torch.einsum("hn,nhd->hd", torch.softmax(s, -1), v)
        return out


def _salted(g: Grading, seed: int) -> random.Random:
    """Hidden case ``seed``'s draws, from the grading's salt: other data every grading."""
    return random.Random(f"triton-paged-decode:{g.salt}:{seed}")


def _pool(g: Grading, seed: int, *args, **kwargs) -> Pool:
    """The hidden case ``seed``'s pool: keys, values and block order all from the salt."""
    rnd = _salted(g, seed)
    return Pool(g.rng(rnd.randrange(1 << 62)), rnd, *args, **kwargs)


def run(g: Grading, pool: Pool, q: torch.Tensor, scale: float | None = None, row_gap: int = 2,
        tol: tuple[float, float] | None = None) -> None:
    """Launch on ``pool`` and compare with float64 attention: (rtol, atol) = ``tol`` or TOL[dtype]."""
    b, h, d = q.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    dev = g.device
    qa = kernel_input(q.to(dev), name="q", row_gap=row_gap)
    ka = kernel_input(pool.k.to(dev), name="k_cache", row_gap=row_gap)
    va = kernel_input(pool.v.to(dev), name="v_cache", row_gap=row_gap)
    ta = kernel_input(pool.tables.to(dev), name="block_tables")
    la = kernel_input(pool.seq_lens.to(dev), name="seq_lens")
    oa = kernel_output(q.shape, q.dtype, dev, name="o", row_gap=row_gap)
    (o,) = g.launch("paged_decode_kernel", (b, h), qa, ka, va, ta, la, oa,
                    qa.stride[0], qa.stride[1], ka.stride[0], ka.stride[1], ka.stride[2],
                    va.stride[0], va.stride[1], va.stride[2], ta.stride[0], oa.stride[0], oa.stride[1],
                    scale, h // pool.k.shape[2], HEAD_DIM=d, PAGE_SIZE=pool.page)
    rtol, atol = TOL[q.dtype] if tol is None else tol
    expect_tensor(o, pool.truth(q, scale).to(q.dtype).to(dev), name="o", rtol=rtol, atol=atol)


def query(g: Grading, seed: int, b: int, h: int, d: int, spread: float = 1.0, dtype=torch.float32):
    gen = g.rng(_salted(g, 1000 + seed).randrange(1 << 62))
    return (torch.randn(b, h, d, generator=gen, dtype=torch.float64) * spread).to(dtype)


def counterexample(g: Grading, trial: Trial) -> None:
    """A fresh tiny batch: one or two sequences of a few tokens (lengths around a small page),
    GQA or not, a shared prefix block, sometimes contiguous buffers or float16."""
    rng, gen = trial.rng, trial.generator()
    page = rng.choice([2, 4])
    lens = [rng.choice([1, page - 1, page, page + 1, rng.randint(1, 2 * page * trial.size)])
            for _ in range(rng.randint(1, 2))]
    kvh, group = rng.randint(1, 2), rng.choice([1, 2])
    dtype = torch.float16 if rng.random() < 0.2 else torch.float32
    pool = Pool(gen, rng, lens, page, kvh, 16, share_prefix=rng.random() < 0.3, dtype=dtype)
    q = torch.randn(len(lens), kvh * group, 16, generator=gen, dtype=torch.float64).to(dtype)
    row_gap = rng.choice([0, 2])
    g.show_input(q=q, k_cache=pool.k, v_cache=pool.v, block_tables=pool.tables, seq_lens=pool.seq_lens,
                 PAGE_SIZE=page, row_gap=row_gap)
    run(g, pool, q, row_gap=row_gap)


def grade(g: Grading) -> None:
    cases = [  # (name, seq_lens, page, heads, kv_heads, d)
        ("one-sequence-one-token", [1], 16, 2, 2, 16),
        ("boundary-lengths-page-16", [15, 16, 17], 16, 2, 2, 16),
        ("ragged-page-8", [3, 40, 8, 25], 8, 2, 2, 16),
        ("gqa-4-per-kv-head", [20, 9], 8, 4, 1, 16),
        ("mqa-one-kv-head", [12, 31], 16, 4, 1, 32),
        ("long-page-4", [61, 2], 4, 2, 1, 16),
    ]
    for c, (name, lens, page, h, kvh, d) in enumerate(cases):
        with g.case(name):
            run(g, _pool(g, c, lens, page, kvh, d), query(g, c, len(lens), h, d))
    with g.case("shared-prefix-block"):
        run(g, _pool(g, 10, [20, 27, 5], 8, 2, 16, share_prefix=True), query(g, 10, 3, 4, 16))
    with g.case("contiguous-q-and-cache"):
        run(g, _pool(g, 11, [14, 30], 8, 2, 16), query(g, 11, 2, 4, 16), row_gap=0)
    with g.case("scores-near-1000"):   # exp overflows without the running max
        # keys 10 + (0.05 k rounded to a multiple of 1/64): q = 10 and scale 0.625 make every score
        # 1000 + a multiple of 25/256, exact in float32 whatever the summation order, so a float32
        # kernel that subtracts the running max matches float64 on any salt's data
        def near_ten(k):
            return 10.0 + torch.round(3.2 * k) / 64

        pool = _pool(g, 12, [18, 40], 8, 2, 16)
        pool.k = torch.where(pool.k.isnan(), pool.k, near_ten(pool.k))
        pool.keys = [near_ten(k) for k in pool.keys]
        # atol 1e-4: a kernel that folds log2(e) into the scores for tl.exp2 rounds each to float32
        # (ulp 1.2e-4 near 1442), which moves the output by up to ~3.3e-5 (600 salts)
        run(g, pool, torch.full((2, 4, 16), 10.0), scale=0.625, tol=(1e-4, 1e-4))
    with g.case("scale-0.2-float16"):
        run(g, _pool(g, 13, [11, 26], 8, 2, 16, dtype=torch.float16), query(g, 13, 2, 4, 16, dtype=torch.float16),
            scale=0.2)


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's launch: one decode step of a batch over a paged pool (CUDA: 16 sequences of
    500-1000 tokens, 32 query heads over 8 KV heads, d = 128, pages of 16; CPU interpreter: 2
    sequences of 20-60 tokens, 4 over 2 heads, d = 16). Least work: every cached key and value
    read once, 4 d FLOPs per (query head, token)."""
    seed = perf_seed(rng)
    rnd = random.Random(seed)
    if g.device.type == "cuda":
        b, h, kv, d, page, lens = 16, 32, 8, 128, 16, [rnd.randint(500, 1000) for _ in range(16)]
    else:
        b, h, kv, d, page, lens = 2, 4, 2, 16, 16, [rnd.randint(20, 60) for _ in range(2)]
    pool = Pool(g.rng(seed), rnd, lens, page, kv, d)
    q = (torch.randn(b, h, d, generator=g.rng(seed + 1), dtype=torch.float64)).float()
    run(side.grading(g), pool, q)
    tokens = sum(lens)
    return PerfWork(bytes_moved=4 * (2 * tokens * kv * d + 2 * b * h * d), flops=4 * d * h * tokens)
