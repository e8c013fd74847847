"""Public cases for continuous-batching-gain (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_8B

TRACE = [3, 1, 4, 1, 5, 9, 2, 6]
S8B = StepModel(LLAMA_3_1_8B, H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)


def grade(g: Grading) -> None:
    with g.case("schedule-worked-example"):
        s = g.call("schedule", TRACE, 2)
        expect_equal(s["static_active"],
                     [2, 1, 1, 2, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1],
                     name="static_active")
        expect_equal(s["continuous_active"], [2] * 14 + [1] * 3, name="continuous_active")
    with g.case("gain-flat-step"):
        r = g.call("batching_gain", TRACE, 2, 1.0, 0.0)
        expect_equal(r["static_steps"], 22, name="static_steps")
        expect_equal(r["continuous_steps"], 17, name="continuous_steps")
        expect_close(r["gain"], 22 / 17, name="gain", rtol=1e-9)
    with g.case("gain-linear-step"):
        r = g.call("batching_gain", TRACE, 2, 0.010, 0.002)
        expect_close(r["static_s"], 0.282, name="static_s", rtol=1e-9)
        expect_close(r["continuous_s"], 0.232, name="continuous_s", rtol=1e-9)
        expect_close(r["gain"], 0.282 / 0.232, name="gain", rtol=1e-9)
    with g.case("gain-step-model-8b-context-4096"):
        r = g.call("step_model_gain", TRACE, 2, S8B, 4096)
        expect_close(r["static_s"], 0.17342088405970152, name="static_s", rtol=1e-9)
        expect_close(r["gain"], 1.2806298789232968, name="gain", rtol=1e-9)
    with g.case("statistic-and-harmonic"):
        expect_close(g.call("length_statistic", TRACE, 2), 44 / 31, name="length_statistic", rtol=1e-9)
        expect_close(g.call("harmonic_gain", 32), 4.05849519543652, name="harmonic_gain", rtol=1e-9)
    with g.case("token-budget-8192-on-8b"):
        r = g.call("token_budget_point", S8B, 8192)
        expect_close(r["knee_tokens"], 198.48368770630026, name="knee_tokens", rtol=1e-9)
        expect_equal(r["bound"], "compute", name="bound")
        expect_close(r["gemm_s"], 0.23114859367031332, name="gemm_s", rtol=1e-9)
        expect_close(r["compute_utilization"], 1.0, name="compute_utilization", rtol=1e-9)
    with g.case("rejects-zero-length", group=INPUT_CHECKS):
        g.raises("ValueError", "schedule", [3, 0, 2], 2)
