"""Public cases of expert-load-balance: the statement's step-time example, the uniform skew
threshold, layer 0 of the deepseek-ai/EPLB README example (its published output), and a two-day
decay curve."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, DType

EB, FL = 3 * 7168 * 2048, 2 * 3 * 7168 * 2048          # DeepSeek-V3 routed expert, FP8 weights


def grade(g: Grading) -> None:
    with g.case("step time: 4 experts on 2 GPUs"):
        out = g.call("gpu_step_time", [400.0, 5.0, 0.0, 2000.0], [0, 0, 1, 1], 2, H100_SXM, DType.FP8, EB, FL)
        expect_close(out["per_gpu_s"][0], 3.0950233999862733e-05, rtol=1e-12, name="per_gpu_s[0]")
        expect_close(out["per_gpu_s"][1], 8.901954014856739e-05, rtol=1e-12, name="per_gpu_s[1]")
        expect_close(out["step_s"], 8.901954014856739e-05, rtol=1e-12, name="step_s")
        expect_equal(out["busiest_gpu"], 1, name="busiest_gpu")

    with g.case("skew threshold: uniform routing, 256 experts, top-8"):
        out = g.call("skew_threshold", [1] * 256, 8, H100_SXM, DType.FP8, EB, FL)
        expect_close(out["ridge_tokens_per_expert"], 295.35820895522386, rtol=1e-12, name="ridge_tokens_per_expert")
        expect_close(out["hot_share"], 1 / 256, rtol=1e-12, name="hot_share")
        expect_close(out["threshold_batch"], 9451.462686567163, rtol=1e-12, name="threshold_batch")

    with g.case("EPLB README example, layer 0"):
        out = g.call("rebalance", [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86], 16, 8, 4, 2)
        expect_equal(out["phy2log"], [5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1], name="phy2log")
        expect_equal(out["replica_count"], [1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1], name="replica_count")
        for i, x in enumerate([121.5, 86.5, 125.0, 113.0, 147.5, 131.5, 156.0, 152.0]):
            expect_close(out["gpu_load"][i], x, rtol=1e-12, name=f"gpu_load[{i}]")

    with g.case("decay: the hot expert moves"):
        # day 0: expert 0 is hot and gets the extra slot; day 1: expert 3 is hot, the plan is not
        out = g.call("decay_curve", [[3000.0, 100.0, 100.0, 100.0], [100.0, 100.0, 100.0, 3000.0]],
                     6, 3, H100_SXM, DType.FP8, EB, FL)
        expect_close(out[0], 1.0, rtol=1e-9, name="ratio[0]")
        expect_close(out[1], 2.54397446681031, rtol=1e-9, name="ratio[1]")

    with g.case("rebalance rejects 6 slots on 4 GPUs", group=INPUT_CHECKS):
        g.raises("ValueError", "rebalance", [1, 2, 3, 4], 6, 4)
