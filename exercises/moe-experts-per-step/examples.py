import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal


def grade(g: Grading) -> None:
    with g.case("deepseek-v3-batch-8"):
        # 256 * (1 - (31/32)**8)
        expect_close(g.call("expected_distinct_experts", 256, 8, 8), 57.42083078599535, rtol=1e-9)
    with g.case("batch-1-touches-k"):
        expect_close(g.call("expected_distinct_experts", 64, 6, 1), 6.0, rtol=1e-9)
    with g.case("count-one-routing"):
        ids = torch.tensor([[0, 2], [2, 1], [0, 2]], device=g.device)
        expect_equal(g.call("distinct_experts", ids, 4), 3)
    with g.case("step-bytes-mixtral-like"):
        # 8 experts, top-2, 32 MoE layers, batch 4: D = 8 * (1 - 0.75**4) = 5.46875
        got = g.call("moe_step_bytes", 4, 8, 2, 32, 176_160_768, 1_600_000_000, 2.0)
        expect_close(got, 2.0 * (1_600_000_000 + 32 * 5.46875 * 176_160_768), rtol=1e-9)
    with g.case("half-the-experts"):
        expect_equal(g.call("batch_for_expert_fraction", 256, 8, 0.5), 22)
    with g.case("rejects-top-k-above-experts", group=INPUT_CHECKS):
        g.raises("ValueError", "expected_distinct_experts", 4, 5, 1)
