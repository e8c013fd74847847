from inferprep.grading import Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("knee"):
        expect_close(g.call("knee_batch", 0.005, 0.0002), 25.0, rtol=1e-9)
    with g.case("85-percent-of-ceiling"):
        expect_equal(g.call("batch_for_fraction", 0.005, 0.0002, 0.85), 142)
    with g.case("kv-pool-blocks"):
        expect_equal(g.call("max_batch_kv", 10**9, 131072, 1000, 16), 7)
    with g.case("fit-exact-line"):
        a, c = g.call("fit_step_time", [1, 2, 4], [0.0052, 0.0054, 0.0058])
        expect_close(a, 0.005, rtol=1e-9)
        expect_close(c, 0.0002, rtol=1e-9)
    with g.case("coefficients-h100"):
        a, c = g.call("step_time_coefficients", 3.35e9, 0.0, 0, 989.4e9, H100_SXM, DType.BF16, 0.0)
        expect_close(a, 1e-3, rtol=1e-9)
        expect_close(c, 1e-3, rtol=1e-9)
    with g.case("report-binding"):
        r = g.call("throughput_report", 0.005, 0.0002, 100, 0.9)
        expect_equal(r["binding"], "kv_cache")
