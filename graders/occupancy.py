"""Hidden grader for occupancy.

Cases: curated H100 kernels where each budget binds (and ties), register counts just past an
allocation unit (129..136), the sub-partition split (a 1-warp block with 136 registers), the
1 KiB shared-memory reserve at the boundary (57 KiB vs 56 KiB), partial warps (96, 1000
threads), the per-block register check that fails only after rounding warps up to 4; A100,
B200 and a made-up GPU with other units and caps (and one whose thread cap is below its warp
slots); seeded random kernels; occupancy_helps in all
three regimes on table and made-up GPUs (one warp of one byte too), both regime boundaries hit exactly. The per-block
register check (a launch that fails) is core; every other ValueError is an input check, run last.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

KEYS = {"warps_per_block", "registers_per_warp", "smem_per_block_bytes", "blocks_limit", "active_blocks",
        "active_warps", "occupancy", "limiters"}
HELP_KEYS = {"ridge_flops_per_byte", "bytes_in_flight_per_sm", "warps_needed", "regime", "helps"}
MADE_UP = dataclasses.replace(
    H100_SXM, name="made-up", sm_count=100, max_threads_per_sm=1536, max_warps_per_sm=48, max_blocks_per_sm=16,
    registers_per_sm=65536, register_alloc_unit=512, max_registers_per_thread=200, smem_per_sm_bytes=100 * 1024,
    smem_per_block_max_bytes=99 * 1024, smem_reserved_per_block_bytes=1024, smem_alloc_unit_bytes=256,
    hbm_bytes_per_s=2.0e12, bf16_dense_flops=400e12, fp8_dense_flops=None, max_threads_per_block=1024)

# Fewer threads per SM than its warp slots hold (1024 threads = 32 warps < 48): the warps limit is
# the smaller of the two caps.
THREAD_CAPPED = dataclasses.replace(MADE_UP, name="made-up-thread-capped", max_threads_per_sm=1024)


def _keys(got, want: set) -> dict:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != want:
        fail(f"dict keys differ: missing {sorted(want - set(got))}, unexpected {sorted(map(str, set(got) - want))}")
    return got


def _check_occ(got, want: dict) -> None:
    _keys(got, KEYS)
    for k in ("warps_per_block", "registers_per_warp", "smem_per_block_bytes"):
        expect_equal(got[k], want[k], name=k)
    bl = _keys(got["blocks_limit"], set(want["blocks_limit"]))
    for k, v in want["blocks_limit"].items():
        expect_equal(bl[k], v, name=f"blocks_limit[{k!r}]")
    for k in ("active_blocks", "active_warps"):
        expect_equal(got[k], want[k], name=k)
    expect_close(got["occupancy"], want["occupancy"], name="occupancy", rtol=1e-12)
    expect_equal(list(got["limiters"]) if isinstance(got["limiters"], (list, tuple)) else got["limiters"],
                 want["limiters"], name="limiters")


def _check_helps(got, want: dict) -> None:
    _keys(got, HELP_KEYS)
    expect_close(got["ridge_flops_per_byte"], want["ridge_flops_per_byte"], name="ridge_flops_per_byte", rtol=1e-9)
    expect_close(got["bytes_in_flight_per_sm"], want["bytes_in_flight_per_sm"], name="bytes_in_flight_per_sm",
                 rtol=1e-9)
    expect_equal(got["warps_needed"], want["warps_needed"], name="warps_needed")
    expect_equal(got["regime"], want["regime"], name="regime")
    expect_equal(got["helps"], want["helps"], name="helps")


def grade(g: Grading) -> None:
    ref = g.reference()
    KiB = 1024
    curated = [
        ("h100-gemm-like", H100_SXM, 256, 128, 48 * KiB),
        ("h100-64-regs-tie", H100_SXM, 256, 64, 48 * KiB),
        ("h100-granularity-100-regs", H100_SXM, 256, 100, 0),
        ("h100-granularity-129-regs", H100_SXM, 128, 129, 0),
        ("h100-subpartitions-1-warp-136-regs", H100_SXM, 32, 136, 0),
        ("h100-reserve-57KiB", H100_SXM, 128, 64, 57 * KiB),
        ("h100-reserve-56KiB", H100_SXM, 128, 64, 56 * KiB),
        ("h100-smem-rounding", H100_SXM, 64, 32, 45 * KiB + 1),
        ("h100-max-smem", H100_SXM, 128, 32, 227 * KiB),
        ("h100-partial-warp-96", H100_SXM, 96, 40, 0),
        ("h100-partial-warp-1000", H100_SXM, 1000, 32, 0),
        ("h100-full-occupancy-tie", H100_SXM, 64, 32, 0),
        ("h100-block-cap", H100_SXM, 32, 16, 0),
        ("h100-255-regs", H100_SXM, 128, 255, 0),
        ("h100-hw-check-passes-1024x64", H100_SXM, 1024, 64, 0),
        ("h200-same-as-h100", H200_SXM, 384, 168, 16 * KiB),
        ("a100-164KiB", A100_SXM_80GB, 128, 64, 50 * KiB),
        ("b200", B200, 512, 96, 100 * KiB),
        ("made-up-units", MADE_UP, 192, 40, 20 * KiB),
        ("made-up-block-cap", MADE_UP, 32, 8, 0),
        ("made-up-regs", MADE_UP, 128, 130, 5000),
        ("made-up-thread-cap-binds", THREAD_CAPPED, 256, 32, 0),
        ("h100-1-register", H100_SXM, 128, 1, 0),
    ]
    gen = g.rng(4)
    for i in range(12):
        gpu = (H100_SXM, A100_SXM_80GB, MADE_UP)[i % 3]
        t = int(torch.randint(1, gpu.max_threads_per_block + 1, (1,), generator=gen))
        r = int(torch.randint(1, gpu.max_registers_per_thread + 1, (1,), generator=gen))
        s = int(torch.randint(0, gpu.smem_per_block_max_bytes + 1, (1,), generator=gen))
        try:
            ref.occupancy(gpu, t, r, s)
        except ValueError:
            continue
        curated.append((f"random-{i}-{gpu.name.replace(' ', '-')}-t{t}-r{r}-s{s}", gpu, t, r, s))
    for name, gpu, t, r, s in curated:
        with g.case(f"occupancy-{name}"):
            _check_occ(g.call("occupancy", gpu, t, r, s), ref.occupancy(gpu, t, r, s))

    # The per-block register check is a rule of the hardware (the launch fails), part of the
    # task: core cases. Malformed calls are input checks, run after every core case.
    for name, args in [("launch-fails-1024x72", (H100_SXM, 1024, 72, 0)),
                       ("launch-fails-after-rounding-warps-800x80", (H100_SXM, 800, 80, 0))]:
        with g.case(f"occupancy-rejects-{name}"):
            g.raises("ValueError", "occupancy", *args)
    checks = [(f"occupancy-rejects-{name}", "occupancy", args) for name, args in [
        ("threads-0", (H100_SXM, 0, 32, 0)), ("threads-1025", (H100_SXM, 1025, 32, 0)),
        ("regs-0", (H100_SXM, 128, 0, 0)), ("regs-256", (H100_SXM, 128, 256, 0)),
        ("smem-over-227KiB", (H100_SXM, 128, 32, 227 * KiB + 1)), ("smem-negative", (H100_SXM, 128, 32, -1)),
        ("bool-threads", (H100_SXM, True, 32, 0)), ("float-regs", (H100_SXM, 128, 32.0, 0)),
        ("float-smem", (H100_SXM, 128, 32, 1024.0)), ("gpu-name-string", ("H100 SXM", 128, 32, 0)),
        ("made-up-regs-over-cap", (MADE_UP, 128, 201, 0)),
        ("made-up-threads-over-cap", (dataclasses.replace(MADE_UP, max_threads_per_block=512), 640, 32, 0))]]

    helps = [
        ("bandwidth-saturated", (H100_SXM, DType.BF16, 16, 2048, 600e-9, 4.0)),
        ("latency-bound", (H100_SXM, DType.BF16, 8, 512, 600e-9, 1.0)),
        ("compute-bound-gemm", (H100_SXM, DType.BF16, 16, 2048, 600e-9, 400.0)),
        # Too few warps for Little's law, but past the ridge: the roofline is checked first.
        ("compute-bound-few-warps", (H100_SXM, DType.BF16, 4, 512, 600e-9, 400.0)),
        ("fp8-ridge", (H100_SXM, DType.FP8, 32, 1024, 700e-9, 400.0)),
        ("h200-bandwidth", (H200_SXM, DType.BF16, 24, 1000, 650e-9, 2.0)),
        ("a100", (A100_SXM_80GB, DType.FP16, 12, 768, 500e-9, 100.0)),
        ("b200-latency", (B200, DType.BF16, 20, 1500, 800e-9, 30.0)),
        ("made-up", (MADE_UP, DType.BF16, 10, 700, 900e-9, 150.0)),
        ("one-warp-one-byte", (H100_SXM, DType.BF16, 1, 1, 600e-9, 1.0)),
    ]
    for name, args in helps:
        with g.case(f"helps-{name}"):
            _check_helps(g.call("occupancy_helps", *args), ref.occupancy_helps(*args))
    # Both boundaries hit exactly: MADE_UP's ridge is 400e12 / 2e12 = 200.0 (exact in binary), and
    # H100 at 600 ns with 512 B per warp needs exactly 30 warps (29.74 rounded up).
    for name, args in [("intensity-at-ridge-is-compute-bound", (MADE_UP, DType.BF16, 10, 700, 900e-9, 200.0)),
                       ("warps-exactly-needed-is-saturated", (H100_SXM, DType.BF16, 30, 512, 600e-9, 1.0)),
                       ("one-warp-short-is-latency-bound", (H100_SXM, DType.BF16, 29, 512, 600e-9, 1.0))]:
        with g.case(f"helps-{name}"):
            _check_helps(g.call("occupancy_helps", *args), ref.occupancy_helps(*args))

    checks += [(f"helps-rejects-{name}", "occupancy_helps", args) for name, args in [
        ("gpu-name-string", ("H100 SXM", DType.BF16, 8, 512, 6e-7, 1.0)),
        ("dtype-string", (H100_SXM, "bf16", 8, 512, 6e-7, 1.0)),
        ("fp8-on-a100", (A100_SXM_80GB, DType.FP8, 8, 512, 6e-7, 1.0)),
        ("int8", (H100_SXM, DType.INT8, 8, 512, 6e-7, 1.0)),
        ("zero-warps", (H100_SXM, DType.BF16, 0, 512, 6e-7, 1.0)),
        ("65-warps", (H100_SXM, DType.BF16, 65, 512, 6e-7, 1.0)),
        ("bool-warps", (H100_SXM, DType.BF16, True, 512, 6e-7, 1.0)),
        ("zero-bytes-per-warp", (H100_SXM, DType.BF16, 8, 0, 6e-7, 1.0)),
        ("float-bytes-per-warp", (H100_SXM, DType.BF16, 8, 512.0, 6e-7, 1.0)),
        ("zero-latency", (H100_SXM, DType.BF16, 8, 512, 0.0, 1.0)),
        ("nan-latency", (H100_SXM, DType.BF16, 8, 512, math.nan, 1.0)),
        ("negative-intensity", (H100_SXM, DType.BF16, 8, 512, 6e-7, -1.0)),
        ("nan-intensity", (H100_SXM, DType.BF16, 8, 512, 6e-7, math.nan)),
        ("inf-intensity", (H100_SXM, DType.BF16, 8, 512, 6e-7, math.inf)),
        ("dtype-string", (H100_SXM, "bf16", 8, 512, 6e-7, 1.0))]]
    for name, fn, args in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
