"""Public cases for ridge-point (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import A100_SXM_80GB, H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("h100-bf16-ridge"):
        expect_close(g.call("ridge_point", H100_SXM, DType.BF16), 295.3432835820896, rtol=1e-9)
    with g.case("h100-bf16-batch-64-roofline"):
        r = g.call("roofline", H100_SXM, DType.BF16, 64.0)
        expect_close(r["attainable_flops"], 214.4e12, name="attainable_flops", rtol=1e-9)
        expect_equal(r["bound"], "memory", name="bound")
    with g.case("intensity"):
        expect_close(g.call("decode_gemm_intensity", 64, DType.BF16), 64.0, rtol=1e-9)
        expect_close(g.call("decode_gemm_intensity", 64, DType.INT4), 256.0, rtol=1e-9)
    with g.case("h100-compute-bound-batches"):
        expect_equal(g.call("compute_bound_batch", H100_SXM, DType.BF16, DType.BF16), 296)
        expect_equal(g.call("compute_bound_batch", H100_SXM, DType.INT4, DType.BF16), 74)
    with g.case("a100-has-no-fp8", group=INPUT_CHECKS):
        g.raises("ValueError", "ridge_point", A100_SXM_80GB, DType.FP8)
