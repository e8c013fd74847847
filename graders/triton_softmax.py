"""Hidden grader for triton-softmax.

The truth is float64 softmax of the very inputs the kernel reads. Every launch lays the rows out
with poisoned guard bands and, in most cases, a poisoned gap after each row (row stride larger
than the row), so an unmasked load reads NaN and an unmasked store lands where the launcher sees
it. Cases: row lengths on both sides of powers of two (1, 16, 17, 100, 127, 128, 129, 1000);
logits near 1000 (exp overflows without the max subtraction) and near -1000 (underflows); rows
with -inf entries (masked logits); float16 rows; the submission's own block size and larger ones
the grader picks (the mask must cover every lane past the row, not one block's worth).
"""

from __future__ import annotations

import torch

from inferprep.grading import Grading, Trial, expect_block_sizes, expect_tensor, fail, kernel_input, kernel_output
from inferprep.grading.perf_stats import PerfWork

LOW, HIGH = 16, 4096
TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (2e-3, 1e-3)}


def run(g: Grading, x: torch.Tensor, *, block: int | None = None, row_gap: int = 5) -> None:
    """Launch the kernel on ``x`` (rows, cols) and compare with float64 softmax."""
    rows, cols = x.shape
    if block is None:
        block = expect_block_sizes(g.call("block_sizes", cols), ("BLOCK_SIZE",), LOW, HIGH)["BLOCK_SIZE"]
        if block < cols:
            fail(f"block_sizes({cols}) gave BLOCK_SIZE = {block}, smaller than the row: one block must hold a row")
    xin = kernel_input(x.to(g.device), name="in", row_gap=row_gap)
    out = kernel_output(x.shape, x.dtype, g.device, name="out", row_gap=row_gap)
    (y,) = g.launch("softmax_kernel", (rows,), out, xin, xin.stride[0], out.stride[0], cols, BLOCK_SIZE=block)
    want = torch.softmax(x.double(), dim=-1)
    rtol, atol = TOL[x.dtype]
    expect_tensor(y, want.to(x.dtype).to(g.device), name="out", rtol=rtol, atol=atol)


_CE_KINDS = {"rows-": "random", "contiguous-rows": "contiguous", "logits-near-1000": "big",
             "logits-near-minus-1000": "small", "masked-logits": "masked", "float16-rows": "half",
             "grader-block-": "block"}


def counterexample(g: Grading, trial: Trial) -> None:
    """A fresh launch of 1-2 short rows: lengths around the block's edges, with or without a row
    gap, logits near +-1000 or with -inf entries, float16, or a block the grader picks."""
    rng = trial.rng
    kind = trial.pick(_CE_KINDS) or "random"
    rows, cols = rng.randint(1, 2), rng.choice([1, 2, 15, 16, 17, rng.randint(1, 8 * trial.size)])
    x = torch.randn(rows, cols, generator=trial.generator(), dtype=torch.float64) * 3
    x = x + {"big": 1000.0, "small": -1000.0}.get(kind, 0.0)
    if kind == "masked":
        x[torch.rand(rows, cols, generator=trial.generator()) < 0.4] = float("-inf")
        x[:, rng.randrange(cols)] = 0.5
    x = x.half() if kind == "half" else x.float()
    block = 1 << max(4, (cols - 1).bit_length() + rng.randint(0, 2)) if kind == "block" else None
    g.show_input(x=x, **({} if block is None else {"BLOCK_SIZE": block}))
    run(g, x, block=block, row_gap=0 if kind == "contiguous" else 5)


def grade(g: Grading) -> None:
    for c, (rows, cols) in enumerate([(3, 1), (4, 16), (5, 17), (6, 100), (2, 127), (2, 128), (3, 129), (2, 1000)]):
        with g.case(f"rows-{rows}x{cols}"):
            run(g, torch.randn(rows, cols, generator=g.rng(c), dtype=torch.float64).float() * 3)
    with g.case("contiguous-rows"):   # row stride == n_cols: an off-by-one row stride shows here too
        run(g, torch.randn(7, 45, generator=g.rng(20), dtype=torch.float64).float(), row_gap=0)
    with g.case("logits-near-1000"):  # exp(1000) overflows float32: subtract the row max first
        x = 1000.0 + torch.randn(4, 50, generator=g.rng(21), dtype=torch.float64) * 5
        run(g, x.float())
    with g.case("logits-near-minus-1000"):
        x = -1000.0 + torch.randn(4, 50, generator=g.rng(22), dtype=torch.float64) * 5
        run(g, x.float())
    with g.case("masked-logits-minus-inf"):
        x = torch.randn(5, 33, generator=g.rng(23), dtype=torch.float64).float()
        x[torch.rand(5, 33, generator=g.rng(24)) < 0.4] = float("-inf")
        x[:, 7] = 0.5   # every row keeps one finite logit
        run(g, x)
    with g.case("float16-rows"):
        run(g, (torch.randn(4, 70, generator=g.rng(25), dtype=torch.float64) * 4).half())
    for c, (cols, block) in enumerate([(17, 64), (100, 512), (1, 16)]):
        with g.case(f"grader-block-{block}-for-{cols}-columns"):   # any power of two >= the row
            run(g, torch.randn(3, cols, generator=g.rng(30 + c), dtype=torch.float64).float(), block=block)


def perf_case(g: Grading, side, rng: torch.Generator) -> PerfWork:
    """The perf stage's launch: fresh float32 rows (4096 x 4096 on CUDA; 64 x 512 through the CPU
    interpreter), the submission's block size. Bandwidth-bound: each element read once and written
    once."""
    rows, cols = (4096, 4096) if g.device.type == "cuda" else (64, 512)
    x = torch.randn(rows, cols, generator=rng, dtype=torch.float64).float() * 3
    run(side.grading(g), x)
    return PerfWork(bytes_moved=2 * 4 * rows * cols)
