"""Public cases for layer-op-ranking (literal expected values)."""

from inferprep.grading import Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, DType

BF16 = DType.BF16


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-h100-batch-1-times"):
        t = g.call("layer_op_times", LLAMA_3_1_8B, H100_SXM, BF16, 1, 8192, 0.0)
        expect_close(t["gate_up_proj"], 70.11373850746268, name="gate_up_proj", rtol=1e-9)
        expect_close(t["attention"], 10.016248358208955, name="attention", rtol=1e-9)
    with g.case("llama-3.1-8b-h100-batch-8-ranking"):
        expect_equal(g.call("op_ranking", LLAMA_3_1_8B, H100_SXM, BF16, 8, 8192, 0.0),
                     ["attention", "gate_up_proj", "down_proj", "qkv_proj", "o_proj", "elementwise"])
    with g.case("llama-3.1-8b-h100-flip"):
        expect_equal(g.call("ranking_flip_batch", LLAMA_3_1_8B, H100_SXM, BF16, 8000, 0.0), 8)
    with g.case("llama-3.1-8b-h100-remedies-batch-1"):
        expect_equal(g.call("remedies", LLAMA_3_1_8B, H100_SXM, BF16, 1, 8192),
                     {"qkv_proj": "batch", "o_proj": "batch", "gate_up_proj": "batch",
                      "down_proj": "batch", "attention": "architecture", "elementwise": "fusion"})
