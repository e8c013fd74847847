"""Hidden grader for triton-moe-gemm.

The grader routes tokens itself and builds the expert-sorted layout for the submission's
BLOCK_SIZE_M (vLLM's moe_align_block_size: experts in id order, each expert's slots padded with
the sentinel T*top_k to a multiple of BLOCK_SIZE_M, one expert id per block), with the slots of
each expert in a salted order and the layout's buffers sized to it exactly. Truth: per slot s of
expert e, C[s] = A[s // top_k] @ B[e]^T (times topk_weights[s] when MUL_ROUTED_WEIGHT), in float64.
Cases: decode (one token), experts with zero tokens, one expert holding every slot (in two blocks
and in a layout of a single block), a token routed twice to one expert, N and K not divisible by
the tiles (K = 129: a last K tile of one column), an expert id -1 (another rank: its rows
are 0), both values of MUL_ROUTED_WEIGHT, float16 operands (with a long K, within one float16 ulp:
the accumulator in float32), the grader's tiles.
"""

from __future__ import annotations

import random

import torch

from inferprep.grading import Grading, expect_block_sizes, expect_tensor, kernel_input, kernel_output
from inferprep.grading.perf_stats import PerfWork, perf_seed

TOL = {torch.float32: 1e-4, torch.float16: 2e-3}
HALF_ONE_ULP = (1e-3, 1e-4)   # rtol just above 2^-10 (one float16 ulp relative), atol 1e-4 max(1, max|want|)


def sorted_layout(topk_ids: torch.Tensor, block_m: int, num_experts: int, rnd: random.Random):
    """(sorted_token_ids int32, expert_ids int32, num_tokens_post_padded) as vLLM builds them."""
    flat = topk_ids.reshape(-1).tolist()
    sentinel = len(flat)
    ids, experts = [], []
    for e in range(num_experts):
        slots = [s for s, x in enumerate(flat) if x == e]
        if not slots:
            continue
        rnd.shuffle(slots)                              # any order inside an expert is valid
        blocks = -(-len(slots) // block_m)
        ids += slots + [sentinel] * (blocks * block_m - len(slots))
        experts += [e] * blocks
    return torch.tensor(ids, dtype=torch.int32), torch.tensor(experts, dtype=torch.int32), len(ids)


def run(g: Grading, seed: int, topk_ids: torch.Tensor, num_experts: int, n: int, k: int, *,
        mul_weight: bool = True, dtype=torch.float32, tiles: dict | None = None, drop_expert: int | None = None,
        row_gap: int = 3, tol: tuple[float, float] | None = None) -> None:
    """Launch on a fresh layout and compare with the float64 product: |got - want| <= rtol |want| +
    atol max(1, max|want|), with (rtol, atol) = ``tol`` or (TOL[dtype], TOL[dtype])."""
    t, top_k = topk_ids.shape
    if tiles is None:
        tiles = expect_block_sizes(g.call("block_sizes", t, n, k), ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"),
                                   16, 128)
    gen = g.rng(seed)
    a = torch.randn(t, k, generator=gen, dtype=torch.float64).to(dtype)
    b = (torch.randn(num_experts, n, k, generator=gen, dtype=torch.float64) / k ** 0.5).to(dtype)
    w = torch.rand(t, top_k, generator=gen, dtype=torch.float64).float()
    rnd = random.Random(f"triton-moe-gemm:{g.salt}:{seed}")
    ids, experts, padded = sorted_layout(topk_ids, tiles["BLOCK_SIZE_M"], num_experts, rnd)
    if drop_expert is not None:
        experts[experts == drop_expert] = -1
    dev = g.device
    aa = kernel_input(a.to(dev), name="a", row_gap=row_gap)
    ba = kernel_input(b.to(dev), name="b", row_gap=row_gap)
    wa = kernel_input(w.reshape(-1).to(dev), name="topk_weights")
    ia = kernel_input(ids.to(dev), name="sorted_token_ids")
    ea = kernel_input(experts.to(dev), name="expert_ids")
    ca = kernel_output((t * top_k, n), dtype, dev, name="c", row_gap=row_gap)
    grid = (padded // tiles["BLOCK_SIZE_M"], -(-n // tiles["BLOCK_SIZE_N"]))
    (c,) = g.launch("moe_gemm_kernel", grid, aa, ba, ca, wa, ia, ea, padded, t * top_k, top_k, n, k,
                    aa.stride[0], ba.stride[0], ba.stride[1], ca.stride[0],
                    MUL_ROUTED_WEIGHT=mul_weight, **tiles)
    flat = topk_ids.reshape(-1)
    want = torch.einsum("sk,snk->sn", a.double()[torch.arange(t * top_k) // top_k], b.double()[flat])
    if mul_weight:
        want = want * w.double().reshape(-1, 1)
    if drop_expert is not None:
        want[flat == drop_expert] = 0.0
    rtol, atol = tol or (TOL[dtype], TOL[dtype])
    expect_tensor(c, want.to(dtype).to(dev), name="c", rtol=rtol, atol=atol * float(want.abs().max().clamp_min(1.0)))


def routing(g: Grading, seed: int, t: int, top_k: int, num_experts: int) -> torch.Tensor:
    """Each token picks top_k distinct experts at random."""
    gen = g.rng(500 + seed)
    return torch.stack([torch.randperm(num_experts, generator=gen)[:top_k] for _ in range(t)])


def grade(g: Grading) -> None:
    with g.case("decode-one-token-top-2"):
        run(g, 0, routing(g, 0, 1, 2, 8), 8, 48, 40)
    with g.case("prefill-T12-top-2-E6"):
        run(g, 1, routing(g, 1, 12, 2, 6), 6, 40, 72)
    with g.case("experts-with-zero-tokens"):   # only experts 1 and 5 of 8 get slots
        ids = torch.tensor([[1, 5], [5, 1], [1, 5]])
        run(g, 2, ids, 8, 33, 50)
    with g.case("one-expert-holds-every-slot"):   # 20 slots: two blocks of 16, the second padded
        run(g, 3, torch.zeros(20, 1, dtype=torch.int64), 3, 32, 32)
    with g.case("token-routed-twice-to-one-expert"):
        run(g, 4, torch.tensor([[2, 2], [0, 2], [2, 1]]), 4, 24, 36)
    with g.case("no-routed-weight"):
        run(g, 5, routing(g, 5, 9, 3, 5), 5, 40, 40, mul_weight=False)
    with g.case("expert-on-another-rank"):   # expert_ids -1: the block's rows are 0
        run(g, 6, routing(g, 6, 10, 2, 4), 4, 32, 48, drop_expert=1)
    with g.case("contiguous-rows"):
        run(g, 7, routing(g, 7, 8, 2, 4), 4, 32, 32, row_gap=0)
    with g.case("float16-operands"):
        run(g, 8, routing(g, 8, 10, 2, 4), 4, 40, 48, dtype=torch.float16)
    with g.case("float16-long-k-float32-accumulator"):
        # 32 tiles of K: a float32 accumulator rounded once is within one float16 ulp (2^-10 of the
        # value); an accumulator rounded to float16 after every tile drifts by several
        run(g, 9, routing(g, 9, 4, 2, 4), 4, 32, 512, dtype=torch.float16, tol=HALF_ONE_ULP,
            tiles={"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16})
    with g.case("whole-layout-one-block"):   # 7 slots of one expert: num_tokens_post_padded == BLOCK_SIZE_M
        run(g, 12, torch.full((7, 1), 3, dtype=torch.int64), 5, 40, 48)
    with g.case("k-one-past-a-tile"):   # K = 129 = 1 mod every allowed BLOCK_SIZE_K: a last tile of one column
        run(g, 13, routing(g, 13, 6, 2, 4), 4, 33, 129)
    for c, tiles in enumerate([(32, 16, 16), (16, 64, 64)]):
        with g.case(f"grader-tiles-{'x'.join(map(str, tiles))}"):
            run(g, 10 + c, routing(g, 10 + c, 11, 2, 5), 5, 45, 70,
                tiles=dict(zip(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"), tiles)))


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's launch: a prefill-sized grouped GEMM (CUDA: 256 tokens, top-2 of 8
    experts, N = K = 256, as large as the grader's float64 truth, a (T top_k, N, K) gather, allows; CPU interpreter: 32 tokens, top-2 of 4, N = K = 64). Least work: A read
    once, each used expert's weights once, C written once; 2 K FLOPs per output element."""
    seed = perf_seed(rng)
    t, top_k, e, n, k = (256, 2, 8, 256, 256) if g.device.type == "cuda" else (32, 2, 4, 64, 64)
    gen = g.rng(seed)
    ids = torch.stack([torch.randperm(e, generator=gen)[:top_k] for _ in range(t)])
    run(side.grading(g), seed, ids, e, n, k)
    used = int(ids.unique().numel())
    return PerfWork(bytes_moved=4 * (t * k + used * n * k + t * top_k * n), flops=2 * t * top_k * n * k)
