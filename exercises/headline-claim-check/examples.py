from inferprep.grading import Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, DType


def grade(g: Grading) -> None:
    with g.case("llama-8b-params"):
        expect_equal(g.call("decode_weight_params", LLAMA_3_1_8B), 7_504_658_432)
    with g.case("llama-8b-kv"):
        expect_close(g.call("kv_bytes_per_token", LLAMA_3_1_8B, DType.BF16), 131072.0, rtol=1e-9)
    with g.case("1000-tokens-per-s-on-one-h100"):
        r = g.call("check_claim", LLAMA_3_1_8B, H100_SXM, 1000.0, 2048, DType.BF16, DType.BF16, 1, 8, 5.0)
        expect_close(r["bytes_per_token"], 2 * 7_504_658_432 + 2048 * 131072, rtol=1e-9)
        expect_equal(r["physical"], False)
        expect_equal(r["min_gpus"], 5)
        expect_equal(r["conditions"], ["batch", "speculation", "tensor_parallel"])
