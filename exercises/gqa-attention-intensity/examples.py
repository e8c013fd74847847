"""Public cases for gqa-attention-intensity (literal expected values)."""

from inferprep.grading import Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, DType

BF16 = DType.BF16


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-attention-batch-1"):
        expect_close(g.call("decode_attention_intensity", LLAMA_3_1_8B, BF16, 1, 1), 4.0, rtol=1e-9)
    with g.case("llama-3.1-8b-attention-batch-4096"):
        expect_close(g.call("decode_attention_intensity", LLAMA_3_1_8B, BF16, 4096, 8192), 4.0,
                     rtol=1e-9)
    with g.case("weight-gemm-batch-64"):
        expect_close(g.call("decode_weight_gemm_intensity", 64, BF16), 64.0, rtol=1e-9)
    with g.case("llama-3.1-8b-h100-regime"):
        r = g.call("attention_regime", LLAMA_3_1_8B, H100_SXM, BF16, BF16)
        expect_close(r["ridge"], 295.3432835820896, name="ridge", rtol=1e-9)
        expect_close(r["fraction_of_ridge"], 0.013543561754598747, name="fraction_of_ridge", rtol=1e-9)
        expect_equal(r["bound"], "memory", name="bound")
    with g.case("h100-group-size"):
        expect_equal(g.call("heads_per_kv_head_for_ridge", H100_SXM, BF16, BF16), 296)
