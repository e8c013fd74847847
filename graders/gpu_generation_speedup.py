"""Hidden grader for gpu-generation-speedup.

Cases: H100->H200 (the question), H100->B200, A100->H100 (compute wins), H200->H100 (slowdowns),
B200->H200, identical GPUs (ties resolve to "compute"), made-up GPUs where one side turns
compute-bound at its largest batch, tensor-parallel shards, FP8 and BF16; max batches kept
away from integer boundaries, all of memory with either GPU fitting exactly one sequence, a one-token context; then every ValueError of the statement as input checks.
"""

from __future__ import annotations

import dataclasses
import math

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

RTOL = 1e-9
KEYS = {"compute", "bandwidth", "capacity", "max_batch_old", "max_batch_new", "largest"}
BIG_SLOW = dataclasses.replace(H100_SXM, name="made-up-big-slow", hbm_bytes=400 * 10**9, hbm_bytes_per_s=6.0e12,
                               bf16_dense_flops=120e12, fp8_dense_flops=240e12)
# FP8 peak 4x the BF16 peak (the H100's is 2x): the FP8 compute roof must use the FP8 peak.
FP8_4X = dataclasses.replace(H100_SXM, name="made-up-fp8-4x", hbm_bytes=400 * 10**9, hbm_bytes_per_s=6.0e12,
                             bf16_dense_flops=100e12, fp8_dense_flops=400e12)
ONE_BYTE_MORE = dataclasses.replace(H100_SXM, name="made-up-one-byte-more", hbm_bytes=80 * 10**9 + 1,
                                    hbm_bytes_per_s=4.0e12)
SMALL_FAST = dataclasses.replace(B200, name="made-up-small-fast", hbm_bytes=40 * 10**9, hbm_bytes_per_s=9.0e12)

L8 = (15_009_316_864, 131072, 4096, 15_009_316_864)                  # Llama 3.1 8B BF16
L70_FP8_TP2 = (34_750_857_216, 163840, 8192, 69_501_714_432)          # Llama 3.1 70B, FP8 weights, BF16 KV, per GPU of TP 2
L70_BF16_TP8 = (17_375_428_608, 40960, 32768, 17_375_428_608)         # Llama 3.1 70B BF16, per GPU of TP 8


def _check(got, want: dict) -> None:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != KEYS:
        fail(f"dict keys differ: missing {sorted(KEYS - set(got))}, unexpected {sorted(map(str, set(got) - KEYS))}")
    for k in ("max_batch_old", "max_batch_new"):
        expect_equal(got[k], want[k], name=k)
    for k in ("compute", "bandwidth", "capacity"):
        expect_close(got[k], want[k], name=k, rtol=RTOL)
    expect_equal(got["largest"], want["largest"], name="largest")


def _clear_of_boundaries(old, new, w, kv, ctx, frac, res) -> bool:
    for gpu in (old, new):
        x = (frac * gpu.hbm_bytes - w - res) / (ctx * kv)
        if x > 0 and abs(x - round(x)) < 1e-9 * max(1.0, x):
            return False
    return True


def grade(g: Grading) -> None:
    ref = g.reference()
    cases = [
        ("h100-to-h200-llama8b", (H100_SXM, H200_SXM, DType.BF16, *L8, 0.9, 4e9)),
        ("h100-to-h200-70b-fp8-tp2", (H100_SXM, H200_SXM, DType.FP8, *L70_FP8_TP2, 0.9, 4e9)),
        ("h100-to-b200-llama8b", (H100_SXM, B200, DType.BF16, *L8, 0.9, 4e9)),
        ("a100-to-h100-compute-wins", (A100_SXM_80GB, H100_SXM, DType.BF16, *L8, 0.9, 4e9)),
        ("h200-to-h100-slowdown", (H200_SXM, H100_SXM, DType.BF16, *L8, 0.95, 2e9)),
        ("b200-to-h200", (B200, H200_SXM, DType.FP8, *L70_BF16_TP8, 0.9, 3e9)),
        ("same-gpu-ties", (H100_SXM, H100_SXM, DType.BF16, *L8, 0.9, 4e9)),
        ("new-turns-compute-bound", (H100_SXM, BIG_SLOW, DType.BF16, 2e9, 2048, 512, 2e9, 0.9, 1e9)),
        ("old-compute-bound", (BIG_SLOW, SMALL_FAST, DType.FP8, 1.5e9, 4096, 1024, 3e9, 0.85, 0.0)),
        ("fp8-roof-uses-fp8-peak", (H100_SXM, FP8_4X, DType.FP8, 2e9, 2048, 512, 2e9, 0.9, 1e9)),
        ("fp8-new-compute-bound-long", (H100_SXM, BIG_SLOW, DType.FP8, 2e9, 4096, 1024, 2e9, 0.9, 1e9)),
        ("fp16-long-context", (A100_SXM_80GB, H200_SXM, DType.FP16, *L70_BF16_TP8, 0.92, 5e9)),
        # all of memory (fraction 1 is allowed), and one GPU fits exactly one sequence
        ("h200-to-h100-whole-memory-one-sequence", (H200_SXM, H100_SXM, DType.BF16, 15e9, 131072, 300_000,
                                                    15e9, 1.0, 4e9)),
        ("h100-to-h200-whole-memory-one-sequence-old", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, 300_000,
                                                        15e9, 1.0, 4e9)),
        ("one-token-context", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, 1, 15e9, 0.9, 4e9)),
        # the old GPU's pool is half a byte (80e9 - weights, exact in float64): 0 < pool <= 1 still
        # holds floor(0.5 / 0.2) = 2 sequences of sub-byte KV (the new one, one byte more: 7)
        ("old-pool-half-a-byte", (H100_SXM, ONE_BYTE_MORE, DType.BF16, 80e9 - 0.5, 0.2, 1, 15e9, 1.0, 0.0)),
    ]
    for name, args in cases:
        if not _clear_of_boundaries(args[0], args[1], args[3], args[4], args[5], args[7], args[8]):
            raise RuntimeError(f"case {name} sits on a batch boundary")
        with g.case(name):
            _check(g.call("generation_speedup", *args), ref.generation_speedup(*args))
    bad = [("does-not-fit-old", (H100_SXM, H200_SXM, DType.BF16, 75e9, 131072, 4096, 1e10, 0.9, 4e9)),
           ("does-not-fit-new", (H200_SXM, H100_SXM, DType.BF16, 75e9, 131072, 4096, 1e10, 0.9, 4e9)),
           ("no-room-for-one-sequence", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, 500_000, 1e10, 0.9, 4e9)),
           ("fp8-on-a100", (A100_SXM_80GB, H100_SXM, DType.FP8, *L8, 0.9, 4e9)),
           ("int4-math", (H100_SXM, H200_SXM, DType.INT4, *L8, 0.9, 4e9)),
           ("fraction-above-1", (H100_SXM, H200_SXM, DType.BF16, *L8, 1.2, 4e9)),
           ("fraction-zero", (H100_SXM, H200_SXM, DType.BF16, *L8, 0.0, 4e9)),
           ("negative-reserve", (H100_SXM, H200_SXM, DType.BF16, *L8, 0.9, -1.0)),
           ("context-bool", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, True, 1e10, 0.9, 4e9)),
           ("context-zero", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, 0, 1e10, 0.9, 4e9)),
           ("nan-weights", (H100_SXM, H200_SXM, DType.BF16, math.nan, 131072, 4096, 1e10, 0.9, 4e9)),
           ("inf-kv-bytes", (H100_SXM, H200_SXM, DType.BF16, *L8[:1], math.inf, 4096, 1e10, 0.9, 4e9)),
           ("zero-flops", (H100_SXM, H200_SXM, DType.BF16, *L8[:3], 0.0, 0.9, 4e9)),
           ("nan-fraction", (H100_SXM, H200_SXM, DType.BF16, *L8, math.nan, 4e9)),
           ("inf-reserve", (H100_SXM, H200_SXM, DType.BF16, *L8, 0.9, math.inf)),
           ("context-float", (H100_SXM, H200_SXM, DType.BF16, 15e9, 131072, 4096.0, 1e10, 0.9, 4e9)),
           ("old-not-a-gpu", ("H100 SXM", H200_SXM, DType.BF16, *L8, 0.9, 4e9)),
           ("dtype-not-a-dtype", (H100_SXM, H200_SXM, "bf16", *L8, 0.9, 4e9))]
    for name, args in bad:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "generation_speedup", *args)
