from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("gemm-like-kernel-h100"):
        r = g.call("occupancy", H100_SXM, 256, 128, 48 * 1024)
        expect_equal(r["blocks_limit"], {"warps": 8, "registers": 2, "shared_memory": 4, "blocks": 32})
        expect_equal(r["active_warps"], 16)
        expect_close(r["occupancy"], 0.25, rtol=1e-12)
        expect_equal(r["limiters"], ["registers"])
    with g.case("reserve-counts"):
        # 57 KiB + 1 KiB reserve = 59,392 B per block: 3 blocks fit in 228 KiB, not 4
        r = g.call("occupancy", H100_SXM, 128, 64, 57 * 1024)
        expect_equal(r["blocks_limit"]["shared_memory"], 3)
    with g.case("latency-bound-copy"):
        r = g.call("occupancy_helps", H100_SXM, DType.BF16, 8, 512, 600e-9, 1.0)
        expect_equal(r["warps_needed"], 30)
        expect_equal(r["regime"], "latency_bound")
        expect_equal(r["helps"], True)
    with g.case("rejects-too-many-threads", group=INPUT_CHECKS):
        g.raises("ValueError", "occupancy", H100_SXM, 2048, 32, 0)
