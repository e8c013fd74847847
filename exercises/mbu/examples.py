"""Public cases for mbu (literal expected values): the statement's example log."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_70B, DType

BF16 = DType.BF16
LOG = [
    {"step": 0, "t_start_s": 0.0, "duration_s": 0.0075, "context_lens": [8192, 4096, 2048, 1024],
     "num_prefill_tokens": 0},
    {"step": 1, "t_start_s": 0.0075, "duration_s": 0.004, "context_lens": [], "num_prefill_tokens": 0},
    {"step": 2, "t_start_s": 0.0115, "duration_s": 0.021, "context_lens": [8192, 4096, 2048, 1024],
     "num_prefill_tokens": 4096},
    {"step": 3, "t_start_s": 0.0325, "duration_s": 0.0095, "context_lens": [16384] * 8,
     "num_prefill_tokens": 0},
]
SETUP = (LLAMA_3_1_70B, H100_SXM, 8, BF16, BF16)


def grade(g: Grading) -> None:
    with g.case("llama-3.1-70b-tp8-step-bytes"):
        b = g.call("step_bytes_per_gpu", LLAMA_3_1_70B, 8, [8192, 4096, 2048, 1024], BF16, BF16)
        expect_close(b["weight_bytes"], 17_375_428_608, name="weight_bytes", rtol=1e-9)
        expect_close(b["kv_bytes"], 629_145_600, name="kv_bytes", rtol=1e-9)
    with g.case("llama-3.1-70b-tp16-kv-replicated"):
        b = g.call("step_bytes_per_gpu", LLAMA_3_1_70B, 16, [1000], BF16, BF16)
        expect_close(b["kv_bytes"], 40_960_000, name="kv_bytes", rtol=1e-9)
    with g.case("example-log-mbu"):
        r = g.call("mbu", LOG, *SETUP)
        expect_close(r["mbu"], 0.7155173298683054, name="mbu", rtol=1e-9)
        expect_close(r["busy_s"], 0.017, name="busy_s", rtol=1e-9)
        expect_close(r["bytes_per_gpu"], 40_748_711_936, name="bytes_per_gpu", rtol=1e-9)
        expect_equal(r["steps_used"], 2, name="steps_used")
        expect_equal(r["steps_excluded"], 2, name="steps_excluded")
    with g.case("example-log-dashboard-numbers"):
        n = g.call("dashboard_numbers", LOG, *SETUP, 0.8)
        for k, v in {"correct": 0.7155173298683054, "weights_only": 0.6101994243371378,
                     "achievable_denominator": 0.8943966623353817,
                     "node_bytes_gpu_peak": 5.724138638946443,
                     "gpu_bytes_node_peak": 0.08943966623353818,
                     "mean_of_ratios": 0.7156312918271799,
                     "idle_in_denominator": 0.2896141573276475,
                     "kv_once_per_batch": 0.6278751567339771}.items():
            expect_close(n[k], v, name=k, rtol=1e-9)
    with g.case("example-log-diagnose-idle"):
        expect_equal(g.call("diagnose_dashboard", LOG, *SETUP, 0.8, 0.2896141573276475),
                     "idle_in_denominator")
    with g.case("example-log-diagnose-weights-only"):
        expect_equal(g.call("diagnose_dashboard", LOG, *SETUP, 0.8, 0.6101994243371378),
                     "weights_only")
    with g.case("rejects-idle-only-log", group=INPUT_CHECKS):
        g.raises("ValueError", "mbu", [LOG[1]], *SETUP)
