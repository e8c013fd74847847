"""Hidden grader for joules-per-token.

Cases: the division for single GPUs and TP groups; energy curves on H100/H200/B200/A100 and a
made-up GPU, BF16 and FP8, memory-bound and compute-bound batches (power rising towards the
TDP), nonzero overhead, batches out of order and repeated, a batch that does not fit; measured
reports where power or throughput moves more, TP groups (per-GPU vs per-node); GB vs GiB at the
capacity check (a step of 75.4 GB fits the H100's 80e9 bytes: core; 80.7 GB does
not: input check), and a step of exactly 80e9 bytes, which fits (core). Then every ValueError of the statement as input checks (readings above the TDP
included), after the core cases.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

RTOL = 1e-9
LIST_KEYS = ("step_time_s", "tokens_per_s", "power_w", "joules_per_token")
SPREAD_KEYS = ("joules_spread", "throughput_spread", "power_spread")
MADE_UP = dataclasses.replace(H100_SXM, name="made-up", tdp_w=450.0, hbm_bytes=48 * 10**9, hbm_bytes_per_s=1.2e12,
                              bf16_dense_flops=180e12, fp8_dense_flops=360e12)


def _list(got, want: list, name: str) -> None:
    if not isinstance(got, (list, tuple)):
        fail(f"{name}: expected a list, got {type(got).__name__}")
    if len(got) != len(want):
        fail(f"{name}: expected {len(want)} entries, got {len(got)}")
    for i, (a, w) in enumerate(zip(got, want)):
        expect_close(a, w, name=f"{name}[{i}]", rtol=RTOL)


def _report(got, want: dict) -> None:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != set(want):
        fail(f"dict keys differ: missing {sorted(set(want) - set(got))}, unexpected {sorted(map(str, set(got) - set(want)))}")
    for k in LIST_KEYS:
        if k in want:
            _list(got[k], want[k], k)
    for k in SPREAD_KEYS:
        expect_close(got[k], want[k], name=k, rtol=RTOL)
    expect_equal(got["moved_by"], want["moved_by"], name="moved_by")


def grade(g: Grading) -> None:
    ref = g.reference()
    for name, args in [("one-gpu", (350.0, 220.0, 1)), ("tp8", (700.0, 14000.0, 8)), ("tp2", (512.5, 3300.0, 2)),
                       ("int-power", (600, 1234.5, 4))]:
        with g.case(f"joules-{name}"):
            expect_close(g.call("joules_per_token", *args), ref.joules_per_token(*args), rtol=RTOL)

    llama8b = (15.0e9, 131072, 1024, 15.1e9)
    curves = [
        ("h100-llama8b-1k", (H100_SXM, DType.BF16, *llama8b, [1, 2, 4, 8, 16, 32, 64, 128], 350.0, 0.0)),
        ("h100-unordered-repeats", (H100_SXM, DType.BF16, *llama8b, [64, 1, 64, 8], 300.0, 2e-4)),
        ("h100-fp8-compute-bound", (H100_SXM, DType.FP8, 8.0e9, 65536, 128, 16.0e9, [1, 256, 1024, 2048], 400.0, 0.0)),
        ("h100-fp8-compute-bound-overhead", (H100_SXM, DType.FP8, 8.0e9, 65536, 128, 16.0e9, [1, 256, 1024, 2048],
                                             400.0, 2e-4)),
        ("h200-long-context", (H200_SXM, DType.BF16, 15.0e9, 131072, 16384, 19.0e9, [1, 8, 40], 350.0, 1e-4)),
        ("b200-70b-fp8", (B200, DType.FP8, 70.6e9, 163840, 4096, 141e9, [1, 32, 128], 500.0, 0.0)),
        ("a100", (A100_SXM_80GB, DType.BF16, 13.5e9, 524288, 2048, 13.5e9, [1, 4, 16, 48], 250.0, 0.0)),
        ("made-up", (MADE_UP, DType.BF16, 7.0e9, 65536, 2000, 7e9, [3, 30, 300], 450.0, 5e-5)),
        ("no-kv", (H100_SXM, DType.BF16, 15.0e9, 0, 0, 15.1e9, [1, 512, 4096], 350.0, 0.0)),
        # 75.4 GB per step: fits the H100's 80e9 bytes, though not 80e9 bytes counted as 74.5 GiB
        ("fits-in-80-gb", (H100_SXM, DType.BF16, 70.0e9, 131072, 4096, 15.1e9, [1, 10], 350.0, 0.0)),
        ("fractional-kv-bytes", (H100_SXM, DType.BF16, 3.0e9, 0.5, 1000, 6.0e9, [1, 7, 64], 350.0, 0.0)),
        # batch 8 reads exactly 80e9 bytes, the H100's capacity: 75,705,032,704 B of weights + 8 x 4096 x 131072
        # B of KV (every term an integer below 2**53, so exact in any order). "Exceeds" is >, so it fits.
        ("exactly-fills-hbm", (H100_SXM, DType.BF16, 75_705_032_704.0, 131072, 4096, 15.1e9, [1, 8], 350.0, 0.0)),
    ]
    for name, args in curves:
        with g.case(f"curve-{name}"):
            _report(g.call("energy_curve", *args), ref.energy_curve(*args))

    gen = g.rng(3)
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    tput = [220.0 * b ** 0.85 for b in batches]
    power = [float(p) for p in torch.linspace(330.0, 520.0, len(batches)).tolist()]
    noisy = [x * (1 + 0.05 * float(e)) for x, e in zip(tput, torch.rand(len(batches), generator=gen))]
    reports = [("one-gpu", (power, noisy, 1, 700.0)),
               ("tp8-node", ([p + 100 for p in power], [x * 6 for x in noisy], 8, 700.0)),
               ("power-moves-more", ([100.0, 400.0, 390.0], [1000.0, 1500.0, 1800.0], 1, 400.0)),
               ("tie-goes-to-power", ([200.0, 400.0], [100.0, 200.0], 2, 700.0)),
               ("single-point", ([450.0], [3000.0], 4, 1000.0)),
               ("reading-at-the-tdp", ([350.0, 700.0], [200.0, 9000.0], 1, 700.0))]
    for name, args in reports:
        with g.case(f"measured-{name}"):
            _report(g.call("measured_energy_report", *args), ref.measured_energy_report(*args))

    # Input checks: every ValueError of the statement, after the core cases.
    for name, args in [("zero-throughput", (350.0, 0.0, 1)), ("zero-gpus", (350.0, 10.0, 0)),
                       ("negative-power", (-1.0, 10.0, 1)), ("inf-power", (math.inf, 10.0, 1)),
                       ("nan-throughput", (350.0, math.nan, 1)), ("bool-gpus", (350.0, 10.0, True)),
                       ("float-gpus", (350.0, 10.0, 2.0))]:
        with g.case(f"joules-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "joules_per_token", *args)
    base = (H100_SXM, DType.BF16, *llama8b)
    for name, args in [("does-not-fit", (*base, [1, 1024], 350.0, 0.0)),
                       # 80.7 GB per step: over 80e9 bytes, under 80 GiB (85.9e9)
                       ("does-not-fit-80-gb", (H100_SXM, DType.BF16, 70.0e9, 131072, 4096, 15.1e9, [1, 20], 350.0, 0.0)),
                       ("floor-above-tdp", (*base, [1], 701.0, 0.0)),
                       ("empty-batches", (*base, [], 350.0, 0.0)), ("zero-batch", (*base, [0, 1], 350.0, 0.0)),
                       ("float-batch", (*base, [1.0], 350.0, 0.0)), ("bool-batch", (*base, [True, 8], 350.0, 0.0)),
                       ("batches-not-a-list", (*base, 8, 350.0, 0.0)),
                       ("fp8-on-a100", (A100_SXM_80GB, DType.FP8, *llama8b, [1], 250.0, 0.0)),
                       ("negative-overhead", (*base, [1], 350.0, -1e-3)),
                       ("nan-overhead", (*base, [1], 350.0, math.nan)),
                       ("inf-weights", (H100_SXM, DType.BF16, math.inf, 131072, 1024, 15.1e9, [1], 350.0, 0.0)),
                       ("nan-kv-bytes", (H100_SXM, DType.BF16, 15.0e9, math.nan, 1024, 15.1e9, [1], 350.0, 0.0)),
                       ("bool-context", (H100_SXM, DType.BF16, 15.0e9, 131072, True, 15.1e9, [1], 350.0, 0.0)),
                       ("zero-floor", (*base, [1], 0.0, 0.0)),
                       ("gpu-name-string", ("H100 SXM", DType.BF16, *llama8b, [1], 350.0, 0.0))]:
        with g.case(f"curve-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "energy_curve", *args)
    for name, args in [("node-total", ([5600.0], [14000.0], 8, 700.0)), ("length-mismatch", ([400.0], [1.0, 2.0], 1, 700.0)),
                       ("empty", ([], [], 1, 700.0)), ("zero-throughput", ([400.0], [0.0], 1, 700.0)),
                       ("zero-gpus", ([400.0], [10.0], 0, 700.0)), ("nan-power", ([400.0, math.nan], [10.0, 20.0], 1, 700.0)),
                       ("inf-throughput", ([400.0], [math.inf], 1, 700.0)), ("nan-tdp", ([400.0], [10.0], 1, math.nan)),
                       ("bool-gpus", ([400.0], [10.0], True, 700.0)), ("not-lists", (400.0, 10.0, 1, 700.0)),
                       ("throughput-not-a-list", ([400.0], 10.0, 1, 700.0)),
                       ("one-reading-above-tdp", ([400.0, 800.0], [10.0, 20.0], 1, 700.0))]:
        with g.case(f"measured-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "measured_energy_report", *args)
