"""Public cases for roofline-server-model (literal expected values): the statement's example."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, LLAMA_3_1_70B, DType

BF16 = DType.BF16


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-h100-b32-1k"):
        s = g.call("step_model", LLAMA_3_1_8B, H100_SXM, 1, 32, 1024, BF16, BF16, 0.3e-3, 0.85, 0.0)
        expect_close(s["weight_s"], 0.005271050698507463, name="weight_s", rtol=1e-9)
        expect_close(s["kv_s"], 0.0015083291645302897, name="kv_s", rtol=1e-9)
        expect_close(s["compute_s"], 0.000502807771206792, name="compute_s", rtol=1e-9)
        expect_close(s["t_s"], 0.007079379863037753, name="t_s", rtol=1e-9)
        expect_equal(s["binding"], "memory", name="binding")
        expect_equal(g.call("regime_flags", s, 32, 1024, 1, 25272, 16), [], name="flags")
    with g.case("llama-3.1-70b-h100-tp8-b8-4k"):
        s = g.call("step_model", LLAMA_3_1_70B, H100_SXM, 8, 8, 4096, BF16, BF16, 0.3e-3, 0.85, 5e-6)
        expect_close(s["comm_s"], 0.0008815559111111113, name="comm_s", rtol=1e-9)
        expect_close(s["t_s"], 0.0077549030183982045, name="t_s", rtol=1e-9)
    with g.case("audit-three-points"):
        pts = [{"tp": 1, "batch": 32, "context_len": 1024, "measured_s": 0.0074},
               {"tp": 1, "batch": 32, "context_len": 8192, "measured_s": 0.0190},
               {"tp": 1, "batch": 64, "context_len": 32768, "measured_s": 0.160}]
        a = g.call("audit", pts, LLAMA_3_1_8B, H100_SXM, BF16, BF16, 0.3e-3, 0.85, 0.0, 25272, 16, 0.1)
        expect_close(a[1]["residual"], 0.07723893817980643, name="[1]['residual']", rtol=1e-9)
        expect_equal(a[0]["trusted"], True, name="[0]['trusted']")
        expect_equal(a[1]["flags"], ["long_context_attention"], name="[1]['flags']")
        expect_equal(a[1]["trusted"], False, name="[1]['trusted']")
        expect_equal(a[2]["checks"], ["context_sweep_at_fixed_batch", "engine_log_max_concurrency"],
                     name="[2]['checks']")
    with g.case("rejects-efficiency-above-one", group=INPUT_CHECKS):
        g.raises("ValueError", "step_model", LLAMA_3_1_8B, H100_SXM, 1, 1, 1, BF16, BF16, 0.0, 1.5, 0.0)
