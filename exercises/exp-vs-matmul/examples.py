from inferprep.grading import Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("h100-bf16-d128-ratio"):
        # 989.4e12 / (512 * 132 * 16 * 1.83e9)
        expect_close(g.call("exp_to_matmul_ratio", H100_SXM, DType.BF16, 128), 0.4999849610345256, rtol=1e-9)
    with g.case("h100-bf16-d128-share"):
        expect_close(g.call("exp_time_share", H100_SXM, DType.BF16, 128), 0.4999849610345256 / 1.4999849610345256, rtol=1e-9)
    with g.case("fa2-bound"):
        expect_close(g.call("attention_fraction_of_peak", H100_SXM, DType.BF16, 128, 2 / 3, False),
                     1 / (1.5 + 0.4999849610345256), rtol=1e-9)
    with g.case("pingpong"):
        expect_equal(g.call("fa3_remedy", "exp_serialized_with_gemm"), "pingpong_scheduling")
