"""Public cases for kv-per-gpu-tp (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import DEEPSEEK_V3, LLAMA_3_1_70B, DType

BF = DType.BF16


def grade(g: Grading) -> None:
    with g.case("per-gpu-tp8-gqa-vs-mla"):
        expect_close(g.call("kv_bytes_per_token_per_gpu", LLAMA_3_1_70B, 8, BF), 40_960.0,
                     name="Llama 3.1 70B", rtol=1e-12)
        expect_close(g.call("kv_bytes_per_token_per_gpu", DEEPSEEK_V3, 8, BF), 70_272.0,
                     name="DeepSeek-V3", rtol=1e-12)
        expect_close(g.call("kv_bytes_per_token_per_gpu", DEEPSEEK_V3, 8, BF, dcp=8), 8_784.0,
                     name="DeepSeek-V3 dcp=8", rtol=1e-12)
    with g.case("longest-request-20-gib"):
        expect_equal(g.call("max_request_tokens", LLAMA_3_1_70B, 8, BF, 20 * 2**30), 524_288,
                     name="Llama 3.1 70B")
        expect_equal(g.call("max_request_tokens", DEEPSEEK_V3, 8, BF, 20 * 2**30), 305_595,
                     name="DeepSeek-V3")
        expect_equal(g.call("max_request_tokens", DEEPSEEK_V3, 8, BF, 20 * 2**30, dcp=8), 2_444_760,
                     name="DeepSeek-V3 dcp=8")
    with g.case("which-fits-600k"):
        deps = [{"model": LLAMA_3_1_70B, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": 104_966_935_808},
                {"model": DEEPSEEK_V3, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": 38_726_857_984},
                {"model": DEEPSEEK_V3, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": 38_726_857_984,
                 "dcp": 8}]
        expect_equal(g.call("which_fits", 600_000, deps), [True, False, True], name="fits")
    with g.case("rejects-dcp-on-unreplicated-gqa", group=INPUT_CHECKS):
        g.raises("ValueError", "kv_bytes_per_token_per_gpu", LLAMA_3_1_70B, 8, BF, 2)
