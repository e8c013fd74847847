"""Public cases for prefill-decode-crossover (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import A100_SXM_80GB, H100_SXM, LLAMA_3_1_8B, DType


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-h100-bf16-crossover"):
        expect_equal(g.call("prefill_crossover_tokens", LLAMA_3_1_8B, H100_SXM, DType.BF16), 317)
    with g.case("llama-3.1-8b-h100-bf16-ttft-2048"):
        t = g.call("ttft", LLAMA_3_1_8B, H100_SXM, DType.BF16, 2048)
        expect_close(t["compute_ms"], 30.006470076830404, name="compute_ms", rtol=1e-9)
        expect_close(t["memory_ms"], 4.560523080597014, name="memory_ms", rtol=1e-9)
        expect_close(t["ttft_ms"], 30.006470076830404, name="ttft_ms", rtol=1e-9)
        expect_equal(t["bound"], "compute", name="bound")
    with g.case("llama-3.1-8b-h100-bf16-ttft-1"):
        t = g.call("ttft", LLAMA_3_1_8B, H100_SXM, DType.BF16, 1)
        expect_close(t["ttft_ms"], 4.480432219701493, name="ttft_ms", rtol=1e-9)
        expect_equal(t["bound"], "memory", name="bound")
    with g.case("a100-has-no-fp8", group=INPUT_CHECKS):
        g.raises("ValueError", "prefill_crossover_tokens", LLAMA_3_1_8B, A100_SXM_80GB, DType.FP8)
