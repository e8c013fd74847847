"""Hidden grader for throughput-knee.

Cases: (a, c) from roofline terms on the four table GPUs and a made-up one, BF16 and FP8 (FP8
on an A100 must raise); least-squares fits on exact, noisy, repeated and two-point data; the knee
and the fraction batch on seeded random (a, c) kept away from integer ties; the KV cap with
contexts that are and are not multiples of the block, pools smaller than one sequence, and the
smallest arguments allowed (one-byte tokens, a one-token context); the
report with both bindings. Input checks (run last): every ValueError the statement promises,
NaN/infinity and bools included.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

RTOL = 1e-9
MADE_UP = dataclasses.replace(H100_SXM, name="made-up", bf16_dense_flops=1.5e15, fp8_dense_flops=2.7e15,
                              hbm_bytes_per_s=6.1e12, hbm_bytes=96 * 10**9)
REPORT_KEYS = {"ceiling_tokens_per_s", "knee_batch", "batch_for_fraction", "max_throughput_tokens_per_s",
               "fraction_of_ceiling", "binding"}


def _pair(got, want, names=("a", "c")) -> None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"expected a pair (a, c), got {type(got).__name__}")
    for x, w, n in zip(got, want, names):
        expect_close(x, w, name=n, rtol=RTOL)


def _report(got, want: dict) -> None:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != REPORT_KEYS:
        fail(f"dict keys differ: missing {sorted(REPORT_KEYS - set(got))}, unexpected {sorted(map(str, set(got) - REPORT_KEYS))}")
    for k in ("ceiling_tokens_per_s", "knee_batch", "max_throughput_tokens_per_s", "fraction_of_ceiling"):
        expect_close(got[k], want[k], name=k, rtol=RTOL)
    expect_equal(got["batch_for_fraction"], want["batch_for_fraction"], name="batch_for_fraction")
    expect_equal(got["binding"], want["binding"], name="binding")


def _far_from_integer(a: float, c: float, f: float) -> bool:
    x = f * a / ((1 - f) * c)
    return abs(x - round(x)) > 1e-6 * max(1.0, x)


def grade(g: Grading) -> None:
    ref = g.reference()
    checks: list[tuple[str, str, tuple]] = []   # (case name, function, args): input checks, run last

    # 1. coefficients from roofline terms
    coeff_cases = [
        ("llama8b-h100-bf16", (15.0e9, 131072, 4096, 17.2e9, H100_SXM, DType.BF16, 5e-4)),
        ("llama8b-h200-bf16", (15.0e9, 131072, 4096, 17.2e9, H200_SXM, DType.BF16, 5e-4)),
        ("70b-fp8-b200", (70.6e9, 163840, 8192, 150e9, B200, DType.FP8, 0.0)),
        ("a100-fp16", (13.5e9, 524288, 2048, 14e9, A100_SXM_80GB, DType.FP16, 1e-3)),
        ("made-up-gpu", (40e9, 98304, 30000, 90e9, MADE_UP, DType.BF16, 2e-4)),
        ("made-up-gpu-fp8", (40e9, 98304, 30000, 90e9, MADE_UP, DType.FP8, 2e-4)),
        ("compute-only-c", (1e9, 0, 0, 1e12, H100_SXM, DType.BF16, 0.0)),
    ]
    for name, args in coeff_cases:
        with g.case(f"coefficients-{name}"):
            _pair(g.call("step_time_coefficients", *args), ref.step_time_coefficients(*args))
    for name, args in [("fp8-on-a100", (1e9, 1, 1, 1e9, A100_SXM_80GB, DType.FP8, 0.0)),
                       ("zero-c", (1e9, 0, 0, 0.0, H100_SXM, DType.BF16, 0.0)),
                       ("negative-overhead", (1e9, 1, 1, 1e9, H100_SXM, DType.BF16, -1e-3)),
                       ("negative-weight-bytes", (-1e9, 1, 1, 1e9, H100_SXM, DType.BF16, 0.0)),
                       ("nan-weight-bytes", (math.nan, 1, 1, 1e9, H100_SXM, DType.BF16, 0.0)),
                       ("infinite-flops", (1e9, 1, 1, math.inf, H100_SXM, DType.BF16, 0.0)),
                       ("float-context", (1e9, 1, 16.0, 1e9, H100_SXM, DType.BF16, 0.0)),
                       ("bool-context", (1e9, 1, True, 1e9, H100_SXM, DType.BF16, 0.0)),
                       ("gpu-name-string", (1e9, 1, 1, 1e9, "H100 SXM", DType.BF16, 0.0)),
                       ("dtype-string", (1e9, 1, 1, 1e9, H100_SXM, "bf16", 0.0)),
                       ("int4-math", (1e9, 1, 1, 1e9, H100_SXM, DType.INT4, 0.0))]:
        checks.append((f"coefficients-rejects-{name}", "step_time_coefficients", args))

    # 2. least-squares fits
    gen = g.rng(7)
    noisy_b = [1, 2, 4, 8, 16, 32, 64, 128]
    noise = (torch.rand(len(noisy_b), generator=gen, dtype=torch.float64) - 0.5) * 4e-4
    fits = [("exact-line", [1, 8, 64], [0.006 + 1.5e-4 * b for b in (1, 8, 64)]),
            ("noisy", noisy_b, [0.0049 + 1.8e-4 * b + float(e) for b, e in zip(noisy_b, noise)]),
            ("repeated-batches", [4, 4, 16, 16, 16], [0.0061, 0.0063, 0.0083, 0.0085, 0.0084]),
            ("two-points", [3, 200], [0.011, 0.052]),
            ("falling-line", [1, 2, 3], [0.003, 0.002, 0.0015]),
            ("negative-intercept", [1, 2, 3], [0.001, 0.003, 0.005])]
    for name, bs, ts in fits:
        with g.case(f"fit-{name}"):
            _pair(g.call("fit_step_time", bs, ts), ref.fit_step_time(bs, ts))
    for name, args in [("one-batch-size", ([8, 8, 8], [0.01, 0.011, 0.012])), ("length-mismatch", ([1, 2], [0.01])),
                       ("zero-batch", ([0, 2], [0.01, 0.02])), ("negative-time", ([1, 2], [0.01, -0.02])),
                       ("nan-time", ([1, 2], [0.01, math.nan])), ("infinite-time", ([1, 2], [0.01, math.inf])),
                       ("float-batch", ([1, 2.5], [0.01, 0.02])), ("bool-batch", ([True, 2], [0.01, 0.02]))]:
        checks.append((f"fit-rejects-{name}", "fit_step_time", args))

    # 3-4. knee and fraction batch
    ac = [(0.005, 0.0002), (0.00498, 0.0001776), (0.0, 0.001), (0.031, 2.3e-6), (0.5, 0.25)]
    while len(ac) < 10:
        a = float(torch.empty(1).uniform_(1e-3, 5e-2, generator=gen))
        c = float(torch.empty(1).uniform_(1e-6, 1e-3, generator=gen))
        ac.append((a, c))
    for i, (a, c) in enumerate(ac):
        with g.case(f"knee-{i}"):
            out = g.call("knee_batch", a, c)
            expect_close(out, ref.knee_batch(a, c), rtol=RTOL)
            if not isinstance(out, float):
                fail(f"expected a float (the statement's return type), got {type(out).__name__}")
        for f in (0.5, 0.9, 0.97):
            if not _far_from_integer(a, c, f):
                continue
            with g.case(f"batch-for-fraction-{i}-f{f}"):
                expect_equal(g.call("batch_for_fraction", a, c, f), ref.batch_for_fraction(a, c, f))
    for name, fn, args in [("knee-zero-c", "knee_batch", (0.005, 0.0)), ("knee-negative-a", "knee_batch", (-1.0, 1e-4)),
                           ("knee-nan-a", "knee_batch", (math.nan, 1e-4)), ("knee-infinite-c", "knee_batch", (0.005, math.inf)),
                           ("fraction-one", "batch_for_fraction", (0.005, 1e-4, 1.0)),
                           ("fraction-zero", "batch_for_fraction", (0.005, 1e-4, 0.0)),
                           ("fraction-nan", "batch_for_fraction", (0.005, 1e-4, math.nan)),
                           ("fraction-negative-c", "batch_for_fraction", (0.005, -1e-4, 0.9))]:
        checks.append((f"rejects-{name}", fn, args))

    # 5. the KV cap
    kv_cases = [(53_000_000_000, 131072, 4096, 16), (10**9, 131072, 1000, 16), (10**9, 131072, 1008, 16),
                (10**9, 131072, 1009, 16), (10**9, 131072, 1001, 1000), (100, 131072, 10, 16), (0, 64, 5, 1),
                (80 * 10**9, 327680, 131072, 256), (7 * 10**10, 70_272, 3000, 64),
                (536_870_912, 131072, 1024, 16), (1000, 1, 1, 1), (999, 1, 1, 16)]
    for pool, kv, ctx, bs in kv_cases:
        with g.case(f"max-batch-kv-ctx{ctx}-block{bs}-pool{pool}"):
            expect_equal(g.call("max_batch_kv", pool, kv, ctx, bs), ref.max_batch_kv(pool, kv, ctx, bs))
    for name, args in [("zero-context", (10**9, 1, 0, 16)), ("zero-block", (10**9, 1, 16, 0)),
                       ("zero-kv-bytes", (10**9, 0, 16, 16)), ("negative-pool", (-1, 1, 16, 16)),
                       ("float-pool", (1e9, 1, 16, 16)), ("bool-block", (10**9, 1, 16, True))]:
        checks.append((f"max-batch-kv-rejects-{name}", "max_batch_kv", args))

    # 6. the report
    for name, args in [("kv-binds", (0.00498, 0.0001776, 98, 0.9)), ("compute-binds", (0.00498, 0.0001776, 400, 0.9)),
                       ("exactly-at-fraction-batch", (0.005, 0.0002, 142, 0.85)),
                       ("one-below", (0.005, 0.0002, 141, 0.85)), ("batch-1", (0.0, 0.001, 1, 0.5))]:
        with g.case(f"report-{name}"):
            _report(g.call("throughput_report", *args), ref.throughput_report(*args))
    for name, args in [("zero-batch", (0.005, 0.0002, 0, 0.9)), ("float-batch", (0.005, 0.0002, 98.0, 0.9)),
                       ("bool-batch", (0.005, 0.0002, True, 0.9)), ("fraction-one", (0.005, 0.0002, 98, 1.0)),
                       ("zero-c", (0.005, 0.0, 98, 0.9)), ("nan-a", (math.nan, 0.0002, 98, 0.9))]:
        checks.append((f"report-rejects-{name}", "throughput_report", args))

    # Input checks last: a submission that dies on one must not take core cases with it.
    for name, fn, args in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
