"""Every figure quoted by occupancy's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import H100_SXM, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "occupancy.py", "_fig_occupancy")
KiB = 1024


def test_gemm_like_kernel():
    r = ref.occupancy(H100_SXM, 256, 128, 48 * KiB)
    assert (r["warps_per_block"], r["registers_per_warp"], r["smem_per_block_bytes"]) == (8, 4096, 50176)
    assert r["blocks_limit"] == {"warps": 8, "registers": 2, "shared_memory": 4, "blocks": 32}
    assert (r["active_blocks"], r["active_warps"], r["occupancy"], r["limiters"]) == (2, 16, 0.25, ["registers"])
    assert 16384 // 4096 == 4 and 233472 // 50176 == 4


def test_64_registers_tie():
    r = ref.occupancy(H100_SXM, 256, 64, 48 * KiB)
    assert r["active_blocks"] == 4 and r["active_warps"] == 32 and r["occupancy"] == 0.5
    assert r["limiters"] == ["registers", "shared_memory"]


def test_granularity():
    r = ref.occupancy(H100_SXM, 256, 100, 0)
    assert r["registers_per_warp"] == 3328 and 100 * 32 == 3200
    assert 16384 // 3328 == 4 and 16384 // 3200 == 5 and r["blocks_limit"]["registers"] == 2
    small = ref.occupancy(H100_SXM, 128, 100, 0)
    assert small["blocks_limit"]["registers"] == 4 and small["active_warps"] == 16
    assert (16384 // 3200) * 4 // 4 == 5
    one_warp = ref.occupancy(H100_SXM, 32, 136, 0)
    assert one_warp["registers_per_warp"] == 4352
    assert one_warp["blocks_limit"]["registers"] == 12 and 65536 // 4352 == 15


def test_reserve():
    r = ref.occupancy(H100_SXM, 128, 64, 57 * KiB)
    assert 4 * 58368 == 233472 and r["smem_per_block_bytes"] == 59392
    assert r["blocks_limit"]["shared_memory"] == 3 and r["occupancy"] == 0.1875
    assert ref.occupancy(H100_SXM, 128, 64, 56 * KiB)["occupancy"] == 0.25


def test_launch_check():
    assert 25 * 2560 == 64000 and 2560 * 28 == 71680
    try:
        ref.occupancy(H100_SXM, 800, 80, 0)
    except ValueError:
        pass
    else:
        raise AssertionError("800 threads x 80 registers must not launch")


def test_helps():
    gemm = ref.occupancy_helps(H100_SXM, DType.BF16, 16, 2048, 600e-9, 400.0)
    assert round(gemm["ridge_flops_per_byte"]) == 295
    assert gemm["regime"] == "compute_bound" and gemm["helps"] is False
    copy = ref.occupancy_helps(H100_SXM, DType.BF16, 8, 512, 600e-9, 1.0)
    assert round(copy["bytes_in_flight_per_sm"]) == 15227
    assert copy["warps_needed"] == 30 and copy["regime"] == "latency_bound" and copy["helps"] is True
    wide = ref.occupancy_helps(H100_SXM, DType.BF16, 16, 2048, 600e-9, 1.0)
    assert wide["warps_needed"] == 8 and wide["regime"] == "bandwidth_saturated"
