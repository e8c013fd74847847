"""Public cases for long-generation-batch (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_8B

S8B = StepModel(LLAMA_3_1_8B, H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)


def grade(g: Grading) -> None:
    with g.case("pool-s8b"):
        expect_equal(g.call("kv_pool_blocks", S8B, 16, 0.9, 4e9), 25267, name="pool_blocks")
    with g.case("admission-512-16384"):
        r = g.call("admission_limits", 25267, 512, 16384, 16, 1024)
        expect_equal(r, {"reserved": 23, "staggered": 45, "current": 789}, name="limits")
    with g.case("overflow-current-and-staggered"):
        expect_equal(g.call("overflow_step", 25267, 789, 512, 16384, 16), 1, name="overflow(789)")
        expect_equal(g.call("overflow_step", 25267, 45, 512, 16384, 16), 8465, name="overflow(45)")
        expect_equal(g.call("overflow_step", 25267, 23, 512, 16384, 16), None, name="overflow(23)")
    with g.case("preemption-after-8192"):
        r = g.call("preemption_cost", S8B, 512, 8192, 25e9)
        expect_equal(r["recompute_tokens"], 8704, name="recompute_tokens")
        expect_close(r["recompute_s"], 0.28774751570745905, name="recompute_s", rtol=1e-9)
        expect_close(r["swap_bytes"], 1140850688.0, name="swap_bytes", rtol=1e-9)
        expect_close(r["swap_s"], 0.04563402752, name="swap_s", rtol=1e-9)
    with g.case("tpot-b20"):
        expect_close(g.call("staggered_tpot", S8B, 20, 512, 16384), 0.01651534366567164,
                     name="tpot", rtol=1e-9)
    with g.case("user-speed-60"):
        r = g.call("batch_for_user_speed", S8B, 25267, 512, 16384, 16, 60.0, 1024)
        expect_equal(r["batch"], 20, name="batch")
        expect_equal(r["binding"], "speed", name="binding")
        expect_close(r["tokens_per_s_per_user"], 60.54975423118646, name="tokens_per_s_per_user", rtol=1e-9)
        expect_close(r["throughput_tokens_per_s"], 1210.9950846237293, name="throughput", rtol=1e-9)
    with g.case("rejects-zero-block-size", group=INPUT_CHECKS):
        g.raises("ValueError", "admission_limits", 25267, 512, 16384, 0, 1024)
