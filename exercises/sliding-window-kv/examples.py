"""Public cases for sliding-window-kv (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal

GPT_OSS_120B = ["sliding_attention", "full_attention"] * 18


def grade(g: Grading) -> None:
    with g.case("gpt-oss-120b-128k-hybrid"):
        r = g.call("sequence_kv", GPT_OSS_120B, 128, 131072, 2048, 16, "hybrid")
        expect_close(r["bytes"], 4_836_556_800, name="bytes", rtol=1e-9)
        expect_close(r["no_window_bytes"], 9_663_676_416, name="no_window_bytes", rtol=1e-9)
        expect_close(r["saving"], 0.49951171875, name="saving", rtol=1e-9)
    with g.case("gpt-oss-120b-128k-uniform"):
        r = g.call("sequence_kv", GPT_OSS_120B, 128, 131072, 2048, 16, "uniform")
        expect_close(r["bytes"], 9_663_676_416, name="bytes", rtol=1e-9)
        expect_close(r["saving"], 0.0, name="saving", atol=1e-12)
    with g.case("straddling-block"):
        expect_equal(g.call("sliding_layer_blocks", 128, 129, 16), 9, name="blocks")
        expect_equal(g.call("sliding_layer_blocks", 128, 144, 16), 8, name="blocks")
    with g.case("vllm-budget-8192"):
        r = g.call("vllm_request_budget", GPT_OSS_120B, 128, 131072, 8192, 16)
        expect_equal(r["full_layer_blocks"], 8192, name="full_layer_blocks")
        expect_equal(r["sliding_layer_blocks"], 521, name="sliding_layer_blocks")
        expect_equal(r["request_blocks"], 156_834, name="request_blocks")
        expect_close(r["saving"], 0.46820068359375, name="saving", rtol=1e-9)
    with g.case("rejects-unknown-allocator", group=INPUT_CHECKS):
        g.raises("ValueError", "sequence_kv", GPT_OSS_120B, 128, 4096, 2048, 16, "paged")
