"""Hidden grader for exp-vs-matmul.

Cases: the ratio, the serial share and the fraction-of-peak bound on H100, H200, B200, A100 and
made-up GPUs (other SFU rates, clocks, SM counts; an SFU rate of exactly 1/s, still > 0),
BF16/FP16/FP8, head dims 1..256 including odd ones; overlapped vs serial with both mma
efficiencies and the exp-bound overlapped case (B200 FP8); every FA3 problem mapped. Input
checks last: FP8 on an A100 and integer dtypes, bad head dims, efficiencies (NaN, infinity,
a bool), types, unknown problems.
"""

from __future__ import annotations

import dataclasses
import math

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

RTOL = 1e-9
SLOW_SFU = dataclasses.replace(H100_SXM, name="made-up-slow-sfu", sfu_ops_per_clock_per_sm=8, sm_count=100,
                               clock_hz=1.5e9)
FAST_SFU = dataclasses.replace(B200, name="made-up-fast-sfu", sfu_ops_per_clock_per_sm=32)
NO_SFU = dataclasses.replace(H100_SXM, name="made-up-no-sfu", sfu_ops_per_clock_per_sm=0)
# One exponential per second: a rate of exactly 1 is still > 0, so no ValueError.
ONE_EXP_PER_S = dataclasses.replace(H100_SXM, name="made-up-one-exp-per-s", sfu_ops_per_clock_per_sm=1,
                                    sm_count=1, clock_hz=1.0)
GPUS = [H100_SXM, H200_SXM, B200, A100_SXM_80GB, SLOW_SFU, FAST_SFU]


def grade(g: Grading) -> None:
    ref = g.reference()
    with g.case("ratio-sfu-rate-exactly-1"):
        expect_close(g.call("exp_to_matmul_ratio", ONE_EXP_PER_S, DType.BF16, 128),
                     ref.exp_to_matmul_ratio(ONE_EXP_PER_S, DType.BF16, 128), rtol=RTOL)
    combos = []
    for gpu in GPUS:
        for dtype in (DType.BF16, DType.FP16, DType.FP8):
            if gpu.fp8_dense_flops is None and dtype is DType.FP8:
                continue
            for d in (64, 128, 256, 96, 1):
                combos.append((gpu, dtype, d))
    for gpu, dtype, d in combos:
        tag = f"{gpu.name.replace(' ', '-')}-{dtype.value}-d{d}"
        with g.case(f"ratio-{tag}"):
            expect_close(g.call("exp_to_matmul_ratio", gpu, dtype, d), ref.exp_to_matmul_ratio(gpu, dtype, d),
                         rtol=RTOL)
        if d in (64, 128):
            with g.case(f"share-{tag}"):
                expect_close(g.call("exp_time_share", gpu, dtype, d), ref.exp_time_share(gpu, dtype, d), rtol=RTOL)
    bounds = [(H100_SXM, DType.BF16, 128, 2 / 3, False), (H100_SXM, DType.BF16, 128, 1.0, True),
              (H100_SXM, DType.BF16, 64, 2 / 3, False), (H100_SXM, DType.FP8, 128, 1.0, True),
              (H100_SXM, DType.FP8, 64, 1.0, True), (B200, DType.FP8, 128, 1.0, True),
              (B200, DType.BF16, 128, 0.8, False), (A100_SXM_80GB, DType.BF16, 128, 1.0, False),
              (SLOW_SFU, DType.BF16, 128, 0.9, True), (FAST_SFU, DType.FP8, 192, 0.75, True),
              (H200_SXM, DType.FP16, 256, 1, False)]
    for gpu, dtype, d, eff, ov in bounds:
        with g.case(f"fraction-of-peak-{gpu.name.replace(' ', '-')}-{dtype.value}-d{d}-eff{eff:.3g}-overlap{ov}"):
            expect_close(g.call("attention_fraction_of_peak", gpu, dtype, d, eff, ov),
                         ref.attention_fraction_of_peak(gpu, dtype, d, eff, ov), rtol=RTOL)
    for problem in sorted(ref.PROBLEMS):
        with g.case(f"remedy-{problem}"):
            expect_equal(g.call("fa3_remedy", problem), ref.fa3_remedy(problem))
    bad = [("ratio-fp8-on-a100", "exp_to_matmul_ratio", (A100_SXM_80GB, DType.FP8, 128)),
           ("ratio-int8", "exp_to_matmul_ratio", (H100_SXM, DType.INT8, 128)),
           ("ratio-head-dim-0", "exp_to_matmul_ratio", (H100_SXM, DType.BF16, 0)),
           ("ratio-bool-head-dim", "exp_to_matmul_ratio", (H100_SXM, DType.BF16, True)),
           ("share-fp32", "exp_time_share", (H100_SXM, DType.FP32, 128)),
           ("ratio-no-sfu", "exp_to_matmul_ratio", (NO_SFU, DType.BF16, 128)),
           ("share-no-sfu", "exp_time_share", (NO_SFU, DType.BF16, 128)),
           ("fraction-no-sfu", "attention_fraction_of_peak", (NO_SFU, DType.BF16, 128, 1.0, True)),
           ("fraction-efficiency-0", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, 0.0, False)),
           ("fraction-efficiency-above-1", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, 1.5, False)),
           ("fraction-efficiency-nan", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, math.nan, True)),
           ("fraction-efficiency-infinite", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, math.inf, True)),
           ("fraction-efficiency-bool", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, True, False)),
           ("fraction-overlap-not-bool", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 128, 1.0, 1)),
           ("fraction-head-dim-0", "attention_fraction_of_peak", (H100_SXM, DType.BF16, 0, 1.0, True)),
           ("share-float-head-dim", "exp_time_share", (H100_SXM, DType.BF16, 128.0)),
           ("ratio-gpu-name-string", "exp_to_matmul_ratio", ("H100 SXM", DType.BF16, 128)),
           ("ratio-dtype-string", "exp_to_matmul_ratio", (H100_SXM, "bf16", 128)),
           ("remedy-unknown", "fa3_remedy", ("register_spills",)),
           ("remedy-technique-name", "fa3_remedy", ("wgmma",)),
           ("remedy-not-a-string", "fa3_remedy", (3,))]
    # Input checks last (a submission that dies on one must not take core cases with it).
    for name, fn, args in bad:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
