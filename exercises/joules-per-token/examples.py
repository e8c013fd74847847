from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("tp8-node"):
        expect_close(g.call("joules_per_token", 700.0, 14000.0, 8), 0.4, rtol=1e-9)
    with g.case("batch-1-memory-bound"):
        # 3.35 GB of weights, no KV: t = 1 ms, compute 1e9 FLOP -> ~1 us busy tensor cores
        r = g.call("energy_curve", H100_SXM, DType.BF16, 3.35e9, 0, 0, 1e9, [1], 350.0, 0.0)
        t_cmp = 1e9 / 989.4e12
        expect_close(r["step_time_s"][0], 1e-3, rtol=1e-9)
        expect_close(r["power_w"][0], 350.0 + 350.0 * t_cmp / 1e-3, rtol=1e-9)
    with g.case("measured"):
        r = g.call("measured_energy_report", [400.0, 600.0], [200.0, 10000.0], 1, 700.0)
        expect_close(r["joules_spread"], 2.0 / 0.06, rtol=1e-9)
        expect_equal(r["moved_by"], "throughput")
    with g.case("rejects-node-total-as-per-gpu", group=INPUT_CHECKS):
        g.raises("ValueError", "measured_energy_report", [5600.0], [14000.0], 8, 700.0)
